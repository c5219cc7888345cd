//! A throwaway real upstream on 127.0.0.1 (hyper; over TLS too, with HTTP/2 when its ALPN offers
//! it), a proxy client and raw-socket helpers.

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderMap, Request, Response, Version};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use paddock_credentials::{
    Capabilities, CredentialBroker, CredentialBrokerConfig, Grant, UpstreamConfig,
};
use paddock_secrets::SecretString;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

pub const KEY: &str = "sk-real-upstream-key-0123456789";
pub const DEADLINE: Duration = Duration::from_secs(10);

/// What the upstream received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The protocol the request came over (HTTP/2 when ALPN chose it).
    pub version: Version,
    pub method: String,
    pub target: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The trailer fields of a chunked body, if it had any.
    pub trailers: Option<HeaderMap>,
}

/// A response body the test feeds chunk by chunk. When the upstream's connection closes the
/// body is dropped, so the test's sender sees `closed()`.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

type UpstreamBody = http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>;

/// The upstream: `/sse` streams what the test sends on a stream channel, `/hang` never
/// answers, `/redirect?to=URL` answers 302 to `URL`, everything else answers 200 with the
/// request body echoed.
#[derive(Clone)]
pub struct Upstream {
    pub address: SocketAddr,
    tls: bool,
    seen: Arc<Mutex<Vec<Seen>>>,
    streams: Arc<Mutex<VecDeque<mpsc::Receiver<Bytes>>>>,
    /// TCP connections accepted, whether or not a request followed.
    connections: Arc<AtomicUsize>,
}

impl Upstream {
    /// A plain HTTP/1.1 upstream.
    pub async fn start() -> Self {
        Self::serve(None).await
    }

    /// A TLS upstream with `config`'s certificate, speaking HTTP/2 when ALPN settles on `h2`
    /// and HTTP/1.1 otherwise.
    pub async fn start_tls(config: Arc<rustls::ServerConfig>) -> Self {
        Self::serve(Some(tokio_rustls::TlsAcceptor::from(config))).await
    }

    async fn serve(tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let upstream = Self {
            address: listener.local_addr().unwrap(),
            tls: tls.is_some(),
            seen: Arc::default(),
            streams: Arc::default(),
            connections: Arc::default(),
        };
        let server = upstream.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                server.connections.fetch_add(1, Ordering::SeqCst);
                let server = server.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let server = server.clone();
                        async move { Ok::<_, Infallible>(server.answer(request).await) }
                    });
                    let Some(acceptor) = tls else {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                        return;
                    };
                    // A client that rejects the certificate ends the handshake here.
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    } else {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                });
            }
        });
        upstream
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<UpstreamBody> {
        let (parts, body) = request.into_parts();
        let (body, trailers) = match body.collect().await {
            Ok(collected) => {
                let trailers = collected.trailers().cloned();
                (collected.to_bytes(), trailers)
            }
            Err(_) => (Bytes::new(), None),
        };
        let target = parts
            .uri
            .path_and_query()
            .map(ToString::to_string)
            .unwrap_or_default();
        self.seen.lock().unwrap().push(Seen {
            version: parts.version,
            method: parts.method.to_string(),
            target: target.clone(),
            headers: parts.headers,
            body: body.clone(),
            trailers,
        });
        if target.starts_with("/hang") {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        if let Some(location) = target.strip_prefix("/redirect?to=") {
            let mut response =
                Response::new(Full::new(Bytes::from_static(b"moved")).boxed_unsync());
            *response.status_mut() = http::StatusCode::FOUND;
            response
                .headers_mut()
                .insert("location", location.parse().unwrap());
            return response;
        }
        if target.starts_with("/sse") {
            let receiver = self.streams.lock().unwrap().pop_front();
            if let Some(receiver) = receiver {
                let mut response = Response::new(ChannelBody(receiver).boxed_unsync());
                response
                    .headers_mut()
                    .insert("content-type", "text/event-stream".parse().unwrap());
                return response;
            }
        }
        let mut response = Response::new(Full::new(body).boxed_unsync());
        response
            .headers_mut()
            .insert("x-upstream", "yes".parse().unwrap());
        response
    }

    /// The sender that feeds the next `/sse` response.
    pub fn next_stream(&self) -> mpsc::Sender<Bytes> {
        let (sender, receiver) = mpsc::channel(16);
        self.streams.lock().unwrap().push_back(receiver);
        sender
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// `http://127.0.0.1:PORT`, or `https://…` for a TLS upstream.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }
}

pub fn upstream_config(
    name: &str,
    url: &str,
    header: &str,
    scheme: Option<&str>,
) -> UpstreamConfig {
    UpstreamConfig {
        name: name.into(),
        url: url.into(),
        credential: SecretString::new(KEY),
        header: header.into(),
        scheme: scheme.map(Into::into),
    }
}

pub async fn broker_for(upstreams: Vec<UpstreamConfig>) -> CredentialBroker {
    CredentialBroker::start(CredentialBrokerConfig {
        upstreams,
        ..CredentialBrokerConfig::default()
    })
    .await
    .unwrap()
}

/// A broker that also trusts the certificates in `pem` (a test CA), passed explicitly rather
/// than through `SSL_CERT_FILE`, so tests in one process do not share it.
pub async fn broker_trusting(
    upstreams: Vec<UpstreamConfig>,
    pem: &std::path::Path,
) -> CredentialBroker {
    CredentialBroker::start(CredentialBrokerConfig {
        upstreams,
        trust: paddock_credentials::UpstreamTrust::default().with_pem_file(pem),
        ..CredentialBrokerConfig::default()
    })
    .await
    .unwrap()
}

pub fn caps(upstream: &str, grants: &[&str]) -> Capabilities {
    Capabilities::new(
        grants
            .iter()
            .map(|text| Grant::parse(upstream, text).unwrap()),
    )
}

pub type TestClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> TestClient {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

/// Sends one request through `client` and collects the answer.
pub async fn send(
    client: &TestClient,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, HeaderMap, String) {
    let response = tokio::time::timeout(
        DEADLINE,
        client.request(request(method, url, headers, body)),
    )
    .await
    .expect("answer within the deadline")
    .unwrap();
    let status = response.status().as_u16();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (
        status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder().method(method).uri(url);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}

/// The next data frame of `body`; `None` at its end or on an error.
pub async fn next_data(body: &mut Incoming) -> Option<Bytes> {
    loop {
        let frame = tokio::time::timeout(DEADLINE, body.frame())
            .await
            .expect("a frame within the deadline")?
            .ok()?;
        if let Ok(data) = frame.into_data() {
            return Some(data);
        }
    }
}

/// Writes `raw` on a fresh connection to `address` and reads until the server closes (or
/// the deadline).
pub async fn raw_exchange(address: &str, raw: &[u8]) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let _ = stream.write_all(raw).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(DEADLINE, stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// The body of a raw answer: what follows the head.
pub fn body_of(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

pub fn status_of(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"))
}
