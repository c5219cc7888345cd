//! MCP through the real daemon: stateless HTTP at `/mcp`, `paddock mcp` over the control
//! socket, policy profiles, every `setToolEnabled` rule, audit lines and bad input.
#![cfg(test)]

use std::time::Duration;

use paddock_testkit::{DaemonHarness, McpHttp, McpStdio, RawRequest};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const DEFAULT_TOOLS: [&str; 3] = ["setToolEnabled", "listDevices", "discovery"];
/// The tools these tests are about; device tools have their own tests (tests/devices.rs) and
/// the whole surface is pinned by the contract snapshot.
const CORE_TOOLS: [&str; 4] = ["setToolEnabled", "listDevices", "discovery", "daemonInfo"];

fn core(names: Vec<String>) -> Vec<String> {
    names
        .into_iter()
        .filter(|name| CORE_TOOLS.contains(&name.as_str()))
        .collect()
}

fn core_json(names: &Value) -> Value {
    json!(
        names
            .as_array()
            .map(|names| names
                .iter()
                .filter(|name| CORE_TOOLS.contains(&name.as_str().unwrap_or_default()))
                .cloned()
                .collect::<Vec<_>>())
            .unwrap_or_default()
    )
}

fn started(extra: &[&str]) -> (DaemonHarness, McpHttp) {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(extra).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    (harness, http)
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn assert_tool_error(result: &Value, prefix: &str) {
    assert_eq!(result["isError"], true, "{result}");
    assert!(text_of(result).starts_with(prefix), "{result}");
}

fn daemon_log(harness: &DaemonHarness) -> String {
    std::fs::read_to_string(harness.paths().state_dir.join("logs/daemon.log")).unwrap()
}

#[test]
fn stateless_http_lists_and_calls_without_session_headers() {
    let (_harness, http) = started(&[]);
    let response = http
        .post_raw(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#)
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.header("mcp-session-id"), None);
    let names = paddock_testkit::mcp::tool_names(&response.json().unwrap()).unwrap();
    assert_eq!(core(names.clone()), DEFAULT_TOOLS);
    assert!(names.contains(&"getWeb".to_owned()) && names.contains(&"observe".to_owned()));
    assert!(
        !names.contains(&"clipboard".to_owned()),
        "clipboard is off by default"
    );

    let result = http.call("listDevices", json!({})).unwrap();
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"], json!({ "devices": [] }));

    // An initialize still works for older clients, and no session id is minted.
    let init = RawRequest::new("POST", "/mcp")
        .bearer(&http.token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .send(http.port)
        .unwrap();
    assert_eq!(init.status, 200);
    assert_eq!(init.header("mcp-session-id"), None);
    let init = init.json().unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    // No list-changed notification can reach a stateless HTTP client of this version.
    assert!(
        init["result"]["capabilities"]["tools"]
            .get("listChanged")
            .is_none(),
        "{init}"
    );

    for method in ["GET", "DELETE"] {
        let response = RawRequest::new(method, "/mcp")
            .bearer(&http.token)
            .send(http.port)
            .unwrap();
        assert_eq!(response.status, 405, "{method}");
    }
}

#[test]
fn bad_input_gets_clear_errors_and_the_daemon_keeps_serving() {
    let (_harness, http) = started(&[]);
    let malformed = http.post_raw("{not json").unwrap();
    assert_eq!(malformed.status, 400);
    assert_eq!(malformed.json().unwrap()["error"]["code"], -32700);
    let batch = http.post_raw("[]").unwrap();
    assert_eq!(batch.json().unwrap()["error"]["code"], -32600);

    let unknown_method = http.rpc("tools/explode", json!({})).unwrap();
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    assert_eq!(
        unknown_method["error"]["message"], "Method not found: tools/explode",
        "{unknown_method}"
    );
    // Malformed `tools/call` parameters are invalid params, named; never "method not found".
    for body in [
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"listDevices","arguments":[]}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":7}}"#,
    ] {
        let answer = http.post_raw(body).unwrap().json().unwrap();
        assert_eq!(answer["id"], 3, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], -32602, "{body}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("params")),
            "{body}: {answer}"
        );
    }

    let unknown_tool = http
        .rpc(
            "tools/call",
            json!({ "name": "noSuchTool", "arguments": {} }),
        )
        .unwrap();
    assert_eq!(unknown_tool["error"]["code"], -32602);
    assert!(
        unknown_tool["error"]["message"]
            .as_str()
            .unwrap()
            .contains("noSuchTool")
    );

    assert_tool_error(
        &http.call("listDevices", json!({ "platform": 7 })).unwrap(),
        "[invalid_input]",
    );
    assert_tool_error(
        &http
            .call("listDevices", json!({ "platform": "symbian" }))
            .unwrap(),
        "[invalid_input]",
    );
    assert_tool_error(
        &http.call("listDevices", json!({ "extra": true })).unwrap(),
        "[invalid_input]",
    );
    assert_tool_error(
        &http.call("discovery", json!({})).unwrap(),
        "[invalid_input]",
    );
    assert_tool_error(
        &http
            .call("setToolEnabled", json!({ "toolName": "listDevices" }))
            .unwrap(),
        "[invalid_input]",
    );
    assert_tool_error(
        &http
            .call(
                "setToolEnabled",
                json!({ "toolName": "listDevices", "enabled": false, "sessionUuid": "never-seen" }),
            )
            .unwrap(),
        "[not_found]",
    );
    assert_tool_error(
        &http
            .with_session("bad id!")
            .call("listDevices", json!({}))
            .unwrap(),
        "[invalid_input]",
    );
    assert_tool_error(
        &http
            .with_session("a")
            .call("listDevices", json!({ "__mcpSessionId": "b" }))
            .unwrap(),
        "[invalid_input]",
    );

    let oversized = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    assert_eq!(http.post_raw(&oversized).unwrap().status, 413);

    // Still serving, and nothing changed.
    assert_eq!(http.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&http.token)
            .send(http.port)
            .unwrap()
            .status,
        200
    );
}

