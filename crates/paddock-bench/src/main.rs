//! `paddock-bench`: benchmarks that measure Paddock and a peer in the same run, with the same
//! load generator (`wrk`) or the same client, and print the ratio. Not a test: nothing here
//! asserts timings.

mod devices;
mod mcp;
mod mcp_client;
mod playwright_peer;
mod probe;
mod ts_peer;
mod wrk;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand};
use paddock_client::control::StatusResult;

#[derive(Debug, Parser)]
#[command(about = "Paddock benchmarks (each prints Paddock next to its peer and the ratio)")]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// Authenticated `GET /heartbeat` on the daemon vs a bare axum hello-world.
    Ingress(LoadArgs),
    /// Authenticated stateless MCP `tools/call` on the daemon vs the official TypeScript MCP
    /// SDK's stateless server and a bare axum hello-world.
    Mcp(mcp::McpArgs),
    /// Paddock's web devices vs Playwright MCP: warm `getWeb` vs a cold launch, and `observe`
    /// (with and without a screenshot) vs `browser_snapshot` and `browser_take_screenshot` on
    /// a 400-row table page; latencies one request at a time.
    Devices(devices::DevicesArgs),
}

#[derive(Debug, Clone, clap::Args)]
struct LoadArgs {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 64)]
    connections: u32,
    /// wrk threads.
    #[arg(long, default_value_t = 2)]
    threads: u32,
    /// Measurement rounds; each round measures every server, alternating.
    #[arg(long, default_value_t = 2)]
    rounds: u32,
    /// The paddock binary (default: beside this one).
    #[arg(long)]
    paddock: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Like the paddock CLI: the whole error chain on one line, then any `hint:` line.
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match cli.bench {
        Bench::Ingress(args) => runtime.block_on(ingress(args)),
        Bench::Mcp(args) => runtime.block_on(mcp::run(args)),
        Bench::Devices(args) => runtime.block_on(devices::run(args)),
    }
}

/// A daemon in a private state directory, stopped on drop.
struct PrivateDaemon {
    paddock: PathBuf,
    dir: tempfile::TempDir,
    status: StatusResult,
}

impl PrivateDaemon {
    /// Starts a daemon with `--log-level warn` and `extra_args` (such as `--web-warm 0`).
    fn start(paddock: &Path, extra_args: &[&str]) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut daemon = Self {
            paddock: paddock.to_path_buf(),
            dir,
            status: StatusResult {
                pid: 0,
                version: String::new(),
                uptime_ms: 0,
                state: paddock_client::control::DaemonState::Starting,
                http_endpoint: None,
                socket: PathBuf::new(),
            },
        };
        let mut args = vec!["daemon", "start", "--log-level", "warn"];
        args.extend_from_slice(extra_args);
        let output = daemon.command(&args).output()?;
        if !output.status.success() {
            bail!(
                "daemon start failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let status = daemon.command(&["daemon", "status", "--json"]).output()?;
        daemon.status = serde_json::from_slice(&status.stdout).context("daemon status")?;
        Ok(daemon)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.paddock);
        command
            .args(args)
            .env("PADDOCK_STATE_DIR", self.dir.path().join("state"))
            .env("PADDOCK_AUX_SOCKET_DIR", self.dir.path())
            .env_remove("PADDOCK_DAEMON_TOKEN_FILE_PATH");
        command
    }

    fn token_file(&self) -> PathBuf {
        let env = paddock_client::ClientEnv::from_process()
            .with_var("PADDOCK_AUX_SOCKET_DIR", self.dir.path())
            .without_var("PADDOCK_DAEMON_TOKEN_FILE_PATH");
        paddock_client::DaemonPaths::resolve(&env).token_file
    }

    fn url(&self, path: &str) -> anyhow::Result<String> {
        let endpoint = self
            .status
            .http_endpoint
            .as_deref()
            .context("no endpoint")?;
        Ok(endpoint.replace("/mcp", path))
    }
}

impl Drop for PrivateDaemon {
    fn drop(&mut self) {
        let _ = self.command(&["daemon", "stop"]).output();
    }
}

fn paddock_binary(explicit: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path);
    }
    let exe = std::env::current_exe()?;
    let sibling = exe.with_file_name("paddock");
    if sibling.exists() {
        Ok(sibling)
    } else {
        bail!(
            "no paddock binary beside `{}`; pass --paddock",
            exe.display()
        )
    }
}

async fn ingress(args: LoadArgs) -> anyhow::Result<()> {
    wrk::check_installed()?;
    let paddock = paddock_binary(args.paddock.clone())?;
    let daemon = PrivateDaemon::start(&paddock, &[])?;
    let script = wrk::Script {
        bearer_token_file: Some(daemon.token_file()),
        ..wrk::Script::default()
    }
    .write(&daemon.dir.path().join("auth.lua"))?;
    let bare_port = spawn_bare_axum().await?;
    let bare_url = format!("http://127.0.0.1:{bare_port}/heartbeat");
    let paddock_url = daemon.url("/heartbeat")?;
    let load = wrk::Load {
        threads: args.threads,
        connections: args.connections,
        duration: Duration::from_secs(args.duration),
    };

    // Warm both servers, then alternate so that drift affects both alike.
    wrk::run(&load.warmup(), &bare_url, None)?;
    wrk::run(&load.warmup(), &paddock_url, Some(&script))?;
    let mut bare = Vec::new();
    let mut ours = Vec::new();
    for _ in 0..args.rounds {
        bare.push(wrk::run(&load, &bare_url, None)?);
        ours.push(wrk::run(&load, &paddock_url, Some(&script))?);
    }
    let bare = wrk::Summary::best(&bare)?;
    let ours = wrk::Summary::best(&ours)?;
    if ours.non_2xx > 0 {
        bail!(
            "paddock answered {} non-2xx responses: the auth script is wrong",
            ours.non_2xx
        );
    }
    println!(
        "ingress: authenticated GET /heartbeat, {} connections, {} threads, {}s x {} rounds (best round)",
        args.connections, args.threads, args.duration, args.rounds
    );
    wrk::print_table(&[("bare axum", &bare), ("paddock daemon", &ours)]);
    println!(
        "ratio paddock/bare: throughput {:.2}, p50 {:.2}x, p99 {:.2}x",
        ours.requests_per_sec / bare.requests_per_sec,
        ours.p50_ms / bare.p50_ms,
        ours.p99_ms / bare.p99_ms
    );
    Ok(())
}

/// A bare axum hello-world with the same route and body as the daemon's heartbeat.
async fn spawn_bare_axum() -> anyhow::Result<u16> {
    use axum::routing::get;
    use axum::serve::ListenerExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let app = axum::Router::new().route(
        "/heartbeat",
        get(|| async {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                r#"{"status":"ok"}"#,
            )
        }),
    );
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(port)
}
