//! Pure checks on the request line that run before any credential is looked at: the target
//! form, the Host, and the path. They are separate from the proxy so they can be tested alone.

use http::{HeaderMap, Method, Uri};

/// Why a request was refused before authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// CONNECT would turn the proxy into a tunnel to anywhere.
    Connect,
    /// `GET http://elsewhere/…`: the agent would pick the upstream, not the host.
    AbsoluteForm,
    /// `OPTIONS *`.
    AsteriskForm,
    /// A Host header that names something other than this listener (DNS rebinding).
    Host,
    /// `..` or `.` segments, raw or percent-encoded, encoded slashes and backslashes.
    Traversal,
    /// Broken percent-encoding or control characters in the path.
    MalformedPath,
}

impl Refusal {
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Connect => {
                "CONNECT is not proxied: this proxy forwards requests to its configured upstream only"
            }
            Self::AbsoluteForm => {
                "absolute-form request targets are refused: send the path (`/v1/...`) to the proxy, which picks the upstream"
            }
            Self::AsteriskForm => "`*` request targets are refused",
            Self::Host => "the Host header must name this proxy (`127.0.0.1:<port>`)",
            Self::Traversal => {
                "the path holds a `.` or `..` segment or an encoded `/` or `\\`; send a normalised path"
            }
            Self::MalformedPath => "the path holds broken percent-encoding or control characters",
        }
    }

    pub(crate) fn kind(self) -> &'static str {
        match self {
            Self::Connect => "method_not_allowed",
            Self::Host => "invalid_host",
            _ => "invalid_request_target",
        }
    }
}

/// Checks the request target form and the Host header against this listener's `port`.
pub(crate) fn check_target(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    port: u16,
) -> Result<(), Refusal> {
    if method == Method::CONNECT {
        return Err(Refusal::Connect);
    }
    if uri.scheme().is_some() || uri.authority().is_some() {
        return Err(Refusal::AbsoluteForm);
    }
    if uri.path() == "*" {
        return Err(Refusal::AsteriskForm);
    }
    let mut hosts = headers.get_all(http::header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(host), None) => host.to_str().map_err(|_| Refusal::Host)?,
        _ => return Err(Refusal::Host),
    };
    if !host_names_us(host, port) {
        return Err(Refusal::Host);
    }
    check_path(uri.path())
}

/// Loopback names with our port. A page in a browser that rebinds its own name to 127.0.0.1
/// still sends its own name as Host, so it is refused before it could try a voucher.
fn host_names_us(host: &str, port: u16) -> bool {
    let Some((name, host_port)) = host.rsplit_once(':') else {
        return false;
    };
    host_port.parse::<u16>().ok() == Some(port)
        && (name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost") || name == "[::1]")
}

/// Refuses paths an upstream could normalise into something other than what the capability
/// check saw. The check decodes up to three times, so double-encoded dots (`%252e`) are caught
/// for upstreams that decode twice.
pub(crate) fn check_path(path: &str) -> Result<(), Refusal> {
    if !path.starts_with('/') {
        return Err(Refusal::MalformedPath);
    }
    for segment in path.split('/') {
        let mut current = segment.as_bytes().to_vec();
        check_segment(&current)?;
        for round in 0..3 {
            if !current.contains(&b'%') {
                break;
            }
            current = match percent_decode(&current) {
                Some(decoded) => decoded,
                // The path as sent must be well-formed; after that a `%` that does not decode
                // is a literal percent sign (`%25` sent), not an encoding.
                None if round == 0 => return Err(Refusal::MalformedPath),
                None => break,
            };
            check_segment(&current)?;
        }
    }
    Ok(())
}

fn check_segment(segment: &[u8]) -> Result<(), Refusal> {
    // An encoded `/` would split into new segments once the upstream decodes it.
    if segment.contains(&b'\\') || segment.contains(&b'/') {
        return Err(Refusal::Traversal);
    }
    if segment.iter().any(|byte| byte.is_ascii_control()) {
        return Err(Refusal::MalformedPath);
    }
    if segment == b"." || segment == b".." {
        return Err(Refusal::Traversal);
    }
    Ok(())
}

fn percent_decode(input: &[u8]) -> Option<Vec<u8>> {
    let mut output = Vec::with_capacity(input.len());
    let mut bytes = input.iter();
    while let Some(&byte) = bytes.next() {
        if byte == b'%' {
            let high = hex(*bytes.next()?)?;
            let low = hex(*bytes.next()?)?;
            output.push(high << 4 | low);
        } else {
            output.push(byte);
        }
    }
    Some(output)
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::HOST, host.parse().unwrap());
        headers
    }

    #[test]
    fn traversal_in_every_spelling_is_refused() {
        for path in [
            "/v1/../admin",
            "/v1/./messages",
            "/..",
            "/v1/%2e%2e/admin",
            "/v1/%2E%2E/admin",
            "/v1/.%2e/admin",
            "/v1/%2e./admin",
            "/v1/%252e%252e/admin",
            "/v1/a%2fb",
            "/v1/a%2Fb",
            "/v1/a%5cb",
            "/v1/a\\b",
            "/v1/%25252e%25252e/admin",
        ] {
            assert!(check_path(path).is_err(), "{path} passed");
        }
        for path in ["/v1/%zz", "/v1/%4", "/v1/%00", "relative"] {
            assert_eq!(check_path(path), Err(Refusal::MalformedPath), "{path}");
        }
    }

    #[test]
    fn ordinary_paths_pass() {
        for path in [
            "/",
            "/v1/messages",
            "/v1/messages/",
            "/v1/files/a.b.c",
            "/v1/...",
            "/v1/a%20b",
            "/v1/%E2%9C%93",
            "/v1/100%25",
            "/v1/100%2525",
            "//double",
        ] {
            assert_eq!(check_path(path), Ok(()), "{path}");
        }
    }

    #[test]
    fn targets_and_hosts() {
        let ok = |method: Method, uri: &str, host: &str| {
            check_target(&method, &uri.parse().unwrap(), &headers(host), 4000)
        };
        assert_eq!(ok(Method::GET, "/v1/models", "127.0.0.1:4000"), Ok(()));
        assert_eq!(ok(Method::GET, "/v1/models", "localhost:4000"), Ok(()));
        assert_eq!(ok(Method::GET, "/v1/models", "[::1]:4000"), Ok(()));
        assert_eq!(
            ok(Method::GET, "/v1/models", "127.0.0.1:4001"),
            Err(Refusal::Host)
        );
        assert_eq!(
            ok(Method::GET, "/v1/models", "evil.example:4000"),
            Err(Refusal::Host)
        );
        assert_eq!(
            ok(Method::GET, "http://evil.example/x", "127.0.0.1:4000"),
            Err(Refusal::AbsoluteForm)
        );
        assert_eq!(
            ok(Method::CONNECT, "evil.example:443", "127.0.0.1:4000"),
            Err(Refusal::Connect)
        );
        assert_eq!(
            ok(Method::OPTIONS, "*", "127.0.0.1:4000"),
            Err(Refusal::AsteriskForm)
        );
        let no_host = check_target(&Method::GET, &"/".parse().unwrap(), &HeaderMap::new(), 4000);
        assert_eq!(no_host, Err(Refusal::Host));
    }
}
