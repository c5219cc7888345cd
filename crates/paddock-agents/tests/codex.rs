//! The conformance suite against the real `codex` CLI (npm `@openai/codex`, installed by
//! `scripts/setup --dev`) as `codex app-server`, reaching the scripted Responses API server
//! through the credential proxy with only a voucher, in a launch-private `CODEX_HOME`.
#![cfg(test)]

mod common;

use common::{Environ, REAL_KEY, ScriptedHost, cmdline, npm_bin};
use paddock_agents::testing::{self, ConformanceHost};
use paddock_agents::*;

fn codex_host() -> ScriptedHost {
    let mut host = ScriptedHost::new(
        BackendId::Codex,
        ModelApi::OpenAiResponses,
        npm_bin("codex"),
    );
    // Codex 0.171's shell tool is unified exec's `exec_command`, taking one shell string.
    host.shell_tool = "exec_command";
    host.shell_input = |command| serde_json::json!({ "cmd": command });
    // Codex's own default model takes its tools from a different request shape; a named model
    // gets the plain Responses `tools` list the scripted server answers.
    host.config.model = Model::Named("scripted-model".into());
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_two_turns() {
    let host = codex_host();
    testing::two_turns(&host).await.unwrap();
    // Codex held only a voucher: the upstream saw the real key, the voucher never left the
    // proxy.
    host.assert_only_real_key_upstream();
    let requests = host.scripted_requests();
    assert_eq!(requests.len(), 2, "one model request per turn");
    for request in &requests {
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(request.body["stream"], true);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_queues_at_the_boundary() {
    testing::queue_at_boundary(&codex_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_interrupt() {
    testing::interrupt(&codex_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_permission_allow_runs_the_tool() {
    codex_host().permission_allowed().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_permission_deny_blocks_the_tool() {
    codex_host().permission_denied("not allowed in tests").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_crash_closes_once() {
    testing::crash(&codex_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_stop_fails_queued_commands() {
    testing::stop(&codex_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_reports_codex() {
    let sdk = AgentDriverSdk::new(
        HostConfig::new(tempfile::tempdir().unwrap().path())
            .with_program("codex", npm_bin("codex")),
    );
    let probe = sdk.probe(BackendId::Codex).await;
    assert!(probe.installed, "{probe:?}");
    assert_eq!(probe.version.as_deref(), Some("0.171.0"));
    assert_eq!(
        probe.capabilities.mid_turn_delivery,
        MidTurnDelivery::SafeBoundaryQueue
    );
}

/// Codex runs with a voucher and a launch-private `CODEX_HOME` and `HOME`: the real key, the
/// user's `~/.codex` and the voucher in argv are all out of its reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_holds_only_a_voucher_in_a_private_home() {
    let host = codex_host();
    let (session, pid) = host.running().await;
    let environ = Environ::of(pid);
    let var = |name: &str| environ.var(name).map(str::to_owned);
    assert!(!environ.contains(REAL_KEY), "the real key reached the CLI");
    assert!(var("OPENAI_API_KEY").is_some_and(|key| key.starts_with("vch_")));
    let launches = host.root.path().join("launches");
    let codex_home = std::path::PathBuf::from(var("CODEX_HOME").unwrap());
    let home = std::path::PathBuf::from(var("HOME").unwrap());
    assert!(codex_home.starts_with(&launches), "{codex_home:?}");
    assert!(home.starts_with(&launches), "{home:?}");
    // The config names the key's variable; the voucher itself is in no file.
    let config = std::fs::read_to_string(codex_home.join("config.toml")).unwrap();
    assert!(config.contains("env_key = \"OPENAI_API_KEY\""));
    assert!(!config.contains("vch_"));
    assert!(!cmdline(pid).contains("vch_"));
    host.release_gate();
    let facts = common::stop(&session).await;
    assert!(
        facts.launch_dir_removed && !codex_home.exists(),
        "{facts:?}"
    );
}

/// Every key Paddock writes into `config.toml` is one this Codex knows: `--strict-config`
/// refuses unknown fields, so a renamed key fails here rather than being silently ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_launch_config_passes_strict_validation() {
    let root = tempfile::tempdir().unwrap();
    let host = HostConfig::new(root.path());
    let adapter = adapters::adapter(BackendId::Codex);
    let dir = LaunchDir::create(&host, "strict").unwrap();
    for model in [Model::Default, Model::Named("scripted-model".into())] {
        let mut request = codex_host().request();
        request.config.model = model;
        let secrets = [
            ("OPENAI_BASE_URL".into(), "http://127.0.0.1:9/v1".into()),
            ("OPENAI_API_KEY".into(), "vch_not_a_real_voucher".into()),
        ];
        let prepared = adapter.prepare(&request, &dir, &secrets).unwrap();
        let mut env = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), dir.home.clone().into_os_string()),
        ];
        env.extend(
            prepared
                .env
                .iter()
                .map(|(name, value)| (name.into(), value.into())),
        );
        let spec = paddock_process::ChildSpec {
            program: npm_bin("codex"),
            args: ["app-server", "--strict-config", "--print-startup-config"]
                .map(Into::into)
                .to_vec(),
            env,
            ..Default::default()
        };
        let output = paddock_process::output(spec, common::DEADLINE)
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("\"appServerVersion\":\"0.171.0\""),
            "{stdout}\n{}",
            output.stderr
        );
    }
    assert!(dir.remove());
}

/// The real `codex` reads the MCP tables and the unattended settings Paddock writes:
/// `codex mcp list --json` loads the launch's `config.toml` (it refuses a file it cannot
/// parse) and shows each server with its command, arguments and environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_reads_the_mcp_servers_paddock_writes() {
    use paddock_agents::adapters::{Adapter, codex::Codex};

    let state = tempfile::tempdir().unwrap();
    let host = HostConfig::new(state.path());
    let dir = LaunchDir::create(&host, "mcp").unwrap();
    let request = OpenRequest {
        backend: BackendId::Codex,
        launch: Launch {
            working_directory: state.path().to_owned(),
            instructions: None,
            launch_id: "mcp".into(),
        },
        config: AgentConfig {
            mcp_servers: vec![McpServer {
                name: "paddock".into(),
                command: "/opt/paddock/bin/paddock".into(),
                args: vec!["mcp".into(), "--task=\"t 1\"".into()],
                env: vec![("PADDOCK_STATE".into(), "/state dir".into())],
            }],
            tools: ToolAccess::McpOnly,
            ..AgentConfig::default()
        },
        env: Vec::new(),
    };
    let secrets = [("OPENAI_BASE_URL".into(), "http://127.0.0.1:9/v1".into())];
    let prepared = Codex.prepare(&request, &dir, &secrets).unwrap();
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
        ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
        ("HOME".into(), dir.home.clone().into()),
    ];
    env.extend(
        prepared
            .env
            .iter()
            .map(|(name, value)| (name.into(), value.into())),
    );
    let spec = paddock_process::ChildSpec {
        program: npm_bin("codex"),
        args: ["mcp", "list", "--json"].iter().map(Into::into).collect(),
        env,
        current_dir: Some(state.path().to_owned()),
        ..paddock_process::ChildSpec::default()
    };
    let output = paddock_process::output(spec, common::DEADLINE)
        .await
        .unwrap();
    assert!(output.status.success(), "{}", output.stderr);
    let servers: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let server = &servers[0];
    assert_eq!(server["name"], "paddock", "{servers}");
    assert_eq!(server["enabled"], true, "{servers}");
    assert_eq!(
        server["transport"],
        serde_json::json!({
            "type": "stdio",
            "command": "/opt/paddock/bin/paddock",
            "args": ["mcp", "--task=\"t 1\""],
            "env": { "PADDOCK_STATE": "/state dir" },
            "env_vars": [],
            "cwd": null,
        })
    );
    assert_eq!(servers.as_array().unwrap().len(), 1, "{servers}");
}
