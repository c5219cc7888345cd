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

/// The model API a runtime calls; it decides the voucher's grants and the environment the
/// runtime reads its base URL and key from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelApi {
    /// `POST /v1/messages` (Claude Code, Pi's anthropic-messages provider, Claude-based ACP
    /// agents): `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`.
    AnthropicMessages,
    /// `POST /v1/responses` (Codex): `OPENAI_BASE_URL` (with `/v1`), `OPENAI_API_KEY`.
    OpenAiResponses,
    /// `POST /v1/chat/completions` (OpenCode's OpenAI-compatible provider): as above.
    OpenAiChat,
}

impl ModelApi {
    /// How the API's upstream takes the real key: the broker's conventional upstream name, the
    /// header, and the header's scheme (`x-api-key: <key>` or `authorization: Bearer <key>`).
    pub fn upstream_auth(self) -> (&'static str, &'static str, Option<&'static str>) {
        match self {
            Self::AnthropicMessages => ("anthropic", "x-api-key", None),
            Self::OpenAiResponses | Self::OpenAiChat => ("openai", "authorization", Some("Bearer")),
        }
    }

    /// The request the voucher may make besides `GET /v1/models`.
    fn endpoint(self) -> &'static str {
        match self {
            Self::AnthropicMessages => "/v1/messages",
            Self::OpenAiResponses => "/v1/responses",
            Self::OpenAiChat => "/v1/chat/completions",
        }
    }
}

/// What the driver asks of the host's credential broker.
pub trait LaunchCredentials: Send + Sync + fmt::Debug {
    /// Mints what launch `launch_id` of `backend` needs, writing voucher files under `dir`, and
    /// returns the environment to give it (the proxy URL and the voucher).
    fn prepare(
        &self,
        backend: BackendId,
        api: ModelApi,
        launch_id: &str,
        dir: &Path,
    ) -> Result<LaunchSecrets, String>;
    /// Revokes everything minted for `launch_id` (the session closed).
    fn release(&self, launch_id: &str);
}

/// [`LaunchCredentials`] backed by a running [`CredentialBroker`]: each launch gets one voucher
/// allowed to call its model API's one endpoint and `GET /v1/models` on that API's upstream,
/// and anything on `paddock_upstream` (Paddock's own MCP, for the `paddock` command).
#[derive(Debug, Clone)]
pub struct BrokerCredentials {
    pub broker: Arc<CredentialBroker>,
    /// The broker's upstream name for the Anthropic API, if it has one.
    pub anthropic_upstream: Option<String>,
    /// The broker's upstream name for the OpenAI API, if it has one.
    pub openai_upstream: Option<String>,
    /// The broker's upstream name that `PADDOCK_PROXY_URL` points at.
    pub paddock_upstream: String,
    /// The broker's upstream for the fleet server's agent data plane (a bot's launch on a
    /// joined daemon): the voucher may call its read and inbox operations, and
    /// [`FLEET_URL_VAR`] points at it.
    pub fleet_upstream: Option<String>,
}

/// Where a bot's launch on a joined daemon reaches the fleet server's agent data plane
/// through the proxy (`POST $PADDOCK_FLEET_URL/api/agent/read` with the voucher).
pub const FLEET_URL_VAR: &str = "PADDOCK_FLEET_URL";

/// The data-plane operations a launch's voucher may call directly. `send` is not among them:
/// a bot's replies go through `paddock message send`, which runs the freshness guard and the
/// bot's PII pipeline before the daemon sends them.
pub const FLEET_VOUCHER_OPERATIONS: [&str; 4] = ["inboxPull", "ack", "read", "listChannels"];

impl BrokerCredentials {
    /// Credentials over a broker with one upstream, for `api`, under the API's conventional
    /// name ([`ModelApi::upstream_auth`]); Paddock's own upstream is the same one.
    pub fn single(broker: Arc<CredentialBroker>, api: ModelApi) -> Self {
        let name = api.upstream_auth().0.to_owned();
        let (anthropic_upstream, openai_upstream) = match api {
            ModelApi::AnthropicMessages => (Some(name.clone()), None),
            ModelApi::OpenAiResponses | ModelApi::OpenAiChat => (None, Some(name.clone())),
        };
        Self {
            broker,
            anthropic_upstream,
            openai_upstream,
            paddock_upstream: name,
            fleet_upstream: None,
        }
    }
}

impl LaunchCredentials for BrokerCredentials {
    fn prepare(
        &self,
        backend: BackendId,
        api: ModelApi,
        launch_id: &str,
        dir: &Path,
    ) -> Result<LaunchSecrets, String> {
        let (upstream, vendor) = match api {
            ModelApi::AnthropicMessages => self
                .anthropic_upstream
                .as_deref()
                .map(|upstream| (upstream, VendorEnv::claude_code(upstream))),
            ModelApi::OpenAiResponses | ModelApi::OpenAiChat => self
                .openai_upstream
                .as_deref()
                .map(|upstream| (upstream, VendorEnv::openai(upstream))),
        }
        .ok_or_else(|| {
            format!("`{backend}` calls the {api:?} API, and no upstream for it is configured")
        })?;
        let mut grants = vec![
            Grant::new(upstream, "POST", api.endpoint()).map_err(|error| error.to_string())?,
            Grant::new(upstream, "GET", "/v1/models").map_err(|error| error.to_string())?,
        ];
        if self.paddock_upstream != upstream {
            grants.push(
                Grant::new(&self.paddock_upstream, "*", "/").map_err(|error| error.to_string())?,
            );
        }
        let mut vendors = vec![vendor];
        if let Some(fleet) = &self.fleet_upstream {
            for operation in FLEET_VOUCHER_OPERATIONS {
                grants.push(
                    Grant::new(fleet, "POST", &format!("/api/agent/{operation}"))
                        .map_err(|error| error.to_string())?,
                );
            }
            vendors.push(VendorEnv {
                upstream: fleet.clone(),
                base_url_var: Some(FLEET_URL_VAR.to_owned()),
                base_path: String::new(),
                key_var: None,
            });
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
                    vendors,
                },
            )
            .map_err(|error| error.to_string())?;
        Ok(LaunchSecrets::new(env.expose_vars()))
    }

    fn release(&self, launch_id: &str) {
        self.broker.revoke_launch(launch_id);
    }
}
