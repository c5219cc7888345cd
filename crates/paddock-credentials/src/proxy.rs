//! The key-swapping proxy: one HTTP/1.1 listener on 127.0.0.1 per upstream. Each request is
//! checked in this order — target form and Host, path, voucher (401), capabilities (403) — then
//! its credentials are stripped, the host's credential and the stamps are added, and it is
//! forwarded (over TLS to an `https://` upstream, HTTP/2 when the upstream picks it) with both
//! bodies streamed frame by frame. Revoking the voucher ends requests and response streams in
//! flight.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::Authority;
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tracing::debug;

use crate::broker::{Entry, Shared};
use crate::client::UpstreamFailure;
use crate::config::{Upstream, is_hop_by_hop};
use crate::guard::{self, CheckedPath};
use paddock_http::ConnectionLimits;

/// The agent's identity (its launch id), as the upstream sees it.
pub const X_AGENT_ID: HeaderName = HeaderName::from_static("x-agent-id");
/// The host's client name.
pub const X_CLIENT: HeaderName = HeaderName::from_static("x-client");
/// The voucher's grants for this upstream: `POST /v1/messages, GET /v1/models`.
pub const X_AGENT_ACTIVE_CAPABILITIES: HeaderName =
    HeaderName::from_static("x-agent-active-capabilities");
const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = paddock_http::BoxBody;

/// Accepts connections for `upstream` until the broker shuts down, under the shared
/// connection limits (cap with oldest-idle shedding, head and idle timeouts, accept backoff);
/// at shutdown every connection is cut at once.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    upstream: Arc<Upstream>,
    port: u16,
    stop: CancellationToken,
) {
    let limits = ConnectionLimits {
        header_read_timeout: shared.config.timeouts.request_head,
        max_header_bytes: shared.config.max_header_bytes,
        max_headers: shared.config.max_headers,
        drain: Duration::ZERO,
        ..ConnectionLimits::default()
    };
    let name = format!("credential proxy for upstream `{}`", upstream.name);
    let shutdown = stop.cancelled_owned();
    let handler = ProxyHandler {
        shared,
        upstream,
        port,
    };
    paddock_http::serve_connections(listener, name, limits, handler, shutdown).await;
}

#[derive(Clone)]
struct ProxyHandler {
    shared: Arc<Shared>,
    upstream: Arc<Upstream>,
    port: u16,
}

impl paddock_http::Handler for ProxyHandler {
    fn call(
        &self,
        request: Request<Incoming>,
    ) -> Pin<Box<dyn Future<Output = Response<ProxyBody>> + Send + 'static>> {
        let handler = self.clone();
        Box::pin(
            async move { handle(request, &handler.shared, &handler.upstream, handler.port).await },
        )
    }
}

