//! The pure request checks of the ingress, kept free of I/O so that they can be property-tested
//! (see the tests below: arbitrary header bytes never panic and never pass a check they should
//! fail).

use http::HeaderValue;
use paddock_client::endpoint::{parse_port, split_host_port};
use paddock_secrets::SecretString;

/// Outcome of the Authorization check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizationCheck {
    Valid,
    Missing,
    Invalid,
}

/// True when there is exactly one Host header naming a loopback host with the bound port.
///
/// Accepted hosts are `localhost` (any letter case), `127.0.0.1` and `[::1]`. The port must be
/// written and equal `bound_port`, except that a listener on port 80 also accepts no port.
pub fn check_host<'a>(mut values: impl Iterator<Item = &'a HeaderValue>, bound_port: u16) -> bool {
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let (host, port) = match split_host_port(text) {
        Some((host, port)) => match parse_port(port) {
            Some(port) => (host, port),
            None => return false,
        },
        None => (text, 80),
    };
    port == bound_port && is_loopback_host(host)
}

/// True when there is no Origin header, or exactly one naming a loopback origin
/// (`http` or `https`, a loopback host, any port). `null` and every other origin are refused.
pub fn check_origin<'a>(mut values: impl Iterator<Item = &'a HeaderValue>) -> bool {
    let Some(value) = values.next() else {
        return true;
    };
    if values.next().is_some() {
        return false;
    }
    let Ok(text) = value.to_str() else {
        return false;
    };
    let Some(authority) = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match split_host_port(authority) {
        Some((host, port)) => {
            if parse_port(port).is_none() {
                return false;
            }
            host
        }
        None => authority,
    };
    is_loopback_host(host)
}

/// Checks `Authorization: Bearer <token>` (scheme in any letter case) in constant time.
/// More than one Authorization header is invalid.
pub fn check_authorization<'a>(
    mut values: impl Iterator<Item = &'a HeaderValue>,
    token: &SecretString,
) -> AuthorizationCheck {
    let Some(value) = values.next() else {
        return AuthorizationCheck::Missing;
    };
    if values.next().is_some() {
        return AuthorizationCheck::Invalid;
    }
    let bytes = value.as_bytes();
    let Some(space) = bytes.iter().position(|byte| *byte == b' ') else {
        return AuthorizationCheck::Invalid;
    };
    let (scheme, rest) = bytes.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return AuthorizationCheck::Invalid;
    }
    let credential = trim_spaces(&rest[1..]);
    if token.constant_time_eq(credential) {
        AuthorizationCheck::Valid
    } else {
        AuthorizationCheck::Invalid
    }
}

