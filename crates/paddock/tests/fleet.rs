//! The fleet end to end: the real `paddock server`, a real daemon with a real Chromium device
//! paired to it (`server pair` → `daemon join`, the token on stdin), and the official Python
//! MCP client reaching that device through the server with an API key. Then the daemon is
//! stopped (its devices go offline, calls fail typed) and started again with `--id` (its
//! inventory is reconciled). `tests/clients/python/fleet_check.py` drives the tools and
//! reports; this file asserts on the report.
#![cfg(test)]

use std::process::Command;

use paddock_testkit::clients::{python, repo_root};
use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::model::ScriptedModel;
use paddock_testkit::tasks::{SIGNED_IN, sign_in_turns};
use paddock_testkit::{DaemonHarness, RunningServer, ServerHarness};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
/// A hang deadline, not a speed expectation.
const DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

fn check(server: &RunningServer, key: &str, args: &[&str]) -> Value {
    check_with(server, key, args, &[])
}

fn check_with(server: &RunningServer, key: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut command = Command::new(python());
    command
        .arg(repo_root().join("tests/clients/python/fleet_check.py"))
        .arg(args[0])
        .arg(server.url())
        .args(&args[1..])
        .env_clear()
        .env("PADDOCK_API_KEY", key)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied());
    let output = command.output().expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{:?}\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server log\n{}",
        args,
        String::from_utf8_lossy(&output.stderr),
        server.log_text()
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("client output is not JSON ({error}): {stdout}"))
}

fn ok<'a>(report: &'a Value, name: &str) -> &'a Value {
    let answer = &report[name];
    assert_eq!(answer["isError"], false, "{name} failed: {answer}");
    answer
}

fn error_text<'a>(report: &'a Value, name: &str) -> &'a str {
    let answer = &report[name];
    assert_eq!(answer["isError"], true, "{name} should fail: {answer}");
    answer["text"].as_str().unwrap_or_default()
}