async fn handle(
    request: Request<Incoming>,
    shared: &Shared,
    upstream: &Upstream,
    port: u16,
) -> Response<ProxyBody> {
    let method = request.method().clone();
    let checked = match guard::check_target(&method, request.uri(), request.headers(), port) {
        Ok(checked) => checked,
        Err(refusal) => {
            debug!(upstream = %upstream.name, %method, ?refusal, "request refused");
            let status = match refusal {
                guard::Refusal::Connect => StatusCode::METHOD_NOT_ALLOWED,
                _ => StatusCode::BAD_REQUEST,
            };
            return error(status, refusal.kind(), refusal.message());
        }
    };
    // Only the path is logged: queries can carry secrets of their own.
    let path = checked.as_str();
    let entry = match presented_voucher(request.headers(), upstream) {
        Err(Conflict) => {
            debug!(upstream = %upstream.name, %method, %path, "conflicting credentials");
            return error(
                StatusCode::BAD_REQUEST,
                "conflicting_credentials",
                "the request carries different credentials in its headers; send the voucher once",
            );
        }
        Ok(None) => {
            debug!(upstream = %upstream.name, %method, %path, "no voucher presented");
            return error(
                StatusCode::UNAUTHORIZED,
                "invalid_local_agent_proxy_token",
                "invalid local agent proxy token: the request carries no voucher (send it as `Authorization: Bearer <voucher>` or `x-api-key`)",
            );
        }
        Ok(Some(candidate)) => match shared.authenticate(candidate) {
            Some(entry) => entry,
            None => {
                debug!(upstream = %upstream.name, %method, %path, "unknown or revoked voucher");
                return error(
                    StatusCode::UNAUTHORIZED,
                    "invalid_local_agent_proxy_token",
                    "invalid local agent proxy token: the voucher is unknown or has been revoked",
                );
            }
        },
    };
    if !entry.capabilities.allows(&upstream.name, &method, path) {
        debug!(voucher = %entry.id, upstream = %upstream.name, %method, %path, "outside capabilities");
        let message = format!(
            "voucher `{}` may not `{method} {path}` on upstream `{}`; it allows: {}",
            entry.id,
            upstream.name,
            non_empty(entry.capabilities.header_value(&upstream.name))
        );
        return error(StatusCode::FORBIDDEN, "capability_denied", &message);
    }
    // Checked first: cancelling takes the token's lock, and this runs on every request.
    if !entry.used.is_cancelled() {
        entry.used.cancel();
    }
    forward(request, shared, upstream, &entry, &checked).await
}

async fn forward(
    request: Request<Incoming>,
    shared: &Shared,
    upstream: &Upstream,
    entry: &Arc<Entry>,
    checked: &CheckedPath,
) -> Response<ProxyBody> {
    let method = request.method().clone();
    let path = checked.as_str();
    let (mut parts, body) = request.into_parts();
    let Some(uri) = upstream_uri(
        &upstream.url_scheme,
        &upstream.authority,
        &upstream.base_path,
        checked,
        parts.uri.query(),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_target",
            "the request target cannot be forwarded",
        );
    };
    let mut headers = std::mem::take(&mut parts.headers);
    strip_request_headers(&mut headers, upstream);
    headers.insert(upstream.header.clone(), upstream.value.clone());
    headers.insert(X_CLIENT, shared.config.client_name.clone());
    // Launch ids and grants were validated to header-safe characters when minted.
    match (
        HeaderValue::from_str(&entry.launch),
        HeaderValue::from_str(&entry.capabilities.header_value(&upstream.name)),
    ) {
        (Ok(agent), Ok(capabilities)) => {
            headers.insert(X_AGENT_ID, agent);
            headers.insert(X_AGENT_ACTIVE_CAPABILITIES, capabilities);
        }
        _ => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the voucher's stamps are not header-safe",
            );
        }
    }
    parts.uri = uri;
    parts.headers = headers;
    // The client picks the wire version per connection (HTTP/2 when ALPN agrees); the request
    // asks for neither.
    parts.version = http::Version::HTTP_11;
    let outgoing = Request::from_parts(parts, body);

    let timeouts = shared.config.timeouts;
    let sent = tokio::select! {
        biased;
        () = entry.revoked.cancelled() => {
            debug!(voucher = %entry.id, "voucher revoked while waiting for the upstream");
            return error(
                StatusCode::UNAUTHORIZED,
                "invalid_local_agent_proxy_token",
                "invalid local agent proxy token: the voucher was revoked",
            );
        }
        sent = tokio::time::timeout(timeouts.response_head, shared.client().request(outgoing)) => sent,
    };
    let response = match sent {
        Ok(Ok(response)) => response,
        Ok(Err(failure)) => {
            let failure = UpstreamFailure::classify(&failure, upstream, timeouts.connect);
            let kind = failure.kind();
            debug!(upstream = %upstream.name, host = %upstream.authority, %method, %path, kind, %failure, "upstream failed");
            return error(StatusCode::BAD_GATEWAY, kind, &failure.to_string());
        }
        Err(_) => {
            debug!(upstream = %upstream.name, %method, %path, "upstream response head timed out");
            let message = format!(
                "upstream `{}` at `{}` sent no response within {:?}",
                upstream.name, upstream.url, timeouts.response_head
            );
            return error(StatusCode::GATEWAY_TIMEOUT, "upstream_timeout", &message);
        }
    };
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let protocol = parts.version;
    // The agent's side is HTTP/1.1 whatever the upstream spoke.
    parts.version = http::Version::HTTP_11;
    debug!(
        voucher = %entry.id,
        launch = %entry.launch,
        upstream = %upstream.name,
        %method,
        %path,
        status = parts.status.as_u16(),
        ?protocol,
        "proxied"
    );
    let body = GuardedBody {
        inner: body,
        revoked: Box::pin(entry.revoked.clone().cancelled_owned()),
        idle: Box::pin(tokio::time::sleep(timeouts.body_idle)),
        idle_timeout: timeouts.body_idle,
        done: false,
    };
    Response::from_parts(parts, UnsyncBoxBody::new(body))
}

