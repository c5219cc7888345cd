//! Launch credentials: a vendor CLI reaches its model API only through Paddock's key-swapping
//! proxy, holding a per-launch voucher, never the real key (spec 004 "Credentials"). The driver
//! refuses to launch such a CLI without a broker: there is no plaintext fallback.

use std::ffi::OsString;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use paddock_credentials::{Capabilities, CredentialBroker, Grant, LaunchEnvSpec, VendorEnv};

use crate::contract::BackendId;

/// Environment variables holding a voucher. `Debug` never shows the values.
#[derive(Clone, Default)]
pub struct LaunchSecrets {
    pub(crate) env: Vec<(OsString, OsString)>,
}

impl LaunchSecrets {
    pub fn new(env: Vec<(OsString, OsString)>) -> Self {
        Self { env }
    }

    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.env
            .iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
    }
}

impl fmt::Debug for LaunchSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// What the driver asks of the host's credential broker.
pub trait LaunchCredentials: Send + Sync + fmt::Debug {
    /// Mints what launch `launch_id` of `backend` needs, writing voucher files under `dir`, and
    /// returns the environment to give it (the proxy URL and the voucher).
    fn prepare(
        &self,
        backend: BackendId,
        launch_id: &str,
        dir: &Path,
    ) -> Result<LaunchSecrets, String>;
    /// Revokes everything minted for `launch_id` (the session closed).
    fn release(&self, launch_id: &str);
}

/// [`LaunchCredentials`] backed by a running [`CredentialBroker`]: each launch gets one voucher
/// allowed to call the model API's message and model endpoints on `model_upstream`, and
/// anything on `paddock_upstream` (Paddock's own MCP, for the `paddock` command).
#[derive(Debug, Clone)]
pub struct BrokerCredentials {
    pub broker: Arc<CredentialBroker>,
    /// The broker's upstream name for the Anthropic API.
    pub anthropic_upstream: String,
    /// The broker's upstream name that `PADDOCK_PROXY_URL` points at.
    pub paddock_upstream: String,
}

impl LaunchCredentials for BrokerCredentials {
    fn prepare(
        &self,
        backend: BackendId,
        launch_id: &str,
        dir: &Path,
    ) -> Result<LaunchSecrets, String> {
        let vendor = match backend {
            // Pi is configured with an Anthropic-messages provider whose key is read from the
            // same variable (see `adapters/pi.rs`).
            BackendId::Claude | BackendId::Pi => VendorEnv::claude_code(&self.anthropic_upstream),
            other => return Err(format!("no model credentials are configured for `{other}`")),
        };
        let mut grants = vec![
            Grant::new(&self.anthropic_upstream, "POST", "/v1/messages")
                .map_err(|error| error.to_string())?,
            Grant::new(&self.anthropic_upstream, "GET", "/v1/models")
                .map_err(|error| error.to_string())?,
        ];
        if self.paddock_upstream != self.anthropic_upstream {
            grants.push(
                Grant::new(&self.paddock_upstream, "*", "/").map_err(|error| error.to_string())?,
            );
        }
        let voucher = self
            .broker
            .mint_for_launch(launch_id, Capabilities::new(grants), dir)
            .map_err(|error| error.to_string())?;
        let env = self
            .broker
            .launch_env(
                &voucher,
                &LaunchEnvSpec {
                    proxy_upstream: self.paddock_upstream.clone(),
                    vendors: vec![vendor],
                },
            )
            .map_err(|error| error.to_string())?;
        Ok(LaunchSecrets::new(env.expose_vars()))
    }

    fn release(&self, launch_id: &str) {
        self.broker.revoke_launch(launch_id);
    }
}
