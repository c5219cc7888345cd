//! The conformance suite against the real `claude` CLI (npm `@anthropic-ai/claude-code`,
//! installed by `scripts/setup --dev`), pointed at the scripted Anthropic server, in an
//! isolated launch directory.
#![cfg(test)]

mod common;

use common::{REAL_KEY, ScriptedHost, broker_for, npm_bin, until};
use paddock_agents::testing::{self, ConformanceHost};
use paddock_agents::*;
use paddock_testkit::model::{ScriptedModel, Turn};

fn claude() -> std::path::PathBuf {
    npm_bin("claude")
}

fn claude_host() -> ScriptedHost {
    let mut host = ScriptedHost::new(BackendId::Claude, ModelApi::AnthropicMessages, claude());
    host.shell_tool = "Bash";
    host.shell_input =
        |command| serde_json::json!({ "command": command, "description": "Run a command" });
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_two_turns() {
    let host = claude_host();
    testing::two_turns(&host).await.unwrap();
    // Claude Code held only a voucher: the upstream saw the real key, the voucher never left
    // the proxy.
    host.assert_only_real_key_upstream();
    let requests = host.scripted_requests();
    assert!(requests.len() >= 2, "{requests:?}");
    for request in &requests {
        assert!(
            request.header("x-agent-id").is_some(),
            "the proxy stamps the launch"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_never_holds_the_real_key() {
    let host = claude_host();
    let (session, pid) = host.running().await;
    let environ = common::Environ::of(pid);
    assert!(!environ.contains(REAL_KEY), "the real key reached the CLI");
    assert!(
        environ
            .var("ANTHROPIC_API_KEY")
            .is_some_and(|key| key.starts_with("vch_")),
        "the CLI holds a voucher"
    );
    assert!(environ.var("PADDOCK_PROXY_TOKEN_FILE").is_some());
    assert!(!common::cmdline(pid).contains("vch_"));
    host.release_gate();
    common::stop(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_launch_without_a_broker_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let sdk = AgentDriverSdk::new(HostConfig::new(root.path()).with_program("claude", claude()));
    let error = sdk
        .open(OpenRequest {
            backend: BackendId::Claude,
            launch: Launch {
                working_directory: root.path().to_path_buf(),
                instructions: None,
                launch_id: "no-broker".into(),
            },
            config: AgentConfig::default(),
            env: Vec::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        error,
        OpenError::NoCredentialBroker {
            backend: BackendId::Claude
        }
    );
    assert!(!root.path().join("launches/no-broker").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_queues_at_the_boundary() {
    testing::queue_at_boundary(&claude_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_interrupt() {
    testing::interrupt(&claude_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_permission_allow_runs_the_tool() {
    claude_host().permission_allowed().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_permission_deny_blocks_the_tool() {
    claude_host()
        .permission_denied("not allowed in tests")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_crash_closes_once() {
    testing::crash(&claude_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_stop_fails_queued_commands() {
    testing::stop(&claude_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_reports_claude_and_a_missing_backend() {
    let root = tempfile::tempdir().unwrap();
    let sdk = AgentDriverSdk::new(
        HostConfig::new(root.path())
            .with_program("claude", claude())
            .with_program("codex", root.path().join("no-such-codex")),
    );
    let probe = sdk.probe(BackendId::Claude).await;
    assert!(probe.installed, "{probe:?}");
    assert_eq!(probe.version.as_deref(), Some("2.1.70"));
    assert_eq!(
        probe.capabilities.mid_turn_delivery,
        MidTurnDelivery::SafeBoundaryQueue
    );
    let codex = sdk.probe(BackendId::Codex).await;
    assert!(
        !codex.installed
            && codex
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("codex")),
        "{codex:?}"
    );
}

/// A CLI that ignores SIGINT and never sees its stdin close (Claude Code behind a wrapper that
/// keeps the pipe open and ignores SIGINT, which its children inherit) is stopped by the
/// SIGTERM/SIGKILL steps within `force_after`, and its whole process group is reaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_forces_a_cli_that_ignores_sigint() {
    let host = claude_host();
    let wrapper = host.work.path().join("claude-ignoring-sigint");
    paddock_process::write_executable(
        &wrapper,
        format!(
            "#!/bin/bash\ntrap '' INT\n{{ cat; sleep 3600; }} | '{}' \"$@\"\n",
            claude().display()
        )
        .as_bytes(),
    )
    .unwrap();
    let model = ScriptedModel::start(vec![Turn::streamed("hello").gated()]).unwrap();
    let sdk = AgentDriverSdk::new(
        HostConfig::new(host.root.path())
            .with_program("claude", &wrapper)
            .with_credentials(broker_for(&model, ModelApi::AnthropicMessages).await),
    );
    let session = sdk
        .open(OpenRequest {
            backend: BackendId::Claude,
            launch: Launch {
                working_directory: host.work.path().to_path_buf(),
                instructions: None,
                launch_id: "stubborn".into(),
            },
            config: AgentConfig::default(),
            env: Vec::new(),
        })
        .await
        .unwrap();
    let mut events = session.events().unwrap();
    session.start(Command::user("c1", "hi")).await;
    let mut seen = Vec::new();
    testing::wait_for(&mut events, &mut seen, |e| {
        matches!(e, AgentEvent::TurnStarted { .. })
    })
    .await
    .unwrap();
    // Wait until the CLI is up and asking the model, so the signals reach Claude Code itself.
    until("Claude Code to ask the model", || model.asked())
        .await
        .unwrap();
    let pid = session.snapshot().await.pid.unwrap();
    let facts = session
        .stop(StopRequest {
            reason: "test".into(),
            force_after: std::time::Duration::from_secs(2),
        })
        .await;
    assert!(
        matches!(facts.reason, CloseReason::Stopped { forced: true, .. }),
        "{facts:?}"
    );
    assert!(facts.processes_reaped, "{facts:?}");
    assert!(!paddock_process::is_running(pid));
    model.release();
}

/// A stdio MCP server with one tool, `tap`, for the real CLI to connect to.
const TAP_SERVER: &str = r#"
const lines = require('readline').createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  let result = {};
  if (message.method === 'initialize') {
    result = { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} },
               serverInfo: { name: 'tap', version: '1' } };
  } else if (message.method === 'tools/list') {
    result = { tools: [{ name: 'tap', description: 'Taps', inputSchema: { type: 'object' } }] };
  }
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }) + '\n');
});
"#;

/// The real `claude` takes the MCP and tool flags Paddock passes: with
/// [`ToolAccess::McpOnly`] its `init` lists the server connected and only that server's tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_only_leaves_the_real_cli_only_the_servers_tools() {
    use paddock_agents::adapters::{Adapter, claude::Claude};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    let root = tempfile::tempdir().unwrap();
    let script = root.path().join("tap.js");
    std::fs::write(&script, TAP_SERVER).unwrap();
    let home = root.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let node = std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file())
        .expect("node is on PATH");
    let request = OpenRequest {
        backend: BackendId::Claude,
        launch: Launch {
            working_directory: root.path().to_owned(),
            instructions: None,
            launch_id: "mcp".into(),
        },
        config: AgentConfig {
            mcp_servers: vec![McpServer {
                name: "paddock".into(),
                command: node,
                args: vec![script.display().to_string()],
                env: vec![("TAP_MODE".into(), "test".into())],
            }],
            tools: ToolAccess::McpOnly,
            ..AgentConfig::default()
        },
        env: Vec::new(),
    };
    let plan = Claude.launch(&request);
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
        ("PATH".into(), path.clone()),
        ("HOME".into(), home.into()),
        // Nothing listens there: the turn fails after `init`, which is all this test reads.
        ("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9".into()),
        ("ANTHROPIC_API_KEY".into(), "not-a-key".into()),
    ];
    env.extend(
        plan.env
            .iter()
            .map(|(name, value)| (name.into(), value.into())),
    );
    let spec = paddock_process::ChildSpec {
        program: claude(),
        args: plan.args,
        env,
        current_dir: Some(root.path().to_owned()),
        stdin: true,
        stdout: true,
        ..paddock_process::ChildSpec::default()
    };
    let mut child = paddock_process::ManagedChild::spawn(spec, None).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let user = serde_json::json!({
        "type": "user",
        "message": { "role": "user", "content": [{ "type": "text", "text": "hi" }] },
    });
    stdin
        .write_all(format!("{user}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let init = tokio::time::timeout(common::DEADLINE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["type"] == "system" && message["subtype"] == "init" {
                return Some(message);
            }
        }
        None
    })
    .await
    .expect("the CLI wrote `init` in time")
    .unwrap_or_else(|| panic!("the CLI exited without `init`: {}", child.stderr_tail()));
    assert_eq!(
        init["tools"],
        serde_json::json!(["mcp__paddock__tap"]),
        "{init}"
    );
    assert_eq!(
        init["mcp_servers"],
        serde_json::json!([{ "name": "paddock", "status": "connected" }]),
        "{init}"
    );
}
