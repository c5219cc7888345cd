//! What a local client needs to reach the Paddock daemon: where its files live, how to read its
//! HTTP bearer token safely, which URLs get that token, how to retry, the control-socket wire
//! protocol, and the config file with the rule that picks an agent's model upstream and key.
//!
//! The daemon uses the same path and wire definitions, so the two sides cannot drift apart.

pub mod config;
pub mod control;
pub mod endpoint;
pub mod env;
pub mod fleet;
pub mod paths;
pub mod pid;
pub mod request;
pub mod token;

pub use config::{
    ConfigError, ModelApiKind, Origin, PaddockConfig, ResolvedUpstream, UpstreamRequest,
    resolve_upstream,
};
pub use endpoint::{AuthHeaders, daemon_http_auth_headers};
pub use env::ClientEnv;
pub use paddock_secrets::{SecretString, private};
pub use paths::DaemonPaths;
pub use pid::PidRecord;
pub use token::{TokenFileError, read_daemon_http_token};
