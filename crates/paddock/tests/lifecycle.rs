//! Daemon lifecycle through the real binary: start, status, stop, restart, duplicate starts,
//! forced stop, the control socket, and the token and PID files.
#![cfg(test)]

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use paddock_client::PidRecord;
use paddock_testkit::{DaemonHarness, RawRequest, process_alive, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn port_of(endpoint: &str) -> u16 {
    endpoint
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("port")
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn start_status_stop_round_trip() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let not_running = harness.run(["daemon", "status"]).unwrap();
    assert_eq!(not_running.code(), Some(3), "{not_running}");
    assert!(not_running.stdout().contains("not running"));
    assert!(
        not_running
            .stderr()
            .contains("hint: start it with `paddock daemon start`")
    );
    let json = harness.run(["daemon", "status", "--json"]).unwrap();
    assert_eq!(json.code(), Some(3));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json.stdout()).unwrap(),
        serde_json::json!({ "state": "stopped" })
    );

    let start = harness.run(["daemon", "start"]).unwrap().success().unwrap();
    let endpoint = start.stdout().trim().to_owned();
    assert!(
        endpoint.starts_with("http://127.0.0.1:") && endpoint.ends_with("/mcp"),
        "{start}"
    );

    let status = harness
        .run(["daemon", "status", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let status: serde_json::Value = serde_json::from_str(&status.stdout()).unwrap();
    assert_eq!(status["state"], "ready");
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status["http_endpoint"], endpoint.as_str());
    assert_eq!(status["socket"], harness.paths().socket.to_str().unwrap());
    assert!(status["uptime_ms"].is_u64());
    let pid = u32::try_from(status["pid"].as_u64().unwrap()).unwrap();
    assert!(process_alive(pid));

    let human = harness
        .run(["daemon", "status"])
        .unwrap()
        .success()
        .unwrap();
    for needle in [
        "running",
        &format!("pid:      {pid}"),
        "state:    ready",
        &endpoint,
    ] {
        assert!(human.stdout().contains(needle), "{human}");
    }

    let paths = harness.paths();
    assert_eq!(mode(&paths.token_file), 0o600);
    assert_eq!(mode(&paths.socket) & 0o777, 0o600);
    let record = PidRecord::read(&paths.pid_file).unwrap().unwrap();
    assert_eq!(record.pid, pid);
    assert_eq!(Some(record.http_port.unwrap()), Some(port_of(&endpoint)));

    let again = harness.run(["daemon", "start"]).unwrap();
    assert_eq!(again.code(), Some(0), "{again}");
    assert!(
        again
            .stderr()
            .contains(&format!("already running (pid {pid})")),
        "{again}"
    );
    assert_eq!(again.stdout().trim(), endpoint);

    let stop = harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    assert!(
        stop.stderr().contains(&format!("stopped (pid {pid})")),
        "{stop}"
    );
    wait_until(Duration::from_secs(10), || {
        (!process_alive(pid)).then_some(())
    })
    .unwrap();
    assert!(!paths.token_file.exists());
    assert!(!paths.pid_file.exists());
    assert!(!paths.socket.exists());

    let stop_again = harness.run(["daemon", "stop"]).unwrap();
    assert_eq!(stop_again.code(), Some(0));
    assert!(stop_again.stderr().contains("not running"));
}

#[test]
fn a_second_foreground_daemon_reports_the_first_and_exits_zero() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    let first = harness.spawn_foreground(&[]).unwrap();
    first.wait_ready().unwrap();
    let second = harness.run(["daemon", "start", "--foreground"]).unwrap();
    assert_eq!(second.code(), Some(0), "{second}");
    assert!(second.stderr().contains("already running"), "{second}");
    assert!(second.stdout().is_empty());
}

#[test]
fn restart_issues_a_new_token_and_pid() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let before = harness.start_detached(&[]).unwrap();
    let old_token = harness.token().unwrap();
    let restart = harness
        .run(["daemon", "restart"])
        .unwrap()
        .success()
        .unwrap();
    let after: serde_json::Value = serde_json::from_str(
        &harness
            .run(["daemon", "status", "--json"])
            .unwrap()
            .stdout(),
    )
    .unwrap();
    assert_ne!(
        after["pid"].as_u64().unwrap(),
        u64::from(before.pid),
        "{restart}"
    );
    let new_token = harness.token().unwrap();
    assert_ne!(old_token, new_token);
    assert_eq!(new_token.len(), 43, "32 bytes in unpadded base64url");
    assert!(
        new_token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    let port = port_of(after["http_endpoint"].as_str().unwrap());
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&old_token)
            .send(port)
            .unwrap()
            .status,
        401
    );
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&new_token)
            .send(port)
            .unwrap()
            .status,
        200
    );
}

#[test]
fn stop_forces_a_daemon_that_does_not_stop_in_time() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DEBUG_SHUTDOWN_DELAY_MS", "60000");
    let status = harness.start_detached(&[]).unwrap();
    let stop = harness
        .run(["daemon", "stop", "--timeout", "1"])
        .unwrap()
        .success()
        .unwrap();
    assert!(stop.stderr().contains("was killed"), "{stop}");
    wait_until(Duration::from_secs(10), || {
        (!process_alive(status.pid)).then_some(())
    })
    .unwrap();
    let paths = harness.paths();
    assert!(!paths.pid_file.exists());
    assert!(!paths.socket.exists());
    // The next start works normally.
    harness.remove_env("PADDOCK_DEBUG_SHUTDOWN_DELAY_MS");
    let restarted = harness.start_detached(&[]).unwrap();
    assert_ne!(restarted.pid, status.pid);
}

