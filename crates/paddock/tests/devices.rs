//! Devices end to end: real Chromium, the fixture web app, MCP over HTTP.
#![cfg(test)]

use std::time::Duration;

use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::{DaemonHarness, McpHttp, McpStdio, procfs, wait_until};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

struct World {
    harness: DaemonHarness,
    http: McpHttp,
    app: FixtureApp,
}

fn world(extra: &[&str]) -> World {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    let app_arg = format!("fixture={}", app.url("/"));
    let mut args = vec!["--web-app", app_arg.as_str()];
    args.extend_from_slice(extra);
    harness.start_detached(&args).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    World { harness, http, app }
}

fn text(result: &Value) -> String {
    assert_eq!(result["isError"], false, "{result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected an error: {result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The observation as JSON.
fn observe(http: &McpHttp) -> Value {
    let result = http.call("observe", json!({ "format": "json" })).unwrap();
    result["structuredContent"].clone()
}

fn names(observation: &Value) -> Vec<String> {
    observation["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|element| {
            format!(
                "{} {}",
                element["role"].as_str().unwrap(),
                element["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn has(observation: &Value, role: &str, name: &str) -> bool {
    names(observation)
        .iter()
        .any(|line| line == &format!("{role} {name}"))
}

fn acquire(http: &McpHttp, session: &str, arguments: Value) -> McpHttp {
    let session = http.with_session(session);
    let result = session.call("getWeb", arguments).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    session
}

#[test]
fn an_agent_signs_in_scrolls_opens_an_item_closes_a_dialog_and_goes_back() {
    let World {
        http,
        app,
        harness: _harness,
    } = world(&["--web-warm", "1"]);
    let answer = http
        .with_session("flow")
        .call("getWeb", json!({ "app": "fixture" }))
        .unwrap();
    let acquired = &answer["structuredContent"];
    assert_eq!(acquired["sessionUuid"], "flow", "{answer}");
    assert_eq!(acquired["device"]["profile"], "pixel7");
    assert!(
        acquired["observation"]
            .as_str()
            .unwrap()
            .contains("heading/1 \"Fixture app\""),
        "{answer}"
    );
    let session = http.with_session("flow");

    let page = observe(&session);
    assert_eq!(page["screen"]["width"], 412);
    assert_eq!(page["app"], "fixture");
    assert!(has(&page, "link", "Sign in"), "{page}");

    let after = text(&session.call("tapOn", json!({ "text": "Sign in" })).unwrap());
    assert!(after.contains("settled: true"), "{after}");
    let page = observe(&session);
    assert!(
        has(&page, "heading", "Sign in")
            && has(&page, "textbox", "Email")
            && has(&page, "textbox", "Password"),
        "{page}"
    );

    text(
        &session
            .call(
                "inputText",
                json!({ "label": "Email", "text": "alice@example.com" }),
            )
            .unwrap(),
    );
    text(
        &session
            .call(
                "inputText",
                json!({ "label": "Password", "text": "hunter2" }),
            )
            .unwrap(),
    );
    let page = observe(&session);
    let password = page["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "Password")
        .unwrap()
        .clone();
    assert_eq!(
        password["value"], "•••••••",
        "passwords are masked: {password}"
    );
    text(
        &session
            .call("tapOn", json!({ "text": "Sign in", "action": "tap" }))
            .unwrap(),
    );
    let page = observe(&session);
    assert!(
        has(&page, "heading", "Welcome, alice@example.com"),
        "{page}"
    );
    assert!(
        page["url"]
            .as_str()
            .unwrap()
            .starts_with(&app.url("/welcome"))
    );

    text(&session.call("tapOn", json!({ "text": "Items" })).unwrap());
    let page = observe(&session);
    assert!(
        has(&page, "link", "Item 1") && !has(&page, "link", "Item 45"),
        "{page}"
    );
    assert!(page["offscreen"]["belowPx"].as_i64().unwrap() > 0);

    let swiped = text(
        &session
            .call(
                "swipeOn",
                json!({ "direction": "up", "untilVisible": "Item 45", "maxSwipes": 20 }),
            )
            .unwrap(),
    );
    assert!(swiped.contains("`Item 45` is visible"), "{swiped}");
    assert!(swiped.contains("link \"Item 45\""), "{swiped}");

    text(&session.call("tapOn", json!({ "text": "Item 45" })).unwrap());
    let page = observe(&session);
    assert!(has(&page, "heading", "Item 45"), "{page}");

    let dialog = text(&session.call("tapOn", json!({ "text": "Delete" })).unwrap());
    assert!(
        dialog.contains("modal dialog \"Delete Item 45?\""),
        "{dialog}"
    );
    let page = observe(&session);
    assert_eq!(page["modal"], "Delete Item 45?");
    assert!(
        has(&page, "button", "Cancel") && !has(&page, "link", "Back to list"),
        "only the dialog is listed: {page}"
    );

    text(&session.call("tapOn", json!({ "text": "Cancel" })).unwrap());
    let page = observe(&session);
    assert!(
        page["modal"].is_null() && has(&page, "link", "Back to list"),
        "{page}"
    );

    text(
        &session
            .call("pressButton", json!({ "button": "back" }))
            .unwrap(),
    );
    let page = observe(&session);
    // Back restores the list where it was left: scrolled down, Item 45 focused.
    assert_eq!(page["title"], "Items - Fixture", "{page}");
    assert!(
        has(&page, "link", "Item 45") && page["offscreen"]["abovePx"].as_i64().unwrap() > 0,
        "{page}"
    );
}

#[test]
fn refs_stay_stable_while_elements_live() {
    let World {
        http,
        harness: _harness,
        app: _app,
    } = world(&["--web-warm", "1"]);
    let session = acquire(&http, "refs", json!({ "app": "fixture" }));
    let first = observe(&session);
    let second = observe(&session);
    assert_eq!(first["elements"], second["elements"]);
    let reference = first["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "Items")
        .unwrap()["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    text(&session.call("tapOn", json!({ "ref": reference })).unwrap());
    // The old page's refs are gone with their elements; refs are never reused.
    let error = error_text(&session.call("tapOn", json!({ "ref": reference })).unwrap());
    assert!(error.starts_with("[not_found]"), "{error}");
    let page = observe(&session);
    assert!(
        page["elements"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["ref"] != reference.as_str())
    );
}

#[test]
fn sessions_are_isolated_and_release_resets_the_device() {
    let World {
        http,
        app,
        harness: _harness,
    } = world(&["--web-warm", "2"]);
    let alpha = acquire(&http, "alpha", json!({}));
    let beta = acquire(&http, "beta", json!({}));
    let storage = app.url("/storage");
    text(&alpha.call("openLink", json!({ "url": storage })).unwrap());
    text(
        &alpha
            .call("tapOn", json!({ "text": "Remember me" }))
            .unwrap(),
    );
    assert!(
        observe(&alpha)["elements"]
            .to_string()
            .contains("Remembered: yes; Cookie: remembered=yes")
    );
    text(&beta.call("openLink", json!({ "url": storage })).unwrap());
    assert!(
        observe(&beta)["elements"]
            .to_string()
            .contains("Remembered: nothing; Cookie: no cookie"),
        "no cookies or storage shared"
    );

    let released = alpha.call("releaseDevice", json!({})).unwrap();
    assert_eq!(released["isError"], false, "{released}");
    let error = error_text(&alpha.call("observe", json!({})).unwrap());
    assert!(
        error.starts_with("[not_found]") && error.contains("getWeb"),
        "{error}"
    );

    // The released device is reset and comes back warm; a new session finds it clean.
    wait_until(Duration::from_secs(30), || {
        let listed = http.call("listDevices", json!({})).ok()?;
        let devices = listed["structuredContent"]["devices"].as_array()?.clone();
        devices.iter().any(|d| d["state"] == "warm").then_some(())
    })
    .unwrap();
    let gamma = acquire(&http, "gamma", json!({}));
    text(&gamma.call("openLink", json!({ "url": storage })).unwrap());
    assert!(
        observe(&gamma)["elements"]
            .to_string()
            .contains("Remembered: nothing; Cookie: no cookie")
    );
}

#[test]
fn bad_input_gets_typed_errors_and_the_session_stays_usable() {
    let World {
        http,
        app,
        harness: _harness,
    } = world(&["--web-warm", "1"]);
    let session = acquire(&http, "bad", json!({}));
    text(
        &session
            .call("openLink", json!({ "url": app.url("/list") }))
            .unwrap(),
    );
    for (arguments, prefix) in [
        (json!({ "ref": "e999999" }), "[not_found]"),
        (json!({ "text": "No such thing anywhere" }), "[not_found]"),
        (json!({ "id": "missing" }), "[not_found]"),
        (json!({ "x": 5000, "y": 5 }), "[invalid_input]"),
        (json!({ "text": "Item 1", "ref": "e1" }), "[invalid_input]"),
        (json!({}), "[invalid_input]"),
    ] {
        let error = error_text(&session.call("tapOn", arguments.clone()).unwrap());
        assert!(error.starts_with(prefix), "{arguments}: {error}");
    }
    let full = session
        .call("observe", json!({ "full": true, "format": "json" }))
        .unwrap();
    let offscreen = full["structuredContent"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["offscreen"] == true && e["role"] == "link")
        .unwrap()
        .clone();
    let error = error_text(
        &session
            .call("tapOn", json!({ "ref": offscreen["ref"] }))
            .unwrap(),
    );
    assert!(
        error.starts_with("[invalid_input]") && error.contains("off screen"),
        "{error}"
    );
    for url in [
        "file:///etc/passwd",
        "chrome://version",
        "javascript:alert(1)",
        "data:text/html,hi",
    ] {
        let error = error_text(&session.call("openLink", json!({ "url": url })).unwrap());
        assert!(error.starts_with("[invalid_input]"), "{url}: {error}");
    }
    let error = error_text(
        &session
            .call("launchApp", json!({ "appId": "nope" }))
            .unwrap(),
    );
    assert!(error.starts_with("[not_found]"), "{error}");
    let error = error_text(&session.call("inputText", json!({ "text": "x" })).unwrap());
    assert!(error.contains("no text field is focused"), "{error}");
    let error = error_text(&http.call("observe", json!({})).unwrap());
    assert!(error.contains("needs a session"), "{error}");
    // Still usable.
    assert!(has(&observe(&session), "heading", "Items"));
}

#[test]
fn actions_cover_coordinates_keys_drag_rotate_and_screenshots() {
    let World {
        http,
        app,
        harness: _harness,
    } = world(&["--web-warm", "1"]);
    let session = acquire(&http, "acts", json!({}));
    text(
        &session
            .call("openLink", json!({ "url": app.url("/canvas") }))
            .unwrap(),
    );
    let page = observe(&session);
    let canvas = page["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["role"] == "canvas")
        .unwrap()
        .clone();
    let (x, y) = (
        canvas["bounds"][0].as_f64().unwrap() + 100.0,
        canvas["bounds"][1].as_f64().unwrap() + 50.0,
    );
    let tapped = text(&session.call("tapOn", json!({ "x": x, "y": y })).unwrap());
    assert!(tapped.contains("Clicked at 100,50"), "{tapped}");

    text(
        &session
            .call("openLink", json!({ "url": app.url("/keys") }))
            .unwrap(),
    );
    text(&session.call("tapOn", json!({ "id": "field" })).unwrap());
    text(&session.call("sendKeys", json!({ "text": "hi" })).unwrap());
    let submitted = text(
        &session
            .call("pressButton", json!({ "button": "enter" }))
            .unwrap(),
    );
    assert!(
        submitted.contains("key:h key:i key:Enter") && submitted.contains("Submitted: hi"),
        "{submitted}"
    );
    text(&session.call("clearText", json!({ "id": "field" })).unwrap());
    let cleared = observe(&session);
    let field = cleared["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "field")
        .unwrap()
        .clone();
    assert!(field.get("value").is_none(), "{field}");

    text(
        &session
            .call("openLink", json!({ "url": app.url("/drag") }))
            .unwrap(),
    );
    let dropped = text(
        &session
            .call(
                "dragAndDrop",
                json!({ "from": { "text": "Drag me" }, "to": { "text": "Drop zone" } }),
            )
            .unwrap(),
    );
    assert!(dropped.contains("Dropped"), "{dropped}");

    let rotated = session
        .call("rotate", json!({ "orientation": "landscape" }))
        .unwrap();
    assert!(text(&rotated).contains("landscape 915x412"), "{rotated}");

    let shot = session.call("screenshot", json!({ "width": 200 })).unwrap();
    assert!(
        text(&shot).starts_with("screenshot 200x"),
        "the image is as wide as asked: {shot}"
    );
    assert_eq!(shot["content"][1]["type"], "image");
    assert_eq!(shot["content"][1]["mimeType"], "image/jpeg");
    assert!(
        shot["content"][1]["data"]
            .as_str()
            .unwrap()
            .starts_with("/9j/"),
        "JPEG magic"
    );
    let with_image = session
        .call("observe", json!({ "screenshot": true }))
        .unwrap();
    assert_eq!(with_image["content"][1]["type"], "image");
}

#[test]
fn a_killed_browser_loses_only_its_session_and_is_replaced() {
    let World { harness, http, app } = world(&["--web-warm", "2"]);
    let doomed = acquire(&http, "doomed", json!({}));
    let survivor = acquire(&http, "survivor", json!({}));
    text(
        &survivor
            .call("openLink", json!({ "url": app.url("/") }))
            .unwrap(),
    );
    let listing = harness
        .run(["devices", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let listing: Value = serde_json::from_str(&listing.stdout()).unwrap();
    let device = listing["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["session"] == "doomed")
        .unwrap()
        .clone();
    let pid = device["pid"].as_u64().unwrap() as i32;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();

    let error = wait_until(Duration::from_secs(20), || {
        let result = doomed.call("observe", json!({})).ok()?;
        (result["isError"] == true).then(|| error_text(&result))
    })
    .unwrap();
    assert!(error.starts_with("[device_lost]"), "{error}");
    assert!(
        has(&observe(&survivor), "heading", "Fixture app"),
        "the other session is untouched"
    );
    // No zombie: the killed browser was reaped.
    wait_until(Duration::from_secs(10), || {
        (!paddock_process::is_zombie(pid.unsigned_abs())).then_some(())
    })
    .unwrap();
    // The pool is back to two warm devices beside the survivor's.
    wait_until(Duration::from_secs(60), || {
        let listing = harness.run(["devices", "--json"]).ok()?.stdout();
        let listing: Value = serde_json::from_str(&listing).ok()?;
        let warm = listing["devices"]
            .as_array()?
            .iter()
            .filter(|d| d["state"] == "warm")
            .count();
        (warm >= 2).then_some(())
    })
    .unwrap();
    // The lost session can acquire again.
    acquire(&http, "doomed", json!({}));
}

/// Chromium's DevTools is reachable only through the daemon's pipes: no process the daemon
/// started has `--remote-debugging-port` in its arguments or a TCP socket listening (a DevTools
/// port on loopback has no authentication: any local user could read the profile's files and
/// cookies through it).
#[test]
fn web_devices_speak_cdp_over_a_pipe_and_listen_on_no_tcp_port() {
    // The check can fail: it finds listeners of this very process, on IPv4 and on IPv6.
    let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let v6 = std::net::TcpListener::bind("[::1]:0").ok();
    let own = procfs::tcp_listening(&[std::process::id()]).unwrap();
    let port = |listener: &std::net::TcpListener| listener.local_addr().unwrap().port();
    assert!(
        own.iter()
            .any(|socket| !socket.ipv6 && socket.port == port(&v4)),
        "{own:?}"
    );
    if let Some(v6) = &v6 {
        assert!(
            own.iter()
                .any(|socket| socket.ipv6 && socket.port == port(v6)),
            "{own:?}"
        );
    }

    let World { harness, http, app } = world(&["--web-warm", "2"]);
    // A bound device with a page open (so renderers run) beside the refilled warm set.
    let session = acquire(&http, "pipe", json!({}));
    text(
        &session
            .call("openLink", json!({ "url": app.url("/") }))
            .unwrap(),
    );
    let devices = wait_until(Duration::from_secs(60), || {
        let listing = harness.run(["devices", "--json"]).ok()?.stdout();
        let listing: Value = serde_json::from_str(&listing).ok()?;
        let devices = listing["devices"].as_array()?.clone();
        let warm = devices.iter().filter(|d| d["state"] == "warm").count();
        (warm >= 2).then_some(devices)
    })
    .unwrap();
    let status = harness
        .run(["daemon", "status", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let status: Value = serde_json::from_str(status.stdout().trim()).unwrap();
    let daemon = u32::try_from(status["pid"].as_u64().unwrap()).unwrap();

    let started: Vec<(u32, Vec<String>)> = procfs::descendants(daemon)
        .into_iter()
        .filter_map(|pid| Some((pid, procfs::cmdline(pid)?)))
        .collect();
    // Every device's browser is among them, started with the pipe.
    let browsers: Vec<u32> = started
        .iter()
        .filter(|(_, arguments)| {
            arguments.iter().any(|a| a == "--remote-debugging-pipe")
                && !arguments.iter().any(|a| a.starts_with("--type="))
        })
        .map(|(pid, _)| *pid)
        .collect();
    for device in &devices {
        let pid = u32::try_from(device["pid"].as_u64().unwrap()).unwrap();
        assert!(browsers.contains(&pid), "{device} not in {started:?}");
    }
    assert!(browsers.len() >= 3, "{started:?}");
    for (pid, arguments) in &started {
        assert!(
            !arguments
                .iter()
                .any(|a| a.starts_with("--remote-debugging-port")),
            "process {pid} was started with a DevTools port: {arguments:?}"
        );
    }
    let pids: Vec<u32> = started.iter().map(|(pid, _)| *pid).collect();
    let listening = procfs::tcp_listening(&pids).unwrap();
    assert!(
        listening.is_empty(),
        "processes the daemon started listen on TCP: {listening:?}"
    );
}

#[test]
fn idle_sessions_are_released() {
    let World {
        http,
        harness: _harness,
        app: _app,
    } = world(&["--web-warm", "1", "--device-idle-timeout-secs", "1"]);
    let session = acquire(&http, "idle", json!({}));
    let error = wait_until(Duration::from_secs(20), || {
        let listed = http.call("listDevices", json!({})).ok()?;
        let bound = listed["structuredContent"]["devices"]
            .as_array()?
            .iter()
            .any(|d| d["session"] == "idle");
        (!bound).then_some(())
    })
    .map(|()| error_text(&session.call("observe", json!({})).unwrap()))
    .unwrap();
    assert!(
        error.starts_with("[not_found]") && error.contains("without use"),
        "{error}"
    );
}

#[test]
fn a_daemon_restart_ends_every_session() {
    let World { harness, http, .. } = world(&["--web-warm", "1"]);
    let app_arg = http.clone();
    acquire(&app_arg, "before-restart", json!({}));
    harness
        .run(["daemon", "restart", "--web-warm", "0"])
        .unwrap()
        .success()
        .unwrap();
    let http = McpHttp::for_harness(&harness)
        .unwrap()
        .with_session("before-restart");
    let error = error_text(&http.call("observe", json!({})).unwrap());
    assert!(
        error.starts_with("[device_lost]") && error.contains("restarted"),
        "{error}"
    );
}

#[test]
fn enable_tools_at_acquisition_follow_spec_003() {
    let World {
        http,
        harness: _harness,
        app: _app,
    } = world(&["--web-warm", "1"]);
    let session = http.with_session("caps");
    let rejected = session
        .call(
            "getWeb",
            json!({ "enableTools": ["clipboard", "noSuchTool"] }),
        )
        .unwrap();
    assert!(error_text(&rejected).starts_with("[invalid_input]"));
    let listed = http.call("listDevices", json!({})).unwrap();
    assert!(
        listed["structuredContent"]["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["session"].is_null()),
        "no device work happened"
    );

    let answer = session
        .call(
            "getWeb",
            json!({ "enableTools": ["clipboard", "setToolEnabled"] }),
        )
        .unwrap();
    let answer = &answer["structuredContent"];
    assert_eq!(answer["skipped"], json!(["setToolEnabled"]));
    let enabled: Vec<&str> = answer["enabledTools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let gated: Vec<&str> = answer["gatedTools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(enabled.contains(&"clipboard") && enabled.contains(&"observe"));
    assert_eq!(
        gated,
        [
            "highlight",
            "networkBody",
            "evaluate",
            "installApp",
            "sqlQuery"
        ]
    );
    let names = session.tool_names().unwrap();
    assert!(names.contains(&"clipboard".to_owned()) && !names.contains(&"highlight".to_owned()));
    assert!(
        !http.tool_names().unwrap().contains(&"clipboard".to_owned()),
        "only that session sees it"
    );
    // Omitted tools stay callable.
    let written = session
        .call(
            "clipboard",
            json!({ "operation": "write", "text": "copied" }),
        )
        .unwrap();
    assert_eq!(written["structuredContent"]["text"], "copied");

    let bad = http
        .call(
            "provisionDevice",
            json!({ "platform": "web", "boot": false, "enableTools": ["clipboard"] }),
        )
        .unwrap();
    assert!(error_text(&bad).contains("boot: true"));
    let provisioned = http
        .with_session("prov")
        .call(
            "provisionDevice",
            json!({ "platform": "web", "boot": true, "enableTools": ["highlight"] }),
        )
        .unwrap();
    let provisioned = &provisioned["structuredContent"];
    assert_eq!(provisioned["sessionUuid"], "prov");
    assert!(
        provisioned["enabledTools"]
            .as_array()
            .unwrap()
            .contains(&json!("highlight"))
    );
    assert!(provisioned.get("gatedTools").is_none());
    let android = http
        .call("getAndroid", json!({ "avdName": "Pixel_9" }))
        .unwrap();
    let android = error_text(&android);
    assert!(android.starts_with("[unavailable]"), "{android}");
    assert!(android.contains("--android-adb"), "{android}");
}

#[test]
fn a_new_session_id_is_minted_without_one() {
    let World {
        http,
        harness: _harness,
        app: _app,
    } = world(&["--web-warm", "1"]);
    let answer = http.call("getWeb", json!({})).unwrap();
    let session = answer["structuredContent"]["sessionUuid"]
        .as_str()
        .unwrap()
        .to_owned();
    // An RFC 9562 version 4 UUID: 8-4-4-4-12 lowercase hex, version nibble 4, variant 10xx.
    let groups: Vec<&str> = session.split('-').collect();
    assert_eq!(
        groups.iter().map(|group| group.len()).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12],
        "{session}"
    );
    assert!(
        session
            .chars()
            .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c)),
        "{session}"
    );
    assert!(groups[2].starts_with('4'), "{session}");
    assert!(groups[3].starts_with(['8', '9', 'a', 'b']), "{session}");
    let page = observe(&http.with_session(&session));
    assert_eq!(page["url"], "about:blank");
    let via_argument = http
        .call("observe", json!({ "__mcpSessionId": session }))
        .unwrap();
    assert!(text(&via_argument).contains("about:blank"));
}

#[test]
fn devices_cli_lists_and_warms() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    let empty = harness.run(["devices"]).unwrap().success().unwrap();
    assert!(empty.stdout().contains("no devices"), "{empty}");
    let warmed = harness
        .run(["devices", "warm", "1", "--profile", "desktop"])
        .unwrap()
        .success()
        .unwrap();
    assert!(warmed.stderr().contains("1/1 warm: web-1"), "{warmed}");
    assert_eq!(warmed.stdout().trim(), "web-1");
    let listed = harness.run(["devices"]).unwrap().success().unwrap();
    assert!(
        listed.stdout().contains("web-1")
            && listed.stdout().contains("desktop")
            && listed.stdout().contains("warm"),
        "{listed}"
    );
    let bad = harness
        .run(["devices", "warm", "1", "--platform", "android"])
        .unwrap();
    assert_eq!(bad.code(), Some(1), "{bad}");
}

/// What an LLM reads, pinned per fixture page (ports, device ids and bounds normalised: layout
/// pixels depend on the Chromium build's fonts).
#[test]
fn observe_snapshots_of_the_fixture_pages() {
    let World {
        http,
        app,
        harness: _harness,
    } = world(&["--web-warm", "1"]);
    let session = acquire(&http, "snap", json!({}));
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[port]");
    settings.add_filter(r"@-?\d+,-?\d+ \d+x\d+", "@[bounds]");
    settings.add_filter(r"web-\d+", "web-[n]");
    settings.add_filter(r"\d+px (above|below|to the right)", "[n]px $1");
    let _guard = settings.bind_to_scope();
    for (name, path) in [
        ("home", "/"),
        ("login", "/login"),
        ("list", "/list"),
        ("canvas", "/canvas"),
        ("table", "/table?rows=30"),
    ] {
        let opened = text(
            &session
                .call("openLink", json!({ "url": app.url(path) }))
                .unwrap(),
        );
        assert!(opened.contains("settled: true"), "{opened}");
        let observed = text(&session.call("observe", json!({})).unwrap());
        insta::assert_snapshot!(format!("observe_{name}"), observed);
    }
    text(
        &session
            .call("openLink", json!({ "url": app.url("/item/3") }))
            .unwrap(),
    );
    text(&session.call("tapOn", json!({ "text": "Delete" })).unwrap());
    insta::assert_snapshot!(
        "observe_item_dialog",
        text(&session.call("observe", json!({})).unwrap())
    );
}

/// The id of the device bound to `session` in `devices --json`, if one is.
fn bound_device(harness: &DaemonHarness, session: &str) -> Option<String> {
    let listing = harness.run(["devices", "--json"]).ok()?.stdout();
    let listing: Value = serde_json::from_str(&listing).ok()?;
    listing["devices"]
        .as_array()?
        .iter()
        .find(|device| device["session"] == session)
        .and_then(|device| device["id"].as_str().map(str::to_owned))
}

/// A one-shot stdio client (a new `paddock mcp` per call, as the Inspector CLI runs) keeps its
/// device across processes when it pins its session id; once the grace period passes with no
/// reconnect the device goes back, and the next call says so — not "released by releaseDevice",
/// which nobody called. Without a pinned id the device is released when the process exits.
#[test]
fn a_pinned_stdio_session_keeps_its_device_across_a_reconnect() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness
        .start_detached(&["--web-warm", "1", "--session-grace-secs", "20"])
        .unwrap();
    let mut first = McpStdio::start(&harness, &["--session-id", "one-shot"]).unwrap();
    let acquired = first.call("getWeb", json!({})).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    let device = acquired["structuredContent"]["device"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(first.close().unwrap().code(), Some(0));

    // The next process, same id, within the grace period: the same device, still bound.
    let mut second = McpStdio::start(&harness, &["--session-id", "one-shot"]).unwrap();
    let observed = second.call("observe", json!({})).unwrap();
    assert_eq!(observed["isError"], false, "{observed}");
    assert_eq!(bound_device(&harness, "one-shot"), Some(device));
    assert_eq!(second.close().unwrap().code(), Some(0));

    // No reconnect: after the grace period the device goes back to the pool.
    wait_until(Duration::from_secs(120), || {
        bound_device(&harness, "one-shot").is_none().then_some(())
    })
    .unwrap();
    let mut late = McpStdio::start(&harness, &["--session-id", "one-shot"]).unwrap();
    let error = late.call("observe", json!({})).unwrap();
    let message = error_text(&error);
    assert!(message.starts_with("[not_found]"), "{message}");
    assert!(
        message.contains("after its connection closed") && !message.contains("releaseDevice"),
        "{message}"
    );
    assert_eq!(late.close().unwrap().code(), Some(0));

    // An unpinned session is released as its process exits, with no grace.
    let mut unpinned = McpStdio::start(&harness, &[]).unwrap();
    let acquired = unpinned.call("getWeb", json!({})).unwrap();
    let session = acquired["structuredContent"]["sessionUuid"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(bound_device(&harness, &session).is_some());
    assert_eq!(unpinned.close().unwrap().code(), Some(0));
    wait_until(Duration::from_secs(60), || {
        bound_device(&harness, &session).is_none().then_some(())
    })
    .unwrap();
}

/// A long swipe reports its progress over stdio, and `notifications/cancelled` stops it where
/// it is: the answer is `[cancelled]` (not the `[not_found]` the whole swipe would end with),
/// and the session keeps its device and goes on working.
#[test]
fn a_long_swipe_reports_progress_and_stops_when_cancelled() {
    let World {
        harness,
        http: _http,
        app,
    } = world(&["--web-warm", "1"]);
    let mut client = McpStdio::start(&harness, &[]).unwrap();
    let acquired = client.call("getWeb", json!({})).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    let opened = client
        .call("openLink", json!({ "url": app.url("/list") }))
        .unwrap();
    assert_eq!(opened["isError"], false, "{opened}");
    client
        .send(&json!({
            "jsonrpc": "2.0",
            "id": "swipe-1",
            "method": "tools/call",
            "params": {
                "name": "swipeOn",
                "arguments": { "direction": "up", "untilVisible": "Item 999", "maxSwipes": 50 },
                "_meta": { "progressToken": "swipe-progress" }
            }
        }))
        .unwrap();
    let first = client
        .wait_notification("notifications/progress", Duration::from_secs(60))
        .unwrap();
    assert_eq!(
        first["params"]["progressToken"], "swipe-progress",
        "{first}"
    );
    assert_eq!(first["params"]["total"].as_f64(), Some(50.0), "{first}");
    assert!(
        first["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("Item 999")),
        "{first}"
    );
    client
        .send(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": { "requestId": "swipe-1", "reason": "the test changed its mind" }
        }))
        .unwrap();
    // Cancelled requests get no answer (the MCP spec asks the receiver not to respond). The
    // swipe stopped where it was: the screen holds still from one observation to the next,
    // and no more progress arrives for it.
    // A scroll the browser had already been sent when the cancel arrived may still land, so
    // the screen is first seen holding still (two looks 300 ms apart agree; a swipe loop still
    // running would move it every time), then checked again two seconds later.
    let first_look = wait_until(Duration::from_secs(30), || {
        let before = client.call("observe", json!({ "format": "json" })).ok()?;
        std::thread::sleep(Duration::from_millis(300));
        let after = client.call("observe", json!({ "format": "json" })).ok()?;
        (before["structuredContent"]["elements"] == after["structuredContent"]["elements"])
            .then_some(after)
    })
    .unwrap();
    assert_eq!(first_look["isError"], false, "{first_look}");
    std::thread::sleep(Duration::from_secs(2));
    let second_look = client.call("observe", json!({ "format": "json" })).unwrap();
    assert_eq!(
        first_look["structuredContent"]["elements"], second_look["structuredContent"]["elements"],
        "the page kept scrolling after the cancel"
    );
    let swipe_progress = |client: &McpStdio| {
        client
            .notifications
            .iter()
            .filter(|message| message["params"]["progressToken"] == "swipe-progress")
            .count()
    };
    let seen_so_far = swipe_progress(&client);
    std::thread::sleep(Duration::from_secs(1));
    let _ = client.call("listDevices", json!({})).unwrap();
    assert_eq!(
        swipe_progress(&client),
        seen_so_far,
        "{:?}",
        client.notifications
    );
    assert_eq!(client.close().unwrap().code(), Some(0));
}

/// A `getWeb` that has to boot a device (none warm, and a debug delay slowing the boot) sends
/// `notifications/progress` for each boot stage over HTTP when the call carries a
/// `progressToken`, then its answer, on the same response stream.
#[test]
fn a_slow_boot_reports_its_stages_over_http() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DEBUG_DEVICE_BOOT_DELAY_MS", "1500");
    harness.start_detached(&["--web-warm", "0"]).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    let body = json!({
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": { "name": "getWeb", "arguments": {}, "_meta": { "progressToken": 42 } }
    });
    let response = http.post_raw(&body.to_string()).unwrap();
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(
        response.header("content-type"),
        Some("text/event-stream"),
        "{response:?}"
    );
    let messages = paddock_testkit::mcp::sse_messages(&response.body);
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|message| message["method"] == "notifications/progress")
        .collect();
    assert_eq!(
        progress
            .iter()
            .map(|message| message["params"]["progress"].as_f64().unwrap_or(-1.0))
            .collect::<Vec<_>>(),
        [0.0, 1.0, 2.0],
        "{messages:?}"
    );
    assert!(
        progress
            .iter()
            .all(|message| message["params"]["progressToken"] == 42
                && message["params"]["total"].as_f64() == Some(2.0)),
        "{messages:?}"
    );
    let answer = messages.last().unwrap();
    assert_eq!(answer["id"], 5, "{messages:?}");
    assert!(
        answer["result"]["structuredContent"]["sessionUuid"].is_string(),
        "{answer}"
    );
}

/// Screenshots are the session's resources: `imageAs: link` answers with a `resource_link`
/// (for clients with image or token limits), `resources/list` pages the session's own, and
/// `resources/read` returns the JPEG — to that session only; another session's URI is "not
/// found".
#[test]
fn screenshots_are_resources_only_their_session_reads() {
    let World {
        harness: _harness,
        http,
        app: _app,
    } = world(&["--web-warm", "2"]);
    let mine = acquire(&http, "shooter", json!({}));
    let other = acquire(&http, "bystander", json!({}));
    let linked = mine
        .call("screenshot", json!({ "imageAs": "link", "width": 200 }))
        .unwrap();
    assert_eq!(linked["isError"], false, "{linked}");
    let link = &linked["content"][1];
    assert_eq!(link["type"], "resource_link", "{linked}");
    assert_eq!(link["mimeType"], "image/jpeg", "{linked}");
    let uri = link["uri"].as_str().unwrap().to_owned();
    assert!(
        uri.starts_with("paddock://session/shooter/screenshot/") && uri.ends_with(".jpg"),
        "{uri}"
    );
    // An inline screenshot (observe's) is kept as a resource too.
    let observed = mine.call("observe", json!({ "screenshot": true })).unwrap();
    assert_eq!(observed["content"][1]["type"], "image", "{observed}");
    let listed = mine.rpc("resources/list", json!({})).unwrap();
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|resource| resource["uri"].as_str())
        .collect();
    assert_eq!(uris.len(), 2, "{listed}");
    assert_eq!(uris[0], uri, "{listed}");
    let read = mine.rpc("resources/read", json!({ "uri": uri })).unwrap();
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "image/jpeg", "{read}");
    use base64::Engine as _;
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(contents["blob"].as_str().unwrap())
        .unwrap();
    assert_eq!(&jpeg[..2], &[0xFF, 0xD8], "a JPEG");
    assert_eq!(Some(jpeg.len() as u64), link["size"].as_u64());
    // Another session neither lists nor reads it.
    let theirs = other.rpc("resources/list", json!({})).unwrap();
    assert_eq!(theirs["result"]["resources"], json!([]), "{theirs}");
    let stolen = other.rpc("resources/read", json!({ "uri": uri })).unwrap();
    assert_eq!(stolen["error"]["code"], -32002, "{stolen}");
    let nowhere = mine
        .rpc(
            "resources/read",
            json!({ "uri": "paddock://session/shooter/screenshot/999.jpg" }),
        )
        .unwrap();
    assert_eq!(nowhere["error"]["code"], -32002, "{nowhere}");
}

/// Stateless HTTP before 2026-07-28: the cancel is a POST of its own, tied to the call only by
/// the session header and the request id. It stops the running swipe — the call's stream ends
/// with `[cancelled]`, not the `[not_found]` of a swipe run to its end — and the audit line says
/// `cancelled`.
#[test]
fn a_separately_posted_cancel_stops_an_http_call() {
    let World { harness, http, app } = world(&["--web-warm", "1"]);
    let session = acquire(&http, "canceller", json!({}));
    let opened = session
        .call("openLink", json!({ "url": app.url("/list") }))
        .unwrap();
    assert_eq!(opened["isError"], false, "{opened}");
    let call = json!({
        "jsonrpc": "2.0",
        "id": "long-swipe",
        "method": "tools/call",
        "params": {
            "name": "swipeOn",
            "arguments": { "direction": "up", "untilVisible": "Item 999", "maxSwipes": 50 },
            "_meta": { "progressToken": "p" }
        }
    });
    let mut stream = paddock_testkit::RawRequest::new("POST", "/mcp")
        .bearer(&http.token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("x-paddock-session-id", "canceller")
        .body(call.to_string())
        .open(http.port, Duration::from_secs(60))
        .unwrap();
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    use std::io::Read as _;
    while !seen.contains("notifications/progress") {
        let read = stream.read(&mut buffer).unwrap();
        assert!(read > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
    }
    let cancel = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": { "requestId": "long-swipe", "reason": "changed my mind" }
    });
    let accepted = session.post_raw(&cancel.to_string()).unwrap();
    assert_eq!(accepted.status, 202, "{accepted:?}");
    let _ = stream.read_to_string(&mut seen);
    let answer = paddock_testkit::mcp::sse_messages(&seen)
        .into_iter()
        .find(|message| message["id"] == "long-swipe")
        .unwrap_or_else(|| panic!("no answer: {seen}"));
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("[cancelled]"), "{answer}");
    // The session goes on working. How far the page scrolled before the cancel varies, so the
    // whole document is observed: the heading may already be above the screen.
    let page = session
        .call("observe", json!({ "format": "json", "full": true }))
        .unwrap();
    assert_eq!(page["isError"], false, "{page}");
    assert!(
        has(&page["structuredContent"], "heading", "Items"),
        "{page}"
    );
    let log = std::fs::read_to_string(harness.paths().state_dir.join("logs/daemon.log")).unwrap();
    assert!(
        log.lines()
            .any(|line| line.contains(r#""toolName":"swipeOn""#)
                && line.contains(r#""outcome":"cancelled""#)),
        "{log}"
    );
}
