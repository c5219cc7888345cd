//! The server's settings: flags, then `PADDOCK_SERVER_*` variables (spec 002's `MCP_*`
//! settings under our names), then defaults. Validated once at startup: an invalid setting is
//! an error naming it, and the server does not start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use paddock_tools::PolicyProfile;

use crate::store::DatabaseUrl;

/// Every setting, by its variable name, with its default (README's settings table).
pub const SETTINGS: &[(&str, &str)] = &[
    ("PADDOCK_SERVER_LISTEN", "127.0.0.1:8080"),
    (
        "PADDOCK_SERVER_DATABASE",
        "sqlite:<state dir>/server.sqlite",
    ),
    ("PADDOCK_SERVER_STATE_DIR", "$XDG_STATE_HOME/paddock/server"),
    ("PADDOCK_SERVER_POLICY_PROFILE", "no-commerce"),
    (
        "PADDOCK_SERVER_RESOURCE_URL",
        "http://localhost:<listen port>",
    ),
    ("PADDOCK_SERVER_BODY_LIMIT_BYTES", "1048576"),
    ("PADDOCK_SERVER_REQUEST_TIMEOUT_MS", "60000"),
    ("PADDOCK_SERVER_RATE_LIMIT_PER_KEY_PER_MIN", "60"),
    ("PADDOCK_SERVER_RATE_LIMIT_PER_IP_PER_MIN", "120"),
    ("PADDOCK_SERVER_TRUST_PROXY", "false"),
    ("PADDOCK_SERVER_TLS_CERT", "unset (plain HTTP)"),
    ("PADDOCK_SERVER_TLS_KEY", "unset (plain HTTP)"),
];

/// A setting that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid `{setting}`: {message}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub message: String,
}

impl ConfigError {
    fn new(setting: &'static str, message: impl Into<String>) -> Self {
        Self {
            setting,
            message: message.into(),
        }
    }
}

/// Values given on the command line (they win over the environment).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub listen: Option<String>,
    pub database: Option<String>,
}

/// The validated settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub database: DatabaseUrl,
    pub state_dir: PathBuf,
    pub policy_profile: PolicyProfile,
    /// The canonical resource URL, without a trailing slash. Never derived from a request.
    pub resource_url: String,
    pub body_limit_bytes: usize,
    pub request_timeout: Duration,
    pub rate_limit_per_key_per_min: u32,
    pub rate_limit_per_ip_per_min: u32,
    pub trust_proxy: bool,
    /// HTTPS: the PEM certificate chain and private key (both or neither).
    pub tls: Option<(PathBuf, PathBuf)>,
}

impl ServerConfig {
    /// The settings from `flags` and the variables `env` reads.
    pub fn load(flags: &Flags, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let listen_text = flags
            .listen
            .clone()
            .or_else(|| env("PADDOCK_SERVER_LISTEN"))
            .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            ConfigError::new(
                "PADDOCK_SERVER_LISTEN",
                format!("`{listen_text}` is not an address such as `127.0.0.1:8080`"),
            )
        })?;
        let state_dir = state_dir(&env)?;
        let database = match flags
            .database
            .clone()
            .or_else(|| env("PADDOCK_SERVER_DATABASE"))
        {
            Some(text) => DatabaseUrl::parse(&text)
                .map_err(|message| ConfigError::new("PADDOCK_SERVER_DATABASE", message))?,
            None => DatabaseUrl::Sqlite(state_dir.join("server.sqlite")),
        };
        let policy_profile = match env("PADDOCK_SERVER_POLICY_PROFILE") {
            Some(text) => {
                text.parse()
                    .map_err(|error: paddock_tools::policy::UnknownProfile| {
                        ConfigError::new("PADDOCK_SERVER_POLICY_PROFILE", error.to_string())
                    })?
            }
            None => PolicyProfile::NoCommerce,
        };
        let resource_url = match env("PADDOCK_SERVER_RESOURCE_URL") {
            Some(text) => resource_url(&text)?,
            None => format!("http://localhost:{}", listen.port()),
        };
        let tls = match (
            env("PADDOCK_SERVER_TLS_CERT"),
            env("PADDOCK_SERVER_TLS_KEY"),
        ) {
            (None, None) => None,
            (Some(cert), Some(key)) => {
                let pair = (PathBuf::from(cert), PathBuf::from(key));
                crate::tls::server_config(&pair.0, &pair.1)
                    .map_err(|message| ConfigError::new("PADDOCK_SERVER_TLS_CERT", message))?;
                Some(pair)
            }
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "PADDOCK_SERVER_TLS_KEY",
                    "missing: HTTPS needs both the certificate and its key",
                ));
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    "PADDOCK_SERVER_TLS_CERT",
                    "missing: HTTPS needs both the certificate and its key",
                ));
            }
        };
        Ok(Self {
            tls,
            listen,
            database,
            state_dir,
            policy_profile,
            resource_url,
            body_limit_bytes: positive(&env, "PADDOCK_SERVER_BODY_LIMIT_BYTES", 1_048_576)?,
            request_timeout: Duration::from_millis(positive(
                &env,
                "PADDOCK_SERVER_REQUEST_TIMEOUT_MS",
                60_000,
            )?),
            rate_limit_per_key_per_min: positive(
                &env,
                "PADDOCK_SERVER_RATE_LIMIT_PER_KEY_PER_MIN",
                60,
            )?,
            rate_limit_per_ip_per_min: positive(
                &env,
                "PADDOCK_SERVER_RATE_LIMIT_PER_IP_PER_MIN",
                120,
            )?,
            trust_proxy: match env("PADDOCK_SERVER_TRUST_PROXY").as_deref() {
                None | Some("false") => false,
                Some("true") => true,
                Some(other) => {
                    return Err(ConfigError::new(
                        "PADDOCK_SERVER_TRUST_PROXY",
                        format!("`{other}` is not `true` or `false`"),
                    ));
                }
            },
        })
    }

    /// The metadata document's URL, which 401 answers point to.
    pub fn metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource", self.resource_url)
    }
}