/// The upstream's URI for a request: its base path, then the checked path exactly as the
/// capability check saw it, then the client's query. Nothing is decoded or re-encoded on the
/// way, so the upstream receives the approved bytes.
fn upstream_uri(
    scheme: &http::uri::Scheme,
    authority: &Authority,
    base_path: &str,
    path: &CheckedPath,
    query: Option<&str>,
) -> Option<Uri> {
    let mut path_and_query = format!("{base_path}{}", path.as_str());
    if let Some(query) = query {
        path_and_query.push('?');
        path_and_query.push_str(query);
    }
    Uri::builder()
        .scheme(scheme.clone())
        .authority(authority.clone())
        .path_and_query(path_and_query)
        .build()
        .ok()
}

/// Two credential headers with different values.
struct Conflict;

/// The voucher the client presented: from `Authorization: Bearer …`, `x-api-key`, or the
/// upstream's own header (with its scheme). Several may be present (clients differ) but they
/// must agree, so nothing can smuggle a second credential past the check.
fn presented_voucher<'a>(
    headers: &'a HeaderMap,
    upstream: &Upstream,
) -> Result<Option<&'a [u8]>, Conflict> {
    let mut found: Option<&[u8]> = None;
    let mut consider = |value: &'a [u8]| -> Result<(), Conflict> {
        let value = value.trim_ascii();
        if value.is_empty() {
            return Ok(());
        }
        match found {
            Some(previous) if previous != value => Err(Conflict),
            _ => {
                found = Some(value);
                Ok(())
            }
        }
    };
    for value in headers.get_all(header::AUTHORIZATION) {
        consider(strip_scheme(
            value.as_bytes(),
            upstream_scheme_for(upstream, &header::AUTHORIZATION),
        ))?;
    }
    for value in headers.get_all(X_API_KEY) {
        consider(value.as_bytes())?;
    }
    if upstream.header != header::AUTHORIZATION && upstream.header != X_API_KEY {
        for value in headers.get_all(&upstream.header) {
            consider(strip_scheme(value.as_bytes(), upstream.scheme.as_deref()))?;
        }
    }
    Ok(found)
}

fn upstream_scheme_for<'a>(upstream: &'a Upstream, name: &HeaderName) -> Option<&'a str> {
    (upstream.header == *name)
        .then_some(upstream.scheme.as_deref())
        .flatten()
}

/// `Bearer x` and `<configured scheme> x` yield `x`; anything else is taken whole (and will
/// not match a voucher).
fn strip_scheme<'a>(value: &'a [u8], scheme: Option<&str>) -> &'a [u8] {
    let value = value.trim_ascii();
    for candidate in ["Bearer"].into_iter().chain(scheme) {
        let length = candidate.len();
        if value.len() > length
            && value[..length].eq_ignore_ascii_case(candidate.as_bytes())
            && value[length] == b' '
        {
            return &value[length + 1..];
        }
    }
    value
}

