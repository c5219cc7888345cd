//! The host's side of the contract: which upstreams exist, the credential each one gets and
//! under which header, the voucher prefix, the client name and the limits. Nothing here is
//! specific to a vendor; the host supplies every name.

use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use http::uri::{Authority, Scheme, Uri};
use paddock_secrets::SecretString;

use crate::error::CredentialError;
use crate::tls::UpstreamTrust;

/// Everything the broker and its proxy need from the host.
#[derive(Debug, Clone)]
pub struct CredentialBrokerConfig {
    /// What every voucher starts with (default `vch_`), so scanners recognise one.
    pub voucher_prefix: String,
    /// The value of the `X-Client` header the proxy stamps (default `paddock/<version>`).
    pub client_name: String,
    /// The upstreams; the proxy listens on one loopback port for each.
    pub upstreams: Vec<UpstreamConfig>,
    pub timeouts: ProxyTimeouts,
    /// The largest request head (request line and headers) the proxy reads; larger ones get
    /// 431. hyper's floor is 8 KiB.
    pub max_header_bytes: usize,
    /// The most request headers the proxy reads; more get 431.
    pub max_headers: usize,
    /// The certificate authorities trusted for `https://` upstreams. The default is Mozilla's
    /// roots and the platform's store; [`UpstreamTrust::from_env`] adds `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR`.
    pub trust: UpstreamTrust,
}

impl Default for CredentialBrokerConfig {
    fn default() -> Self {
        Self {
            voucher_prefix: "vch_".to_owned(),
            client_name: format!("paddock/{}", env!("CARGO_PKG_VERSION")),
            upstreams: Vec::new(),
            timeouts: ProxyTimeouts::default(),
            max_header_bytes: 32 * 1024,
            max_headers: 100,
            trust: UpstreamTrust::default(),
        }
    }
}

/// One upstream and the credential the proxy swaps in for it.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// A short name (`anthropic`, `paddock`): grants and launch environments refer to it.
    pub name: String,
    /// `https://host[:port]` (or `http://` for a loopback gateway) with an optional base path;
    /// request paths are appended to it.
    pub url: String,
    /// The per-agent runner credential (spec tier 2), never the machine's master key.
    pub credential: SecretString,
    /// The header that carries it upstream: `authorization`, `x-api-key`, …
    pub header: String,
    /// Written before the credential with one space (`Bearer`), or nothing.
    pub scheme: Option<String>,
}

/// How long the proxy waits. Model APIs can think for minutes before the first byte and
/// between events, hence the generous defaults.
#[derive(Debug, Clone, Copy)]
pub struct ProxyTimeouts {
    /// Connecting to the upstream.
    pub connect: Duration,
    /// From sending the request to the upstream's response head.
    pub response_head: Duration,
    /// Between two pieces of the upstream's response body.
    pub body_idle: Duration,
    /// For a client to send a complete request head.
    pub request_head: Duration,
}

impl Default for ProxyTimeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            response_head: Duration::from_secs(600),
            body_idle: Duration::from_secs(600),
            request_head: Duration::from_secs(30),
        }
    }
}

/// An upstream after validation: everything the proxy needs per request, precomputed.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub name: String,
    /// As configured, for messages (it carries no credential: userinfo is refused).
    pub url: String,
    /// `http` or `https`.
    pub url_scheme: Scheme,
    pub authority: Authority,
    /// The base path without a trailing `/` (empty for the root).
    pub base_path: String,
    pub header: HeaderName,
    /// `scheme credential`, marked sensitive.
    pub value: HeaderValue,
    /// The configured scheme, so `<scheme> <voucher>` in the configured header is accepted.
    pub scheme: Option<String>,
}

/// The validated configuration.
#[derive(Debug)]
pub(crate) struct Validated {
    pub voucher_prefix: String,
    pub client_name: HeaderValue,
    pub upstreams: Vec<Arc<Upstream>>,
    pub timeouts: ProxyTimeouts,
    pub max_header_bytes: usize,
    pub max_headers: usize,
    pub trust: UpstreamTrust,
}

impl Validated {
    /// Whether any upstream is reached over TLS (so the trusted roots must be loaded).
    pub fn needs_tls(&self) -> bool {
        self.upstreams
            .iter()
            .any(|upstream| upstream.url_scheme == Scheme::HTTPS)
    }
}

