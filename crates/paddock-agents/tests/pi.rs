//! The conformance suite against the real `pi` CLI (npm `@mariozechner/pi-coding-agent`,
//! installed by `scripts/setup --dev`) in RPC mode, reaching the scripted Anthropic server
//! through the credential proxy with only a voucher.
#![cfg(test)]

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use paddock_agents::testing::{self, ConformanceHost, ScriptTurn};
use paddock_agents::*;
use paddock_testkit::model::{ScriptedModel, Turn};

const REAL_KEY: &str = "sk-ant-real-key-for-tests";

/// A broker whose `anthropic` upstream is `model`, swapping vouchers for [`REAL_KEY`].
async fn broker_for(model: &ScriptedModel) -> std::sync::Arc<dyn LaunchCredentials> {
    use paddock_credentials::{CredentialBroker, CredentialBrokerConfig, UpstreamConfig};
    let broker = CredentialBroker::start(CredentialBrokerConfig {
        upstreams: vec![UpstreamConfig {
            name: "anthropic".into(),
            url: model.base_url(),
            credential: paddock_client::SecretString::new(REAL_KEY),
            header: "x-api-key".into(),
            scheme: None,
        }],
        ..CredentialBrokerConfig::default()
    })
    .await
    .unwrap();
    std::sync::Arc::new(BrokerCredentials {
        broker: std::sync::Arc::new(broker),
        anthropic_upstream: "anthropic".into(),
        paddock_upstream: "anthropic".into(),
    })
}

fn pi() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules/.bin/pi");
    assert!(
        path.exists(),
        "{} is missing\nhint: run `scripts/setup --dev`",
        path.display()
    );
    path
}

struct PiHost {
    root: tempfile::TempDir,
    work: tempfile::TempDir,
    models: Mutex<Vec<ScriptedModel>>,
    launches: AtomicU32,
}

impl PiHost {
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
        ScriptTurn::SlowText(text) => {
            Turn::streamed(&text).slow(std::time::Duration::from_millis(150))
        }
        ScriptTurn::Shell { command } => Turn::tool(
            &format!("toolu_conformance_{index}"),
            "bash",
            serde_json::json!({ "command": command, "description": "Run a command" }),
        ),
    }
}

impl ConformanceHost for PiHost {
    async fn open(&self, script: Vec<ScriptTurn>) -> anyhow::Result<Session> {
        let model = ScriptedModel::start(
            script
                .into_iter()
                .enumerate()
                .map(|(index, step)| turn(step, index))
                .collect(),
        )?;
        let credentials = broker_for(&model).await;
        self.models.lock().unwrap().push(model);
        let sdk = AgentDriverSdk::new(
            HostConfig::new(self.root.path())
                .with_program("pi", pi())
                .with_credentials(credentials),
        );
        let launch = self.launches.fetch_add(1, Ordering::SeqCst);
        let session = sdk
            .open(OpenRequest {
                backend: BackendId::Pi,
                launch: Launch {
                    working_directory: self.work.path().to_path_buf(),
                    instructions: None,
                    launch_id: format!("pi-conformance-{launch}"),
                },
                config: AgentConfig::default(),
                env: Vec::new(),
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
async fn pi_two_turns() {
    let host = PiHost::new();
    testing::two_turns(&host).await.unwrap();
    let models = host.models.lock().unwrap();
    for request in models[0].scripted_requests() {
        assert_eq!(
            request.header("x-api-key"),
            Some(REAL_KEY),
            "Pi held only a voucher"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_steers_mid_turn() {
    testing::steer_mid_turn(&PiHost::new()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_interrupt() {
    testing::interrupt(&PiHost::new()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_crash_closes_once() {
    testing::crash(&PiHost::new()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_stop_fails_the_running_command() {
    testing::stop(&PiHost::new()).await.unwrap();
}
