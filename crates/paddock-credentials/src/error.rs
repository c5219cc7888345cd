//! Typed errors. Messages name values in backticks and say what to do; no message ever holds a
//! voucher or a key.

use std::path::PathBuf;

/// Errors of the broker and of its configuration.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("invalid upstream `{name}`: {reason}")]
    InvalidUpstream { name: String, reason: String },
    #[error("upstream `{name}` is configured twice; give each upstream its own name")]
    DuplicateUpstream { name: String },
    #[error("unknown upstream `{name}`; configured upstreams: {known}")]
    UnknownUpstream { name: String, known: String },
    #[error("invalid grant `{grant}`: {reason}")]
    InvalidGrant { grant: String, reason: String },
    #[error("invalid voucher prefix `{prefix}`: use 1 to 16 letters, digits or `_`")]
    InvalidPrefix { prefix: String },
    #[error("invalid client name `{name}`: use visible ASCII without commas")]
    InvalidClientName { name: String },
    #[error(
        "invalid launch id `{launch}`: use 1 to 128 letters, digits, `-`, `_` or `.`, not starting with `.`"
    )]
    InvalidLaunchId { launch: String },
    #[error("a voucher needs at least one grant; launch `{launch}` got none")]
    NoGrants { launch: String },
    #[error("could not listen on 127.0.0.1 for upstream `{upstream}`")]
    Bind {
        upstream: String,
        #[source]
        source: std::io::Error,
    },
    #[error("could not write voucher file `{}`", path.display())]
    VoucherFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the OS random source failed: {0}")]
    Random(String),
    #[error("no live voucher `{id}`")]
    UnknownVoucher { id: String },
    #[error(
        "voucher `{voucher}` has no grant for upstream `{upstream}`; mint it with a grant for that upstream"
    )]
    NotGranted { voucher: String, upstream: String },
    #[error("environment variable `{name}` is set twice for one launch")]
    DuplicateEnvVar { name: String },
    #[error("invalid environment variable name `{name}`: use letters, digits and `_`")]
    InvalidEnvVar { name: String },
    #[error(
        "cannot trust the certificates in `{}`: {reason}; point SSL_CERT_FILE (or SSL_CERT_DIR) at PEM certificates",
        path.display()
    )]
    TrustStore { path: PathBuf, reason: String },
    #[error(
        "no certificate authority to trust for https:// upstreams; keep the web PKI or platform roots on, or add a PEM bundle"
    )]
    NoTrustRoots,
    #[error("the TLS client could not be configured: {0}")]
    Tls(String),
    #[error("the credential broker has shut down; start a new one")]
    ShutDown,
}

impl CredentialError {
    /// The caller named a voucher that does not exist (or no longer does).
    pub fn is_unknown_voucher(&self) -> bool {
        matches!(self, Self::UnknownVoucher { .. })
    }

    /// The configuration, a grant or a launch id was invalid: the caller's input is at fault.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Self::InvalidUpstream { .. }
                | Self::DuplicateUpstream { .. }
                | Self::UnknownUpstream { .. }
                | Self::InvalidGrant { .. }
                | Self::InvalidPrefix { .. }
                | Self::InvalidClientName { .. }
                | Self::InvalidLaunchId { .. }
                | Self::NoGrants { .. }
                | Self::NotGranted { .. }
                | Self::DuplicateEnvVar { .. }
                | Self::InvalidEnvVar { .. }
                | Self::TrustStore { .. }
                | Self::NoTrustRoots
        )
    }
}
