//! The conformance suite against the real `codex` CLI (npm `@openai/codex`, installed by
//! `scripts/setup --dev`) as `codex app-server`, reaching the scripted Responses API server
//! through the credential proxy with only a voucher, in a launch-private `CODEX_HOME`.
#![cfg(test)]

mod common;

use common::{ScriptedHost, npm_bin};
use paddock_agents::testing;
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
    let host = codex_host();
    let seen = testing::permission(&host, PermissionDecision::Allow)
        .await
        .unwrap();
    assert!(
        seen.iter().any(|event| matches!(event, AgentEvent::ToolCallFinished { output, is_error: false, .. } if output.contains("conformance-tool-ran"))),
        "{seen:?}"
    );
    assert!(host.work.path().join("conformance-output.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_permission_deny_blocks_the_tool() {
    let host = codex_host();
    let seen = testing::permission(
        &host,
        PermissionDecision::Deny {
            message: "not allowed in tests".into(),
        },
    )
    .await
    .unwrap();
    assert!(
        seen.iter()
            .any(|event| matches!(event, AgentEvent::ToolCallFinished { is_error: true, .. })),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|event| matches!(event, AgentEvent::ToolCallFinished { output, .. } if output.contains("conformance-tool-ran"))));
    assert!(!host.work.path().join("conformance-output.txt").exists());
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
