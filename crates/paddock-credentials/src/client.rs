//! The proxy's client to its upstreams: one pooled hyper client whose connector speaks plain
//! TCP to `http://` upstreams and rustls to `https://` ones, offering HTTP/2 and HTTP/1.1 by
//! ALPN; and the typed failures it reports. It never follows a redirect: hyper's client has
//! no such behaviour, so a 3xx goes back to the agent as the upstream sent it and the real
//! credential only ever travels to the configured upstream.

use std::error::Error;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::CertificateError;

use crate::config::{ProxyTimeouts, Upstream};

pub(crate) type UpstreamClient = Client<HttpsConnector<HttpConnector>, Incoming>;

/// One pooled client for every upstream: keep-alive connections (and HTTP/2 streams on one
/// connection) are what keep the added latency small.
pub(crate) fn upstream_client(
    timeouts: &ProxyTimeouts,
    tls: rustls::ClientConfig,
) -> UpstreamClient {
    let mut tcp = HttpConnector::new();
    tcp.set_connect_timeout(Some(timeouts.connect));
    tcp.set_nodelay(true);
    // The HTTPS connector checks the scheme; the TCP connector must accept `https` URIs.
    tcp.enforce_http(false);
    let connector = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(tcp);
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(60))
        .build(connector)
}

/// Why a request to an upstream got no response head. Every message names the upstream and
/// its host; none can hold a credential (URLs with user information are refused, and neither
/// hyper's nor rustls's errors carry header values).
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamFailure {
    #[error(
        "upstream `{name}` at `{url}` is unreachable: `{host}` refused the connection; check that it is running and that the URL is right"
    )]
    Refused {
        name: String,
        url: String,
        host: String,
    },
    #[error(
        "upstream `{name}` at `{url}` is unreachable: no connection to `{host}` within {timeout:?}"
    )]
    ConnectTimeout {
        name: String,
        url: String,
        host: String,
        timeout: Duration,
    },
    #[error("upstream `{name}` at `{url}` is unreachable: {detail}")]
    Unreachable {
        name: String,
        url: String,
        detail: String,
    },
    #[error(
        "upstream `{name}` at `{url}`: the TLS certificate of `{host}` is not issued by an authority the proxy trusts ({detail}); for a private CA, add its PEM bundle with SSL_CERT_FILE"
    )]
    UntrustedCertificate {
        name: String,
        url: String,
        host: String,
        detail: String,
    },
    #[error(
        "upstream `{name}` at `{url}`: the TLS certificate of `{host}` is not valid for that name ({detail}); use the host name the certificate was issued for"
    )]
    NameMismatch {
        name: String,
        url: String,
        host: String,
        detail: String,
    },
    #[error("upstream `{name}` at `{url}`: the TLS certificate of `{host}` is refused ({detail})")]
    BadCertificate {
        name: String,
        url: String,
        host: String,
        detail: String,
    },
    #[error(
        "upstream `{name}` at `{url}`: the TLS handshake with `{host}` failed ({detail}); check that it speaks TLS on that port"
    )]
    Handshake {
        name: String,
        url: String,
        host: String,
        detail: String,
    },
    #[error("upstream `{name}` at `{url}` failed: {detail}")]
    Failed {
        name: String,
        url: String,
        detail: String,
    },
}

impl UpstreamFailure {
    /// Sorts a client error by what went wrong: the TLS verdict if rustls gave one, else the
    /// socket's, else hyper's own.
    pub(crate) fn classify(
        error: &hyper_util::client::legacy::Error,
        upstream: &Upstream,
        connect_timeout: Duration,
    ) -> Self {
        let name = upstream.name.clone();
        let url = upstream.url.clone();
        let host = upstream.authority.to_string();
        let detail = error_chain(error);
        let causes = causes(error);
        let tls = causes
            .iter()
            .find_map(|cause| cause.downcast_ref::<rustls::Error>());
        if let Some(tls) = tls {
            let detail = tls.to_string();
            return match tls {
                rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                    Self::UntrustedCertificate {
                        name,
                        url,
                        host,
                        detail,
                    }
                }
                rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                ) => Self::NameMismatch {
                    name,
                    url,
                    host,
                    detail,
                },
                rustls::Error::InvalidCertificate(_) => Self::BadCertificate {
                    name,
                    url,
                    host,
                    detail,
                },
                _ => Self::Handshake {
                    name,
                    url,
                    host,
                    detail,
                },
            };
        }
        let io_kind = |kind: std::io::ErrorKind| {
            causes.iter().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == kind)
            })
        };
        if io_kind(std::io::ErrorKind::ConnectionRefused) {
            Self::Refused { name, url, host }
        } else if error.is_connect() && io_kind(std::io::ErrorKind::TimedOut) {
            Self::ConnectTimeout {
                name,
                url,
                host,
                timeout: connect_timeout,
            }
        } else if error.is_connect() {
            Self::Unreachable { name, url, detail }
        } else {
            Self::Failed { name, url, detail }
        }
    }

    /// The `error.type` of the JSON answer.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Refused { .. } | Self::ConnectTimeout { .. } | Self::Unreachable { .. } => {
                "upstream_unreachable"
            }
            Self::UntrustedCertificate { .. } => "upstream_tls_untrusted",
            Self::NameMismatch { .. } => "upstream_tls_name_mismatch",
            Self::BadCertificate { .. } => "upstream_tls_certificate",
            Self::Handshake { .. } => "upstream_tls_handshake",
            Self::Failed { .. } => "upstream_unavailable",
        }
    }
}

/// The error and what caused it, outermost first. An `io::Error` that wraps another error
/// reports that error's *source* as its own, skipping the wrapped error itself (where rustls
/// puts its verdict), so it is opened with `get_ref` instead.
fn causes<'a>(error: &'a (dyn Error + 'static)) -> Vec<&'a (dyn Error + 'static)> {
    let mut found = Vec::new();
    let mut next = Some(error);
    while let Some(cause) = next {
        found.push(cause);
        if found.len() >= 32 {
            break;
        }
        next = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => io.get_ref().map(|inner| inner as &(dyn Error + 'static)),
            None => cause.source(),
        };
    }
    found
}

/// The error and its sources, `: `-joined: `client error (Connect): tcp connect error: …`.
pub(crate) fn error_chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
