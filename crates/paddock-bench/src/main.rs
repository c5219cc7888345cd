//! `paddock-bench`: the one entry point for Paddock's benchmarks. Each measures Paddock and a
//! peer in the same run, with the same load generator (`wrk`) or the same client, and prints
//! the ratio; none asserts a timing. With `--smoke` each instead performs its measured operation
//! once against Paddock alone (`android` against its peer too, on the same fake phone, and
//! `tasks` against the same agent CLI started directly) and checks the answer, which is how the
//! test suite keeps every benchmark working (`tests/smoke.rs`).

mod agents_backends;
mod agents_driver;
mod agents_host;
mod android;
mod daemon;
mod devices;
mod fleet;
mod ingress;
mod listen;
mod mcp;
mod mcp_client;
mod mobile_mcp_peer;
mod node_package;
mod pii;
mod playwright_peer;
mod pool;
mod probe;
mod proxy;
mod smoke;
mod stdio_client;
mod tasks;
mod ts_peer;
mod wrk;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::smoke::Mode;

#[derive(Debug, Parser)]
#[command(about = "Paddock benchmarks (each prints Paddock next to its peer and the ratio)")]
struct Cli {
    /// Perform the measured operation once against Paddock alone (no peer, no load generator,
    /// no timings; `android` and `tasks` check their peers too), check its answer and exit
    /// non-zero if it is wrong.
    #[arg(long, global = true)]
    smoke: bool,
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
    /// The fleet server: `list_devices` through it under load vs the TypeScript MCP SDK's
    /// stateless server; 200 simulated daemons joined: its memory and the latency of a command
    /// through it to a daemon.
    Fleet(fleet::FleetArgs),
    /// Paddock's web devices vs Playwright MCP: warm `getWeb` vs a cold launch, and `observe`
    /// (with and without a screenshot) vs `browser_snapshot` and `browser_take_screenshot` on
    /// a 400-row table page; latencies one request at a time.
    Devices(devices::DevicesArgs),
    /// Paddock's Android devices vs mobile-mcp on the same fake phone behind the same adb
    /// server: `observe` vs `mobile_list_elements_on_screen` and `tapOn` vs
    /// `mobile_click_on_screen_at_coordinates`, over HTTP and stdio; adb commands per call.
    Android(android::AndroidArgs),
    /// The agent driver's own overhead: `send()` to the CLI's stdin and a stdout line to the
    /// event, p50 and p99, against a fake Claude CLI; resident memory per idle session.
    AgentsDriver(agents_driver::DriverArgs),
    /// What each real agent CLI costs behind the session contract, against the scripted model
    /// server through the credential proxy: open, first delta, turn, warm turn, idle memory.
    AgentsBackends(agents_backends::BackendsArgs),
    /// Hosting agents in the daemon: `agents/open` to the CLI running vs spawning it directly,
    /// and the daemon's memory with idle hosted sessions.
    AgentsHost(agents_host::HostArgs),
    /// The daemon's tasks: `runTask` to the agent's first model request vs starting the same
    /// Claude Code CLI directly, and a 20-step `executePlan` vs the same 20 `tools/call`s.
    Tasks(tasks::TasksArgs),
    /// The credential proxy's added latency (p50, p90, p99) and throughput over calling the
    /// upstream directly, with an `http://` or an `https://` upstream.
    Proxy(proxy::ProxyArgs),
    /// The default PII pipeline's throughput on prose, secret-dense text and adversarial
    /// inputs, next to Presidio's analyzer on the same documents.
    Pii(pii::PiiArgs),
    /// The fake Claude CLI `agents-driver` launches (not a benchmark).
    #[command(hide = true)]
    FakeClaude,
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
    let mode = if cli.smoke {
        Mode::Smoke
    } else {
        Mode::Measure
    };
    if let Bench::FakeClaude = cli.bench {
        agents_driver::fake_claude();
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match cli.bench {
        Bench::Ingress(args) => runtime.block_on(ingress::run(args, mode)),
        Bench::Mcp(args) => runtime.block_on(mcp::run(args, mode)),
        Bench::Fleet(args) => runtime.block_on(fleet::run(args, mode)),
        Bench::Devices(args) => runtime.block_on(devices::run(args, mode)),
        Bench::Android(args) => runtime.block_on(android::run(args, mode)),
        Bench::AgentsDriver(args) => runtime.block_on(agents_driver::run(args, mode)),
        Bench::AgentsBackends(args) => runtime.block_on(agents_backends::run(args, mode)),
        Bench::AgentsHost(args) => runtime.block_on(agents_host::run(args, mode)),
        Bench::Tasks(args) => runtime.block_on(tasks::run(args, mode)),
        Bench::Proxy(args) => runtime.block_on(proxy::run(args, mode)),
        // Single-threaded work: the pipeline's throughput on one core, as before.
        Bench::Pii(args) => pii::run(&args, mode),
        Bench::FakeClaude => Ok(()),
    }
}