#[test]
fn the_in_band_session_id_is_removed_before_the_tool_sees_it() {
    let (_harness, http) = started(&[]);
    let status = http
        .call(
            "discovery",
            json!({ "operation": "status", "__mcpSessionId": "in-band-1" }),
        )
        .unwrap();
    assert_eq!(status["isError"], false, "{status}");
    assert_eq!(status["structuredContent"]["session"], "in-band-1");
    let header = http
        .with_session("header-1")
        .call("discovery", json!({ "operation": "status" }))
        .unwrap();
    assert_eq!(header["structuredContent"]["session"], "header-1");
}

#[test]
fn policy_profiles_shape_the_tool_surface() {
    let (_full, http) = started(&["--policy", "full", "--debug"]);
    assert_eq!(
        http.tool_names().map(core).unwrap(),
        ["setToolEnabled", "listDevices", "discovery", "daemonInfo"]
    );
    let info = http.call("daemonInfo", json!({})).unwrap();
    assert_eq!(info["structuredContent"]["policy"], "full");
    assert_eq!(info["structuredContent"]["debug"], true);

    let (_plain, http) = started(&[]);
    // Without --debug, daemonInfo is exactly an unknown tool.
    let hidden = http
        .rpc(
            "tools/call",
            json!({ "name": "daemonInfo", "arguments": {} }),
        )
        .unwrap();
    let unknown = http
        .rpc(
            "tools/call",
            json!({ "name": "noSuchTool", "arguments": {} }),
        )
        .unwrap();
    assert_eq!(hidden["error"]["code"], unknown["error"]["code"]);
    assert_eq!(
        hidden["error"]["message"]
            .as_str()
            .unwrap()
            .replace("daemonInfo", "X"),
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .replace("noSuchTool", "X")
    );

    let (harness, http) = started(&["--policy", "readonly"]);
    let listed = http.rpc("tools/list", json!({})).unwrap();
    assert_eq!(
        core(paddock_testkit::mcp::tool_names(&listed).unwrap()),
        DEFAULT_TOOLS
    );
    let discovery = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "discovery")
        .unwrap();
    assert!(
        discovery["description"]
            .as_str()
            .unwrap()
            .contains("Allowed operations under the `readonly` policy: `status`")
    );
    assert_eq!(
        discovery["inputSchema"]["properties"]["operation"]["enum"],
        json!(["status", "reset"]),
        "the schema keeps the full enum"
    );

    http.call(
        "setToolEnabled",
        json!({ "toolName": "listDevices", "enabled": false }),
    )
    .unwrap();
    let denied = http
        .call("discovery", json!({ "operation": "reset" }))
        .unwrap();
    assert_tool_error(&denied, "[forbidden]");
    // The denied reset never ran: the saved choice is still in force.
    assert!(
        !http
            .tool_names()
            .unwrap()
            .contains(&"listDevices".to_owned())
    );
    assert_eq!(
        http.call("discovery", json!({ "operation": "status" }))
            .unwrap()["isError"],
        false
    );
    let log = daemon_log(&harness);
    assert!(
        log.contains(r#""toolName":"discovery","operation":"reset","outcome":"denied""#),
        "{log}"
    );

    let harness = DaemonHarness::new(BIN).unwrap();
    let bad = harness
        .run(["daemon", "start", "--policy", "everything"])
        .unwrap();
    assert_eq!(bad.code(), Some(2), "{bad}");
    assert!(
        bad.stderr().contains("unknown policy profile `everything`"),
        "{bad}"
    );
}

