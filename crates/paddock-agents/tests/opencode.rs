//! The conformance suite against the real `opencode` CLI (npm `opencode-ai` 1.18, installed by
//! `scripts/setup --dev`) as `opencode serve`: one authenticated loopback server per session,
//! driven over HTTP and its SSE event stream, reaching the scripted Chat Completions server
//! through the credential proxy with only a voucher.
#![cfg(test)]

mod common;

use common::{ScriptedHost, broker_for, npm_bin};
use paddock_agents::testing::{self, ConformanceHost};
use paddock_agents::*;

fn opencode_host() -> ScriptedHost {
    let mut host = ScriptedHost::new(
        BackendId::OpenCode,
        ModelApi::OpenAiChat,
        npm_bin("opencode"),
    );
    host.shell_tool = "bash";
    host.shell_input =
        |command| serde_json::json!({ "command": command, "description": "Run a command" });
    host.config.model = Model::Named("scripted-model".into());
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_two_turns() {
    let host = opencode_host();
    testing::two_turns(&host).await.unwrap();
    host.assert_only_real_key_upstream();
    let requests = host.scripted_requests();
    assert!(requests.len() >= 2, "{requests:?}");
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["model"], "scripted-model");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_steers_mid_turn() {
    let host = opencode_host();
    testing::steer_mid_turn(&host).await.unwrap();
    // The steered prompt reached the model inside the same OpenCode session.
    let requests = host.scripted_requests();
    let last = requests.last().expect("the model was asked");
    assert!(
        last.body.to_string().contains("and also this"),
        "{:?}",
        last.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_interrupt() {
    testing::interrupt(&opencode_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_permission_allow_runs_the_tool() {
    opencode_host().permission_allowed().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_permission_deny_skips_the_tool() {
    let seen = opencode_host().permission_denied("not in this test").await;
    // OpenCode hands the deny message to the model as the tool's error.
    assert!(
        seen.iter().any(|e| matches!(e, AgentEvent::ToolCallFinished { is_error: true, output, .. } if output.contains("not in this test"))),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_crash_closes_once() {
    testing::crash(&opencode_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_stop_fails_the_running_command() {
    testing::stop(&opencode_host()).await.unwrap();
}

/// A model error OpenCode does not retry (HTTP 400 in OpenAI's error shape) ends the turn as
/// failed with the upstream's message; the session stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_model_error_fails_the_turn() {
    use paddock_testkit::model::{ScriptedModel, Turn};
    let host = opencode_host();
    let model = ScriptedModel::start(vec![Turn::status(400), Turn::text("recovered")]).unwrap();
    let credentials = broker_for(&model, ModelApi::OpenAiChat).await;
    let session = host.sdk(credentials).open(host.request()).await.unwrap();
    let mut events = session.events().unwrap();
    let mut seen = Vec::new();
    session.start(Command::user("c1", "fail please")).await;
    let completed = testing::wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::TurnCompleted { .. })
    })
    .await
    .unwrap();
    assert!(
        matches!(&completed, AgentEvent::TurnCompleted { outcome: TurnOutcome::Failed(message), .. } if message.contains("scripted 400")),
        "{seen:?}"
    );
    assert_eq!(
        session.send(Command::user("c2", "again")).await,
        Receipt::Accepted
    );
    testing::wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::TurnCompleted { command_id, outcome: TurnOutcome::Completed } if command_id == "c2")
    })
    .await
    .unwrap();
    assert!(
        seen.iter().any(
            |e| matches!(e, AgentEvent::AssistantMessageCompleted { text } if text == "recovered")
        ),
        "{seen:?}"
    );
    session
        .stop(StopRequest {
            reason: "test".into(),
            force_after: std::time::Duration::from_secs(6),
        })
        .await;
}

/// The server's password reaches it only through its environment: not in argv, and the
/// server refuses requests without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_server_is_loopback_and_authenticated() {
    let host = opencode_host();
    let (session, pid) = host.running().await;
    let cmdline = common::cmdline(pid);
    assert!(
        cmdline.contains("serve --hostname 127.0.0.1 --port 0"),
        "{cmdline}"
    );
    let environ = common::Environ::of(pid);
    let password = environ
        .var("OPENCODE_SERVER_PASSWORD")
        .expect("the server has a password")
        .to_owned();
    assert!(password.len() >= 32);
    assert!(!cmdline.contains(&password));
    assert!(
        environ.contains("OPENAI_API_KEY=vch_"),
        "the server holds a voucher"
    );
    for var in ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "OPENCODE_CONFIG"] {
        let value = environ.var(var).unwrap_or_else(|| panic!("{var} is set"));
        assert!(
            value.starts_with(&host.root.path().display().to_string()),
            "{var}={value} stays in the launch dir"
        );
    }
    let config = environ.var("OPENCODE_CONFIG").unwrap();
    let config = std::fs::read_to_string(config).unwrap();
    assert!(
        !config.contains("vch_"),
        "the config names the key's variable only"
    );
    assert!(config.contains("{env:OPENAI_API_KEY}"));
    // The server listens on loopback and refuses a request without the password.
    let port = listening_port(pid).expect("the server listens on a loopback port");
    let status = raw_status(port, None).await;
    assert_eq!(status, 401);
    let status = raw_status(port, Some(("opencode", &password))).await;
    assert_eq!(status, 200);
    host.release_gate();
    common::stop(&session).await;
}

/// A `opencode` whose major version this release does not drive is refused at `open` with a
/// typed error, before anything is launched; the probe says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_major_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("opencode");
    // Prints a version and nothing else: enough for the negative check, never launched.
    paddock_process::write_executable(&fake, b"#!/bin/sh\necho 2.0.0\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let sdk = AgentDriverSdk::new(HostConfig::new(state.path()).with_program("opencode", &fake));
    let probe = sdk.probe(BackendId::OpenCode).await;
    assert_eq!(probe.version.as_deref(), Some("2.0.0"));
    assert!(
        probe
            .problem
            .as_deref()
            .is_some_and(|p| p.contains("2.0.0")),
        "{probe:?}"
    );
    let request = OpenRequest {
        backend: BackendId::OpenCode,
        launch: Launch {
            working_directory: dir.path().to_path_buf(),
            instructions: None,
            launch_id: "opencode-v2".into(),
        },
        config: AgentConfig::default(),
        env: Vec::new(),
    };
    let error = sdk.open(request).await.unwrap_err();
    assert!(
        matches!(&error, OpenError::UnsupportedVersion { backend: BackendId::OpenCode, version, .. } if version == "2.0.0"),
        "{error:?}"
    );
    assert!(error.to_string().contains("v1 server API"), "{error}");
    assert!(
        !state.path().join("launches").exists(),
        "nothing was prepared"
    );
    // The real CLI probes as supported.
    let sdk = AgentDriverSdk::new(
        HostConfig::new(state.path()).with_program("opencode", npm_bin("opencode")),
    );
    let probe = sdk.probe(BackendId::OpenCode).await;
    assert!(probe.installed && probe.problem.is_none(), "{probe:?}");
    assert!(probe.version.is_some_and(|v| v.starts_with("1.")));
}

/// The TCP port `pid` listens on, from /proc (loopback only).
fn listening_port(pid: u32) -> Option<u16> {
    let listening = paddock_testkit::procfs::tcp_listening(&[pid]).ok()?;
    let socket = listening.iter().find(|socket| !socket.ipv6)?;
    // 0100007F = 127.0.0.1.
    assert_eq!(
        socket.address, "0100007F",
        "the server listens on loopback only"
    );
    Some(socket.port)
}

/// The status of `GET /session` on the server, with or without credentials.
async fn raw_status(port: u16, credentials: Option<(&str, &str)>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let auth = credentials
        .map(|(user, password)| {
            use base64::Engine as _;
            format!(
                "Authorization: Basic {}\r\n",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )
        })
        .unwrap_or_default();
    stream
        .write_all(
            format!(
                "GET /session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut response = Vec::new();
    // `Connection: close`: the server ends the response by closing.
    let _ = common::within("the server's answer", stream.read_to_end(&mut response))
        .await
        .unwrap();
    let response = String::from_utf8_lossy(&response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or(0)
}