#[test]
fn a_joined_daemons_device_is_driven_through_the_server_and_goes_offline_with_it() {
    let mut servers = ServerHarness::new(BIN).unwrap();
    servers.set_env("PADDOCK_SERVER_POLICY_PROFILE", "full");
    let server = servers.spawn(&[]).unwrap();
    let key = servers.create_key("fleet-test", "full").unwrap();
    let token = servers.pair_token(&["--name", "laptop"]).unwrap();

    let app = FixtureApp::start().unwrap();
    let fixture = format!("fixture={}", app.url("/"));
    let daemon = DaemonHarness::new(BIN).unwrap();
    daemon
        .start_detached(&["--web-warm", "1", "--web-app", &fixture])
        .unwrap();
    let joined = daemon
        .run_with_stdin(
            ["daemon", "join", "--server", &server.url()],
            format!("{token}\n").as_bytes(),
        )
        .unwrap()
        .success()
        .unwrap();
    let machine = joined.stdout().trim().to_owned();
    assert!(machine.starts_with("m_"), "{machine}");
    // A pairing token is good for one join.
    let again = daemon
        .run_with_stdin(
            ["daemon", "join", "--server", &server.url()],
            format!("{token}\n").as_bytes(),
        )
        .unwrap();
    assert_eq!(again.code(), Some(1), "{}", again.stderr());
    assert!(
        again.stderr().contains("already joined"),
        "{}",
        again.stderr()
    );

    let report = check(&server, &key, &["drive", &machine, "fixture"]);
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in [
        "list_devices",
        "get_device_ui_state",
        "device_action",
        "run_task",
        "create_device",
    ] {
        assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
    }
    let device = &report["device"];
    let device_id = device["device_id"].as_str().unwrap().to_owned();
    assert_eq!(device["platform"], "web");
    assert_eq!(device["machine_name"], "laptop");
    assert_eq!(
        ok(&report, "getDevice")["structured"]["device_id"],
        device_id
    );
    ok(&report, "start");
    let before = report["uiBefore"].as_str().unwrap();
    assert!(
        before.contains("Items") && before.contains("Sign in"),
        "{before}"
    );
    // The fleet's session holds the device now, and the inventory says so.
    assert_eq!(report["listedWhileBound"][0]["state"], "bound", "{report}");
    ok(&report, "tap");
    let after = report["uiAfter"].as_str().unwrap();
    assert!(after.contains("Item 1"), "{after}");
    ok(&report, "swipe");
    ok(&report, "back");
    assert!(report["uiBack"].as_str().unwrap().contains("Sign in"));
    let screenshot = ok(&report, "screenshot");
    assert!(
        screenshot["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|kind| kind == "image"),
        "{screenshot}"
    );
    // The daemon's own errors arrive in spec 002's codes.
    assert!(
        error_text(&report, "tapNowhere").starts_with("[not_found]"),
        "{}",
        report["tapNowhere"]
    );
    assert!(error_text(&report, "tapNothing").starts_with("[invalid_input]"));
    ok(&report, "setTimezone");
    assert!(
        ok(&report, "getTimezone")["text"]
            .as_str()
            .unwrap()
            .contains("Asia/Tokyo"),
        "{}",
        report["getTimezone"]
    );
    for unmapped in ["overlay", "rename"] {
        let text = error_text(&report, unmapped);
        assert!(
            text.starts_with("[invalid_input]") && text.contains("web devices"),
            "{unmapped}: {text}"
        );
    }
    let capabilities = &ok(&report, "capabilities")["json"];
    assert_eq!(capabilities["platform"], "web");
    let count = &ok(&report, "count")["json"];
    assert!(count["total"].as_u64().unwrap() >= 1, "{count}");
    ok(&report, "files");
    assert!(
        ok(&report, "apps")["text"]
            .as_str()
            .unwrap()
            .contains("fixture")
    );
    assert!(error_text(&report, "unknownDevice").starts_with("[not_found]"));
    assert!(
        error_text(&report, "badArguments").contains("operation"),
        "{}",
        report["badArguments"]
    );
    ok(&report, "reset");
    assert!(
        !report["uiAfterReset"].as_str().unwrap().contains("Sign in"),
        "a reset device starts blank: {}",
        report["uiAfterReset"]
    );
    // Terminated, the device is not the fleet's any more: back in the pool, or stopped.
    ok(&report, "terminate");
    let after = report["afterTerminate"].as_array().unwrap();
    assert!(after.is_empty() || after[0]["state"] == "warm", "{after:?}");
    let created = &ok(&report, "created")["structured"];
    assert_eq!(created["machine_id"], machine.as_str());
    assert!(
        created["device_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("web-") && id != device_id),
        "{created}"
    );

    // A stdio client reaches the same fleet through `paddock server mcp`.
    let bridged = check(&server, &key, &["stdio", BIN]);
    assert!(
        bridged["devices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|device| device["machine_id"] == machine.as_str()),
        "{bridged}"
    );
    assert!(bridged["tools"].to_string().contains("device_action"));
    assert!(
        bridged["unknown"]["text"]
            .as_str()
            .unwrap()
            .starts_with("[not_found]")
    );

    // The daemon stops: its devices are offline and calls to them fail typed.
    daemon.run(["daemon", "stop"]).unwrap().success().unwrap();
    let offline = check(&server, &key, &["offline", &machine]);
    assert_eq!(offline["device"]["state"], "offline");
    for call in ["ui", "tap"] {
        let text = offline[call]["text"].as_str().unwrap();
        assert!(
            offline[call]["isError"] == true && text.starts_with("[upstream_error]"),
            "{call}: {text}"
        );
        assert!(text.contains("not connected"), "{call}: {text}");
    }

    // `--id` must name this machine; with the right one the daemon comes back, reconnects with
    // its stored key, and the server's view follows its new inventory.
    let wrong = daemon
        .run(["daemon", "start", "--id", "m_000000000000"])
        .unwrap();
    assert_eq!(wrong.code(), Some(1), "{}", wrong.stderr());
    assert!(wrong.stderr().contains(&machine), "{}", wrong.stderr());
    daemon
        .start_detached(&["--id", &machine, "--web-warm", "1", "--web-app", &fixture])
        .unwrap();
    let online = check(&server, &key, &["online", &machine, &device_id]);
    assert_eq!(online["device"]["machine_id"], machine.as_str());
    assert_eq!(online["ui"]["isError"], false, "{}", online["ui"]);
    let listed = online["listed"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .filter(|device| device["machine_id"] == machine.as_str())
            .all(|device| device["online"] == true),
        "{listed:?}"
    );

    // Neither the pairing token nor the machine key appears in the server's log; the key is
    // kept 0600 beside the link, which holds no secret.
    let state = daemon.paths().state_dir;
    let machine_key = std::fs::read_to_string(state.join("fleet-machine-key")).unwrap();
    assert!(machine_key.starts_with("pdk_mk_"));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(state.join("fleet-machine-key"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let link = std::fs::read_to_string(state.join("fleet.json")).unwrap();
    assert!(!link.contains("pdk_"), "{link}");
    let log = server.log_text();
    for secret in [token.as_str(), machine_key.trim(), key.as_str()] {
        assert!(!log.contains(secret), "a secret is in the server's log");
    }
    let read =
        paddock_testkit::no_file_contains(servers.root(), &[&token, machine_key.trim(), &key])
            .unwrap();
    assert!(
        read >= 2,
        "the server's database and log were read ({read} files)"
    );
}

/// Pairs a fresh daemon to `server`; its machine id.
fn join(
    servers: &ServerHarness,
    server: &RunningServer,
    daemon: &DaemonHarness,
    name: &str,
) -> String {
    let token = servers.pair_token(&["--name", name]).unwrap();
    daemon
        .run_with_stdin(
            ["daemon", "join", "--server", &server.url()],
            format!("{token}\n").as_bytes(),
        )
        .unwrap()
        .success()
        .unwrap()
        .stdout()
        .trim()
        .to_owned()
}

#[test]
fn a_task_runs_through_the_server_on_the_daemon_that_holds_a_free_device() {
    const PASSWORD: &str = "hunter2-fleet-task";
    let mut servers = ServerHarness::new(BIN).unwrap();
    servers.set_env("PADDOCK_SERVER_POLICY_PROFILE", "full");
    let server = servers.spawn(&[]).unwrap();
    let key = servers.create_key("tasks", "no-commerce").unwrap();
    let app = FixtureApp::start().unwrap();
    let model = ScriptedModel::start(sign_in_turns(PASSWORD)).unwrap();
    let mut daemon = DaemonHarness::new(BIN).unwrap();
    daemon
        .with_agent_clis()
        .unwrap()
        .set_env("ANTHROPIC_BASE_URL", model.base_url())
        .set_env("ANTHROPIC_API_KEY", "sk-ant-fleet-task-key");
    let fixture = format!("fixture={}", app.url("/"));
    daemon
        .start_detached(&["--web-warm", "1", "--web-app", &fixture])
        .unwrap();
    let machine = join(&servers, &server, &daemon, "runner");
    // A second machine with no devices: the task must go to the one with a free device.
    let idle = DaemonHarness::new(BIN).unwrap();
    idle.start_detached(&["--web-warm", "0"]).unwrap();
    let other = join(&servers, &server, &idle, "idle");
    assert_ne!(machine, other);

    let report = check(&server, &key, &["task", &machine, "fixture"]);
    let started = ok(&report, "started");
    let task_id = report["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"));
    assert!(task_id.starts_with(&format!("{machine}.")), "{task_id}");
    let summary = &report["summary"];
    assert_eq!(summary["state"], "completed", "{summary}");
    assert_eq!(summary["result"], SIGNED_IN, "{summary}");
    assert_eq!(summary["task_id"], task_id, "{summary}");
    let trajectory = ok(&report, "trajectory");
    let steps = trajectory["structured"]["steps"].as_array().unwrap();
    assert!(
        steps.iter().filter(|step| step["kind"] == "tool").count() == 6,
        "{steps:?}"
    );
    assert!(!trajectory.to_string().contains(PASSWORD));
    assert!(
        ok(&report, "media")["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|kind| kind == "image")
    );
    let listed = &ok(&report, "list")["json"];
    assert!(
        listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|task| task["task_id"] == task_id),
        "{listed}"
    );
    assert_eq!(listed["unreachable"], serde_json::json!([]), "{listed}");
    assert!(error_text(&report, "unknown").starts_with("[not_found]"));
    assert!(error_text(&report, "badId").starts_with("[not_found]"));
}

#[test]
fn two_replicas_on_postgresql_serve_a_daemon_joined_to_either() {
    let cluster = paddock_testkit::postgres::PgCluster::start().unwrap();
    let mut servers = ServerHarness::new(BIN).unwrap();
    servers
        .set_env("PADDOCK_SERVER_DATABASE", cluster.url())
        .set_env("PADDOCK_SERVER_POLICY_PROFILE", "full");
    let replica_a = servers.spawn(&[]).unwrap();
    let replica_b = servers.spawn(&[]).unwrap();
    assert!(
        replica_a.log_text().contains("store=\"postgres\""),
        "{}",
        replica_a.log_text()
    );
    let key = servers.create_key("replicas", "full").unwrap();
    let app = FixtureApp::start().unwrap();
    let fixture = format!("fixture={}", app.url("/"));
    let daemon = DaemonHarness::new(BIN).unwrap();
    daemon
        .start_detached(&["--web-warm", "1", "--web-app", &fixture])
        .unwrap();
    // Joined to replica A; every call below goes to replica B.
    let machine = join(&servers, &replica_a, &daemon, "on-a");
    let report = check(&replica_b, &key, &["drive", &machine, "fixture"]);
    assert!(
        report["uiAfter"].as_str().unwrap().contains("Item 1"),
        "{report}"
    );
    ok(&report, "screenshot");
    ok(&report, "reset");
    assert!(
        replica_b
            .log_text()
            .contains("\"toolName\":\"device_action\"")
    );
    assert!(
        !replica_b.log_text().contains("daemon connected"),
        "the daemon's connection is replica A's"
    );
    assert!(replica_a.log_text().contains("daemon connected"));
}

/// A TCP proxy in front of `upstream` that answers the first `POST /api/daemon/activate` with a
/// 502 itself (an ambiguous answer for the daemon) and pipes everything else through.
fn flaky_proxy(upstream: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::io::{Read as _, Write as _};
    use std::sync::atomic::{AtomicBool, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let failed_once = std::sync::Arc::new(AtomicBool::new(false));
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let failed_once = failed_once.clone();
            std::thread::spawn(move || {
                let mut first = [0u8; 26];
                if client.peek(&mut first).is_err() {
                    return;
                }
                if first.starts_with(b"POST /api/daemon/activate")
                    && !failed_once.swap(true, Ordering::SeqCst)
                {
                    let mut request = [0u8; 4096];
                    let _ = client.read(&mut request);
                    let _ = client.write_all(
                        b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    return;
                }
                let Ok(server) = std::net::TcpStream::connect(upstream) else {
                    return;
                };
                let (mut client_read, mut server_write) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut client_read, &mut server_write);
                    let _ = server_write.shutdown(std::net::Shutdown::Write);
                });
                let (mut server_read, mut client_write) = (server, client);
                let _ = std::io::copy(&mut server_read, &mut client_write);
                let _ = client_write.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    address
}

/// Whether the server takes `key` as a machine key on the control route (a 401 when not).
fn control_status(server: &RunningServer, key: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(server.address).unwrap();
    write!(
        stream,
        "GET /api/daemon/control HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\n\
         Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        server.address
    )
    .unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head).into_owned()
}

#[test]
fn reconnect_never_reuses_a_key_after_an_ambiguous_answer_and_rotates_it_after_a_clear_one() {
    let mut servers = ServerHarness::new(BIN).unwrap();
    let server = servers.spawn(&[]).unwrap();
    let daemon = DaemonHarness::new(BIN).unwrap();
    daemon.start_detached(&[]).unwrap();
    let machine = join(&servers, &server, &daemon, "rotating");
    let key_file = daemon.paths().state_dir.join("fleet-machine-key");
    let old_key = std::fs::read_to_string(&key_file).unwrap();
    let proxy = format!("http://{}", flaky_proxy(server.address));
    let reconnect_token =
        |servers: &ServerHarness| servers.pair_token(&["--reconnect", &machine]).unwrap();
    let reconnect = |token: &str| {
        daemon
            .run_with_stdin(
                ["daemon", "reconnect", "--id", &machine, "--server", &proxy],
                format!("{token}\n").as_bytes(),
            )
            .unwrap()
    };

    // The 502: the daemon was stopped for the reconnect and stays stopped; its key file is
    // untouched, and the old key is never used again by this run.
    let first = reconnect_token(&servers);
    let ambiguous = reconnect(&first);
    assert_eq!(ambiguous.code(), Some(1), "{}", ambiguous.stderr());
    assert!(
        ambiguous.stderr().contains("stays stopped"),
        "{}",
        ambiguous.stderr()
    );
    let status = daemon.run(["daemon", "status"]).unwrap();
    assert_eq!(status.code(), Some(3), "not running: {}", status.stdout());
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), old_key);

    // A clear answer: a new key, the old one refused, the daemon running again.
    let second = reconnect_token(&servers);
    let rotated = reconnect(&second);
    assert_eq!(rotated.code(), Some(0), "{}", rotated.stderr());
    let new_key = std::fs::read_to_string(&key_file).unwrap();
    assert_ne!(new_key, old_key);
    assert!(control_status(&server, old_key.trim()).contains("401"));
    assert!(control_status(&server, new_key.trim()).contains("101"));
    let status = daemon.run(["daemon", "status"]).unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "running: {}\n{}",
        status.stderr(),
        rotated.stderr()
    );

    // A refused token (already used): nothing changed, so the daemon restarts with its key.
    let refused = reconnect(&second);
    assert_eq!(refused.code(), Some(1), "{}", refused.stderr());
    assert!(
        refused.stderr().contains("keeps its current key"),
        "{}",
        refused.stderr()
    );
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), new_key);
    let status = daemon.run(["daemon", "status"]).unwrap();
    assert_eq!(status.code(), Some(0), "running again: {}", status.stderr());
    // The reconnect tokens never reached a log.
    for token in [&first, &second] {
        assert!(!server.log_text().contains(token.as_str()));
    }
}