impl CredentialBrokerConfig {
    pub(crate) fn validate(self) -> Result<Validated, CredentialError> {
        let prefix_ok = (1..=16).contains(&self.voucher_prefix.len())
            && self
                .voucher_prefix
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
        if !prefix_ok {
            return Err(CredentialError::InvalidPrefix {
                prefix: self.voucher_prefix,
            });
        }
        let client_ok = !self.client_name.is_empty()
            && self.client_name.len() <= 128
            && self
                .client_name
                .bytes()
                .all(|byte| byte.is_ascii_graphic() && byte != b',');
        let client_name = HeaderValue::from_str(&self.client_name)
            .ok()
            .filter(|_| client_ok)
            .ok_or_else(|| CredentialError::InvalidClientName {
                name: self.client_name.clone(),
            })?;
        let mut upstreams: Vec<Arc<Upstream>> = Vec::new();
        for config in self.upstreams {
            if upstreams.iter().any(|known| known.name == config.name) {
                return Err(CredentialError::DuplicateUpstream { name: config.name });
            }
            upstreams.push(Arc::new(validate_upstream(config)?));
        }
        Ok(Validated {
            voucher_prefix: self.voucher_prefix,
            client_name,
            upstreams,
            timeouts: self.timeouts,
            max_header_bytes: self.max_header_bytes.max(8 * 1024),
            max_headers: self.max_headers.max(8),
            trust: self.trust,
        })
    }
}

/// Upstream names appear in grants and messages: short, plain words.
pub(crate) fn check_upstream_name(name: &str) -> Result<(), CredentialError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte));
    if ok {
        Ok(())
    } else {
        Err(CredentialError::InvalidUpstream {
            name: name.to_owned(),
            reason: "names use 1 to 64 letters, digits, `-`, `_` or `.`".to_owned(),
        })
    }
}

pub(crate) fn validate_upstream(config: UpstreamConfig) -> Result<Upstream, CredentialError> {
    check_upstream_name(&config.name)?;
    let invalid = |reason: String| CredentialError::InvalidUpstream {
        name: config.name.clone(),
        reason,
    };
    let uri: Uri = config
        .url
        .parse()
        .map_err(|_| invalid(format!("`{}` is not a URL", config.url)))?;
    let url_scheme = match uri.scheme_str() {
        Some("https") => Scheme::HTTPS,
        Some("http") => Scheme::HTTP,
        _ => {
            return Err(invalid(format!(
                "`{}` must be an absolute https:// URL (or http:// for a local gateway)",
                config.url
            )));
        }
    };
    let authority = uri
        .authority()
        .cloned()
        .ok_or_else(|| invalid(format!("`{}` has no host", config.url)))?;
    // A key in the URL would end up in messages and logs; keys belong in `credential`.
    if authority.as_str().contains('@') {
        return Err(invalid(
            "the URL may not hold user information; put the credential in the key source"
                .to_owned(),
        ));
    }
    if uri.query().is_some() {
        return Err(invalid(format!(
            "`{}` may not have a query; the client's query is passed through",
            config.url
        )));
    }
    let base_path = uri.path().trim_end_matches('/').to_owned();
    let header = HeaderName::from_bytes(config.header.as_bytes())
        .map_err(|_| invalid(format!("`{}` is not a header name", config.header)))?;
    if is_hop_by_hop(&header) || header == http::header::HOST {
        return Err(invalid(format!(
            "`{}` cannot carry a credential upstream: the proxy manages that header",
            config.header
        )));
    }
    if let Some(scheme) = &config.scheme
        && (scheme.is_empty() || !scheme.bytes().all(|byte| byte.is_ascii_alphanumeric()))
    {
        return Err(invalid(format!(
            "scheme `{scheme}` must be a single word such as `Bearer`"
        )));
    }
    let raw = match &config.scheme {
        Some(scheme) => format!("{scheme} {}", config.credential.expose_secret()),
        None => config.credential.expose_secret().to_owned(),
    };
    let mut value = HeaderValue::from_str(&raw).map_err(|_| {
        invalid("its credential holds characters that cannot travel in an HTTP header".to_owned())
    })?;
    // hyper keeps sensitive values out of its debug output and HTTP/2 compression tables.
    value.set_sensitive(true);
    Ok(Upstream {
        name: config.name,
        url: config.url,
        url_scheme,
        authority,
        base_path,
        header,
        value,
        scheme: config.scheme,
    })
}