fn trim_spaces(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|byte| *byte != b' ')
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|byte| *byte != b' ')
        .map_or(start, |index| index + 1);
    &bytes[start..end]
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hv(text: &str) -> HeaderValue {
        HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
    }

    fn host_ok(text: &str, port: u16) -> bool {
        let value = hv(text);
        check_host(std::iter::once(&value), port)
    }

    fn origin_ok(text: &str) -> bool {
        let value = hv(text);
        check_origin(std::iter::once(&value))
    }

    #[test]
    fn host_table() {
        assert!(host_ok("127.0.0.1:4100", 4100));
        assert!(host_ok("localhost:4100", 4100));
        assert!(host_ok("LocalHost:4100", 4100));
        assert!(host_ok("[::1]:4100", 4100));
        assert!(!host_ok("127.0.0.1:4101", 4100));
        assert!(!host_ok("127.0.0.1", 4100));
        assert!(host_ok("localhost", 80));
        assert!(!host_ok("evil.example:4100", 4100));
        assert!(!host_ok("localhost.evil.example:4100", 4100));
        assert!(!host_ok("evil.localhost:4100", 4100));
        assert!(!host_ok("localhost.:4100", 4100));
        assert!(!host_ok("127.0.0.2:4100", 4100));
        assert!(!host_ok("0.0.0.0:4100", 4100));
        assert!(!host_ok("[::ffff:127.0.0.1]:4100", 4100));
        assert!(!host_ok("", 4100));
        assert!(!host_ok(":4100", 4100));
        assert!(!host_ok("127.0.0.1:+4100", 4100));
        assert!(!host_ok("127.0.0.1:04100x", 4100));
        assert!(!check_host(std::iter::empty(), 4100));
        let twice = [hv("127.0.0.1:4100"), hv("127.0.0.1:4100")];
        assert!(!check_host(twice.iter(), 4100));
    }

    #[test]
    fn origin_table() {
        assert!(check_origin(std::iter::empty()));
        assert!(origin_ok("http://localhost:3000"));
        assert!(origin_ok("http://127.0.0.1"));
        assert!(origin_ok("https://[::1]:8443"));
        assert!(!origin_ok("null"));
        assert!(!origin_ok("http://evil.example"));
        assert!(!origin_ok("http://localhost.evil.example"));
        assert!(!origin_ok("http://127.0.0.1.nip.io:4100"));
        assert!(!origin_ok("file://"));
        assert!(!origin_ok("chrome-extension://abc"));
        assert!(!origin_ok("http://localhost:3000/path"));
        assert!(!origin_ok(""));
    }

    #[test]
    fn authorization_table() {
        let token = SecretString::new("tok");
        let check = |text: &str| {
            let value = hv(text);
            check_authorization(std::iter::once(&value), &token)
        };
        assert_eq!(check("Bearer tok"), AuthorizationCheck::Valid);
        assert_eq!(check("bearer tok"), AuthorizationCheck::Valid);
        assert_eq!(check("BEARER  tok "), AuthorizationCheck::Valid);
        assert_eq!(check("Bearer tok2"), AuthorizationCheck::Invalid);
        assert_eq!(check("Bearer "), AuthorizationCheck::Invalid);
        assert_eq!(check("Basic tok"), AuthorizationCheck::Invalid);
        assert_eq!(check("Bearertok"), AuthorizationCheck::Invalid);
        assert_eq!(check("tok"), AuthorizationCheck::Invalid);
        assert_eq!(
            check_authorization(std::iter::empty(), &token),
            AuthorizationCheck::Missing
        );
        let twice = [hv("Bearer tok"), hv("Bearer tok")];
        assert_eq!(
            check_authorization(twice.iter(), &token),
            AuthorizationCheck::Invalid
        );
    }

    proptest! {
        #[test]
        fn host_accepts_only_loopback_names(host in "[ -~]{0,40}", port in 1u16..) {
            let value = match HeaderValue::from_str(&host) { Ok(value) => value, Err(_) => return Ok(()) };
            if check_host(std::iter::once(&value), port) {
                let lower = host.to_ascii_lowercase();
                let expected = [
                    format!("localhost:{port}"),
                    format!("127.0.0.1:{port}"),
                    format!("[::1]:{port}"),
                ];
                prop_assert!(expected.contains(&lower) || (port == 80 && ["localhost", "127.0.0.1", "[::1]"].contains(&lower.as_str())));
            }
        }

        #[test]
        fn origin_never_accepts_foreign_hosts(origin in "(http|https)://[a-z0-9.\\-]{1,30}(:[0-9]{1,5})?") {
            let value = HeaderValue::from_str(&origin).unwrap_or_else(|_| HeaderValue::from_static("x"));
            if check_origin(std::iter::once(&value)) {
                let host = origin.split("://").nth(1).unwrap_or("").split(':').next().unwrap_or("");
                prop_assert!(host == "localhost" || host == "127.0.0.1");
            }
        }

        #[test]
        fn authorization_accepts_only_the_token(value in "[ -~]{0,60}") {
            let token = SecretString::new("s3cr3t-token");
            let header = match HeaderValue::from_str(&value) { Ok(value) => value, Err(_) => return Ok(()) };
            if check_authorization(std::iter::once(&header), &token) == AuthorizationCheck::Valid {
                let lower = value.to_ascii_lowercase();
                prop_assert!(lower.starts_with("bearer "));
                prop_assert_eq!(value[7..].trim_matches(' '), "s3cr3t-token");
            }
        }
    }
}