#[test]
fn a_daemon_joins_over_https_and_wss_trusting_a_private_ca() {
    let ca = paddock_testkit::tls::TestCa::new().unwrap();
    let mut servers = ServerHarness::new(BIN).unwrap();
    let (cert, key_file) = ca
        .write_server_pem(&["localhost", "127.0.0.1"], servers.root())
        .unwrap();
    servers
        .set_env("PADDOCK_SERVER_TLS_CERT", &cert)
        .set_env("PADDOCK_SERVER_TLS_KEY", &key_file);
    let server = servers.spawn(&[]).unwrap();
    assert!(server.tls && server.url().starts_with("https://"));
    let key = servers.create_key("tls", "readonly").unwrap();
    let url = format!("https://localhost:{}", server.address.port());

    // Without the CA the certificate is refused, and nothing is stored.
    let untrusting = DaemonHarness::new(BIN).unwrap();
    let token = format!("{}\n", servers.pair_token(&[]).unwrap());
    let refused = untrusting
        .run_with_stdin(["daemon", "join", "--server", &url], token.as_bytes())
        .unwrap();
    assert_eq!(refused.code(), Some(1), "{}", refused.stderr());
    assert!(
        refused.stderr().contains("SSL_CERT_FILE"),
        "{}",
        refused.stderr()
    );
    assert!(!untrusting.paths().state_dir.join("fleet.json").exists());

    let mut daemon = DaemonHarness::new(BIN).unwrap();
    daemon.set_env("SSL_CERT_FILE", ca.pem_path());
    daemon.start_detached(&["--web-warm", "1"]).unwrap();
    let token = format!("{}\n", servers.pair_token(&[]).unwrap());
    let machine = daemon
        .run_with_stdin(["daemon", "join", "--server", &url], token.as_bytes())
        .unwrap()
        .success()
        .unwrap()
        .stdout()
        .trim()
        .to_owned();
    let ca_path = ca.pem_path().to_string_lossy().into_owned();
    let report = check_with(
        &server,
        &key,
        &["online", &machine, "web-none"],
        &[("SSL_CERT_FILE", ca_path.as_str())],
    );
    assert_eq!(report["device"]["online"], true, "{report}");
    assert_eq!(report["ui"]["isError"], false, "{}", report["ui"]);
    assert!(server.log_text().contains("daemon connected"));
}

