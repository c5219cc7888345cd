//! The conformance host every backend's tests share: a scripted model server per session,
//! reached only through a credential broker that swaps the launch's voucher for [`REAL_KEY`],
//! and the real CLI from `tests/agents/node_modules` (installed by `scripts/setup --dev`).
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_agents::testing::{ConformanceHost, ScriptTurn};
use paddock_agents::*;
use paddock_testkit::model::{ScriptedModel, Turn};

/// The real key; only the scripted upstream may ever see it.
pub const REAL_KEY: &str = "sk-real-key-for-tests";

/// How long a slow turn waits between streamed words.
pub const SLOW_CHUNK: Duration = Duration::from_millis(150);

/// A broker whose `api` upstream is `model`, swapping vouchers for [`REAL_KEY`].
pub async fn broker_for(model: &ScriptedModel, api: ModelApi) -> Arc<dyn LaunchCredentials> {
    use paddock_credentials::{CredentialBroker, CredentialBrokerConfig, UpstreamConfig};
    let (name, header, scheme) = api.upstream_auth();
    let broker = CredentialBroker::start(CredentialBrokerConfig {
        upstreams: vec![UpstreamConfig {
            name: name.into(),
            url: model.base_url(),
            credential: paddock_secrets::SecretString::new(REAL_KEY),
            header: header.into(),
            scheme: scheme.map(str::to_owned),
        }],
        ..CredentialBrokerConfig::default()
    })
    .await
    .expect("the credential broker starts");
    Arc::new(BrokerCredentials::single(Arc::new(broker), api))
}

/// `tests/agents/node_modules/.bin/<name>`, which must exist.
pub fn npm_bin(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/agents/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing\nhint: run `scripts/setup --dev`",
        path.display()
    );
    path
}

