//! Adapters: one per runtime. An adapter declares capabilities, plans the launch, encodes
//! commands in the vendor protocol and normalises the vendor's output; the logical session
//! does everything else.

pub mod acp;
pub mod claude;
pub mod codex;
pub mod http_bridge;
pub mod opencode;
pub mod pi;

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::contract::{
    AgentEvent, BackendId, Capabilities, Command, OpenError, OpenRequest, PermissionDecision,
    Probe, TurnOutcome,
};
use crate::credentials::ModelApi;
use crate::host::{HostConfig, LaunchDir};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How to start the runtime.
#[derive(Debug, Clone, Default)]
pub struct LaunchPlan {
    pub args: Vec<OsString>,
    /// The adapter's environment defaults (lowest layer after the inherited allowlist).
    pub env: Vec<(String, String)>,
}

/// What a vendor line means.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    Event(AgentEvent),
    VendorSession(String),
    TurnEnded(TurnOutcome),
    Permission {
        request_id: String,
        tool: String,
        input: Value,
    },
    /// A message the protocol sends on its own: the next handshake step, a prompt that waited
    /// for the handshake, an answer to a vendor request the contract does not surface.
    Write(String),
}

/// One session's protocol state: encodes contract commands as vendor messages and normalises
/// the vendor's messages. Encoders return the messages to send now; a protocol that must wait
/// (for a handshake, a thread id) keeps the command and releases it later as
/// [`Decoded::Write`].
pub trait Protocol: Send {
    /// Messages sent right after the runtime starts (a handshake, a state query).
    fn startup(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// Starts a turn for `command`.
    fn user(&mut self, command: &Command) -> Vec<String>;
    /// For a `steer` runtime: delivers `command` into the running turn. `None` queues it.
    fn steer(&mut self, _command: &Command) -> Option<Vec<String>> {
        None
    }
    /// Interrupts the running turn.
    fn interrupt(&mut self, request_id: &str) -> Vec<String>;
    /// Answers a permission request.
    fn permission(
        &mut self,
        request_id: &str,
        decision: &PermissionDecision,
        input: &Value,
    ) -> Vec<String>;
    /// Normalises one vendor message (a stdout line, or a line from the bridge).
    fn decode(&mut self, line: &str) -> Vec<Decoded>;
}

/// For runtimes served over HTTP rather than stdio: carries the protocol's outbound messages
/// to the service and its answers and events back as lines. The process's stdout lines still
/// reach the protocol (a service announces where it listens there).
pub trait Bridge: Send {
    /// Starts the bridge's tasks: `inbound` takes the lines for the protocol; the returned
    /// sender takes the protocol's outbound messages. Dropping that sender stops the bridge.
    fn start(
        self: Box<Self>,
        inbound: mpsc::UnboundedSender<String>,
    ) -> mpsc::UnboundedSender<String>;
}

/// What [`Adapter::prepare`] made for one launch. `Debug` shows names only: a service
/// password travels in both lists.
#[derive(Default)]
pub struct Prepared {
    /// Environment for the runtime (layered like the launch plan's).
    pub env: Vec<(String, String)>,
    /// Values the protocol or bridge needs and the runtime gets through `env` only (a
    /// service password); never logged.
    pub private: Vec<(String, String)>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field(
                "env",
                &self.env.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field(
                "private",
                &self
                    .private
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Prepared {
    pub fn private(&self, name: &str) -> Option<&str> {
        self.private
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

pub trait Adapter: Send + Sync {
    fn backend(&self) -> BackendId;
    fn capabilities(&self) -> Capabilities;
    /// The executable, when installed.
    fn program(&self) -> Option<PathBuf>;
    fn probe(&self) -> BoxFuture<'_, Probe>;
    /// Checks, before anything is minted or written, that `program` is a runtime this adapter
    /// drives (a version whose protocol it speaks).
    fn preflight(&self, _program: &Path) -> BoxFuture<'_, Result<(), OpenError>> {
        Box::pin(async { Ok(()) })
    }
    fn launch(&self, request: &OpenRequest) -> LaunchPlan;
    /// Writes launch-private configuration (after the credentials are minted) and returns
    /// environment variables pointing at it.
    fn prepare(
        &self,
        _request: &OpenRequest,
        _dir: &LaunchDir,
        _secrets: &[(OsString, OsString)],
    ) -> std::io::Result<Prepared> {
        Ok(Prepared::default())
    }
    /// The protocol state for one session.
    fn protocol(&self, request: &OpenRequest, prepared: &Prepared) -> Box<dyn Protocol>;
    /// The HTTP bridge, for service runtimes.
    fn bridge(&self, _prepared: &Prepared) -> Option<Box<dyn Bridge>> {
        None
    }
    /// The model API the runtime calls through the credential proxy (it then needs a voucher
    /// from the broker); `None` for a runtime that reaches no model API of ours.
    fn model_api(&self) -> Option<ModelApi>;
    /// Whether the runtime asks permission for tools (`permission_requested`).
    fn asks_permission(&self) -> bool {
        true
    }
}

/// A private, temporary home for one probe; removed on drop.
struct ProbeHome(PathBuf);

impl ProbeHome {
    fn create() -> Option<Self> {
        use std::os::unix::fs::DirBuilderExt;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("paddock-probe-{}-{n}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .ok()
            .map(|()| Self(path))
    }
}

impl Drop for ProbeHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Probes a CLI by running `program --version`.
pub(crate) async fn probe_version(
    backend: BackendId,
    program: Option<PathBuf>,
    capabilities: Capabilities,
    missing: &str,
) -> Probe {
    let Some(program) = program else {
        return Probe {
            backend,
            installed: false,
            program: None,
            version: None,
            capabilities,
            problem: Some(missing.to_owned()),
        };
    };
    // Some CLIs create their config, data and cache folders even for `--version`: give them
    // a throwaway home so a probe leaves nothing in the user's.
    let home = ProbeHome::create();
    let mut command = tokio::process::Command::new(&program);
    command.arg("--version").kill_on_drop(true);
    if let Some(home) = &home {
        command.env("HOME", &home.0);
        for (name, sub) in [
            ("XDG_CONFIG_HOME", "config"),
            ("XDG_DATA_HOME", "data"),
            ("XDG_STATE_HOME", "state"),
            ("XDG_CACHE_HOME", "cache"),
        ] {
            command.env(name, home.0.join(sub));
        }
    }
    let output = tokio::time::timeout(std::time::Duration::from_secs(30), command.output()).await;
    drop(home);
    let (version, problem) = match output {
        Ok(Ok(output)) if output.status.success() => {
            // Some CLIs print their version on stderr.
            let version = [&output.stdout, &output.stderr]
                .into_iter()
                .find_map(|bytes| {
                    String::from_utf8_lossy(bytes)
                        .split_whitespace()
                        .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))
                        .map(str::to_owned)
                });
            let problem = version
                .is_none()
                .then(|| format!("`{} --version` printed no version", program.display()));
            (version, problem)
        }
        Ok(Ok(output)) => (
            None,
            Some(format!(
                "`{} --version` exited with {}",
                program.display(),
                output.status
            )),
        ),
        Ok(Err(error)) => (
            None,
            Some(format!("could not run `{}`: {error}", program.display())),
        ),
        Err(_) => (
            None,
            Some(format!(
                "`{} --version` did not answer within 30s",
                program.display()
            )),
        ),
    };
    Probe {
        backend,
        installed: version.is_some(),
        program: Some(program),
        version,
        capabilities,
        problem,
    }
}

/// The adapter for `backend`.
pub fn adapter(backend: BackendId, host: &HostConfig) -> Box<dyn Adapter> {
    match backend {
        BackendId::Claude => Box::new(claude::Claude::new(host)),
        BackendId::Codex => Box::new(codex::Codex::new(host)),
        BackendId::Pi => Box::new(pi::Pi::new(host)),
        BackendId::Cursor => Box::new(acp::AcpAdapter::new(acp::AcpProfile::cursor(), host)),
        BackendId::OpenCode => Box::new(opencode::OpenCode::new(host)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_debug_names_private_values_only() {
        let prepared = Prepared {
            env: vec![("A".into(), "visible".into())],
            private: vec![("PASSWORD".into(), "hunter2-secret".into())],
        };
        let shown = format!("{prepared:?}");
        assert!(
            shown.contains("PASSWORD") && shown.contains("\"A\""),
            "{shown}"
        );
        assert!(
            !shown.contains("hunter2-secret") && !shown.contains("visible"),
            "{shown}"
        );
        assert_eq!(prepared.private("PASSWORD"), Some("hunter2-secret"));
    }
}