/// The settings the key and pairing commands need: only where the database is.
pub fn database_only(
    flags: &Flags,
    env: impl Fn(&str) -> Option<String>,
) -> Result<DatabaseUrl, ConfigError> {
    match flags
        .database
        .clone()
        .or_else(|| env("PADDOCK_SERVER_DATABASE"))
    {
        Some(text) => DatabaseUrl::parse(&text)
            .map_err(|message| ConfigError::new("PADDOCK_SERVER_DATABASE", message)),
        None => Ok(DatabaseUrl::Sqlite(state_dir(&env)?.join("server.sqlite"))),
    }
}

fn state_dir(env: &impl Fn(&str) -> Option<String>) -> Result<PathBuf, ConfigError> {
    if let Some(dir) = env("PADDOCK_SERVER_STATE_DIR") {
        let dir = PathBuf::from(dir);
        if !dir.is_absolute() {
            return Err(ConfigError::new(
                "PADDOCK_SERVER_STATE_DIR",
                "must be an absolute path",
            ));
        }
        return Ok(dir);
    }
    let base = env("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".local/state")));
    base.map(|base| base.join("paddock/server")).ok_or_else(|| {
        ConfigError::new(
            "PADDOCK_SERVER_STATE_DIR",
            "neither it, XDG_STATE_HOME nor HOME is set",
        )
    })
}

fn resource_url(text: &str) -> Result<String, ConfigError> {
    let trimmed = text.trim_end_matches('/');
    let valid = (trimmed.starts_with("https://") || trimmed.starts_with("http://"))
        && trimmed.split_once("://").is_some_and(|(_, rest)| {
            !rest.is_empty() && !rest.contains(['?', '#', ' ']) && !rest.starts_with('/')
        });
    if valid {
        Ok(trimmed.to_owned())
    } else {
        Err(ConfigError::new(
            "PADDOCK_SERVER_RESOURCE_URL",
            format!("`{text}` is not an http(s) URL such as `https://mcp.example.com`"),
        ))
    }
}

fn positive<T: std::str::FromStr + PartialOrd + From<u8>>(
    env: &impl Fn(&str) -> Option<String>,
    setting: &'static str,
    default: T,
) -> Result<T, ConfigError> {
    let Some(text) = env(setting) else {
        return Ok(default);
    };
    match text.trim().parse::<T>() {
        Ok(value) if value >= T::from(1) => Ok(value),
        _ => Err(ConfigError::new(
            setting,
            format!("`{text}` is not a positive whole number"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn load(vars: &[(&str, &str)]) -> Result<ServerConfig, ConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .chain([("HOME".to_owned(), "/home/u".to_owned())])
            .collect();
        ServerConfig::load(&Flags::default(), |name| vars.get(name).cloned())
    }

    #[test]
    fn defaults_are_the_specs() {
        let config = load(&[]).unwrap_or_else(|error| unreachable!("{error}"));
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.policy_profile, PolicyProfile::NoCommerce);
        assert_eq!(config.resource_url, "http://localhost:8080");
        assert_eq!(config.body_limit_bytes, 1_048_576);
        assert_eq!(config.request_timeout, Duration::from_secs(60));
        assert_eq!(config.rate_limit_per_key_per_min, 60);
        assert_eq!(config.rate_limit_per_ip_per_min, 120);
        assert!(!config.trust_proxy);
        assert_eq!(
            config.database,
            DatabaseUrl::Sqlite("/home/u/.local/state/paddock/server/server.sqlite".into())
        );
    }

    #[test]
    fn each_invalid_setting_is_named() {
        for (setting, value) in [
            ("PADDOCK_SERVER_LISTEN", "nowhere"),
            ("PADDOCK_SERVER_POLICY_PROFILE", "everything"),
            ("PADDOCK_SERVER_RESOURCE_URL", "ftp://x"),
            ("PADDOCK_SERVER_BODY_LIMIT_BYTES", "0"),
            ("PADDOCK_SERVER_REQUEST_TIMEOUT_MS", "-5"),
            ("PADDOCK_SERVER_RATE_LIMIT_PER_KEY_PER_MIN", "many"),
            ("PADDOCK_SERVER_RATE_LIMIT_PER_IP_PER_MIN", "1.5"),
            ("PADDOCK_SERVER_TRUST_PROXY", "yes"),
            ("PADDOCK_SERVER_DATABASE", "mysql://x"),
            ("PADDOCK_SERVER_STATE_DIR", "relative"),
        ] {
            let error = load(&[(setting, value)]).err();
            assert_eq!(error.map(|error| error.setting), Some(setting), "{setting}");
        }
    }
}
