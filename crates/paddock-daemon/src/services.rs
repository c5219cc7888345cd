//! The control methods, each handed to the subsystem that owns it: `daemon/*` to the daemon's
//! own facts, `devices/*` to [`crate::devices`], `credentials/*` to [`crate::credentials`],
//! `pii/*` to [`crate::pii`], `agents/*` to [`crate::agents`], `mcp/connect` to
//! [`crate::mcp`]. Nothing here holds logic of its
//! own; `control.rs` decodes and encodes, the subsystems answer.

use std::sync::Arc;
use std::time::Instant;

use paddock_client::control::{
    ControlError, CredentialsRevokeParams, DaemonState, DevicesListResult, DevicesWarmParams,
    DevicesWarmResult, ErrorCode, McpConnectParams, PiiAddParams, PiiBotParams, PiiFilter,
    PiiFilterParams, PiiListResult, PiiRedactResult, PiiSetEnabledParams, PiiTextParams,
    RevokedResult, StatusResult, VoucherListResult,
};
use paddock_credentials::CredentialBroker;
use paddock_devices::Pool;
use paddock_tools::SessionKey;
use tokio::io::BufReader;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, watch};

use crate::agents::AgentsHost;
use crate::bots::BotsHost;
use crate::control::{ControlHandler, Role};
use crate::mcp::McpHost;
use crate::pii::PiiHost;
use crate::subsystem::BoxFuture;
use paddock_client::control::AuthHelloParams;
use paddock_secrets::SecretString;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// What `daemon/status` reports and how `daemon/stop` reaches the main loop.
#[derive(Debug)]
pub struct DaemonFacts {
    pub pid: u32,
    pub started: Instant,
    pub state: watch::Receiver<DaemonState>,
    pub http_endpoint: String,
    pub socket: std::path::PathBuf,
    pub stop: mpsc::Sender<()>,
    /// The owner's proof on the control socket (and the ingress's bearer token).
    pub token: SecretString,
}

/// The subsystems behind the control socket.
pub struct ControlServices {
    pub daemon: DaemonFacts,
    pub pool: Pool,
    pub mcp: Arc<McpHost>,
    /// The agents subsystem's broker (the same one): `credentials/*` lists and revokes its
    /// vouchers.
    pub credentials: CredentialBroker,
    /// Every bot's PII pipeline on this machine.
    pub pii: PiiHost,
    /// The hosted agents; they mint from `credentials`.
    pub agents: AgentsHost,
    /// Bots, their inboxes and outboxes.
    pub bots: BotsHost,
    /// Tasks: their agents' MCP connections arrive here with the launch's voucher.
    pub tasks: crate::tasks::TaskHost,
}

impl std::fmt::Debug for ControlServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlServices")
            .field("daemon", &self.daemon)
            .finish_non_exhaustive()
    }
}

impl ControlHandler for ControlServices {
    fn status(&self) -> StatusResult {
        let facts = &self.daemon;
        StatusResult {
            pid: facts.pid,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            uptime_ms: u64::try_from(facts.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            state: *facts.state.borrow(),
            http_endpoint: Some(facts.http_endpoint.clone()),
            socket: facts.socket.clone(),
        }
    }

    fn request_stop(&self) {
        let _ = self.daemon.stop.try_send(());
    }

    fn check_mcp_session(
        &self,
        role: &Role,
        params: &McpConnectParams,
    ) -> Result<String, ControlError> {
        match role {
            // A task's agent is served its task's session, whatever it asked for.
            Role::Session {
                task: Some(task), ..
            } => self.tasks.check_agent(task),
            _ => SessionKey::parse(&params.session_id)
                .map(|session| session.as_str().to_owned())
                .map_err(|error| ControlError::new(ErrorCode::InvalidParams, error.to_string())),
        }
    }

    fn serve_mcp(
        &self,
        role: Role,
        params: McpConnectParams,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
    ) -> BoxFuture<'static, ()> {
        let mcp = self.mcp.clone();
        if let Role::Session {
            task: Some(task), ..
        } = &role
        {
            let bound = self.tasks.agent_ctx(task, mcp.backend.clone());
            return Box::pin(async move {
                if let Ok((ctx, ended)) = bound {
                    mcp.serve_bound(ctx, reader, writer, ended).await;
                }
            });
        }
        Box::pin(async move {
            if let Ok(session) = SessionKey::parse(&params.session_id) {
                mcp.serve_socket(session, params.reconnectable, reader, writer)
                    .await;
            }
        })
    }

