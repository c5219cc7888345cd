//! What a voucher may do: a set of grants, each one upstream, one method (or any) and one path
//! prefix. The proxy refuses everything outside them with 403.

use std::fmt;

use http::Method;

use crate::error::CredentialError;

/// One permission: `method` requests to `upstream` whose path starts with `path_prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    upstream: String,
    /// `None` is any method (`*`).
    method: Option<Method>,
    path_prefix: String,
}

impl Grant {
    /// A grant for `upstream`. `method` is an HTTP method or `*`; `path_prefix` starts with `/`.
    pub fn new(upstream: &str, method: &str, path_prefix: &str) -> Result<Self, CredentialError> {
        let invalid = |reason: &str| CredentialError::InvalidGrant {
            grant: format!("{method} {path_prefix}"),
            reason: reason.to_owned(),
        };
        crate::config::check_upstream_name(upstream)?;
        // Methods are case-sensitive in HTTP, but a person writing `post` means POST.
        let method = match method {
            "*" => None,
            other => {
                let upper = other.to_ascii_uppercase();
                if upper == "CONNECT" {
                    return Err(invalid("CONNECT is never proxied"));
                }
                Some(
                    Method::from_bytes(upper.as_bytes())
                        .map_err(|_| invalid("the method is not an HTTP token"))?,
                )
            }
        };
        check_prefix(path_prefix).map_err(invalid)?;
        Ok(Self {
            upstream: upstream.to_owned(),
            method,
            path_prefix: path_prefix.to_owned(),
        })
    }

    /// Parses `"METHOD /path-prefix"` (the CLI's `--allow`) for `upstream`.
    pub fn parse(upstream: &str, text: &str) -> Result<Self, CredentialError> {
        let mut parts = text.split_whitespace();
        match (parts.next(), parts.next(), parts.next()) {
            (Some(method), Some(prefix), None) => Self::new(upstream, method, prefix),
            _ => Err(CredentialError::InvalidGrant {
                grant: text.to_owned(),
                reason: "write it as `METHOD /path-prefix`, for example `POST /v1/messages`"
                    .to_owned(),
            }),
        }
    }

    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    pub fn path_prefix(&self) -> &str {
        &self.path_prefix
    }

    /// The method, or `*` for any.
    pub fn method(&self) -> &str {
        self.method.as_ref().map_or("*", Method::as_str)
    }

    fn allows(&self, upstream: &str, method: &Method, path: &str) -> bool {
        self.upstream == upstream
            && self.method.as_ref().is_none_or(|allowed| allowed == method)
            && prefix_matches(&self.path_prefix, path)
    }
}

impl fmt::Display for Grant {
    /// `METHOD /prefix`, the form `X-Agent-Active-Capabilities` carries.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method(), self.path_prefix)
    }
}

/// A voucher's capability set. Empty allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    grants: Vec<Grant>,
}

impl Capabilities {
    pub fn new(grants: impl IntoIterator<Item = Grant>) -> Self {
        let mut unique: Vec<Grant> = Vec::new();
        for grant in grants {
            if !unique.contains(&grant) {
                unique.push(grant);
            }
        }
        Self { grants: unique }
    }

    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// Whether any grant covers this request.
    pub fn allows(&self, upstream: &str, method: &Method, path: &str) -> bool {
        self.grants
            .iter()
            .any(|grant| grant.allows(upstream, method, path))
    }

    /// Whether any grant names `upstream`.
    pub fn covers_upstream(&self, upstream: &str) -> bool {
        self.grants.iter().any(|grant| grant.upstream == upstream)
    }

    /// The grants for `upstream` as one header value: `POST /v1/messages, GET /v1/models`.
    pub fn header_value(&self, upstream: &str) -> String {
        self.grants
            .iter()
            .filter(|grant| grant.upstream == upstream)
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A prefix matches on segment boundaries: `/v1/messages` allows `/v1/messages`,
/// `/v1/messages/batches` and `/v1/messages?beta=true` (the query is not part of the path),
/// but not `/v1/messagesX`. A prefix ending in `/` allows everything below it.
fn prefix_matches(prefix: &str, path: &str) -> bool {
    match path.strip_prefix(prefix) {
        None => false,
        Some(rest) => rest.is_empty() || prefix.ends_with('/') || rest.starts_with('/'),
    }
}

/// Prefixes are plain: they travel in a header and are compared byte for byte, so they may not
/// hold percent-encoding, dot segments, queries, commas or whitespace. Nor `;`: the proxy
/// refuses every path with one (`guard.rs`), so a prefix holding one could never match.
fn check_prefix(prefix: &str) -> Result<(), &'static str> {
    if !prefix.starts_with('/') {
        return Err("the path prefix must start with `/`");
    }
    if prefix.len() > 512 {
        return Err("the path prefix is longer than 512 bytes");
    }
    let allowed = |byte: u8| byte.is_ascii_alphanumeric() || b"-._~/:@+=!$&'()*".contains(&byte);
    if !prefix.bytes().all(allowed) {
        return Err(
            "the path prefix may hold only letters, digits and `-._~/:@+=!$&'()*` (no `%`, `;`, `?`, `,` or spaces)",
        );
    }
    if prefix
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err("the path prefix may not hold `.` or `..` segments");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(text: &str) -> Grant {
        Grant::parse("api", text).unwrap()
    }

    #[test]
    fn prefixes_match_on_segment_boundaries() {
        let caps = Capabilities::new([grant("POST /v1/messages"), grant("GET /v1/models/")]);
        assert!(caps.allows("api", &Method::POST, "/v1/messages"));
        assert!(caps.allows("api", &Method::POST, "/v1/messages/batches"));
        assert!(!caps.allows("api", &Method::POST, "/v1/messagesX"));
        assert!(!caps.allows("api", &Method::GET, "/v1/messages"));
        assert!(caps.allows("api", &Method::GET, "/v1/models/claude"));
        assert!(!caps.allows("api", &Method::GET, "/v1/models"));
        assert!(!caps.allows("other", &Method::POST, "/v1/messages"));
        assert_eq!(
            caps.header_value("api"),
            "POST /v1/messages, GET /v1/models/"
        );
    }

    #[test]
    fn any_method_and_root_prefix() {
        let caps = Capabilities::new([grant("* /")]);
        assert!(caps.allows("api", &Method::DELETE, "/anything/at/all"));
        assert_eq!(caps.header_value("api"), "* /");
    }

    #[test]
    fn lower_case_methods_mean_the_upper_case_ones() {
        assert_eq!(grant("post /x").method(), "POST");
    }

    #[test]
    fn bad_grants_are_refused_with_the_reason() {
        for text in [
            "POST v1/messages",
            "POST /v1/../admin",
            "POST /v1/%2e%2e",
            "POST /v1?x=1",
            "POST /v1/messages;x",
            "POST /..;",
            "POST /a,b",
            "CONNECT /",
            "POST",
            "POST /a /b",
            "PO(ST /a",
        ] {
            let error = Grant::parse("api", text).unwrap_err();
            assert!(
                error.to_string().contains('`'),
                "{text}: {error} names nothing"
            );
        }
        assert!(Grant::new("bad name", "GET", "/").is_err());
    }
}
