//! Web devices on pages built the way real apps are: custom elements, shadow roots, frames of
//! the same origin and of another site, controls drawn over transparent ones, a late router.
#![cfg(test)]

use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::{DaemonHarness, McpHttp};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

struct World {
    _harness: DaemonHarness,
    http: McpHttp,
    app: FixtureApp,
}

fn world() -> World {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&["--web-warm", "1"]).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap().with_session("real-web");
    let acquired = http.call("getWeb", json!({})).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    World {
        _harness: harness,
        http,
        app,
    }
}

fn call(http: &McpHttp, tool: &str, arguments: Value) -> Value {
    let result = http.call(tool, arguments).unwrap();
    assert_eq!(result["isError"], false, "{tool}: {result}");
    result
}

fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn dump() {
    let world = world();
    for path in ["/components", "/frames", "/todo"] {
        call(&world.http, "openLink", json!({ "url": world.app.url(path) }));
        let observed = call(&world.http, "observe", json!({}));
        println!("==== {path}\n{}", text(&observed));
    }
}

#[test]
fn dump_actions() {
    let world = world();
    let http = &world.http;
    call(http, "openLink", json!({ "url": world.app.url("/components") }));
    println!("{}", text(&call(http, "tapOn", json!({ "text": "Notifications" }))));
    println!("{}", text(&call(http, "tapOn", json!({ "text": "Save settings" }))));
    println!("{}", text(&call(http, "tapOn", json!({ "id": "fancy" }))));
    println!("{}", text(&call(http, "tapOn", json!({ "text": "Quiet mode" }))));
    println!("{}", text(&http.call("tapOn", json!({ "text": "Vault" })).unwrap()));
    println!("{}", text(&http.call("tapOn", json!({ "text": "Fancy" })).unwrap()));
    call(http, "openLink", json!({ "url": world.app.url("/frames") }));
    let observed = call(http, "observe", json!({ "format": "json" }));
    let elements = observed["structuredContent"]["elements"].as_array().unwrap().clone();
    let refs: Vec<String> = elements.iter().filter(|e| e["role"] == "textbox").map(|e| e["ref"].as_str().unwrap().to_owned()).collect();
    println!("{refs:?}");
    println!("{}", text(&call(http, "inputText", json!({ "ref": refs[1], "text": "Cross" }))));
    println!("{}", text(&call(http, "pressButton", json!({ "button": "enter" }))));
    println!("{}", text(&call(http, "inputText", json!({ "ref": refs[0], "text": "Same" }))));
    println!("{}", text(&call(http, "tapOn", json!({ "text": "Greet" }))));
    println!("{}", text(&call(http, "observe", json!({}))));
    call(http, "openLink", json!({ "url": world.app.url("/todo") }));
    for item in ["Buy milk", "Walk dog", "Write code"] {
        call(http, "inputText", json!({ "label": "What needs to be done?", "text": item }));
        call(http, "pressButton", json!({ "button": "enter" }));
    }
    println!("{}", text(&call(http, "tapOn", json!({ "text": "Toggle Walk dog" }))));
    println!("{}", text(&call(http, "tapOn", json!({ "text": "Completed" }))));
    println!("{}", text(&call(http, "observe", json!({}))));
    println!("{}", text(&http.call("tapOn", json!({ "text": "Clear" })).unwrap()));
}