#[test]
fn set_tool_enabled_single_batch_skipped_and_still_callable() {
    let (_harness, http) = started(&[]);
    let answer = http
        .call(
            "setToolEnabled",
            json!({ "toolName": "listDevices", "enabled": false }),
        )
        .unwrap();
    assert_eq!(answer["isError"], false, "{answer}");
    assert_eq!(
        core_json(&answer["structuredContent"]["enabledTools"]),
        json!(["discovery"])
    );
    assert_eq!(answer["structuredContent"]["scope"]["kind"], "profile");
    assert_eq!(
        http.tool_names().map(core).unwrap(),
        ["setToolEnabled", "discovery"]
    );
    // Omitted from discovery, still callable by name.
    assert_eq!(
        http.call("listDevices", json!({})).unwrap()["isError"],
        false
    );

    // One unknown name rejects the whole batch before anything is written.
    let rejected = http
        .call(
            "setToolEnabled",
            json!({ "toolNames": ["listDevices", "listdevices"], "enabled": true }),
        )
        .unwrap();
    assert_tool_error(&rejected, "[invalid_input]");
    assert!(text_of(&rejected).contains("`listdevices`"));
    assert_eq!(
        http.tool_names().map(core).unwrap(),
        ["setToolEnabled", "discovery"]
    );

    let batch = http
        .call(
            "setToolEnabled",
            json!({ "toolNames": ["setToolEnabled", "listDevices", "discovery"] }),
        )
        .unwrap();
    assert_eq!(
        batch["structuredContent"]["skipped"],
        json!(["setToolEnabled"])
    );
    assert_eq!(
        core_json(&batch["structuredContent"]["enabledTools"]),
        json!(["listDevices", "discovery"])
    );
    assert_eq!(http.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
}

#[test]
fn session_scope_and_persistence_across_restart() {
    let (harness, http) = started(&[]);
    let alpha = http.with_session("alpha");
    let beta = http.with_session("beta");
    assert_eq!(alpha.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
    assert_eq!(beta.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
    // Scope a choice to the routing session `alpha` from a third party.
    let answer = http
        .call(
            "setToolEnabled",
            json!({ "toolName": "discovery", "enabled": false, "sessionUuid": "alpha" }),
        )
        .unwrap();
    assert_eq!(
        answer["structuredContent"]["scope"],
        json!({ "kind": "session", "id": "alpha" })
    );
    assert_eq!(
        alpha.tool_names().map(core).unwrap(),
        ["setToolEnabled", "listDevices"]
    );
    assert_eq!(beta.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
    assert_eq!(http.tool_names().map(core).unwrap(), DEFAULT_TOOLS);

    // A profile choice applies to every session of the owner unless the session overrides it.
    http.call(
        "setToolEnabled",
        json!({ "toolName": "listDevices", "enabled": false }),
    )
    .unwrap();
    assert_eq!(
        beta.tool_names().map(core).unwrap(),
        ["setToolEnabled", "discovery"]
    );
    alpha
        .call(
            "setToolEnabled",
            json!({ "toolName": "listDevices", "enabled": true, "sessionUuid": "alpha" }),
        )
        .unwrap();
    assert_eq!(
        alpha.tool_names().map(core).unwrap(),
        ["setToolEnabled", "listDevices"]
    );

    harness
        .run(["daemon", "restart"])
        .unwrap()
        .success()
        .unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    assert_eq!(
        http.with_session("alpha").tool_names().map(core).unwrap(),
        ["setToolEnabled", "listDevices"]
    );
    assert_eq!(
        http.with_session("beta").tool_names().map(core).unwrap(),
        ["setToolEnabled", "discovery"]
    );
    assert_eq!(
        http.tool_names().map(core).unwrap(),
        ["setToolEnabled", "discovery"]
    );

    // reset removes the saved choices of a scope.
    let reset = http
        .call("discovery", json!({ "operation": "reset" }))
        .unwrap();
    assert_eq!(reset["structuredContent"]["removed"], 1, "{reset}");
    assert_eq!(http.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
}

#[test]
fn startup_precedence_matrix() {
    // env disables; CLI re-enables; a saved profile choice beats the CLI; a session choice
    // beats the profile.
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DISABLED_TOOLS", "listDevices, discovery");
    harness.start_detached(&[]).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    assert_eq!(http.tool_names().map(core).unwrap(), ["setToolEnabled"]);
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();

    harness
        .start_detached(&["--enable-tool", "discovery"])
        .unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    assert_eq!(
        http.tool_names().map(core).unwrap(),
        ["setToolEnabled", "discovery"]
    );
    let status = http
        .call("discovery", json!({ "operation": "status" }))
        .unwrap();
    let tools = status["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    let decided =
        |name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap()["decidedBy"].clone();
    assert_eq!(decided("discovery"), "command_line");
    assert_eq!(decided("listDevices"), "environment");

    http.call(
        "setToolEnabled",
        json!({ "toolName": "discovery", "enabled": false }),
    )
    .unwrap();
    assert_eq!(http.tool_names().map(core).unwrap(), ["setToolEnabled"]);
    let session = http.with_session("s");
    session
        .call(
            "setToolEnabled",
            json!({ "toolName": "discovery", "enabled": true, "sessionUuid": "s" }),
        )
        .unwrap();
    assert_eq!(
        session.tool_names().map(core).unwrap(),
        ["setToolEnabled", "discovery"]
    );
    let status = session
        .call("discovery", json!({ "operation": "status" }))
        .unwrap();
    let tools = status["structuredContent"]["tools"].as_array().unwrap();
    assert_eq!(
        tools
            .iter()
            .find(|tool| tool["name"] == "discovery")
            .unwrap()["decidedBy"],
        "session"
    );
}

#[test]
fn invalid_startup_selections_fail_and_always_on_names_are_ignored() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_ENABLED_TOOLS", "listDevices,noSuchTool");
    let unknown = harness.run(["daemon", "start"]).unwrap();
    assert_eq!(unknown.code(), Some(1), "{unknown}");
    assert!(
        unknown.stderr().contains("unknown tool `noSuchTool`"),
        "{unknown}"
    );
    harness.remove_env("PADDOCK_ENABLED_TOOLS");

    let conflict = harness
        .run([
            "daemon",
            "start",
            "--enable-tool",
            "listDevices",
            "--disable-tool",
            "listDevices",
        ])
        .unwrap();
    assert_eq!(conflict.code(), Some(1), "{conflict}");
    assert!(
        conflict.stderr().contains("both enabled and disabled"),
        "{conflict}"
    );
    assert!(!harness.paths().token_file.exists());

    let case = harness
        .run(["daemon", "start", "--enable-tool", "ListDevices"])
        .unwrap();
    assert_eq!(case.code(), Some(1), "names are case-sensitive: {case}");

    harness
        .start_detached(&["--disable-tool", "setToolEnabled"])
        .unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    assert_eq!(http.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
    assert!(daemon_log(&harness).contains("ignoring an always-on tool"));
}

#[test]
fn audit_lines_have_the_spec_shape_and_no_arguments_or_secrets() {
    let (harness, http) = started(&[]);
    let marker = "argument-marker-7f3a";
    http.with_session(marker)
        .call("discovery", json!({ "operation": "status" }))
        .unwrap();
    http.call(
        "setToolEnabled",
        json!({ "toolName": "listDevices", "enabled": false, "sessionUuid": marker }),
    )
    .unwrap();
    http.call("listDevices", json!({ "platform": "web" }))
        .unwrap();
    http.call(
        "discovery",
        json!({ "operation": "status", "__mcpSessionId": marker }),
    )
    .unwrap();
    let _ = http.rpc(
        "tools/call",
        json!({ "name": "noSuchTool", "arguments": { "secret": marker } }),
    );
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();

    let log = daemon_log(&harness);
    let audits: Vec<Value> = log
        .lines()
        .filter(|line| line.starts_with(r#"{"type":"audit""#))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(audits.len(), 5, "{log}");
    for event in &audits {
        let keys: Vec<&str> = event
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in &keys {
            assert!(
                [
                    "type",
                    "toolName",
                    "operation",
                    "outcome",
                    "durationMs",
                    "requestId",
                    "auth"
                ]
                .contains(key),
                "{event}"
            );
        }
        assert!(event["durationMs"].is_u64());
        assert_eq!(event["auth"]["kind"], "local_owner");
        assert!(
            event["auth"]["subject"]
                .as_str()
                .unwrap()
                .starts_with("uid:")
        );
    }
    assert_eq!(audits[0]["operation"], "status");
    assert_eq!(audits[1]["outcome"], "ok");
    assert_eq!(audits[2]["toolName"], "listDevices");
    assert_eq!(audits[4]["outcome"], "error");
    assert!(!log.contains(marker), "an argument value reached the log");
    assert!(!log.contains(&http.token), "the token reached the log");
}

#[test]
fn paddock_mcp_starts_the_daemon_and_streams_list_changed() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let mut first = McpStdio::start(&harness, &[]).unwrap();
    assert_eq!(first.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
    let status = harness
        .run(["daemon", "status", "--json"])
        .unwrap()
        .success()
        .unwrap();
    assert!(
        status.stdout().contains(r#""state":"ready""#),
        "paddock mcp started the daemon"
    );

    let mut second = McpStdio::start(&harness, &["--session-id", "second-conn"]).unwrap();
    assert_eq!(second.tool_names().map(core).unwrap(), DEFAULT_TOOLS);

    // A session-scoped change notifies only the connection whose set changed.
    let answer = second
        .call(
            "setToolEnabled",
            json!({ "toolName": "discovery", "enabled": false, "sessionUuid": "second-conn" }),
        )
        .unwrap();
    assert_eq!(answer["isError"], false, "{answer}");
    second
        .wait_notification("notifications/tools/list_changed", Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        second.tool_names().map(core).unwrap(),
        ["setToolEnabled", "listDevices"]
    );

    // A profile change reaches both.
    first
        .call(
            "setToolEnabled",
            json!({ "toolName": "listDevices", "enabled": false }),
        )
        .unwrap();
    first
        .wait_notification("notifications/tools/list_changed", Duration::from_secs(10))
        .unwrap();
    second
        .wait_notification("notifications/tools/list_changed", Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        first.tool_names().map(core).unwrap(),
        ["setToolEnabled", "discovery"]
    );
    assert_eq!(second.tool_names().map(core).unwrap(), ["setToolEnabled"]);
    assert!(
        first.notifications.is_empty(),
        "only one notification: {:?}",
        first.notifications
    );

    // Malformed input on stdin gets a JSON-RPC parse error on stdout.
    first.send_raw("{oops").unwrap();
    let parse_error = first.next_message(Duration::from_secs(10)).unwrap();
    assert_eq!(parse_error["error"]["code"], -32700);
    // A batch is refused with `"id": null` (there is no one id to answer).
    first
        .send_raw(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)
        .unwrap();
    let batch = first.next_message(Duration::from_secs(10)).unwrap();
    assert_eq!(batch["error"]["code"], -32600, "{batch}");
    assert!(batch.get("id").is_some_and(Value::is_null), "{batch}");
    // The same parameter and method checks as over HTTP.
    let arguments = first
        .request(
            "tools/call",
            json!({ "name": "listDevices", "arguments": [] }),
        )
        .unwrap();
    assert_eq!(arguments["error"]["code"], -32602, "{arguments}");
    let unknown = first.request("resources/explode", json!({})).unwrap();
    assert_eq!(
        unknown["error"]["message"], "Method not found: resources/explode",
        "{unknown}"
    );
    assert_eq!(first.close().unwrap().code(), Some(0));
}

#[test]
fn paddock_mcp_survives_a_daemon_restart() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let mut client = McpStdio::start(&harness, &[]).unwrap();
    assert_eq!(client.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
    let before = harness.run(["daemon", "status", "--json"]).unwrap();
    harness
        .run(["daemon", "restart"])
        .unwrap()
        .success()
        .unwrap();
    let after = harness.run(["daemon", "status", "--json"]).unwrap();
    assert_ne!(before.stdout(), after.stdout());
    client
        .wait_notification("notifications/tools/list_changed", Duration::from_secs(30))
        .unwrap();
    assert_eq!(client.tool_names().map(core).unwrap(), DEFAULT_TOOLS);
    assert_eq!(
        client.call("listDevices", json!({})).unwrap()["isError"],
        false
    );
}

#[test]
fn the_fast_path_answers_exactly_like_rmcp() {
    let (_harness, http) = started(&[]);
    // `_meta` sends a request through rmcp; without it the daemon answers directly.
    let cases = [
        json!({ "name": "listDevices", "arguments": {} }),
        json!({ "name": "noSuchTool", "arguments": {} }),
        json!({ "name": "listDevices", "arguments": { "platform": 3 } }),
        json!({ "name": "discovery", "arguments": { "operation": "status" } }),
    ];
    for params in cases {
        let fast = http.rpc("tools/call", params.clone()).unwrap();
        let mut slow_params = params.clone();
        slow_params["_meta"] = json!({ "progressToken": "p1" });
        let slow = http.rpc("tools/call", slow_params).unwrap();
        assert_eq!(fast, slow, "{params}");
    }
    let fast = http.rpc("tools/list", json!({})).unwrap();
    let slow = http
        .rpc("tools/list", json!({ "_meta": { "progressToken": "p2" } }))
        .unwrap();
    assert_eq!(fast, slow);
    let string_id = http
        .post_raw(r#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"listDevices","arguments":{}}}"#)
        .unwrap();
    assert_eq!(string_id.json().unwrap()["id"], "abc");
}

#[test]
fn sessionless_2026_07_28_requests_are_served() {
    let (_harness, http) = started(&[]);
    let body = json!({
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {
            "name": "listDevices",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    let response = RawRequest::new("POST", "/mcp")
        .bearer(&http.token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "listDevices")
        .body(body.to_string())
        .send(http.port)
        .unwrap();
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.header("mcp-session-id"), None);
    let answer = response.json().unwrap();
    assert_eq!(answer["id"], 9);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({ "devices": [] }),
        "{answer}"
    );
    assert_eq!(
        answer["result"]["resultType"], "complete",
        "2026-07-28 results carry resultType"
    );
}

/// An `initialize` over HTTP with `version`, answered by the daemon.
fn http_initialize(http: &McpHttp, version: &str) -> Value {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "paddock-tests", "version": "1" }
        }
    });
    let response = RawRequest::new("POST", "/mcp")
        .bearer(&http.token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send(http.port)
        .unwrap();
    assert_eq!(response.status, 200, "{response:?}");
    response.json().unwrap()
}

#[test]
fn initialize_promises_only_what_each_transport_delivers() {
    let (harness, http) = started(&[]);
    // Stateless HTTP before 2026-07-28 has no channel for notifications: none are promised.
    for version in ["2025-06-18", "2025-11-25"] {
        let answer = http_initialize(&http, version);
        let result = &answer["result"];
        assert_eq!(result["protocolVersion"], version, "{answer}");
        assert!(result["capabilities"]["tools"].is_object(), "{answer}");
        assert!(
            result["capabilities"]["tools"].get("listChanged").is_none(),
            "{answer}"
        );
        let instructions = result["instructions"].as_str().unwrap_or_default();
        assert!(
            instructions.contains("getWeb") && instructions.contains("observe"),
            "{answer}"
        );
    }
    // 2025-03-26 requires JSON-RPC batches, which are refused: it is never negotiated; the
    // answer offers a version that is served in full.
    let old = http_initialize(&http, "2025-03-26");
    let offered = old["result"]["protocolVersion"]
        .as_str()
        .unwrap_or_default();
    assert!(["2025-06-18", "2025-11-25"].contains(&offered), "{old}");
    // A stdio connection does carry notifications, and says so.
    let stdio = McpStdio::start(&harness, &[]).unwrap();
    let result = &stdio.initialize["result"];
    assert_eq!(
        result["capabilities"]["tools"]["listChanged"], true,
        "{result}"
    );
    assert!(result["instructions"].as_str().is_some(), "{result}");
    assert_eq!(stdio.close().unwrap().code(), Some(0));
}

/// Reads SSE from `stream` until an event's data carries `method`, returning that message.
fn read_event(stream: &mut std::net::TcpStream, seen: &mut String, method: &str) -> Value {
    use std::io::Read as _;
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(found) = paddock_testkit::mcp::sse_messages(seen)
            .into_iter()
            .find(|message| message["method"] == method)
        {
            return found;
        }
        let read = stream
            .read(&mut buffer)
            .unwrap_or_else(|error| panic!("waiting for {method}: {error}; saw {seen}"));
        assert!(read > 0, "the stream ended before {method}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
    }
}

#[test]
fn an_http_listener_hears_that_the_tool_list_changed() {
    let (harness, http) = started(&[]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let listen = json!({
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": { "_meta": meta, "notifications": { "toolsListChanged": true } }
    });
    let mut stream = RawRequest::new("POST", "/mcp")
        .bearer(&http.token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
        .header("x-paddock-session-id", "listener-session")
        .body(listen.to_string())
        .open(http.port, Duration::from_secs(60))
        .unwrap();
    let mut seen = String::new();
    let acknowledged = read_event(
        &mut stream,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    );
    assert_eq!(
        acknowledged["params"]["notifications"]["toolsListChanged"], true,
        "{acknowledged}"
    );
    // Another session's change is not this listener's business; its own session's is.
    let other = http
        .with_session("someone-else")
        .call(
            "setToolEnabled",
            json!({ "toolName": "discovery", "enabled": false, "sessionUuid": "someone-else" }),
        )
        .unwrap();
    assert_eq!(other["isError"], false, "{other}");
    let own = http
        .with_session("listener-session")
        .call("setToolEnabled", json!({ "toolName": "listDevices", "enabled": false, "sessionUuid": "listener-session" }))
        .unwrap();
    assert_eq!(own["isError"], false, "{own}");
    let changed = read_event(&mut stream, &mut seen, "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{changed}"
    );
    assert_eq!(
        seen.matches("notifications/tools/list_changed").count(),
        1,
        "only the listener's own session's change: {seen}"
    );
    // Stopping the daemon ends the stream with the listen request's final result.
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    let mut rest = String::new();
    use std::io::Read as _;
    let _ = stream.read_to_string(&mut rest);
    seen.push_str(&rest);
    assert!(
        seen.contains(r#""id":"listen-1""#) && seen.contains(r#""result""#),
        "{seen}"
    );
}

#[test]
fn http_refuses_protocol_versions_it_does_not_serve_and_404s_unknown_methods_at_2026_07_28() {
    let (_harness, http) = started(&[]);
    for version in ["2025-03-26", "2024-11-05"] {
        let response = RawRequest::new("POST", "/mcp")
            .bearer(&http.token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", version)
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
            .send(http.port)
            .unwrap();
        assert_eq!(response.status, 400, "{version}: {response:?}");
        assert!(response.body.contains("2025-06-18"), "{response:?}");
    }
    let body = json!({
        "jsonrpc": "2.0",
        "id": 2,
        "method": "logging/setLevel",
        "params": { "level": "info", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        } }
    });
    let response = RawRequest::new("POST", "/mcp")
        .bearer(&http.token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "logging/setLevel")
        .body(body.to_string())
        .send(http.port)
        .unwrap();
    assert_eq!(response.status, 404, "{response:?}");
    assert_eq!(response.json().unwrap()["error"]["code"], -32601);
}
