//! `paddock-bench proxy`: what the key-swapping credential proxy costs. Latency added over
//! calling the upstream directly (p50, p90, p99 of sequential requests on one keep-alive
//! connection per side) and requests per second through it (concurrent keep-alive clients),
//! both measured in the same run against the same local upstream, with the ratios.
//!
//! The upstream is plain HTTP/1.1 (`--upstream http`) or TLS with a certificate from a CA made
//! for the run (`https`: HTTP/1.1 by ALPN; `https-h2`: HTTP/2 by ALPN). Over TLS the direct
//! side is a TLS client of the upstream, and the proxied side is what an agent does: plain
//! HTTP on loopback to the proxy, which speaks TLS to the upstream. The upstream answers 200
//! only to the benchmark's request carrying the real key, so every measured answer is also a
//! checked one.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use http::{Request, Response, StatusCode, Version};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use paddock_credentials::{
    Capabilities, CredentialBroker, CredentialBrokerConfig, Grant, UpstreamConfig, UpstreamTrust,
};
use paddock_secrets::SecretString;
use paddock_testkit::tls::{ALPN_H2_HTTP1, ALPN_HTTP1, TestCa};

use crate::mcp::verdict;
use crate::smoke::{self, Mode};

type BenchClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The real key: the proxy swaps it in for the voucher, and the upstream refuses anything else.
const UPSTREAM_KEY: &str = "sk-bench-upstream-key";
const RESPONSE: &[u8] =
    br#"{"id":"msg_1","type":"message","content":[{"type":"text","text":"ok"}]}"#;
const REQUEST: &[u8] =
    br#"{"model":"bench","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}"#;
const PATH: &str = "/v1/messages";
/// The goal for the latency the proxy adds at p50.
const ADDED_P50_GOAL: Duration = Duration::from_micros(300);
/// Untimed requests per side before the latency rounds.
const WARMUP_REQUESTS: usize = 1_000;
const ROUNDS: usize = 5;
/// How long one request may take before the run fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum UpstreamKind {
    /// Plain HTTP/1.1.
    Http,
    /// TLS, HTTP/1.1 by ALPN.
    Https,
    /// TLS, HTTP/2 by ALPN.
    HttpsH2,
}

