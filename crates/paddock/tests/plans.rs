//! Plans end to end: `executePlan` (plan-only: callable by name, never listed) replays a plan
//! document on a real Chromium device against the fixture web app.
#![cfg(test)]

use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::{DaemonHarness, McpHttp};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn sign_in_plan() -> Value {
    json!({
        "version": 1,
        "source": "written for a test",
        "variables": ["PASSWORD_1"],
        "steps": [
            { "tool": "tapOn", "arguments": { "text": "Sign in" } },
            { "tool": "inputText", "arguments": { "label": "Email", "text": "ada@example.com" } },
            { "tool": "inputText", "arguments": { "label": "Password", "text": "${PASSWORD_1}" } },
            { "tool": "tapOn", "arguments": { "text": "Sign in" } },
        ],
    })
}

#[test]
fn a_plan_replays_a_sign_in_and_reports_the_step_that_fails() {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    let app_arg = format!("fixture={}", app.url("/"));
    harness
        .start_detached(&["--web-app", app_arg.as_str(), "--web-warm", "1"])
        .unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    let session = http.with_session("plan-replay");
    let acquired = session.call("getWeb", json!({ "app": "fixture" })).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");

    let listed = session.tool_names().unwrap();
    assert!(
        !listed.iter().any(|name| name == "executePlan"),
        "plan-only tools are never listed: {listed:?}"
    );

    // Without the variable, the step that needs it fails, naming it, and the run stops there.
    let missing = session
        .call("executePlan", json!({ "plan": sign_in_plan() }))
        .unwrap();
    let run = &missing["structuredContent"];
    assert_eq!(run["ok"], false, "{missing}");
    assert_eq!(run["failedStep"], 3, "{missing}");
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(3), "{missing}");
    assert!(
        run["steps"][2]["error"]
            .as_str()
            .is_some_and(|error| error.contains("`PASSWORD_1`")),
        "{missing}"
    );
    assert!(
        run["observation"]
            .as_str()
            .is_some_and(|screen| screen.contains("Password")),
        "the screen at the failure: {missing}"
    );

    // With it, from the start page again, the whole plan runs and signs in.
    let back = session
        .call("openLink", json!({ "url": app.url("/") }))
        .unwrap();
    assert_eq!(back["isError"], false, "{back}");
    let done = session
        .call(
            "executePlan",
            json!({ "plan": sign_in_plan(), "variables": { "PASSWORD_1": "hunter2" } }),
        )
        .unwrap();
    let run = &done["structuredContent"];
    assert_eq!(run["ok"], true, "{done}");
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(4), "{done}");
    assert!(run.get("failedStep").is_none(), "{done}");
    let page = session
        .call("observe", json!({ "format": "json" }))
        .unwrap();
    let page = &page["structuredContent"];
    assert!(
        page["url"]
            .as_str()
            .is_some_and(|url| url.starts_with(&app.url("/welcome"))),
        "{page}"
    );

    // A step whose target is not on the page fails with the screen; later steps do not run
    // unless asked.
    let changed = json!({
        "version": 1,
        "steps": [
            { "tool": "tapOn", "arguments": { "text": "A button nobody drew" } },
            { "tool": "tapOn", "arguments": { "text": "Items" } },
        ],
    });
    let failed = session
        .call("executePlan", json!({ "plan": changed }))
        .unwrap();
    let run = &failed["structuredContent"];
    assert_eq!(run["ok"], false, "{failed}");
    assert_eq!(run["failedStep"], 1, "{failed}");
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(1), "{failed}");
    assert!(run["observation"].as_str().is_some(), "{failed}");
    let went_on = session
        .call(
            "executePlan",
            json!({ "plan": changed, "stopOnError": false }),
        )
        .unwrap();
    let run = &went_on["structuredContent"];
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(2), "{went_on}");
    assert_eq!(run["steps"][1]["ok"], true, "{went_on}");
    assert_eq!(run["failedStep"], 1, "{went_on}");

    // A plan of another format version, or a step that is not a device tool, is refused.
    let future = session
        .call(
            "executePlan",
            json!({ "plan": { "version": 2, "steps": [] } }),
        )
        .unwrap();
    assert_eq!(future["isError"], true, "{future}");
    assert!(
        future["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("[invalid_input]") && text.contains("version 2")),
        "{future}"
    );
    let not_device = session
        .call(
            "executePlan",
            json!({ "plan": { "version": 1, "steps": [{ "tool": "getWeb", "arguments": {} }] } }),
        )
        .unwrap();
    let run = &not_device["structuredContent"];
    assert_eq!(run["ok"], false, "{not_device}");
    assert!(
        run["steps"][0]["error"]
            .as_str()
            .is_some_and(|error| error.contains("not a device tool")),
        "{not_device}"
    );
}

#[test]
fn password_fields_carry_the_password_state() {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    let app_arg = format!("fixture={}", app.url("/login"));
    harness
        .start_detached(&["--web-app", app_arg.as_str()])
        .unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    let session = http.with_session("password-state");
    let acquired = session.call("getWeb", json!({ "app": "fixture" })).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    let page = session
        .call("observe", json!({ "format": "json" }))
        .unwrap();
    let elements = page["structuredContent"]["elements"]
        .as_array()
        .unwrap()
        .clone();
    let states = |name: &str| {
        elements
            .iter()
            .find(|element| element["name"] == name)
            .map(|element| element["states"].clone())
    };
    assert!(
        states("Password")
            .and_then(|states| states.as_array().cloned())
            .is_some_and(|states| states.iter().any(|state| state == "password")),
        "{elements:?}"
    );
    assert!(
        states("Email").is_some_and(|states| !states.to_string().contains("password")),
        "{elements:?}"
    );
}