/// Removes what must not reach the upstream: hop-by-hop headers and those `Connection` names,
/// headers that ask the upstream to route the request somewhere else, `Host` (set from the
/// upstream URL), every credential header, and any stamp the client tried to set itself. The
/// proxy adds its own credential and stamps after this, so a `Connection` header that names
/// them cannot remove them.
fn strip_request_headers(headers: &mut HeaderMap, upstream: &Upstream) {
    strip_hop_by_hop(headers);
    remove_matching(headers, is_routing_override);
    for name in [
        header::HOST,
        header::AUTHORIZATION,
        X_API_KEY,
        X_AGENT_ID,
        X_CLIENT,
        X_AGENT_ACTIVE_CAPABILITIES,
    ] {
        headers.remove(name);
    }
    headers.remove(&upstream.header);
}

/// Headers some frameworks and gateways honour in place of the request line or the peer:
/// method overrides (a `POST` that runs as `DELETE`), URL rewrites (the route taken is the
/// header's, not the checked path), and the `Forwarded` family (the host, scheme, prefix or
/// client address the upstream believes). A voucher scoped to `POST /v1/messages` must not
/// reach anything else through them, and the proxy is the only client the upstream sees.
fn is_routing_override(name: &HeaderName) -> bool {
    const NAMES: [&str; 12] = [
        "x-http-method-override",
        "x-http-method",
        "x-method-override",
        "forwarded",
        "x-original-url",
        "x-original-uri",
        "x-rewrite-url",
        "x-original-host",
        "x-host",
        "x-real-ip",
        "x-client-ip",
        "true-client-ip",
    ];
    // `HeaderName` is lower case, so these compare without regard to the case sent.
    let name = name.as_str();
    NAMES.contains(&name) || name.starts_with("x-forwarded-")
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    remove_matching(headers, is_hop_by_hop);
}