    fn devices_list(&self) -> DevicesListResult {
        crate::devices::list(&self.pool)
    }

    fn devices_warm(
        &self,
        params: DevicesWarmParams,
        progress: mpsc::UnboundedSender<String>,
    ) -> BoxFuture<'static, Result<DevicesWarmResult, ControlError>> {
        Box::pin(crate::devices::warm(self.pool.clone(), params, progress))
    }

    fn credentials_list(&self) -> VoucherListResult {
        crate::credentials::list(&self.credentials)
    }

    fn credentials_revoke(
        &self,
        params: CredentialsRevokeParams,
    ) -> Result<RevokedResult, ControlError> {
        crate::credentials::revoke(&self.credentials, params)
    }

    fn pii_list(
        &self,
        params: PiiBotParams,
    ) -> BoxFuture<'static, Result<PiiListResult, ControlError>> {
        let pii = self.pii.clone();
        Box::pin(async move { pii.list(params).await })
    }

    fn pii_add(&self, params: PiiAddParams) -> BoxFuture<'static, Result<PiiFilter, ControlError>> {
        let pii = self.pii.clone();
        Box::pin(async move { pii.add(params).await })
    }

    fn pii_set_enabled(
        &self,
        params: PiiSetEnabledParams,
    ) -> BoxFuture<'static, Result<PiiListResult, ControlError>> {
        let pii = self.pii.clone();
        Box::pin(async move { pii.set_enabled(params).await })
    }

    fn pii_delete(
        &self,
        params: PiiFilterParams,
    ) -> BoxFuture<'static, Result<PiiListResult, ControlError>> {
        let pii = self.pii.clone();
        Box::pin(async move { pii.delete(params).await })
    }

    fn pii_test(
        &self,
        params: PiiTextParams,
    ) -> BoxFuture<'static, Result<PiiRedactResult, ControlError>> {
        let pii = self.pii.clone();
        Box::pin(async move { pii.test(params).await })
    }

    fn pii_redact(
        &self,
        params: PiiTextParams,
    ) -> BoxFuture<'static, Result<PiiRedactResult, ControlError>> {
        let pii = self.pii.clone();
        Box::pin(async move { pii.redact(params).await })
    }

    fn agents(&self) -> &AgentsHost {
        &self.agents
    }

    fn bots(&self) -> &BotsHost {
        &self.bots
    }

    fn authenticate(&self, params: &AuthHelloParams) -> Result<Role, ControlError> {
        let refused = |message: &str| ControlError::new(ErrorCode::Unauthenticated, message);
        match (&params.token, &params.voucher) {
            (Some(token), None) => {
                // Digests first, so the comparison takes the same time whatever the length.
                let presented = Sha256::digest(token.expose().as_bytes());
                let expected = Sha256::digest(self.daemon.token.expose_secret().as_bytes());
                if bool::from(presented.ct_eq(&expected)) {
                    Ok(Role::Owner)
                } else {
                    Err(refused("that is not this daemon's token"))
                }
            }
            (None, Some(voucher)) => self
                .agents
                .identify(voucher.expose())
                .map(|who| Role::Session {
                    id: who.session,
                    bot: who.bot,
                    task: who.task,
                })
                .ok_or_else(|| refused("that voucher belongs to no running agent session")),
            _ => Err(ControlError::new(
                ErrorCode::InvalidParams,
                "present exactly one of `token` or `voucher`",
            )),
        }
    }
}
