//! Adapters: one per runtime. An adapter declares capabilities, plans the launch, encodes
//! commands in the vendor protocol and normalises the vendor's output; the logical session
//! does everything else.

pub mod claude;
pub mod pi;

use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde_json::Value;

use crate::contract::{
    AgentEvent, BackendId, Capabilities, Command, Lifetime, MidTurnDelivery, OpenRequest,
    PermissionDecision, Probe, Transport, TurnOutcome,
};
use crate::host::HostConfig;

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
}

/// Turns vendor output lines into [`Decoded`] items; one per session (it may keep state).
pub trait Decoder: Send {
    fn decode(&mut self, line: &str) -> Vec<Decoded>;
}

pub trait Adapter: Send + Sync {
    fn backend(&self) -> BackendId;
    fn capabilities(&self) -> Capabilities;
    /// The executable, when installed.
    fn program(&self) -> Option<PathBuf>;
    fn probe(&self) -> BoxFuture<'_, Probe>;
    fn launch(&self, request: &OpenRequest) -> LaunchPlan;
    fn encode_user(&self, command: &Command) -> String;
    fn encode_interrupt(&self, request_id: &str) -> String;
    fn encode_permission(
        &self,
        request_id: &str,
        decision: &PermissionDecision,
        input: &Value,
    ) -> String;
    fn decoder(&self) -> Box<dyn Decoder>;
    /// Whether the runtime calls a model API and so needs a voucher from the broker.
    fn needs_model_credentials(&self) -> bool {
        true
    }
    /// Writes launch-private configuration (after the credentials are minted) and returns
    /// environment variables pointing at it.
    fn prepare(
        &self,
        _request: &OpenRequest,
        _dir: &crate::host::LaunchDir,
        _secrets: &[(OsString, OsString)],
    ) -> std::io::Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
    /// Lines written right after the process starts (a state query, a handshake).
    fn startup_lines(&self) -> Vec<String> {
        Vec::new()
    }
    /// For a `steer` runtime: the line that delivers `command` into the running turn.
    fn encode_steer(&self, _command: &Command) -> Option<String> {
        None
    }
    /// Whether the runtime asks permission for tools (`permission_requested`).
    fn asks_permission(&self) -> bool {
        true
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
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tokio::process::Command::new(&program)
            .arg("--version")
            .kill_on_drop(true)
            .output(),
    )
    .await;
    let (version, problem) = match output {
        Ok(Ok(output)) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout);
            let version = text
                .split_whitespace()
                .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))
                .map(str::to_owned);
            (version, None)
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
        BackendId::Pi => Box::new(pi::Pi::new(host)),
        other => Box::new(Unavailable(other)),
    }
}

/// A backend whose adapter has not landed: probes as not installed, refuses to open.
struct Unavailable(BackendId);

impl Adapter for Unavailable {
    fn backend(&self) -> BackendId {
        self.0
    }

    fn capabilities(&self) -> Capabilities {
        let (lifetime, transport, mid_turn_delivery) = match self.0 {
            BackendId::Codex => (
                Lifetime::Session,
                Transport::Process,
                MidTurnDelivery::SafeBoundaryQueue,
            ),
            BackendId::OpenCode => (
                Lifetime::Session,
                Transport::Service,
                MidTurnDelivery::Steer,
            ),
            BackendId::Pi => (
                Lifetime::Session,
                Transport::InProcessSdk,
                MidTurnDelivery::Steer,
            ),
            BackendId::Cursor => (
                Lifetime::Session,
                Transport::Process,
                MidTurnDelivery::Steer,
            ),
            BackendId::Claude => (
                Lifetime::Session,
                Transport::Process,
                MidTurnDelivery::SafeBoundaryQueue,
            ),
        };
        Capabilities {
            lifetime,
            transport,
            mid_turn_delivery,
        }
    }

    fn program(&self) -> Option<PathBuf> {
        None
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        Box::pin(async move {
            Probe {
                backend: self.0,
                installed: false,
                program: None,
                version: None,
                capabilities: self.capabilities(),
                problem: Some(format!("the `{}` adapter is not in this release", self.0)),
            }
        })
    }

    fn launch(&self, _request: &OpenRequest) -> LaunchPlan {
        LaunchPlan::default()
    }

    fn encode_user(&self, _command: &Command) -> String {
        String::new()
    }

    fn encode_interrupt(&self, _request_id: &str) -> String {
        String::new()
    }

    fn encode_permission(
        &self,
        _request_id: &str,
        _decision: &PermissionDecision,
        _input: &Value,
    ) -> String {
        String::new()
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        struct Nothing;
        impl Decoder for Nothing {
            fn decode(&mut self, _line: &str) -> Vec<Decoded> {
                Vec::new()
            }
        }
        Box::new(Nothing)
    }
}