/// How long a test waits for anything: a condition, a session to close.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Polls `condition` until it holds, for at most [`DEADLINE`] (`paddock_testkit::wait_until`
/// on tokio's clock); the error names `what` was awaited.
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition() {
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!("timed out after {DEADLINE:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Awaits `future` for at most [`DEADLINE`]; the error names `what` was awaited.
pub async fn within<T>(
    what: &str,
    future: impl std::future::Future<Output = T>,
) -> anyhow::Result<T> {
    tokio::time::timeout(DEADLINE, future)
        .await
        .map_err(|_| anyhow::anyhow!("timed out after {DEADLINE:?} waiting for {what}"))
}

/// One backend's conformance host.
pub struct ScriptedHost {
    pub backend: BackendId,
    pub api: ModelApi,
    /// The program registered for the backend's name.
    pub program: PathBuf,
    /// The runtime's name for its shell tool (the scripted model calls it).
    pub shell_tool: &'static str,
    /// The shell tool's input for `command`.
    pub shell_input: fn(&str) -> serde_json::Value,
    pub config: AgentConfig,
    pub root: tempfile::TempDir,
    pub work: tempfile::TempDir,
    pub models: Mutex<Vec<ScriptedModel>>,
    /// Opens through the host's own adapter ([`AgentDriverSdk::open_with`]) instead of the
    /// built-in one for `backend`.
    pub adapter: Option<AdapterFactory>,
    launches: AtomicU32,
}

/// Builds the adapter a [`ScriptedHost`] opens sessions with.
pub type AdapterFactory = Arc<dyn Fn() -> Arc<dyn paddock_agents::adapters::Adapter> + Send + Sync>;

impl ScriptedHost {
    pub fn new(backend: BackendId, api: ModelApi, program: PathBuf) -> Self {
        Self {
            backend,
            api,
            program,
            shell_tool: "bash",
            shell_input: |command| serde_json::json!({ "command": command }),
            config: AgentConfig::default(),
            root: tempfile::tempdir().expect("tempdir"),
            work: tempfile::tempdir().expect("tempdir"),
            models: Mutex::new(Vec::new()),
            adapter: None,
            launches: AtomicU32::new(0),
        }
    }

    pub fn turn(&self, script: ScriptTurn, index: usize) -> Turn {
        match script {
            ScriptTurn::Text(text) => Turn::streamed(&text),
            ScriptTurn::GatedText(text) => Turn::streamed(&text).gated(),
            ScriptTurn::SlowText(text) => Turn::streamed(&text).slow(SLOW_CHUNK),
            ScriptTurn::HeldText(text) => Turn::streamed(&text).held_after(1),
            ScriptTurn::Shell { command } => Turn::tool(
                &format!("call_conformance_{index}"),
                self.shell_tool,
                (self.shell_input)(&command),
            ),
        }
    }

    /// The driver for this host with `credentials`.
    pub fn sdk(&self, credentials: Arc<dyn LaunchCredentials>) -> AgentDriverSdk {
        AgentDriverSdk::new(
            HostConfig::new(self.root.path())
                .with_program(&self.backend.to_string(), &self.program)
                .with_credentials(credentials),
        )
    }

    pub fn request(&self) -> OpenRequest {
        let launch = self.launches.fetch_add(1, Ordering::SeqCst);
        OpenRequest {
            backend: self.backend,
            launch: Launch {
                working_directory: self.work.path().to_path_buf(),
                instructions: None,
                launch_id: format!("{}-conformance-{launch}", self.backend),
            },
            config: self.config.clone(),
            env: Vec::new(),
        }
    }

    /// Every request the scripted servers answered with a scripted turn.
    pub fn scripted_requests(&self) -> Vec<paddock_testkit::model::Recorded> {
        self.models
            .lock()
            .expect("models")
            .iter()
            .flat_map(ScriptedModel::scripted_requests)
            .collect()
    }

    /// The last session's model has been asked at least once.
    pub fn asked(&self) -> bool {
        self.models
            .lock()
            .expect("models")
            .last()
            .is_some_and(ScriptedModel::asked)
    }

    /// Asserts the upstream saw only the real key and never a voucher.
    pub fn assert_only_real_key_upstream(&self) {
        let requests = self.scripted_requests();
        assert!(!requests.is_empty(), "the model was asked");
        for request in &requests {
            let key = match self.api {
                ModelApi::AnthropicMessages => request.header("x-api-key").map(str::to_owned),
                _ => request
                    .header("authorization")
                    .map(|value| value.trim_start_matches("Bearer ").to_owned()),
            };
            assert_eq!(key.as_deref(), Some(REAL_KEY), "{:?}", request.headers);
            assert!(
                request
                    .headers
                    .iter()
                    .all(|(_, value)| !value.contains("vch_")),
                "{:?}",
                request.headers
            );
        }
    }
}

/// The file the conformance suite's shell tool writes.
pub const TOOL_FILE: &str = "conformance-output.txt";
/// What the tool prints and writes.
pub const TOOL_MARKER: &str = "conformance-tool-ran";

impl ScriptedHost {
    /// The permission round trip answered with allow: the tool ran — its output came back and
    /// its file is in the working directory.
    pub async fn permission_allowed(&self) -> Vec<AgentEvent> {
        let seen = paddock_agents::testing::permission(self, PermissionDecision::Allow)
            .await
            .expect("the permission round trip");
        assert!(
            seen.iter().any(|e| matches!(e, AgentEvent::ToolCallFinished { is_error: false, output, .. } if output.contains(TOOL_MARKER))),
            "{seen:?}"
        );
        let written = std::fs::read_to_string(self.work.path().join(TOOL_FILE)).unwrap_or_default();
        assert!(written.contains(TOOL_MARKER), "{seen:?}");
        seen
    }

    /// The permission round trip answered with deny: the tool did not run and finished as an
    /// error.
    pub async fn permission_denied(&self, message: &str) -> Vec<AgentEvent> {
        let decision = PermissionDecision::Deny {
            message: message.into(),
        };
        let seen = paddock_agents::testing::permission(self, decision)
            .await
            .expect("the permission round trip");
        assert!(
            seen.iter()
                .any(|e| matches!(e, AgentEvent::ToolCallFinished { is_error: true, .. })),
            "{seen:?}"
        );
        assert!(
            !seen.iter().any(|e| matches!(e, AgentEvent::ToolCallFinished { output, .. } if output.contains(TOOL_MARKER))),
            "{seen:?}"
        );
        assert!(!self.work.path().join(TOOL_FILE).exists(), "{seen:?}");
        seen
    }

    /// Opens a session whose answer waits for [`ConformanceHost::release_gate`], starts `c1`
    /// and returns once the runtime asked the model — it has exec'd, so `/proc` shows its own
    /// environment — with its pid.
    pub async fn running(&self) -> (Session, u32) {
        let session = self
            .open(vec![ScriptTurn::GatedText("hello".into())])
            .await
            .expect("the session opens");
        let mut events = session.events().expect("events");
        session.start(Command::user("c1", "hi")).await;
        let mut seen = Vec::new();
        paddock_agents::testing::wait_for(&mut events, &mut seen, |e| {
            matches!(e, AgentEvent::TurnStarted { .. })
        })
        .await
        .expect("the turn starts");
        until("the runtime to ask the model", || self.asked())
            .await
            .expect("the runtime asks the model");
        let pid = session.snapshot().await.pid.expect("a pid");
        (session, pid)
    }
}

/// Stops `session` for a test (after a gated turn, release the gate first).
pub async fn stop(session: &Session) -> ClosedFacts {
    session
        .stop(StopRequest {
            reason: "test".into(),
            force_after: Duration::from_secs(6),
        })
        .await
}

/// A process's environment (`/proc/<pid>/environ`).
pub struct Environ(String);

impl Environ {
    pub fn of(pid: u32) -> Self {
        let bytes = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
        Self(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.0
            .split('\0')
            .find_map(|entry| entry.strip_prefix(name)?.strip_prefix('='))
    }

    pub fn contains(&self, text: &str) -> bool {
        self.0.contains(text)
    }
}

/// A process's arguments, space-separated.
pub fn cmdline(pid: u32) -> String {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    String::from_utf8_lossy(&bytes).replace('\0', " ")
}

impl ConformanceHost for ScriptedHost {
    async fn open(&self, script: Vec<ScriptTurn>) -> anyhow::Result<Session> {
        let turns = script
            .into_iter()
            .enumerate()
            .map(|(index, step)| self.turn(step, index))
            .collect();
        let model = ScriptedModel::start(turns)?;
        let credentials = broker_for(&model, self.api).await;
        self.models.lock().expect("models").push(model);
        let sdk = self.sdk(credentials);
        Ok(match &self.adapter {
            Some(adapter) => sdk.open_with(adapter(), self.request()).await?,
            None => sdk.open(self.request()).await?,
        })
    }

    fn release_gate(&self) {
        if let Some(model) = self.models.lock().expect("models").last() {
            model.release();
        }
    }
}
