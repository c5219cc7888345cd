//! Which URLs receive the daemon's bearer token. Only an exact daemon endpoint does, so that a
//! client configured with an arbitrary MCP URL never leaks the token to another server.

use std::fmt;

use crate::env::ClientEnv;
use crate::paths::DaemonPaths;
use crate::pid::PidRecord;
use crate::token::{TokenFileError, read_daemon_http_token};
use paddock_secrets::SecretString;

/// Paths on the daemon that take the token.
pub const DAEMON_PATHS: [&str; 2] = ["/mcp", "/heartbeat"];
/// Host spellings that name the daemon's loopback listener, exactly as written.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Headers to add to a request: empty for any URL that is not a daemon endpoint.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthHeaders {
    authorization: Option<SecretString>,
}

impl AuthHeaders {
    pub fn is_empty(&self) -> bool {
        self.authorization.is_none()
    }

    /// `(name, value)` pairs; the value is the raw `Bearer <token>` and must not be logged.
    pub fn expose_pairs(&self) -> Vec<(&'static str, &str)> {
        self.authorization
            .iter()
            .map(|value| ("authorization", value.expose_secret()))
            .collect()
    }
}

impl fmt::Debug for AuthHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        if self.authorization.is_some() {
            map.entry(&"authorization", &"[redacted]");
        }
        map.finish()
    }
}

/// Why a URL is not a daemon endpoint; only used to explain, never surfaced as a failure of
/// [`daemon_http_auth_headers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotDaemonEndpoint {
    Unparseable,
    NotHttp,
    HasUserInfo,
    NotLoopbackHost,
    NoExplicitPort,
    WrongPath,
    PortMismatch { recorded: u16, requested: u16 },
}

/// Returns the `Authorization` header for a daemon endpoint and no headers for any other URL.
///
/// A daemon endpoint is `http://` with an exact loopback host (`localhost`, `127.0.0.1`,
/// `[::1]`), an explicit port in the URL as written, and path `/mcp` or `/heartbeat`. When the
/// daemon's PID record (re-read on every call) names a port, the URL's port must equal it.
pub fn daemon_http_auth_headers(
    endpoint: &str,
    env: &ClientEnv,
) -> Result<AuthHeaders, TokenFileError> {
    if classify_endpoint(endpoint, env).is_err() {
        return Ok(AuthHeaders::default());
    }
    let token = read_daemon_http_token(env)?;
    Ok(AuthHeaders {
        authorization: Some(SecretString::new(format!(
            "Bearer {}",
            token.expose_secret()
        ))),
    })
}

/// Decides whether `endpoint` is a daemon endpoint for the daemon `env` describes.
pub fn classify_endpoint(endpoint: &str, env: &ClientEnv) -> Result<u16, NotDaemonEndpoint> {
    let port = classify_spelling(endpoint)?;
    let paths = DaemonPaths::resolve(env);
    if let Ok(Some(PidRecord {
        http_port: Some(recorded),
        ..
    })) = PidRecord::read(&paths.pid_file)
        && recorded != port
    {
        return Err(NotDaemonEndpoint::PortMismatch {
            recorded,
            requested: port,
        });
    }
    Ok(port)
}

/// The URL-spelling rules alone (no PID record); returns the explicit port.
pub fn classify_spelling(endpoint: &str) -> Result<u16, NotDaemonEndpoint> {
    let rest = endpoint
        .strip_prefix("http://")
        .ok_or(NotDaemonEndpoint::NotHttp)?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path_and_more) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err(NotDaemonEndpoint::HasUserInfo);
    }
    let (host, port) = split_host_port(authority).ok_or(NotDaemonEndpoint::NoExplicitPort)?;
    if !LOOPBACK_HOSTS.contains(&host) {
        return Err(NotDaemonEndpoint::NotLoopbackHost);
    }
    let port = parse_port(port).ok_or(NotDaemonEndpoint::Unparseable)?;
    let path_end = path_and_more
        .find(['?', '#'])
        .unwrap_or(path_and_more.len());
    if !DAEMON_PATHS.contains(&&path_and_more[..path_end]) {
        return Err(NotDaemonEndpoint::WrongPath);
    }
    Ok(port)
}

/// Splits `host:port` where `host` may be a bracketed IPv6 literal; `None` without a port.
pub fn split_host_port(authority: &str) -> Option<(&str, &str)> {
    let colon = if authority.starts_with('[') {
        let close = authority.find(']')?;
        if authority.as_bytes().get(close + 1) != Some(&b':') {
            return None;
        }
        close + 1
    } else {
        authority.rfind(':')?
    };
    Some((&authority[..colon], &authority[colon + 1..]))
}

/// A decimal port 1..=65535 with no sign, spaces or other characters.
pub fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|port| *port != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_rules_table() {
        use NotDaemonEndpoint::*;
        let cases: &[(&str, Result<u16, NotDaemonEndpoint>)] = &[
            ("http://localhost:4100/mcp", Ok(4100)),
            ("http://127.0.0.1:4100/mcp", Ok(4100)),
            ("http://[::1]:4100/heartbeat", Ok(4100)),
            ("http://127.0.0.1:4100/mcp?x=1", Ok(4100)),
            ("http://LOCALHOST:4100/mcp", Err(NotLoopbackHost)),
            ("http://localhost.:4100/mcp", Err(NotLoopbackHost)),
            (
                "http://localhost.evil.example:4100/mcp",
                Err(NotLoopbackHost),
            ),
            ("http://127.0.0.2:4100/mcp", Err(NotLoopbackHost)),
            ("http://0x7f.1:4100/mcp", Err(NotLoopbackHost)),
            ("http://evil.example:4100/mcp", Err(NotLoopbackHost)),
            ("http://localhost/mcp", Err(NoExplicitPort)),
            ("http://[::1]/mcp", Err(NoExplicitPort)),
            ("http://localhost:/mcp", Err(Unparseable)),
            ("http://localhost:99999/mcp", Err(Unparseable)),
            ("http://localhost:4100/", Err(WrongPath)),
            ("http://localhost:4100", Err(WrongPath)),
            ("http://localhost:4100/mcp/", Err(WrongPath)),
            ("http://localhost:4100/MCP", Err(WrongPath)),
            ("http://localhost:4100/other", Err(WrongPath)),
            ("https://localhost:4100/mcp", Err(NotHttp)),
            ("ws://localhost:4100/mcp", Err(NotHttp)),
            ("http://user:pw@localhost:4100/mcp", Err(HasUserInfo)),
            ("not a url", Err(NotHttp)),
        ];
        for (url, expected) in cases {
            assert_eq!(&classify_spelling(url), expected, "{url}");
        }
    }

    proptest::proptest! {
        #[test]
        fn classify_never_panics(input in ".{0,80}") {
            let _ = classify_spelling(&input);
        }

        #[test]
        fn only_loopback_hosts_pass(host in "[a-z0-9.\\[\\]:-]{1,30}", port in 1u16..) {
            let url = format!("http://{host}:{port}/mcp");
            if classify_spelling(&url).is_ok() {
                proptest::prop_assert!(LOOPBACK_HOSTS.contains(&host.as_str()));
            }
        }
    }
}