fn remove_matching(headers: &mut HeaderMap, matches: fn(&HeaderName) -> bool) {
    let names: Vec<HeaderName> = headers
        .keys()
        .filter(|name| matches(name))
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

fn non_empty(text: String) -> String {
    if text.is_empty() {
        "nothing".to_owned()
    } else {
        text
    }
}

/// An error answer in the shape Anthropic's and OpenAI's SDKs both surface (`error.message`).
fn error(status: StatusCode, kind: &str, message: &str) -> Response<ProxyBody> {
    let body = serde_json::json!({
        "type": "error",
        "error": { "type": kind, "message": message },
    })
    .to_string();
    let mut response = Response::new(
        http_body_util::Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The upstream's response body, passed on frame by frame (no buffering, so SSE events arrive
/// as the upstream writes them), ended with an error when the voucher is revoked or the
/// upstream goes quiet for longer than the idle timeout. An error makes hyper abort the
/// client connection, so a cut stream is visibly incomplete rather than silently short.
/// Dropping it (the client went away) drops the upstream response, which closes that
/// connection.
struct GuardedBody {
    inner: Incoming,
    revoked: Pin<Box<WaitForCancellationFutureOwned>>,
    idle: Pin<Box<tokio::time::Sleep>>,
    idle_timeout: Duration,
    done: bool,
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.revoked.as_mut().poll(cx).is_ready() {
            this.done = true;
            debug!("response stream cut: voucher revoked");
            return Poll::Ready(Some(Err("the voucher was revoked".into())));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let deadline = tokio::time::Instant::now() + this.idle_timeout;
                this.idle.as_mut().reset(deadline);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(failure))) => {
                this.done = true;
                Poll::Ready(Some(Err(failure.into())))
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.idle.as_mut().poll(cx).is_ready() {
                    this.done = true;
                    debug!("response stream cut: upstream idle");
                    return Poll::Ready(Some(Err("the upstream went quiet".into())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_stripped_case_insensitively() {
        assert_eq!(strip_scheme(b"Bearer vch_x", None), b"vch_x");
        assert_eq!(strip_scheme(b"bearer vch_x", None), b"vch_x");
        assert_eq!(strip_scheme(b"Token vch_x", Some("Token")), b"vch_x");
        assert_eq!(strip_scheme(b"vch_x", None), b"vch_x");
        assert_eq!(strip_scheme(b"Bearer", None), b"Bearer");
    }

    #[test]
    fn hop_by_hop_and_connection_named_headers_go() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-secret-hop"),
        );
        headers.insert("x-secret-hop", HeaderValue::from_static("1"));
        headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        headers.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        headers.insert("x-kept", HeaderValue::from_static("1"));
        headers.insert("proxy-anything", HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut headers);
        let names: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, vec!["x-kept"]);
    }

    #[test]
    fn routing_overrides_are_recognised_in_any_case() {
        for name in [
            "X-HTTP-Method-Override",
            "x-http-method",
            "X-Method-Override",
            "Forwarded",
            "X-Forwarded-For",
            "X-Forwarded-Host",
            "X-Forwarded-Prefix",
            "x-forwarded-anything",
            "X-Original-URL",
            "X-Rewrite-URL",
            "X-Real-IP",
        ] {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            assert!(is_routing_override(&name), "{name}");
        }
        for name in ["x-forwarded", "content-type", "x-request-id", "x-api-key"] {
            assert!(
                !is_routing_override(&HeaderName::from_static(name)),
                "{name}"
            );
        }
    }

    mod forwarded_paths {
        use proptest::prelude::*;

        use super::*;
        use crate::capability::Grant;
        use crate::guard::tests::{assert_safe, hostile_path};

        const PREFIXES: &[&str] = &["/", "/v1/", "/v1/messages", "/v1/models/", "/a"];

        /// A granted prefix followed by a hostile tail, so that many cases pass the grant.
        fn candidate() -> impl Strategy<Value = (String, String)> {
            (
                prop::sample::select(PREFIXES),
                hostile_path(),
                any::<bool>(),
            )
                .prop_map(|(prefix, tail, prepend)| {
                    let path = if prepend {
                        format!("{}{tail}", prefix.trim_end_matches('/'))
                    } else {
                        tail
                    };
                    (prefix.to_owned(), path)
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            /// Any path the guard and a grant let through reaches the upstream as the same bytes
            /// under the base path, segment-wise below the granted prefix, and no decoding of it
            /// yields `..`, `;`, NUL or `\`.
            #[test]
            fn an_approved_path_is_forwarded_below_its_grant(
                (prefix, path) in candidate(),
                query in prop::option::of("[a-z0-9=&%.]{0,12}"),
            ) {
                let Ok(checked) = guard::check_path(&path) else {
                    return Ok(());
                };
                let grants = crate::Capabilities::new([Grant::new("api", "*", &prefix).unwrap()]);
                if !grants.allows("api", &http::Method::POST, checked.as_str()) {
                    return Ok(());
                }
                let authority: Authority = "127.0.0.1:9".parse().unwrap();
                let uri = upstream_uri(
                    &http::uri::Scheme::HTTPS,
                    &authority,
                    "/base",
                    &checked,
                    query.as_deref(),
                );
                prop_assert!(uri.is_some(), "{} could not be forwarded", path);
                let Some(uri) = uri else { return Ok(()) };
                prop_assert_eq!(uri.query(), query.as_deref());
                let forwarded = uri.path().strip_prefix("/base");
                prop_assert_eq!(forwarded, Some(checked.as_str()));
                let Some(forwarded) = forwarded else { return Ok(()) };
                let granted: Vec<&str> = prefix.trim_end_matches('/').split('/').collect();
                let sent: Vec<&str> = forwarded.split('/').collect();
                prop_assert!(
                    sent.starts_with(&granted),
                    "{} is not below {}",
                    forwarded,
                    prefix
                );
                assert_safe(forwarded)?;
            }
        }
    }
}