impl UpstreamKind {
    fn tls(self) -> bool {
        self != Self::Http
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Http => "plain HTTP/1.1",
            Self::Https => "TLS, HTTP/1.1 by ALPN",
            Self::HttpsH2 => "TLS, HTTP/2 by ALPN",
        }
    }

    fn version(self) -> Version {
        match self {
            Self::HttpsH2 => Version::HTTP_2,
            Self::Http | Self::Https => Version::HTTP_11,
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ProxyArgs {
    /// Sequential requests per side for the latency percentiles.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    requests: u64,
    /// Concurrent keep-alive clients for the throughput measurement.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: u64,
    /// Seconds of throughput measurement per side and round.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// What the upstream speaks.
    #[arg(long, value_enum, default_value_t = UpstreamKind::Http)]
    upstream: UpstreamKind,
}

/// The local upstream: answers the benchmark's request with the real key, refuses the rest.
#[derive(Debug)]
struct Upstream {
    address: SocketAddr,
    /// The CA behind its certificate, when it speaks TLS.
    ca: Option<TestCa>,
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// Requests with the real key and the benchmark's body.
    answered: AtomicU64,
    /// Requests without them.
    refused: AtomicU64,
    /// Answered requests that came over HTTP/2.
    http2: AtomicU64,
    /// Completed TLS handshakes.
    tls_handshakes: AtomicU64,
}

impl Upstream {
    async fn start(kind: UpstreamKind) -> anyhow::Result<Self> {
        let (ca, acceptor) = if kind.tls() {
            let ca = TestCa::new()?;
            let alpn = if kind == UpstreamKind::HttpsH2 {
                ALPN_H2_HTTP1
            } else {
                ALPN_HTTP1
            };
            let acceptor = tokio_rustls::TlsAcceptor::from(ca.localhost_config(alpn)?);
            (Some(ca), Some(acceptor))
        } else {
            (None, None)
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let counts = Arc::new(Counts::default());
        let served = counts.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let counts = served.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let connection = counts.clone();
                    let service = hyper::service::service_fn(move |request| {
                        let counts = counts.clone();
                        async move { Ok::<_, Infallible>(answer(request, &counts).await) }
                    });
                    let Some(acceptor) = acceptor else {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                        return;
                    };
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    connection.tls_handshakes.fetch_add(1, Ordering::Relaxed);
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
        Ok(Self {
            address,
            ca,
            counts,
        })
    }

    fn url(&self) -> String {
        let scheme = if self.ca.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }
}

async fn answer(request: Request<Incoming>, counts: &Counts) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    // Read the body, as a real API would, before answering.
    let body = body.collect().await.map(|body| body.to_bytes());
    let key = parts
        .headers
        .get("x-api-key")
        .and_then(|value| value.to_str().ok());
    let right = key == Some(UPSTREAM_KEY)
        && parts.uri.path() == PATH
        && body.as_ref().is_ok_and(|body| body.as_ref() == REQUEST);
    let (status, bytes) = if right {
        counts.answered.fetch_add(1, Ordering::Relaxed);
        if parts.version == Version::HTTP_2 {
            counts.http2.fetch_add(1, Ordering::Relaxed);
        }
        (StatusCode::OK, Bytes::from_static(RESPONSE))
    } else {
        counts.refused.fetch_add(1, Ordering::Relaxed);
        (
            StatusCode::UNAUTHORIZED,
            Bytes::from_static(br#"{"error":"not the real key, or not the benchmark's request"}"#),
        )
    };
    let mut response = Response::new(Full::new(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// Where a side sends its requests, and with which key.
#[derive(Debug, Clone)]
struct Target {
    url: String,
    key: SecretString,
}

impl Target {
    async fn call(&self, client: &BenchClient) -> anyhow::Result<()> {
        let request = Request::post(&self.url)
            .header("x-api-key", self.key.expose_secret())
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(REQUEST)))?;
        let response = tokio::time::timeout(REQUEST_TIMEOUT, client.request(request))
            .await
            .with_context(|| format!("`{}` did not answer within {REQUEST_TIMEOUT:?}", self.url))?
            .with_context(|| format!("`{}`", self.url))?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if !status.is_success() || body.as_ref() != RESPONSE {
            bail!(
                "`{}` answered {status}: {}",
                self.url,
                String::from_utf8_lossy(&body)
            );
        }
        Ok(())
    }
}

/// A keep-alive client: TLS trusting `ca` when given (HTTP/2 offered by ALPN when `http2`),
/// plain HTTP otherwise.
fn client(ca: Option<&TestCa>, http2: bool) -> anyhow::Result<BenchClient> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = ca {
        roots.add(ca.certificate())?;
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.enforce_http(false);
    let builder = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1();
    let connector = if http2 {
        builder.enable_http2().wrap_connector(tcp)
    } else {
        builder.wrap_connector(tcp)
    };
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

/// The upstream, a broker whose proxy forwards to it, and both sides' targets.
#[derive(Debug)]
struct World {
    kind: UpstreamKind,
    upstream: Upstream,
    broker: CredentialBroker,
    direct: Target,
    proxied: Target,
    _dir: tempfile::TempDir,
}

impl World {
    async fn new(kind: UpstreamKind) -> anyhow::Result<Self> {
        let upstream = Upstream::start(kind).await?;
        // Only the run's CA: a public root must not be able to stand in for it.
        let trust = UpstreamTrust {
            web_pki_roots: false,
            platform_roots: false,
            extra_pem_files: upstream
                .ca
                .iter()
                .map(|ca| ca.pem_path().to_path_buf())
                .collect(),
            extra_pem_dirs: Vec::new(),
        };
        let broker = CredentialBroker::start(CredentialBrokerConfig {
            upstreams: vec![UpstreamConfig {
                name: "api".into(),
                url: upstream.url(),
                credential: SecretString::new(UPSTREAM_KEY),
                header: "x-api-key".into(),
                scheme: None,
            }],
            trust,
            ..CredentialBrokerConfig::default()
        })
        .await?;
        let dir = tempfile::tempdir()?;
        let voucher = broker.mint_for_launch(
            "bench",
            Capabilities::new([Grant::parse("api", &format!("POST {PATH}"))?]),
            dir.path(),
        )?;
        let proxy = broker
            .proxy_url("api")
            .context("the proxy has no listener")?;
        let direct = Target {
            url: format!("{}{PATH}", upstream.url()),
            key: SecretString::new(UPSTREAM_KEY),
        };
        let proxied = Target {
            url: format!("{proxy}{PATH}"),
            key: SecretString::new(voucher.expose_secret()),
        };
        Ok(Self {
            kind,
            upstream,
            broker,
            direct,
            proxied,
            _dir: dir,
        })
    }

    /// The direct side's client: the upstream's own protocol.
    fn direct_client(&self) -> anyhow::Result<BenchClient> {
        client(
            self.upstream.ca.as_ref(),
            self.kind == UpstreamKind::HttpsH2,
        )
    }

    /// The agent's client of the proxy: plain HTTP/1.1 on loopback.
    fn agent_client() -> anyhow::Result<BenchClient> {
        client(None, false)
    }
}

pub(crate) async fn run(args: ProxyArgs, mode: Mode) -> anyhow::Result<()> {
    let world = World::new(args.upstream).await?;
    let result = if mode.is_smoke() {
        smoke(&world).await
    } else {
        measure(&world, &args).await
    };
    world.broker.shutdown();
    result
}

/// One request through the proxy: it must come back with the upstream's answer, and the
/// upstream must have seen the real key (it refuses anything else), over the protocol asked for.
async fn smoke(world: &World) -> anyhow::Result<()> {
    world
        .proxied
        .call(&World::agent_client()?)
        .await
        .context("the request through the proxy")?;
    let counts = &world.upstream.counts;
    let answered = counts.answered.load(Ordering::Relaxed);
    let refused = counts.refused.load(Ordering::Relaxed);
    if answered != 1 || refused != 0 {
        bail!(
            "the upstream answered {answered} requests with the real key and refused {refused}; expected one and none"
        );
    }
    if world.kind.tls() && counts.tls_handshakes.load(Ordering::Relaxed) == 0 {
        bail!("the upstream answered without a TLS handshake");
    }
    let http2 = counts.http2.load(Ordering::Relaxed);
    if (world.kind.version() == Version::HTTP_2) != (http2 == 1) {
        bail!(
            "the proxy reached the upstream over the wrong protocol: {http2} HTTP/2 requests, expected {}",
            world.kind.describe()
        );
    }
    smoke::passed(
        "proxy",
        &format!(
            "the proxy forwarded POST {PATH} to the {} upstream ({}) and the upstream saw the real key, not the voucher",
            if world.kind.tls() { "https" } else { "http" },
            world.kind.describe()
        ),
    );
    Ok(())
}

async fn measure(world: &World, args: &ProxyArgs) -> anyhow::Result<()> {
    let (direct, proxied) = (&world.direct, &world.proxied);
    let direct_client = world.direct_client()?;
    let agent_client = World::agent_client()?;
    println!(
        "proxy: {} sequential requests per side (alternating rounds), then {} concurrent clients for {} s per side",
        args.requests, args.concurrency, args.seconds
    );
    println!(
        "upstream: hyper on 127.0.0.1, {}; {} B JSON answer, request body {} B",
        world.kind.describe(),
        RESPONSE.len(),
        REQUEST.len()
    );
    if world.kind.tls() {
        println!(
            "direct: a TLS client of the upstream; proxied: plain HTTP/1.1 on loopback to the proxy, the proxy's TLS to the upstream"
        );
    }

    // Latency: one keep-alive connection per side, rounds alternate so drift hits both.
    for _ in 0..WARMUP_REQUESTS {
        direct.call(&direct_client).await?;
        proxied.call(&agent_client).await?;
    }
    let per_round = usize::try_from(args.requests)?.div_ceil(ROUNDS);
    let mut direct_ns = Vec::with_capacity(per_round * ROUNDS);
    let mut proxied_ns = Vec::with_capacity(per_round * ROUNDS);
    for _ in 0..ROUNDS {
        for (target, client, samples) in [
            (direct, &direct_client, &mut direct_ns),
            (proxied, &agent_client, &mut proxied_ns),
        ] {
            for _ in 0..per_round {
                let started = Instant::now();
                target.call(client).await?;
                samples.push(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
            }
        }
    }
    let direct_latency = Percentiles::of(&mut direct_ns);
    let proxied_latency = Percentiles::of(&mut proxied_ns);

    // Throughput: concurrent keep-alive clients, direct then proxied, twice each.
    let mut direct_rps = 0.0f64;
    let mut proxied_rps = 0.0f64;
    for _ in 0..2 {
        let client = world.direct_client()?;
        direct_rps = direct_rps.max(throughput(direct, &client, args).await?);
        let client = World::agent_client()?;
        proxied_rps = proxied_rps.max(throughput(proxied, &client, args).await?);
    }
    let refused = world.upstream.counts.refused.load(Ordering::Relaxed);
    if refused > 0 {
        bail!("the upstream refused {refused} requests: not the real key or not the request");
    }

    let ms = |ns: u64| ns as f64 / 1e6;
    println!();
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>12}",
        "", "p50 ms", "p90 ms", "p99 ms", "req/s"
    );
    for (name, latency, rps) in [
        ("direct", &direct_latency, direct_rps),
        ("proxied", &proxied_latency, proxied_rps),
    ] {
        println!(
            "{name:<10} {:>10.3} {:>10.3} {:>10.3} {rps:>12.0}",
            ms(latency.p50),
            ms(latency.p90),
            ms(latency.p99),
        );
    }
    println!();
    let added =
        |pick: fn(&Percentiles) -> u64| ms(pick(&proxied_latency)) - ms(pick(&direct_latency));
    let goal = ms(u64::try_from(ADDED_P50_GOAL.as_nanos()).unwrap_or(u64::MAX));
    println!(
        "added latency: p50 {:.3} ms (goal <= {goal:.3} ms: {}), p90 {:.3} ms, p99 {:.3} ms",
        added(|p| p.p50),
        verdict(added(|p| p.p50) <= goal),
        added(|p| p.p90),
        added(|p| p.p99),
    );
    let ratio = |pick: fn(&Percentiles) -> u64| {
        pick(&proxied_latency) as f64 / pick(&direct_latency).max(1) as f64
    };
    println!(
        "ratios proxied/direct: p50 {:.2}x, p90 {:.2}x, p99 {:.2}x, req/s {:.2}x",
        ratio(|p| p.p50),
        ratio(|p| p.p90),
        ratio(|p| p.p99),
        proxied_rps / direct_rps.max(1.0)
    );
    Ok(())
}

async fn throughput(
    target: &Target,
    client: &BenchClient,
    args: &ProxyArgs,
) -> anyhow::Result<f64> {
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..args.concurrency {
        let client = client.clone();
        let done = done.clone();
        let target = target.clone();
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                target.call(&client).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// Nearest-rank-ish percentiles of a latency sample, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Percentiles {
    p50: u64,
    p90: u64,
    p99: u64,
}

impl Percentiles {
    fn of(samples: &mut [u64]) -> Self {
        samples.sort_unstable();
        let at = |fraction: f64| {
            let index = ((samples.len().saturating_sub(1)) as f64 * fraction).round() as usize;
            samples.get(index).copied().unwrap_or(0)
        };
        Self {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_sample() {
        let mut samples: Vec<u64> = (1..=101).rev().collect();
        assert_eq!(
            Percentiles::of(&mut samples),
            Percentiles {
                p50: 51,
                p90: 91,
                p99: 100
            }
        );
        assert_eq!(Percentiles::of(&mut []).p50, 0);
    }
}