/// A bash tool call, as Claude Code makes it.
fn bash(id: &str, command: &str) -> paddock_testkit::model::Turn {
    paddock_testkit::model::Turn::tool(
        id,
        "Bash",
        serde_json::json!({ "command": command, "description": "Run a command" }),
    )
}

/// What the agent runs to call the fleet's data plane through the credential proxy with its
/// voucher, as any tool in its session could: `read` (granted), `send` (not granted: replies
/// go through `paddock message send` and the PII pipeline), and whether a runner key is
/// anywhere in its environment. (Debian's own Python: the launch sandbox keeps the agent out of
/// the tester's home, where a pyenv shim may come first on `PATH`.)
const AS_THE_AGENT: &str = r#"/usr/bin/python3 - <<'PY'
import json, os, urllib.request, urllib.error
url = os.environ["PADDOCK_FLEET_URL"]
voucher = open(os.environ["PADDOCK_PROXY_TOKEN_FILE"]).read().strip()
def call(op, body):
    request = urllib.request.Request(url + "/api/agent/" + op, data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + voucher, "content-type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
status, body = call("read", {})
print("read-status", status, "read-body", body)
print("send-status", call("send", {"target": "/.dm/owner#fleet", "text": "unfiltered"})[0])
print("runner-key-in-env", any("pdk_rk_" in value for value in os.environ.values()))
PY"#;

#[test]
fn an_owner_messages_a_bot_through_the_server_and_reads_its_filtered_reply() {
    const BODY: &str = "Please confirm fleet order 4471 for Ada.";
    let mut servers = ServerHarness::new(BIN).unwrap();
    // Trace level: no credential may show in a log line at any level.
    let server = servers.spawn(&["--log-level", "trace"]).unwrap();
    let key = servers.create_key("owner-key", "no-commerce").unwrap();
    let readonly = servers.create_key("watcher", "readonly").unwrap();
    let model = ScriptedModel::start(vec![
        bash("call_pull", "paddock inbox pull"),
        bash("call_proxy", AS_THE_AGENT),
        bash(
            "call_send",
            "printf 'Order confirmed, card 4111 1111 1111 1111.' > reply.txt && paddock message send --target '/.dm/owner#fleet' --file reply.txt",
        ),
        paddock_testkit::model::Turn::text("Replied."),
        // Woken again after the daemon came back: the message that waited on the server.
        paddock_testkit::model::Turn::text("Back."),
    ])
    .unwrap();
    let mut daemon = DaemonHarness::new(BIN).unwrap();
    daemon.with_agent_clis().unwrap();
    daemon
        .write_anthropic_config(&model.base_url(), "sk-ant-fleet-bots-key", "")
        .unwrap();
    daemon
        .start_detached(&["--web-warm", "0", "--log-level", "trace"])
        .unwrap();
    let machine = join(&servers, &server, &daemon, "bots");
    let work = tempfile::tempdir().unwrap();
    daemon.add_claude_bot("helper", work.path(), true).unwrap();
    let message = work.path().join("message.txt");
    std::fs::write(&message, BODY).unwrap();
    let url = server.url();
    let owner = |args: &[&str], key: &str| {
        let mut all = vec!["server"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--url", &url]);
        servers
            .run_with_env(&all, &[("PADDOCK_API_KEY", key)])
            .unwrap()
    };
    let send = |key: &str| {
        owner(
            &["message", "helper", "--file", message.to_str().unwrap()],
            key,
        )
    };

    // A readonly key may read but not message.
    let refused = send(&readonly);
    assert!(!refused.output.status.success(), "{refused}");
    assert!(refused.stderr().contains("(403)"), "{refused}");
    // The bot becomes known to the server with the daemon's next inventory.
    let sent = paddock_testkit::wait_until(DEADLINE, || {
        let sent = send(&key);
        sent.output.status.success().then_some(sent)
    })
    .unwrap();
    assert_eq!(
        sent.stdout().trim(),
        format!("#1 for helper on {machine}: woken"),
        "{sent}"
    );

    let conversation = |key: &str| -> Vec<Value> {
        let out = owner(&["messages", "helper", "--json"], key)
            .success()
            .unwrap();
        let value: Value = serde_json::from_str(out.stdout().trim()).unwrap();
        value["messages"].as_array().unwrap().clone()
    };
    let reply = paddock_testkit::wait_until(DEADLINE, || {
        conversation(&readonly)
            .into_iter()
            .find(|message| message["direction"] == "out")
    })
    .unwrap_or_else(|error| {
        panic!(
            "no reply: {error}\nmodel was sent:\n{}\ndaemon log:\n{}",
            model
                .scripted_requests()
                .iter()
                .map(|request| request.body.to_string())
                .collect::<Vec<_>>()
                .join("\n---\n"),
            daemon.detached_log()
        )
    });
    assert_eq!(reply["target"], "/.dm/owner#fleet", "{reply}");
    assert_eq!(reply["sender"], "helper", "{reply}");
    let text = reply["text"].as_str().unwrap();
    assert!(text.starts_with("Order confirmed, card "), "{text}");
    assert!(
        !text.contains("4111 1111 1111 1111"),
        "the bot's PII pipeline ran before the server got the reply: {text}"
    );

    let requests = model.scripted_requests();
    let notice = requests[0].last_user_text();
    assert!(
        notice
            .trim_end()
            .ends_with("[inbox notice: 1 new in /.dm/owner#fleet from owner-key, latest #1]"),
        "woken with the notice alone: {notice}"
    );
    assert!(
        !requests[0].body.to_string().contains(BODY),
        "no body in the notice"
    );
    assert!(
        requests[1].body.to_string().contains(BODY),
        "`paddock inbox pull` took the body from the server"
    );
    let proxied = requests[2].body.to_string();
    assert!(proxied.contains("read-status 200"), "{proxied}");
    assert!(
        proxied.contains("Please confirm fleet order 4471"),
        "the voucher reads the conversation through the proxy: {proxied}"
    );
    assert!(proxied.contains("send-status 403"), "{proxied}");
    assert!(proxied.contains("runner-key-in-env False"), "{proxied}");

    // The owner stops the running session through the server.
    let stopped = owner(&["stop-bot", "helper"], &key).success().unwrap();
    assert_eq!(stopped.stdout().trim(), "helper: stopped", "{stopped}");
    let again = owner(&["stop-bot", "helper"], &key).success().unwrap();
    assert_eq!(again.stdout().trim(), "helper: no session was running");

    // A message while the daemon is away waits on the server; the daemon takes it when it
    // reconnects, and the bot is woken.
    daemon.run(["daemon", "stop"]).unwrap().success().unwrap();
    std::fs::write(&message, "A question while you were away.").unwrap();
    let waiting = paddock_testkit::wait_until(DEADLINE, || {
        let sent = send(&key);
        (sent.output.status.success() && sent.stdout().contains("stored;")).then_some(sent)
    })
    .unwrap();
    assert!(waiting.stdout().starts_with("#3 for helper"), "{waiting}");
    daemon
        .start_detached(&["--web-warm", "0", "--log-level", "trace"])
        .unwrap();
    paddock_testkit::wait_until(DEADLINE, || {
        (model.scripted_requests().len() >= 5).then_some(())
    })
    .unwrap_or_else(|error| {
        panic!(
            "not woken after the reconnect: {error}\n{}",
            daemon.detached_log()
        )
    });
    let woken = model.scripted_requests()[4].last_user_text();
    assert!(
        woken
            .trim_end()
            .ends_with("[inbox notice: 1 new in /.dm/owner#fleet from owner-key, latest #2]"),
        "{woken}"
    );

    // No runner key, machine key or API key in either log.
    for (what, log) in [
        ("server", server.log_text()),
        ("daemon", daemon.detached_log()),
    ] {
        for prefix in ["pdk_rk_", "pdk_mk_", "pdk_sk_"] {
            assert!(
                !log.contains(prefix),
                "{what} log holds a {prefix} value:\n{log}"
            );
        }
    }
}

#[test]
fn an_android_phone_on_a_joined_daemon_is_driven_through_the_server() {
    use paddock_testkit::android::{AdbServer, FakeAndroid, FakeAndroidConfig};
    let mut servers = ServerHarness::new(BIN).unwrap();
    // The polls below would meet the default 60 calls a minute per key.
    servers.set_env("PADDOCK_SERVER_RATE_LIMIT_PER_KEY_PER_MIN", "6000");
    let server = servers.spawn(&[]).unwrap();
    let key = servers.create_key("phones", "no-commerce").unwrap();
    let adb = AdbServer::start().unwrap();
    let phone = FakeAndroid::start(FakeAndroidConfig::default()).unwrap();
    adb.connect(&phone).unwrap();
    let mut daemon = DaemonHarness::new(BIN).unwrap();
    daemon.with_adb_server(&adb.socket_env());
    daemon.start_detached(&["--web-warm", "0"]).unwrap();
    let machine = join(&servers, &server, &daemon, "phones");
    let fleet = paddock_testkit::McpHttp {
        port: server.address.port(),
        token: key,
        session: None,
    };
    let serial = phone.serial();
    let call = |tool: &str, arguments: Value| fleet.call(tool, arguments).unwrap();
    let text = |result: &Value| {
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let listed = paddock_testkit::wait_until(DEADLINE, || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let listed = call("list_devices", serde_json::json!({ "platform": "android" }));
        listed["structuredContent"]["devices"]
            .as_array()?
            .iter()
            .find(|device| device["device_id"] == serial.as_str())
            .cloned()
    })
    .unwrap();
    assert_eq!(listed["machine_id"], machine.as_str(), "{listed}");
    assert_eq!(listed["platform"], "android", "{listed}");

    let started = call(
        "manage_device_apps",
        serde_json::json!({ "device_id": serial, "operation": "start", "package": "com.example.notes" }),
    );
    assert_eq!(started["isError"], false, "{started}");
    assert!(
        phone
            .commands()
            .iter()
            .any(|command| command.starts_with("monkey -p com.example.notes")),
        "{:?}",
        phone.commands()
    );
    let state = call(
        "get_device_ui_state",
        serde_json::json!({ "device_id": serial }),
    );
    assert!(text(&state).contains("button \"Sign in\""), "{state}");
    // The app's sign-in: tap the field, type, enter, type, enter.
    for action in [
        serde_json::json!({ "operation": "tap", "text": "Username" }),
        serde_json::json!({ "operation": "keyboard_write", "value": "ann" }),
        serde_json::json!({ "operation": "keyboard_key", "key": "enter" }),
        serde_json::json!({ "operation": "keyboard_write", "value": "pw" }),
        serde_json::json!({ "operation": "keyboard_key", "key": "enter" }),
    ] {
        let mut arguments = action.clone();
        arguments["device_id"] = serde_json::json!(serial);
        let answer = call("device_action", arguments);
        assert_eq!(answer["isError"], false, "{action}: {answer}");
    }
    assert!(
        phone.commands().contains(&"input text 'ann'".to_owned()),
        "{:?}",
        phone.commands()
    );
    assert_eq!(phone.screen(), "notes-list");
    let shot = call(
        "get_device_screenshot",
        serde_json::json!({ "device_id": serial }),
    );
    let kinds: Vec<&str> = shot["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item["type"].as_str())
        .collect();
    assert!(kinds.contains(&"image"), "{kinds:?}");
    // What the platform lacks answers typed, naming it.
    let unmapped = call(
        "configure_device",
        serde_json::json!({ "device_id": serial, "operation": "set_timezone", "timezone": "UTC" }),
    );
    assert_eq!(unmapped["isError"], true, "{unmapped}");
    assert!(text(&unmapped).starts_with("[invalid_input]"), "{unmapped}");
    assert!(text(&unmapped).contains("android"), "{unmapped}");

    // A command in flight when the daemon dies is answered at once, typed, not at its deadline.
    phone.set_delay(std::time::Duration::from_secs(15));
    let before = phone.command_count();
    std::thread::scope(|scope| {
        let pending = scope.spawn(|| {
            call(
                "device_action",
                serde_json::json!({ "device_id": serial, "operation": "swipe", "direction": "up" }),
            )
        });
        paddock_testkit::wait_until(DEADLINE, || (phone.command_count() > before).then_some(()))
            .unwrap();
        let record = paddock_client::PidRecord::read(&daemon.paths().pid_file)
            .unwrap()
            .unwrap();
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(i32::try_from(record.pid).unwrap()).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
        let failed = pending.join().unwrap();
        assert_eq!(failed["isError"], true, "{failed}");
        assert!(text(&failed).starts_with("[upstream_error]"), "{failed}");
        assert!(
            text(&failed).contains("disconnected before it answered"),
            "{failed}"
        );
    });
    phone.set_delay(std::time::Duration::ZERO);
    // The server marks the machine offline before it answers the commands in flight.
    let offline = call("get_device", serde_json::json!({ "device_id": serial }));
    assert_eq!(
        offline["structuredContent"]["state"], "offline",
        "{offline}"
    );
}
