//! Paddock's agent driver: coding-agent CLIs (Claude Code, Codex, OpenCode, Pi, ACP agents)
//! behind one session contract.
//!
//! A host opens a session with [`AgentDriverSdk::open`] and then works only with [`Session`]:
//! `start` admits the first command, `send` accepts, queues or rejects later ones with a typed
//! [`Receipt`], `interrupt` and `stop` give bounded control, `events` streams normalised
//! [`AgentEvent`]s, and `closed` settles exactly once with the terminal facts.
//!
//! Inside, the logical session (`session.rs`) owns admission, FIFO queueing, safe-boundary
//! delivery, terminal ordering and cleanup; a process lane (`lane.rs`) runs the CLI in its own
//! process group with strict newline framing; adapters (`adapters/`) translate one vendor's
//! protocol. [`manager`] is the pure scheduling policy a host uses to run one bot's agent
//! process over sessions: single flight, wake and sleep, coalescing, stall detection. This crate
//! knows nothing of the daemon, MCP or HTTP servers.

pub mod adapters;
pub mod contract;
pub mod credentials;
pub mod host;
mod lane;
pub mod manager;
pub mod sandbox;
mod session;
pub mod testing;

pub use contract::*;
pub use credentials::{
    BrokerCredentials, FLEET_URL_VAR, FLEET_VOUCHER_OPERATIONS, LaunchCredentials, LaunchSecrets,
    ModelApi,
};
pub use host::{HostConfig, LaunchDir};
pub use sandbox::{LaunchSandbox, SandboxConfig};
pub use session::Session;

use std::sync::Arc;

use adapters::Adapter;

/// Opens and probes agent backends.
#[derive(Debug, Clone)]
pub struct AgentDriverSdk {
    host: Arc<HostConfig>,
}

impl AgentDriverSdk {
    pub fn new(host: HostConfig) -> Self {
        Self {
            host: Arc::new(host),
        }
    }

    /// Whether `backend` is installed, its version and its capabilities.
    pub async fn probe(&self, backend: BackendId) -> Probe {
        self.probe_with(adapters::adapter(backend).as_ref()).await
    }

    /// [`Self::probe`] for the host's own `adapter` (an ACP profile, say).
    pub async fn probe_with(&self, adapter: &dyn Adapter) -> Probe {
        let descriptor = adapter.descriptor();
        let program = descriptor.find_program(&self.host).await;
        descriptor.probe(&self.host, program).await
    }

    /// The model API `backend` calls through the credential proxy, if any.
    pub fn model_api(&self, backend: BackendId) -> Option<ModelApi> {
        adapters::adapter(backend).descriptor().model_api
    }

    /// Launches `backend` for one logical session.
    pub async fn open(&self, request: OpenRequest) -> Result<Session, OpenError> {
        let adapter: Arc<dyn Adapter> = adapters::adapter(request.backend).into();
        self.open_with(adapter, request).await
    }

    /// Launches a runtime through the host's own `adapter` for one logical session: any
    /// agent that speaks ACP ([`adapters::acp::AcpAdapter`] with an
    /// [`adapters::acp::AcpProfile`]), or an adapter the host wrote. The session reports the
    /// adapter's backend id; `request.backend` is set to it. The request's MCP servers are
    /// checked first (a runtime without an MCP client refuses any). The program is found, and its
    /// version checked against the descriptor's supported versions, before anything is
    /// minted or written. Credentials, the launch directory, environment layers and cleanup
    /// are the same as for [`Self::open`].
    pub async fn open_with(
        &self,
        adapter: Arc<dyn Adapter>,
        mut request: OpenRequest,
    ) -> Result<Session, OpenError> {
        let descriptor = adapter.descriptor();
        request.backend = descriptor.backend;
        descriptor.check_config(&request.config)?;
        let program = descriptor
            .find_program(&self.host)
            .await
            .ok_or(OpenError::NotInstalled {
                backend: request.backend,
            })?;
        descriptor.check_version(&self.host, &program).await?;
        session::open(self.host.clone(), adapter, program, request).await
    }

    /// The host configuration, for building an adapter to pass to [`Self::open_with`].
    pub fn host(&self) -> &HostConfig {
        &self.host
    }
}
