//! `paddock-bench agents-host`: what hosting an agent in the daemon costs. The time from an
//! `agents/open` request to the CLI process running, against spawning the same CLI directly
//! (goal: at most 5 ms added at the median), and the daemon's resident memory with 10 idle
//! hosted sessions (the CLIs are their own processes and not counted; goal: at most 40 MiB).
//!
//! The CLI is the fake Claude CLI (`paddock-bench fake-claude`) behind a `claude` script on
//! the daemon's PATH; it writes CLOCK_MONOTONIC to `$BENCH_STARTED_FILE` as it starts, so both
//! sides measure to the same moment: the program is running.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use paddock_client::control::{
    AgentKey, AgentUpstream, AgentsList, AgentsOpen, AgentsOpenParams, AgentsStop,
    AgentsStopParams, ControlClient, SensitiveText,
};

use crate::daemon::PrivateDaemon;
use crate::smoke::{self, Mode};

/// How long the CLI may take to start, on either side.
const START_TIMEOUT: Duration = Duration::from_secs(30);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct HostArgs {
    /// Launches measured on each side.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    launches: u32,
    /// Idle sessions held open for the memory measurement.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    idle_sessions: u32,
    /// Launch unconfined (`[agents] sandbox = "off"`), to see what the sandbox costs.
    #[arg(long)]
    no_sandbox: bool,
    /// The paddock binary (default: beside this one).
    #[arg(long)]
    paddock: Option<PathBuf>,
}

/// Where the fake CLI writes its start time, when the variable is set.
pub(crate) const STARTED_FILE_VAR: &str = "BENCH_STARTED_FILE";

/// Called first by `fake-claude`: records that the program is running.
pub(crate) fn stamp_start() {
    if let Some(path) = std::env::var_os(STARTED_FILE_VAR) {
        let _ = std::fs::write(path, crate::agents_driver::now_ns().to_string());
    }
}

pub(crate) async fn run(args: HostArgs, mode: Mode) -> anyhow::Result<()> {
    let paddock = crate::daemon::paddock_binary(args.paddock.clone())?;
    let exe = std::env::current_exe().context("could not locate paddock-bench")?;
    let bin = tempfile::tempdir()?;
    let wrapper = bin.path().join("claude");
    crate::agents_driver::write_wrapper(&wrapper, &exe)?;
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The daemon confines launches with Landlock where it can: the fake CLI is this binary, so
    // its directory is widened in, as a user would for a toolchain outside /usr.
    let exe_dir = exe.parent().context("paddock-bench has no directory")?;
    let config = format!(
        "[agents]\nsandbox_exec = [{:?}]\n{}",
        exe_dir.display().to_string(),
        if args.no_sandbox {
            "sandbox = \"off\"\n"
        } else {
            ""
        }
    );
    let daemon =
        PrivateDaemon::start_with_env(&paddock, &["--web-warm", "0"], &[("PATH", path)], &config)?;
    let mut client = ControlClient::connect_owner(&daemon.paths()).await?;
    let work = tempfile::tempdir()?;

    if mode.is_smoke() {
        let (id, elapsed) = hosted_launch(&mut client, work.path(), 0).await?;
        let listed = client.request::<AgentsList>((), REQUEST_TIMEOUT).await?;
        if !listed.sessions.iter().any(|session| session.id == id) {
            bail!("the hosted session `{id}` is not listed");
        }
        stop(&mut client, &id).await?;
        let _ = elapsed;
        smoke::passed(
            "agents-host",
            "agents/open started the CLI (it stamped its start), the session was listed and stopped",
        );
        return Ok(());
    }

    let mut hosted = Vec::new();
    let mut direct = Vec::new();
    for round in 0..args.launches {
        let (id, elapsed) = hosted_launch(&mut client, work.path(), round).await?;
        hosted.push(elapsed);
        stop(&mut client, &id).await?;
        direct.push(direct_launch(&wrapper, work.path(), round).await?);
    }
    hosted.sort_unstable();
    direct.sort_unstable();
    let (hosted_p50, direct_p50) = (median_ms(&hosted), median_ms(&direct));
    println!(
        "agents/open → CLI running: p50 {hosted_p50:.2} ms (min {:.2}, max {:.2}); spawning it directly: p50 {direct_p50:.2} ms (min {:.2}, max {:.2}); added {:.2} ms, ratio {:.2}x (goal: ≤ 5 ms added)",
        ms(hosted[0]),
        ms(hosted[hosted.len() - 1]),
        ms(direct[0]),
        ms(direct[direct.len() - 1]),
        hosted_p50 - direct_p50,
        hosted_p50 / direct_p50.max(f64::MIN_POSITIVE),
    );

    let pid = daemon.pid();
    let before = rss_kib(pid)?;
    let mut idle = Vec::new();
    for index in 0..args.idle_sessions {
        idle.push(
            hosted_launch(&mut client, work.path(), 1000 + index)
                .await?
                .0,
        );
    }
    // Let the launches settle (their pump tasks and buffers) before reading.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(pid)?;
    println!(
        "daemon RSS: {:.1} MiB with no agents, {:.1} MiB with {} idle hosted sessions ({:.0} KiB each; the CLIs are separate processes; goal: ≤ 40 MiB)",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        args.idle_sessions,
        after.saturating_sub(before) as f64 / f64::from(args.idle_sessions),
    );
    for id in idle {
        stop(&mut client, &id).await?;
    }
    Ok(())
}

