//! What a launch's environment holds: which variables a launch gets ([`LaunchEnvSpec`], one
//! [`VendorEnv`] per vendor CLI), and the variables themselves ([`LaunchEnv`]), whose `Debug`
//! never shows the voucher. [`crate::CredentialBroker::launch_env`] builds one.

use std::ffi::OsString;
use std::fmt;

use paddock_secrets::SecretString;

use crate::error::CredentialError;

/// Which variables a launch gets; see [`CredentialBroker::launch_env`].
#[derive(Debug, Clone)]
pub struct LaunchEnvSpec {
    /// The upstream whose listener becomes [`PROXY_URL_VAR`] (Paddock's own MCP, for the
    /// `paddock` command inside a session).
    pub proxy_upstream: String,
    pub vendors: Vec<VendorEnv>,
}

/// How one vendor CLI finds its model API: a base-URL variable pointed at the proxy and a
/// key variable that holds the voucher.
#[derive(Debug, Clone)]
pub struct VendorEnv {
    pub upstream: String,
    pub base_url_var: Option<String>,
    /// Appended to the proxy URL in the base-URL variable (`/v1` for OpenAI-style clients).
    pub base_path: String,
    pub key_var: Option<String>,
}

impl VendorEnv {
    /// Claude Code: `ANTHROPIC_BASE_URL` = the proxy, `ANTHROPIC_API_KEY` = the voucher (it
    /// arrives as `x-api-key`, which the proxy strips and replaces).
    pub fn claude_code(upstream: &str) -> Self {
        Self {
            upstream: upstream.to_owned(),
            base_url_var: Some("ANTHROPIC_BASE_URL".to_owned()),
            base_path: String::new(),
            key_var: Some("ANTHROPIC_API_KEY".to_owned()),
        }
    }

    /// OpenAI-style clients: `OPENAI_BASE_URL` = the proxy + `/v1`, `OPENAI_API_KEY` = the
    /// voucher.
    pub fn openai(upstream: &str) -> Self {
        Self {
            upstream: upstream.to_owned(),
            base_url_var: Some("OPENAI_BASE_URL".to_owned()),
            base_path: "/v1".to_owned(),
            key_var: Some("OPENAI_API_KEY".to_owned()),
        }
    }
}

#[derive(Clone)]
pub(crate) enum EnvValue {
    Plain(String),
    Secret(SecretString),
}

/// Environment variables for one launch. `Debug` shows secret values as `[redacted]`; the raw
/// pairs come only from [`LaunchEnv::expose_vars`].
#[derive(Clone, Default)]
pub struct LaunchEnv {
    vars: Vec<(String, EnvValue)>,
}

impl LaunchEnv {
    pub(crate) fn push(&mut self, name: &str, value: EnvValue) -> Result<(), CredentialError> {
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            return Err(CredentialError::InvalidEnvVar {
                name: name.to_owned(),
            });
        }
        if self.vars.iter().any(|(existing, _)| existing == name) {
            return Err(CredentialError::DuplicateEnvVar {
                name: name.to_owned(),
            });
        }
        self.vars.push((name.to_owned(), value));
        Ok(())
    }

    /// The variable names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.iter().map(|(name, _)| name.as_str())
    }

    /// A non-secret variable's value (`None` for the voucher variables).
    pub fn plain(&self, name: &str) -> Option<&str> {
        self.vars.iter().find_map(|(existing, value)| match value {
            EnvValue::Plain(text) if existing == name => Some(text.as_str()),
            _ => None,
        })
    }

    /// The pairs with raw values, for a child's environment. Contains the voucher.
    pub fn expose_vars(&self) -> Vec<(OsString, OsString)> {
        self.vars
            .iter()
            .map(|(name, value)| {
                let value = match value {
                    EnvValue::Plain(text) => text.clone(),
                    EnvValue::Secret(secret) => secret.expose_secret().to_owned(),
                };
                (OsString::from(name), OsString::from(value))
            })
            .collect()
    }
}

impl fmt::Debug for LaunchEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (name, value) in &self.vars {
            match value {
                EnvValue::Plain(text) => map.entry(name, text),
                EnvValue::Secret(_) => map.entry(name, &"[redacted]"),
            };
        }
        map.finish()
    }
}
