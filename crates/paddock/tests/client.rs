//! `paddock-client` against a real daemon: which URLs get the token, token-file refusals, and
//! the retry rules (re-read after 401, wait out a 503 with Retry-After).
#![cfg(test)]

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use http::{Method, StatusCode};
use paddock_client::request::DaemonHttpClient;
use paddock_client::{TokenFileError, daemon_http_auth_headers, read_daemon_http_token};
use paddock_testkit::DaemonHarness;

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn auth_headers_follow_the_pid_record_port() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let status = harness.start_detached(&[]).unwrap();
    let env = harness.client_env();
    let endpoint = status.http_endpoint.unwrap();
    let port: u16 = endpoint
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let token = harness.token().unwrap();
    let expected = format!("Bearer {token}");

    for url in [
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://localhost:{port}/heartbeat"),
        format!("http://[::1]:{port}/mcp"),
    ] {
        let headers = daemon_http_auth_headers(&url, &env).unwrap();
        assert_eq!(
            headers.expose_pairs(),
            vec![("authorization", expected.as_str())],
            "{url}"
        );
        assert!(!format!("{headers:?}").contains(&token), "Debug redacts");
    }
    for url in [
        format!("http://127.0.0.1:{}/mcp", port.wrapping_add(1)),
        format!("http://127.0.0.1:{port}/other"),
        format!("http://evil.example:{port}/mcp"),
        format!("https://127.0.0.1:{port}/mcp"),
        "http://127.0.0.1/mcp".to_owned(),
    ] {
        assert!(
            daemon_http_auth_headers(&url, &env).unwrap().is_empty(),
            "{url}"
        );
    }

    // With no PID record (daemon stopped) any explicit port passes; the client-only override
    // supplies the token.
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    let env = env.with_var("PADDOCK_DAEMON_HTTP_TOKEN", "override-token");
    let headers = daemon_http_auth_headers("http://localhost:1234/mcp", &env).unwrap();
    assert_eq!(
        headers.expose_pairs(),
        vec![("authorization", "Bearer override-token")]
    );
}

#[test]
fn a_loosened_token_file_is_refused() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    let path = harness.paths().token_file;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let error = read_daemon_http_token(&harness.client_env()).unwrap_err();
    assert!(
        matches!(error, TokenFileError::InsecureMode { mode: 0o644, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("0644"));
    let raw = std::fs::read_to_string(&path).unwrap();
    assert_eq!(raw.trim().len(), 43);
    assert!(!error.to_string().contains(raw.trim()));
    assert!(!format!("{error:?}").contains(raw.trim()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_rereads_the_token_after_a_restart() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let port = free_port();
    harness
        .start_detached(&["--port", &port.to_string()])
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/heartbeat");
    let client = DaemonHttpClient::new(harness.client_env());
    let deadline = || tokio::time::Instant::now() + Duration::from_secs(20);
    let first = client
        .send(Method::GET, &url, Default::default(), deadline())
        .await
        .unwrap();
    assert_eq!(first.status, StatusCode::OK);
    let old_token = harness.token().unwrap();

    harness
        .run(["daemon", "restart", "--port", &port.to_string()])
        .unwrap()
        .success()
        .unwrap();
    assert_ne!(harness.token().unwrap(), old_token);
    // The cached token is now stale: the daemon answers 401, the client reads the file again.
    let second = client
        .send(Method::GET, &url, Default::default(), deadline())
        .await
        .unwrap();
    assert_eq!(second.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_waits_out_a_slow_startup() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DEBUG_STARTUP_DELAY_MS", "2500");
    // A previous daemon's token is still on disk while the new one starts.
    let token_file = harness.paths().token_file;
    harness.ensure_runtime_dir().unwrap();
    std::fs::write(&token_file, "previous-daemon-token").unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let port = free_port();
    let _daemon = harness
        .spawn_foreground(&["--port", &port.to_string(), "--startup-hold-ms", "300"])
        .unwrap();
    harness.wait_for_port().unwrap();
    let client = DaemonHttpClient::new(harness.client_env());
    let url = format!("http://127.0.0.1:{port}/heartbeat");
    // 503 + Retry-After (held past 300 ms) is retried; after startup the stale token gets 401,
    // the file is read again and the request succeeds before the deadline.
    let response = client
        .send(
            Method::GET,
            &url,
            Default::default(),
            tokio::time::Instant::now() + Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert_eq!(response.status, StatusCode::OK, "{response:?}");

    // A deadline shorter than the wait returns the last 503 rather than blocking.
    let short = DaemonHttpClient::new(harness.client_env());
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    let late = short
        .send(
            Method::GET,
            &url,
            Default::default(),
            tokio::time::Instant::now() + Duration::from_millis(300),
        )
        .await;
    assert!(late.is_err(), "nothing listens any more: {late:?}");
}