#[test]
fn token_file_honours_a_relative_override_and_creates_a_private_parent() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DAEMON_TOKEN_FILE_PATH", "run/deeper/token");
    harness.start_detached(&[]).unwrap();
    let expected = harness.launch_dir().join("run/deeper/token");
    assert_eq!(harness.paths().token_file, expected);
    assert!(expected.exists());
    assert_eq!(mode(&expected), 0o600);
    assert_eq!(mode(&harness.launch_dir().join("run/deeper")), 0o700);
    assert_eq!(mode(&harness.launch_dir().join("run")), 0o700);
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    assert!(!expected.exists());
}

#[test]
fn token_publication_is_atomic() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let path = harness.paths().token_file;
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        let path = path.clone();
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            let mut bad = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(bytes) = std::fs::read(&path) {
                    if bytes.len() == 43 {
                        seen.insert(bytes);
                    } else {
                        bad.push(bytes);
                    }
                }
            }
            (seen, bad)
        })
    };
    for _ in 0..3 {
        harness.start_detached(&[]).unwrap();
        harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let (seen, bad) = reader.join().unwrap();
    assert!(
        bad.is_empty(),
        "a reader saw a partial token file: {:?}",
        bad.len()
    );
    assert!(!seen.is_empty(), "the reader never saw a token");
}

#[test]
fn a_failed_bind_leaves_the_existing_token_file_byte_identical() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let occupied = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = occupied.local_addr().unwrap().port();
    let path = harness.paths().token_file;
    harness.ensure_runtime_dir().unwrap();
    std::fs::write(&path, b"previous-daemon-token\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();

    let start = harness
        .run(["daemon", "start", "--port", &port.to_string()])
        .unwrap();
    assert_eq!(start.code(), Some(1), "{start}");
    assert!(
        start.stderr().contains(&format!("127.0.0.1:{port}")),
        "{start}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"previous-daemon-token\n");
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        before
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn shutdown_removes_the_token_file_only_if_it_is_still_ours() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    let path = harness.paths().token_file;
    std::fs::write(&path, b"another-daemon-published-this").unwrap();
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"another-daemon-published-this"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn two_isolated_daemons_run_side_by_side() {
    let first = DaemonHarness::new(BIN).unwrap();
    let second = DaemonHarness::new(BIN).unwrap();
    let a = first.start_detached(&[]).unwrap();
    let b = second.start_detached(&[]).unwrap();
    assert_ne!(a.pid, b.pid);
    assert_ne!(first.paths().token_file, second.paths().token_file);
    assert_ne!(first.paths().socket, second.paths().socket);
    let (port_a, port_b) = (
        port_of(a.http_endpoint.as_deref().unwrap()),
        port_of(b.http_endpoint.as_deref().unwrap()),
    );
    let (token_a, token_b) = (first.token().unwrap(), second.token().unwrap());
    assert_ne!(token_a, token_b);
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&token_a)
            .send(port_a)
            .unwrap()
            .status,
        200
    );
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&token_b)
            .send(port_b)
            .unwrap()
            .status,
        200
    );
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&token_a)
            .send(port_b)
            .unwrap()
            .status,
        401
    );
    first.run(["daemon", "stop"]).unwrap().success().unwrap();
    assert_eq!(
        RawRequest::get("/heartbeat")
            .bearer(&token_b)
            .send(port_b)
            .unwrap()
            .status,
        200
    );
}

#[test]
fn control_socket_answers_typed_errors_and_keeps_the_connection() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;

    let harness = DaemonHarness::new(BIN).unwrap();
    let status = harness.start_detached(&[]).unwrap();
    let stream = UnixStream::connect(harness.paths().socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut exchange = |line: &str| -> serde_json::Value {
        writer.write_all(line.as_bytes()).unwrap();
        writer.write_all(b"\n").unwrap();
        let mut answer = String::new();
        reader.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    let garbage = exchange("this is not json");
    assert_eq!(garbage["error"]["code"], "invalid_request");
    let unknown = exchange(r#"{"id":4,"method":"daemon/explode"}"#);
    assert_eq!(unknown["id"], 4);
    assert_eq!(unknown["error"]["code"], "invalid_request");
    let ok = exchange(r#"{"id":5,"method":"daemon/status"}"#);
    assert_eq!(ok["id"], 5);
    assert_eq!(ok["result"]["pid"], status.pid);
    assert_eq!(ok["result"]["state"], "ready");
}

#[test]
fn control_socket_refuses_other_users() {
    // The attacker is the ordinary `paddock-test` user (created by `scripts/setup --dev`); the
    // test fails, saying how to set it up, when it cannot act as that user.
    let attacker = paddock_testkit::OtherUser::get().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    let socket = harness.paths().socket;
    // Open the path up so that the kernel lets the other user connect; SO_PEERCRED must still
    // refuse.
    for dir in [harness.root(), socket.parent().unwrap()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    // Perl is part of every Debian base system, so the foreign client needs no extra install.
    let script = r#"use IO::Socket::UNIX; $SIG{PIPE} = "IGNORE"; my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!"; print $s "{\"id\":1,\"method\":\"daemon/status\"}\n"; my $line = <$s>; print $line;"#;
    let output = attacker
        .command("perl")
        .args(["-e", script])
        .arg(&socket)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    let answer: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(answer["error"]["code"], "forbidden", "{answer}");
    assert!(answer.get("result").is_none());
    // Close the path again: the owner's own client refuses a socket directory others can
    // enter, so without this the harness could not stop the daemon and it would outlive the
    // test.
    std::fs::set_permissions(
        socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let stopped = harness.run(["daemon", "stop"]).unwrap();
    assert_eq!(stopped.code(), Some(0), "{stopped}");
}
