//! The HTTP ingress rules, through the real binary: Host and Origin first, then the startup
//! gate, then bearer auth on every path and method.
#![cfg(test)]

use std::time::Duration;

use paddock_testkit::{DaemonHarness, RawRequest, RawResponse, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn ready_daemon() -> (DaemonHarness, u16, String) {
    let harness = DaemonHarness::new(BIN).expect("harness");
    let status = harness.start_detached(&[]).expect("start");
    let port = paddock_testkit::http_port(&status).expect("port");
    let token = harness.token().expect("token");
    (harness, port, token)
}

fn assert_unauthorized(response: &RawResponse) {
    assert_eq!(response.status, 401, "{response:?}");
    assert_eq!(response.header("www-authenticate"), Some("Bearer"));
    assert_eq!(
        response.json().expect("json"),
        serde_json::json!({ "error": "Unauthorized" })
    );
}

#[test]
fn every_path_and_method_requires_the_bearer_token() {
    let (_harness, port, token) = ready_daemon();

    let ok = RawRequest::get("/heartbeat")
        .bearer(&token)
        .send(port)
        .unwrap();
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json().unwrap(), serde_json::json!({ "status": "ok" }));

    let lower = RawRequest::get("/heartbeat")
        .header("Authorization", &format!("bearer {token}"))
        .send(port)
        .unwrap();
    assert_eq!(lower.status, 200, "lower-case scheme is accepted");

    for request in [
        RawRequest::get("/heartbeat"),
        RawRequest::new("POST", "/mcp").body("{}"),
        RawRequest::new("OPTIONS", "/heartbeat"),
        RawRequest::new("OPTIONS", "*"),
        RawRequest::get("/no/such/path"),
        RawRequest::new("DELETE", "/mcp"),
        RawRequest::get("/heartbeat").bearer("not-the-token"),
        RawRequest::get("/heartbeat").bearer(&token[..token.len() - 1]),
        RawRequest::get("/heartbeat").header("Authorization", &format!("Basic {token}")),
        RawRequest::get("/heartbeat").header("Authorization", &token),
    ] {
        assert_unauthorized(&request.send(port).unwrap());
    }

    let unknown = RawRequest::get("/no/such/path")
        .bearer(&token)
        .send(port)
        .unwrap();
    assert_eq!(unknown.status, 404);
    let options = RawRequest::new("OPTIONS", "/heartbeat")
        .bearer(&token)
        .send(port)
        .unwrap();
    assert_ne!(options.status, 401);
    assert!(options.status < 500, "{options:?}");
}

#[test]
fn hostile_host_and_origin_are_refused_before_auth() {
    let (_harness, port, token) = ready_daemon();
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        "127.0.0.1".to_owned(),
        String::new(),
    ] {
        let response = RawRequest::get("/heartbeat")
            .host(&host)
            .bearer(&token)
            .send(port)
            .unwrap();
        assert_eq!(response.status, 403, "Host {host:?}: {response:?}");
        assert_eq!(
            response.json().unwrap(),
            serde_json::json!({ "error": "Host not allowed" })
        );
    }
    let missing = RawRequest::get("/heartbeat")
        .no_host()
        .bearer(&token)
        .send(port)
        .unwrap();
    assert_eq!(missing.status, 403);
    // Host is checked before credentials: a hostile Host never learns whether auth would pass.
    let unauthenticated = RawRequest::get("/heartbeat")
        .host("evil.example")
        .send(port)
        .unwrap();
    assert_eq!(unauthenticated.status, 403);

    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        format!("LOCALHOST:{port}"),
    ] {
        let response = RawRequest::get("/heartbeat")
            .host(&host)
            .bearer(&token)
            .send(port)
            .unwrap();
        assert_eq!(response.status, 200, "Host {host:?}");
    }

    for origin in [
        "http://evil.example",
        "null",
        "https://localhost.evil.example",
        "file://",
    ] {
        let response = RawRequest::get("/heartbeat")
            .header("Origin", origin)
            .bearer(&token)
            .send(port)
            .unwrap();
        assert_eq!(response.status, 403, "Origin {origin}");
        assert_eq!(
            response.json().unwrap(),
            serde_json::json!({ "error": "Origin not allowed" })
        );
    }
    for origin in [
        "http://localhost:3000".to_owned(),
        format!("http://127.0.0.1:{port}"),
    ] {
        let response = RawRequest::get("/heartbeat")
            .header("Origin", &origin)
            .bearer(&token)
            .send(port)
            .unwrap();
        assert_eq!(response.status, 200, "Origin {origin}");
    }
}

