//! What the key-swapping proxy costs: latency added over calling the upstream directly (p50,
//! p99, sequential requests on one keep-alive connection) and requests per second through it
//! (concurrent keep-alive clients), both measured in the same run against the same local
//! upstream, with the ratios.
//!
//! `cargo run --release -p paddock-credentials --example proxy-bench -- [--requests N]
//! [--concurrency C] [--seconds S]`

use std::convert::Infallible;
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::Request;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use paddock_credentials::{
    Capabilities, CredentialBroker, CredentialBrokerConfig, Grant, UpstreamConfig,
};
use paddock_secrets::SecretString;

type BenchClient = Client<HttpConnector, Full<Bytes>>;
type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

const RESPONSE: &[u8] =
    br#"{"id":"msg_1","type":"message","content":[{"type":"text","text":"ok"}]}"#;
const REQUEST: &[u8] =
    br#"{"model":"bench","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}"#;

struct Options {
    requests: usize,
    concurrency: usize,
    seconds: u64,
}

fn options() -> Result<Options> {
    let mut options = Options {
        requests: 20_000,
        concurrency: 32,
        seconds: 3,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--requests" => options.requests = value.parse()?,
            "--concurrency" => options.concurrency = value.parse()?,
            "--seconds" => options.seconds = value.parse()?,
            other => return Err(format!("unknown flag `{other}`").into()),
        }
    }
    Ok(options)
}

fn main() -> Result<()> {
    let options = options()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(options))
}

async fn run(options: Options) -> Result<()> {
    let upstream = start_upstream().await?;
    let broker = CredentialBroker::start(CredentialBrokerConfig {
        upstreams: vec![UpstreamConfig {
            name: "api".into(),
            url: format!("http://{upstream}"),
            credential: SecretString::new("sk-bench-upstream-key"),
            header: "x-api-key".into(),
            scheme: None,
        }],
        ..CredentialBrokerConfig::default()
    })
    .await?;
    let dir = tempfile::tempdir()?;
    let voucher = broker.mint_for_launch(
        "bench",
        Capabilities::new([Grant::parse("api", "POST /v1/messages")?]),
        dir.path(),
    )?;
    let proxy = broker.proxy_url("api").ok_or("the proxy has no listener")?;
    let direct = Target {
        url: format!("http://{upstream}/v1/messages"),
        key: "sk-bench-upstream-key".to_owned(),
    };
    let proxied = Target {
        url: format!("{proxy}/v1/messages"),
        key: voucher.expose_secret().to_owned(),
    };

    println!(
        "proxy-bench: {} sequential requests per side (alternating rounds), then {} concurrent clients for {} s per side",
        options.requests, options.concurrency, options.seconds
    );
    println!(
        "upstream: hyper HTTP/1.1 on 127.0.0.1, {} B JSON answer; request body {} B",
        RESPONSE.len(),
        REQUEST.len()
    );

    // Latency: one keep-alive connection per side, rounds alternate so drift hits both.
    let client = client();
    for target in [&direct, &proxied] {
        for _ in 0..1_000 {
            target.call(&client).await?;
        }
    }
    let rounds = 5;
    let per_round = options.requests.div_ceil(rounds);
    let mut direct_ns = Vec::with_capacity(per_round * rounds);
    let mut proxied_ns = Vec::with_capacity(per_round * rounds);
    for _ in 0..rounds {
        for (target, samples) in [(&direct, &mut direct_ns), (&proxied, &mut proxied_ns)] {
            for _ in 0..per_round {
                let started = Instant::now();
                target.call(&client).await?;
                samples.push(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
            }
        }
    }
    let (d50, d99) = percentiles(&mut direct_ns);
    let (p50, p99) = percentiles(&mut proxied_ns);

    // Throughput: concurrent keep-alive clients, direct then proxied, twice each.
    let mut direct_rps = 0.0f64;
    let mut proxied_rps = 0.0f64;
    for _ in 0..2 {
        direct_rps =
            direct_rps.max(throughput(&direct, options.concurrency, options.seconds).await?);
        proxied_rps =
            proxied_rps.max(throughput(&proxied, options.concurrency, options.seconds).await?);
    }

    let ms = |ns: u64| ns as f64 / 1e6;
    println!();
    println!(
        "{:<10} {:>10} {:>10} {:>12}",
        "", "p50 ms", "p99 ms", "req/s"
    );
    println!(
        "{:<10} {:>10.3} {:>10.3} {:>12.0}",
        "direct",
        ms(d50),
        ms(d99),
        direct_rps
    );
    println!(
        "{:<10} {:>10.3} {:>10.3} {:>12.0}",
        "proxied",
        ms(p50),
        ms(p99),
        proxied_rps
    );
    println!();
    println!(
        "added latency: p50 {:.3} ms (goal <= 0.300 ms: {}), p99 {:.3} ms",
        ms(p50.saturating_sub(d50)),
        if p50.saturating_sub(d50) <= 300_000 {
            "met"
        } else {
            "MISSED"
        },
        ms(p99.saturating_sub(d99)),
    );
    println!(
        "ratios proxied/direct: p50 {:.2}x, p99 {:.2}x, req/s {:.2}x",
        p50 as f64 / d50.max(1) as f64,
        p99 as f64 / d99.max(1) as f64,
        proxied_rps / direct_rps.max(1.0)
    );
    broker.shutdown();
    Ok(())
}

struct Target {
    url: String,
    key: String,
}

impl Target {
    async fn call(&self, client: &BenchClient) -> Result<()> {
        let request = Request::post(&self.url)
            .header("x-api-key", &self.key)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(REQUEST)))?;
        let response = client.request(request).await?;
        if !response.status().is_success() {
            return Err(format!("`{}` answered {}", self.url, response.status()).into());
        }
        response.into_body().collect().await?;
        Ok(())
    }
}

fn client() -> BenchClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new()).build(connector)
}

async fn throughput(target: &Target, concurrency: usize, seconds: u64) -> Result<f64> {
    let done = Arc::new(AtomicU64::new(0));
    let client = client();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let client = client.clone();
        let done = done.clone();
        let target = Target {
            url: target.url.clone(),
            key: target.key.clone(),
        };
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                target.call(&client).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), Box<dyn Error + Send + Sync>>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

fn percentiles(samples: &mut [u64]) -> (u64, u64) {
    samples.sort_unstable();
    let at = |fraction: f64| {
        let index = ((samples.len() as f64 - 1.0) * fraction).round() as usize;
        samples.get(index).copied().unwrap_or(0)
    };
    (at(0.50), at(0.99))
}

async fn start_upstream() -> Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |request: Request<hyper::body::Incoming>| async move {
                        // Read the body, as a real API would, before answering.
                        let _ = request.into_body().collect().await;
                        Ok::<_, Infallible>(
                            http::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from_static(RESPONSE)))
                                .unwrap_or_default(),
                        )
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(address)
}