/// Opens a hosted session whose CLI stamps its start; returns its id and the nanoseconds
/// from sending `agents/open` to the stamp.
async fn hosted_launch(
    client: &mut ControlClient,
    work: &Path,
    round: u32,
) -> anyhow::Result<(String, u64)> {
    let stamp = work.join(format!("hosted-{round}"));
    let started = crate::agents_driver::now_ns();
    let opened = client
        .request::<AgentsOpen>(
            AgentsOpenParams {
                backend: "claude".into(),
                cwd: work.to_path_buf(),
                model: None,
                mode: None,
                instructions: None,
                env: vec![(STARTED_FILE_VAR.into(), stamp.display().to_string())],
                bot: None,
                permissions: None,
                // The fake CLI never calls it.
                upstream: Some(AgentUpstream {
                    url: "http://127.0.0.1:9".into(),
                    header: "x-api-key".into(),
                    scheme: None,
                    key: AgentKey::Value(SensitiveText::new("sk-bench-unused")),
                }),
                prompt: None,
                sandbox: None,
            },
            REQUEST_TIMEOUT,
        )
        .await?;
    let running = wait_for_stamp(&stamp).await?;
    Ok((opened.session.id, running.saturating_sub(started)))
}

/// Spawns the same `claude` script directly; nanoseconds until it stamped its start.
async fn direct_launch(wrapper: &Path, work: &Path, round: u32) -> anyhow::Result<u64> {
    let stamp = work.join(format!("direct-{round}"));
    let started = crate::agents_driver::now_ns();
    let mut child = tokio::process::Command::new(wrapper)
        .env(STARTED_FILE_VAR, &stamp)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let running = wait_for_stamp(&stamp).await?;
    drop(child.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    Ok(running.saturating_sub(started))
}

async fn wait_for_stamp(stamp: &Path) -> anyhow::Result<u64> {
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(stamp)
            && let Ok(ns) = text.trim().parse::<u64>()
        {
            return Ok(ns);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("the CLI never stamped `{}`", stamp.display());
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

async fn stop(client: &mut ControlClient, id: &str) -> anyhow::Result<()> {
    client
        .request::<AgentsStop>(
            AgentsStopParams {
                id: id.to_owned(),
                reason: Some("bench".into()),
                force_after_ms: Some(5000),
            },
            REQUEST_TIMEOUT,
        )
        .await?;
    Ok(())
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn median_ms(sorted: &[u64]) -> f64 {
    sorted.get(sorted.len() / 2).map_or(0.0, |&ns| ms(ns))
}

pub(crate) fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        .context("no VmRSS for the daemon")
}
