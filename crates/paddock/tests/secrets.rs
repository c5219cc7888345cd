//! Secret hygiene: at trace log level, the daemon's token appears in no log line, status
//! output, PID record, process argument list or file other than the token file itself.
#![cfg(test)]

use std::path::Path;

use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::{DaemonHarness, McpHttp, McpStdio, RawRequest};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn files_containing(root: &Path, needle: &[u8], skip: &Path, found: &mut Vec<String>) {
    // A directory removed during the walk (a launch that just closed) has nothing to check;
    // one that cannot be read would hide what it holds, so it fails the test.
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
        Err(error) => panic!("could not read `{}`: {error}", root.display()),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            files_containing(&path, needle, skip, found);
        } else if kind.is_file()
            && path != skip
            && std::fs::read(&path)
                .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
        {
            found.push(path.display().to_string());
        }
    }
}

#[test]
fn the_token_never_leaks_at_trace_level() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let start = harness
        .run(["--log-level", "trace", "daemon", "start"])
        .unwrap()
        .success()
        .unwrap();
    let status = harness
        .run(["daemon", "status", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let human = harness
        .run(["daemon", "status"])
        .unwrap()
        .success()
        .unwrap();
    let token = harness.token().unwrap();
    let record: serde_json::Value = serde_json::from_str(&status.stdout()).unwrap();
    let pid = record["pid"].as_u64().unwrap();
    let port: u16 = record["http_endpoint"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();

    // Exercise every path that handles the credential: success, failure, a held-then-checked
    // request shape, and a body sent to /mcp.
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&token)
            .send(port)
            .unwrap()
            .status,
        200
    );
    let wrong = format!("{}x", &token[..20]);
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&wrong)
            .send(port)
            .unwrap()
            .status,
        401
    );
    RawRequest::new("POST", "/mcp")
        .bearer(&token)
        .body(r#"{"jsonrpc":"2.0"}"#)
        .send(port)
        .unwrap();
    RawRequest::get("/x")
        .host("evil.example")
        .bearer(&token)
        .send(port)
        .unwrap();

    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains(&token),
        "token in argv"
    );
    assert!(
        String::from_utf8_lossy(&cmdline).contains("--foreground"),
        "we read the daemon's argv"
    );

    let token_file = harness.paths().token_file;
    let mut found = Vec::new();
    files_containing(harness.root(), token.as_bytes(), &token_file, &mut found);
    let pid_file = harness.paths().pid_file;
    let pid_text = std::fs::read_to_string(&pid_file).unwrap();
    assert!(!pid_text.contains(&token));
    assert!(found.is_empty(), "token found in {found:?}");

    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    let log = std::fs::read_to_string(harness.paths().state_dir.join("logs/daemon.log")).unwrap();
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "the log really is verbose"
    );
    assert!(!log.contains(&token), "token in the daemon log");
    for output in [&start, &status, &human] {
        assert!(
            !output.stdout().contains(&token) && !output.stderr().contains(&token),
            "{output}"
        );
    }
    let mut found = Vec::new();
    files_containing(harness.root(), token.as_bytes(), &token_file, &mut found);
    assert!(found.is_empty(), "token found after stop in {found:?}");
}

#[test]
fn typed_text_and_filtered_text_never_reach_a_log_at_trace_level() {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    let app_arg = format!("fixture={}", app.url("/"));
    harness
        .run([
            "--log-level",
            "trace",
            "daemon",
            "start",
            "--web-warm",
            "1",
            "--web-app",
            &app_arg,
        ])
        .unwrap()
        .success()
        .unwrap();
    let typed_over_http = "hunter2-over-http-5150";
    let typed_over_stdio = "hunter2-over-stdio-8086";
    let filtered = "4111 1111 1111 1111";

    let http = McpHttp::for_harness(&harness)
        .unwrap()
        .with_session("typing");
    let acquired = http.call("getWeb", json!({ "app": "fixture" })).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    let tapped = http.call("tapOn", json!({ "text": "Sign in" })).unwrap();
    assert_eq!(tapped["isError"], false, "{tapped}");
    let typed = http
        .call(
            "inputText",
            json!({ "label": "Password", "text": typed_over_http }),
        )
        .unwrap();
    assert_eq!(typed["isError"], false, "{typed}");
    // A request that fails carries its arguments into no error log either.
    let refused = http
        .call(
            "inputText",
            json!({ "label": "No such field", "text": typed_over_http }),
        )
        .unwrap();
    assert_eq!(refused["isError"], true, "{refused}");
    http.call("releaseDevice", json!({})).unwrap();

    let mut stdio = McpStdio::start(&harness, &["--log-level", "trace"]).unwrap();
    let acquired = stdio.call("getWeb", json!({ "app": "fixture" })).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    stdio.call("tapOn", json!({ "text": "Sign in" })).unwrap();
    let typed = stdio
        .call(
            "inputText",
            json!({ "label": "Password", "text": typed_over_stdio }),
        )
        .unwrap();
    assert_eq!(typed["isError"], false, "{typed}");
    let stdio_log = stdio.stderr();
    stdio.close().unwrap();

    let redact = harness
        .run_with_stdin(
            ["--log-level", "trace", "pii", "redact", "--bot", "helper"],
            format!("card {filtered}").as_bytes(),
        )
        .unwrap()
        .success()
        .unwrap();
    assert!(!redact.stdout().contains(filtered), "{redact}");

    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    let log = std::fs::read_to_string(harness.paths().state_dir.join("logs/daemon.log")).unwrap();
    assert!(log.contains("TRACE"), "the log really is at trace level");
    for secret in [typed_over_http, typed_over_stdio, filtered] {
        assert!(!log.contains(secret), "`{secret}` in the daemon log");
        assert!(
            !stdio_log.contains(secret),
            "`{secret}` in paddock mcp's log"
        );
        assert!(!redact.stderr().contains(secret), "`{secret}` in pii's log");
    }
}
