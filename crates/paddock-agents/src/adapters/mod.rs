//! Adapters: one per runtime. An adapter describes itself with an [`AdapterDescriptor`]
//! (backend, capabilities, model API, program and its version query), plans the launch,
//! encodes commands in the vendor protocol and normalises the vendor's output; the logical
//! session does everything else.

pub mod acp;
pub mod claude;
pub mod codex;
mod descriptor;
pub mod http_bridge;
pub mod opencode;
pub mod pi;

pub use descriptor::{AdapterDescriptor, SupportedVersions};

use std::ffi::OsString;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::contract::{
    AgentEvent, BackendId, Command, OpenRequest, PermissionDecision, TurnOutcome,
};
use crate::host::LaunchDir;

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

/// One runtime behind the session contract. What is fixed about it is in its
/// [`descriptor`](Self::descriptor); the methods plan one launch and make its protocol.
pub trait Adapter: Send + Sync {
    /// The backend, capabilities, model API and program: the same for every launch.
    fn descriptor(&self) -> &AdapterDescriptor;
    fn launch(&self, request: &OpenRequest) -> LaunchPlan;
    /// Writes launch-private configuration (after the credentials are minted) and returns
    /// environment variables pointing at it. Runs on the blocking pool: it may use `std::fs`.
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
}

/// The adapter for `backend`.
pub fn adapter(backend: BackendId) -> Box<dyn Adapter> {
    match backend {
        BackendId::Claude => Box::new(claude::Claude),
        BackendId::Codex => Box::new(codex::Codex),
        BackendId::Pi => Box::new(pi::Pi),
        BackendId::Cursor => Box::new(acp::AcpAdapter::new(acp::AcpProfile::cursor())),
        BackendId::OpenCode => Box::new(opencode::OpenCode),
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

    #[test]
    fn every_backend_has_a_descriptor_of_its_own() {
        for backend in BackendId::ALL {
            let adapter = adapter(backend);
            let descriptor = adapter.descriptor();
            assert_eq!(descriptor.backend, backend);
            assert!(
                descriptor
                    .install_hint
                    .contains(descriptor.program.as_ref()),
                "{descriptor:?}"
            );
            assert_eq!(descriptor.version_args, ["--version"], "{descriptor:?}");
        }
    }
}