/// Headers that describe one connection, not the message, and never cross a proxy (RFC 9110
/// §7.6.1), plus every `proxy-*` header (`proxy-authorization` is ours to consume, the others
/// address a proxy, not the upstream) and `expect`, which the proxy's own server answers.
/// `transfer-encoding` goes too: the proxy's client frames the forwarded body itself, with
/// the `content-length` the server framed it by, or chunked.
pub(crate) fn is_hop_by_hop(name: &HeaderName) -> bool {
    use http::header;
    [
        header::CONNECTION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::EXPECT,
    ]
    .contains(name)
        || name == "keep-alive"
        || name.as_str().starts_with("proxy-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream(url: &str) -> UpstreamConfig {
        UpstreamConfig {
            name: "api".into(),
            url: url.into(),
            credential: SecretString::new("sk-real"),
            header: "authorization".into(),
            scheme: Some("Bearer".into()),
        }
    }

    fn validate(upstreams: Vec<UpstreamConfig>) -> Result<Validated, CredentialError> {
        CredentialBrokerConfig {
            upstreams,
            ..CredentialBrokerConfig::default()
        }
        .validate()
    }

    #[test]
    fn valid_upstreams_keep_their_base_path() {
        let validated = validate(vec![upstream("http://127.0.0.1:9/base/")]).unwrap();
        let api = &validated.upstreams[0];
        assert_eq!(api.base_path, "/base");
        assert_eq!(api.authority.as_str(), "127.0.0.1:9");
        assert!(api.value.is_sensitive());
        assert_eq!(api.value.to_str().unwrap(), "Bearer sk-real");
        assert_eq!(api.url_scheme, Scheme::HTTP);
        assert!(!validated.needs_tls());
    }

    #[test]
    fn https_upstreams_are_accepted_with_or_without_a_port() {
        let validated = validate(vec![upstream("https://api.example.com/v1")]).unwrap();
        let api = &validated.upstreams[0];
        assert_eq!(api.url_scheme, Scheme::HTTPS);
        assert_eq!(api.authority.as_str(), "api.example.com");
        assert_eq!(api.base_path, "/v1");
        assert!(validated.needs_tls());
        let validated = validate(vec![upstream("https://127.0.0.1:8443")]).unwrap();
        assert_eq!(validated.upstreams[0].authority.as_str(), "127.0.0.1:8443");
    }

    #[test]
    fn invalid_upstreams_are_refused_without_the_credential() {
        for url in [
            "ftp://x",
            "https://user:pw@api.example.com",
            "/relative",
            "http://user:pw@host",
            "http://host/?q=1",
        ] {
            let error = validate(vec![upstream(url)]).unwrap_err();
            assert!(error.is_invalid_input(), "{url}");
            assert!(!error.to_string().contains("sk-real"));
        }
        let mut bad_key = upstream("http://127.0.0.1:9");
        bad_key.credential = SecretString::new("sk\r\nx-evil: 1");
        let error = validate(vec![bad_key]).unwrap_err();
        assert!(!error.to_string().contains("sk"));
        let mut bad_header = upstream("http://127.0.0.1:9");
        bad_header.header = "connection".into();
        assert!(validate(vec![bad_header]).is_err());
        let error = validate(vec![
            upstream("http://127.0.0.1:9"),
            upstream("http://127.0.0.1:10"),
        ])
        .unwrap_err();
        assert!(matches!(error, CredentialError::DuplicateUpstream { .. }));
    }

    #[test]
    fn prefix_and_client_name_are_checked() {
        let config = CredentialBrokerConfig {
            voucher_prefix: "bad prefix".into(),
            ..CredentialBrokerConfig::default()
        };
        assert!(matches!(
            config.validate(),
            Err(CredentialError::InvalidPrefix { .. })
        ));
        let config = CredentialBrokerConfig {
            client_name: "a,b".into(),
            ..CredentialBrokerConfig::default()
        };
        assert!(matches!(
            config.validate(),
            Err(CredentialError::InvalidClientName { .. })
        ));
    }
}