#[test]
fn oversized_bodies_are_refused_after_auth() {
    let (_harness, port, token) = ready_daemon();
    let response = RawRequest::new("POST", "/mcp")
        .bearer(&token)
        .header("Content-Type", "application/json")
        .body(vec![b' '; 4 * 1024 * 1024 + 1])
        .send(port)
        .unwrap();
    assert_eq!(response.status, 413, "{:?}", response.status);
    let unauthenticated = RawRequest::new("POST", "/mcp")
        .body(vec![b' '; 5_000_000])
        .send(port)
        .unwrap();
    assert_eq!(unauthenticated.status, 401);
}

#[test]
fn requests_during_startup_are_held_then_authenticated() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DEBUG_STARTUP_DELAY_MS", "1500");
    let daemon = harness.spawn_foreground(&[]).unwrap();
    let port = harness.wait_for_port().unwrap();
    let token_file = harness.paths().token_file;
    assert!(
        !token_file.exists(),
        "token is published only after startup"
    );

    let stale = std::thread::spawn(move || {
        RawRequest::get("/heartbeat")
            .bearer("previous-daemon-token")
            .send(port)
    });
    let anonymous = std::thread::spawn(move || RawRequest::get("/mcp").send(port));
    let hostile = RawRequest::get("/heartbeat")
        .host("evil.example")
        .send(port)
        .unwrap();
    assert_eq!(hostile.status, 403, "Host is checked before the hold");
    assert!(!token_file.exists(), "the hostile request was not held");

    let stale = stale.join().unwrap().unwrap();
    // The held request was answered only after the token was published.
    assert!(token_file.exists());
    assert_unauthorized(&stale);
    assert_unauthorized(&anonymous.join().unwrap().unwrap());

    daemon.wait_ready().unwrap();
    let token = harness.token().unwrap();
    let ok = RawRequest::get("/heartbeat")
        .bearer(&token)
        .send(port)
        .unwrap();
    assert_eq!(ok.status, 200);
}

#[test]
fn startup_outliving_the_hold_answers_503_retry_after() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DEBUG_STARTUP_DELAY_MS", "4000");
    let _daemon = harness
        .spawn_foreground(&["--startup-hold-ms", "200"])
        .unwrap();
    let port = harness.wait_for_port().unwrap();
    let response = RawRequest::get("/heartbeat")
        .bearer("anything")
        .send(port)
        .unwrap();
    assert_eq!(response.status, 503);
    assert_eq!(response.header("retry-after"), Some("1"));
    assert_eq!(
        response.json().unwrap(),
        serde_json::json!({ "error": "Daemon is still starting" })
    );
}

#[test]
fn failed_startup_answers_503_and_never_publishes_a_token() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness
        .set_env("PADDOCK_DEBUG_STARTUP_DELAY_MS", "700")
        .set_env("PADDOCK_DEBUG_FAIL_STARTUP", "1");
    let daemon = harness.spawn_foreground(&[]).unwrap();
    let port = harness.wait_for_port().unwrap();
    let response = RawRequest::get("/heartbeat")
        .bearer("anything")
        .send(port)
        .unwrap();
    assert_eq!(response.status, 503, "{response:?}");
    assert_eq!(
        response.json().unwrap(),
        serde_json::json!({ "error": "Daemon startup failed" })
    );
    assert_eq!(
        response.header("retry-after"),
        None,
        "a failed startup is not transient"
    );
    let exit = harness
        .wait_child(daemon.pid, Duration::from_secs(20))
        .unwrap();
    assert!(!exit.success());
    assert!(!harness.paths().token_file.exists());
    assert!(
        !harness.paths().pid_file.exists(),
        "the failed daemon removes its PID record"
    );
    assert!(
        daemon.log_text().contains("startup failure injected"),
        "{}",
        daemon.log_text()
    );
}

#[test]
fn shutting_down_answers_503() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DEBUG_SHUTDOWN_DELAY_MS", "3000");
    let daemon = harness.spawn_foreground(&[]).unwrap();
    let status = daemon.wait_ready().unwrap();
    let port = paddock_testkit::http_port(&status).unwrap();
    let token = harness.token().unwrap();
    daemon.terminate();
    let response = wait_until(Duration::from_secs(10), || {
        let response = RawRequest::get("/heartbeat")
            .bearer(&token)
            .send(port)
            .ok()?;
        (response.status == 503).then_some(response)
    })
    .unwrap();
    assert_eq!(
        response.json().unwrap(),
        serde_json::json!({ "error": "Daemon is shutting down" })
    );
    assert_eq!(response.header("retry-after"), Some("1"));
    let exit = harness
        .wait_child(daemon.pid, Duration::from_secs(20))
        .unwrap();
    assert!(exit.success());
}
