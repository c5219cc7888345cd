//! Secret hygiene: at trace log level, the daemon's token appears in no log line, status
//! output, PID record, process argument list or file other than the token file itself.
#![cfg(test)]

use std::path::Path;

use paddock_testkit::{DaemonHarness, RawRequest};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn files_containing(root: &Path, needle: &[u8], skip: &Path, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
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
