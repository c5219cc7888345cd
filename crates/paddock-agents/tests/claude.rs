//! The conformance suite against the real `claude` CLI (npm `@anthropic-ai/claude-code`,
//! installed by `scripts/setup --dev`), pointed at the scripted Anthropic server, in an
//! isolated launch directory.
#![cfg(test)]

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use paddock_agents::testing::{self, ConformanceHost, ScriptTurn};
use paddock_agents::*;
use paddock_testkit::model::{ScriptedModel, Turn};

fn claude() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/agents/node_modules/.bin/claude");
    assert!(
        path.exists(),
        "{} is missing\nhint: run `scripts/setup --dev`",
        path.display()
    );
    path
}

struct ClaudeHost {
    root: tempfile::TempDir,
    work: tempfile::TempDir,
    models: Mutex<Vec<ScriptedModel>>,
    launches: AtomicU32,
}

impl ClaudeHost {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
            models: Mutex::new(Vec::new()),
            launches: AtomicU32::new(0),
        }
    }
}

fn turn(script: ScriptTurn, index: usize) -> Turn {
    match script {
        ScriptTurn::Text(text) => Turn::streamed(&text),
        ScriptTurn::GatedText(text) => Turn::streamed(&text).gated(),
        ScriptTurn::Shell { command } => Turn::tool(
            &format!("toolu_conformance_{index}"),
            "Bash",
            serde_json::json!({ "command": command, "description": "Run a command" }),
        ),
    }
}

impl ConformanceHost for ClaudeHost {
    async fn open(&self, script: Vec<ScriptTurn>) -> anyhow::Result<Session> {
        let model = ScriptedModel::start(
            script
                .into_iter()
                .enumerate()
                .map(|(index, step)| turn(step, index))
                .collect(),
        )?;
        let base_url = model.base_url();
        self.models.lock().unwrap().push(model);
        let sdk =
            AgentDriverSdk::new(HostConfig::new(self.root.path()).with_program("claude", claude()));
        let launch = self.launches.fetch_add(1, Ordering::SeqCst);
        let session = sdk
            .open(OpenRequest {
                backend: BackendId::Claude,
                launch: Launch {
                    working_directory: self.work.path().to_path_buf(),
                    instructions: None,
                    launch_id: format!("conformance-{launch}"),
                },
                config: AgentConfig::default(),
                env: vec![
                    ("ANTHROPIC_BASE_URL".into(), base_url),
                    ("ANTHROPIC_API_KEY".into(), "sk-ant-test-key".into()),
                ],
            })
            .await?;
        Ok(session)
    }

    fn release_gate(&self) {
        if let Some(model) = self.models.lock().unwrap().last() {
            model.release();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_two_turns() {
    testing::two_turns(&ClaudeHost::new()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_queues_at_the_boundary() {
    testing::queue_at_boundary(&ClaudeHost::new())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_interrupt() {
    testing::interrupt(&ClaudeHost::new()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_permission_allow_runs_the_tool() {
    let seen = testing::permission(&ClaudeHost::new(), PermissionDecision::Allow)
        .await
        .unwrap();
    assert!(
        seen.iter().any(|event| matches!(event, AgentEvent::ToolCallFinished { output, is_error: false, .. } if output.contains("conformance-tool-ran"))),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_permission_deny_blocks_the_tool() {
    let seen = testing::permission(
        &ClaudeHost::new(),
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_crash_closes_once() {
    testing::crash(&ClaudeHost::new()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_stop_fails_queued_commands() {
    testing::stop(&ClaudeHost::new()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_reports_claude_and_the_rest() {
    let sdk = AgentDriverSdk::new(
        HostConfig::new(tempfile::tempdir().unwrap().path()).with_program("claude", claude()),
    );
    let probe = sdk.probe(BackendId::Claude).await;
    assert!(probe.installed, "{probe:?}");
    assert_eq!(probe.version.as_deref(), Some("2.1.70"));
    assert_eq!(
        probe.capabilities.mid_turn_delivery,
        MidTurnDelivery::SafeBoundaryQueue
    );
    let codex = sdk.probe(BackendId::Codex).await;
    assert!(!codex.installed && codex.problem.is_some());
}
