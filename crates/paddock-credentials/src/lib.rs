//! Credential isolation for agents (spec 004, "Credentials (zero-trust isolation)").
//!
//! An agent, and every tool and package it runs, can read its environment, so it never gets a
//! real key. The host starts a [`CredentialBroker`] with the upstreams it may reach and the
//! credential for each ([`CredentialBrokerConfig`]); the broker runs one key-swapping proxy
//! listener on 127.0.0.1 per upstream and mints per-launch vouchers (`vch_` + 256 random bits,
//! base64url) scoped by [`Capabilities`] into 0600 files. The agent sends its voucher to the
//! proxy; the proxy checks it in constant time, checks the request against the capabilities,
//! strips the agent's credentials, swaps in the host's under the configured header and scheme,
//! stamps `X-Agent-Id`, `X-Client` and `X-Agent-Active-Capabilities`, and forwards, streaming
//! both bodies. Upstreams are `https://` (rustls, HTTP/2 or HTTP/1.1 by ALPN, roots from
//! [`UpstreamTrust`]) or `http://` for a loopback gateway; the agent's side is always loopback
//! HTTP/1.1. The proxy never follows a redirect. A voucher is revocable alone or with its
//! launch; revocation also cuts the responses it is streaming.
//!
//! Key tiers: the machine's master key (read by [`KeySource`] from an environment variable, a
//! 0600 file or a keychain — never argv) stays with the host; the per-agent runner credential
//! is what the proxy swaps in ([`UpstreamConfig::credential`]); the voucher is all the agent
//! holds. The broker never writes a key anywhere.
//!
//! This crate knows nothing of MCP, the daemon or the CLI. Launching an agent with a voucher:
//! [`CredentialBroker::mint_for_launch`], then [`CredentialBroker::launch_env`] for the
//! variables to put in the child's environment, and [`CredentialBroker::revoke_launch`] when
//! the launch ends:
//!
//! ```
//! # async fn launch(key: paddock_secrets::SecretString, launch_dir: &std::path::Path)
//! # -> Result<(), paddock_credentials::CredentialError> {
//! use paddock_credentials::{
//!     Capabilities, CredentialBroker, CredentialBrokerConfig, Grant, LaunchEnvSpec,
//!     UpstreamConfig, UpstreamTrust, VendorEnv,
//! };
//!
//! let broker = CredentialBroker::start(CredentialBrokerConfig {
//!     upstreams: vec![UpstreamConfig {
//!         name: "anthropic".into(),
//!         url: "https://api.anthropic.com".into(),
//!         credential: key,
//!         header: "x-api-key".into(),
//!         scheme: None,
//!     }],
//!     // Mozilla's roots and the platform's store, plus SSL_CERT_FILE / SSL_CERT_DIR.
//!     trust: UpstreamTrust::from_env(),
//!     ..CredentialBrokerConfig::default()
//! })
//! .await?;
//! let grants = Capabilities::new([Grant::parse("anthropic", "POST /v1/messages")?]);
//! let voucher = broker.mint_for_launch("launch-1", grants, launch_dir)?;
//! let env = broker.launch_env(
//!     &voucher,
//!     &LaunchEnvSpec {
//!         proxy_upstream: "anthropic".into(),
//!         vendors: vec![VendorEnv::claude_code("anthropic")],
//!     },
//! )?;
//! // PADDOCK_PROXY_URL, PADDOCK_PROXY_TOKEN_FILE, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY (the
//! // voucher): append to the child's explicit environment, which must hold no real key.
//! let _child_env = env.expose_vars();
//! // When the launch ends:
//! broker.revoke_launch("launch-1");
//! # Ok(())
//! # }
//! ```

mod broker;
mod capability;
mod client;
mod config;
mod error;
mod guard;
mod key;
mod launch_env;
mod proxy;
mod tls;

pub use broker::{CredentialBroker, PROXY_TOKEN_FILE_VAR, PROXY_URL_VAR, Voucher, VoucherInfo};
pub use capability::{Capabilities, Grant};
pub use config::{CredentialBrokerConfig, ProxyTimeouts, UpstreamConfig};
pub use error::CredentialError;
pub use key::{KeyError, KeySource};
pub use launch_env::{LaunchEnv, LaunchEnvSpec, VendorEnv};
pub use proxy::{X_AGENT_ACTIVE_CAPABILITIES, X_AGENT_ID, X_CLIENT};
pub use tls::{
    SSL_CERT_DIR_VAR, SSL_CERT_FILE_VAR, UpstreamTrust, client_config as tls_client_config,
};
