//! `paddock-bench agents-driver`: the agent driver's own overhead. How long the driver takes
//! from `send()` to the bytes on the CLI's stdin, and from a stdout line to the event reaching
//! the consumer, p50 and p99; and resident memory per idle session, excluding the CLI.
//!
//! The "CLI" is this same program as `paddock-bench fake-claude`: it speaks just enough Claude
//! stream-json to answer each user line at once, stamping CLOCK_MONOTONIC when the line arrived
//! and when its answer was written, so the driver's own share can be separated from the
//! runtime's. There is no peer: the goals are absolute (1 ms each way, 2 MiB a session).

use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use paddock_agents::{
    AgentConfig, AgentDriverSdk, AgentEvent, BackendId, BrokerCredentials, Command, HostConfig,
    Launch, ModelApi, OpenRequest, Session, StopRequest,
};

use crate::smoke::{self, Mode};

/// How long one answer of the fake CLI may take to come back as events.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);
const STOP_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DriverArgs {
    /// Commands sent through one session, warm-up included.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..))]
    commands: u32,
    /// The first commands, left out of the percentiles.
    #[arg(long, default_value_t = 100)]
    warmup: u32,
    /// Idle sessions open at once for the memory measurement.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    idle_sessions: u32,
}

/// The fake Claude CLI: answers every user line with one text delta holding two timestamps
/// (line received, answer written) and a successful result.
pub(crate) fn fake_claude() {
    crate::agents_host::stamp_start();
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let received = now_ns();
        if !line.contains("\"type\":\"user\"") {
            continue;
        }
        let emitted = now_ns();
        let delta = format!(
            "{{\"type\":\"stream_event\",\"event\":{{\"type\":\"content_block_delta\",\"delta\":{{\"type\":\"text_delta\",\"text\":\"{received} {emitted}\"}}}}}}"
        );
        let _ = writeln!(stdout, "{delta}");
        let _ = writeln!(
            stdout,
            "{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}}"
        );
        let _ = stdout.flush();
    }
}

pub(crate) fn now_ns() -> u64 {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(time.tv_sec).unwrap_or(0) * 1_000_000_000
        + u64::try_from(time.tv_nsec).unwrap_or(0)
}

/// This process's resident memory.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The nearest-rank-ish percentile `p` (0..=1) of sorted nanoseconds, in microseconds; 0
/// without samples.
fn percentile_us(sorted: &[u64], p: f64) -> f64 {
    let index = ((sorted.len().saturating_sub(1)) as f64 * p).round() as usize;
    sorted
        .get(index.min(sorted.len().saturating_sub(1)))
        .map_or(0.0, |&ns| ns as f64 / 1000.0)
}

/// A driver whose `claude` is the fake CLI, in a private directory.
struct World {
    sdk: AgentDriverSdk,
    dir: tempfile::TempDir,
}

impl World {
    async fn new() -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("could not locate paddock-bench")?;
        let dir = tempfile::tempdir()?;
        let wrapper = dir.path().join("claude");
        write_wrapper(&wrapper, &exe)?;
        // Launches need a credential broker; the fake CLI never calls the upstream it points at.
        let broker = paddock_credentials::CredentialBroker::start(
            paddock_credentials::CredentialBrokerConfig {
                upstreams: vec![paddock_credentials::UpstreamConfig {
                    name: "anthropic".into(),
                    url: "http://127.0.0.1:9".into(),
                    credential: paddock_secrets::SecretString::new("sk-bench-unused"),
                    header: "x-api-key".into(),
                    scheme: None,
                }],
                ..Default::default()
            },
        )
        .await?;
        let sdk = AgentDriverSdk::new(
            HostConfig::new(dir.path().join("state"))
                .with_program("claude", &wrapper)
                .with_credentials(Arc::new(BrokerCredentials::single(
                    Arc::new(broker),
                    ModelApi::AnthropicMessages,
                ))),
        );
        Ok(Self { sdk, dir })
    }

    async fn open(&self, id: String) -> anyhow::Result<Session> {
        let session = self
            .sdk
            .open(OpenRequest {
                backend: BackendId::Claude,
                launch: Launch {
                    working_directory: self.dir.path().to_path_buf(),
                    instructions: None,
                    launch_id: id,
                },
                config: AgentConfig::default(),
                env: Vec::new(),
            })
            .await?;
        Ok(session)
    }
}

/// `claude` for the driver: a script that runs `exe fake-claude`, whatever arguments it gets.
pub(crate) fn write_wrapper(wrapper: &Path, exe: &Path) -> anyhow::Result<()> {
    let exe = exe
        .to_str()
        .context("the paddock-bench path is not UTF-8")?;
    if exe.contains('\'') {
        bail!("the paddock-bench path `{exe}` contains a quote; run it from another directory");
    }
    paddock_process::write_executable(
        wrapper,
        format!("#!/bin/sh\nexec '{exe}' fake-claude\n").as_bytes(),
    )?;
    Ok(())
}

async fn stop(session: &Session) {
    session
        .stop(StopRequest {
            reason: "bench".into(),
            force_after: STOP_GRACE,
        })
        .await;
}

/// The two latencies of every command after the warm-up, nanoseconds.
#[derive(Debug, Default)]
struct Latencies {
    to_stdin: Vec<u64>,
    to_event: Vec<u64>,
}

/// Sends `commands` commands through one session, each after the last one's turn completed.
/// Each must come back as exactly the fake CLI's answer: one delta with two timestamps, the
/// first after the send, then a completed turn.
async fn measure_latency(world: &World, commands: u32, warmup: u32) -> anyhow::Result<Latencies> {
    let session = world.open("bench-latency".into()).await?;
    let result = send_commands(&session, commands, warmup).await;
    stop(&session).await;
    result
}

async fn send_commands(session: &Session, commands: u32, warmup: u32) -> anyhow::Result<Latencies> {
    let mut events = session
        .events()
        .context("the session has no event stream")?;
    let mut latencies = Latencies::default();
    for index in 0..commands {
        let command = Command::user(format!("c{index}"), "ping");
        let sent = now_ns();
        if index == 0 {
            session.start(command).await;
        } else {
            session.send(command).await;
        }
        let mut stamps = None;
        loop {
            let event = tokio::time::timeout(EVENT_TIMEOUT, events.recv())
                .await
                .with_context(|| format!("no event within {EVENT_TIMEOUT:?} of command {index}"))?
                .context("the event stream ended")?;
            match event {
                AgentEvent::AssistantTextDelta { text } => {
                    let arrived = now_ns();
                    let (received, emitted) = parse_stamps(&text).with_context(|| {
                        format!("command {index} was answered with `{text}`, not two timestamps")
                    })?;
                    if received < sent || emitted < received || arrived < emitted {
                        bail!(
                            "command {index}: timestamps out of order (sent {sent}, received {received}, emitted {emitted}, arrived {arrived})"
                        );
                    }
                    stamps = Some((received - sent, arrived - emitted));
                }
                AgentEvent::TurnCompleted { outcome, .. } => {
                    if outcome != paddock_agents::TurnOutcome::Completed {
                        bail!("command {index}: the turn ended {outcome:?}");
                    }
                    break;
                }
                _ => {}
            }
        }
        let (to_stdin, to_event) =
            stamps.with_context(|| format!("command {index}: the turn had no text delta"))?;
        if index >= warmup {
            latencies.to_stdin.push(to_stdin);
            latencies.to_event.push(to_event);
        }
    }
    Ok(latencies)
}

fn parse_stamps(text: &str) -> Option<(u64, u64)> {
    let (received, emitted) = text.split_once(' ')?;
    Some((received.parse().ok()?, emitted.parse().ok()?))
}

/// Opens `count` sessions, waits `settle`, and returns this process's resident memory growth
/// per session in KiB; every session is stopped before it returns.
async fn measure_memory(world: &World, count: u32, settle: Duration) -> anyhow::Result<f64> {
    let before = rss_kib();
    let mut sessions = Vec::new();
    let mut opened = Ok(());
    for index in 0..count {
        match world.open(format!("bench-memory-{index}")).await {
            Ok(session) => sessions.push(session),
            Err(error) => {
                opened = Err(error);
                break;
            }
        }
    }
    // Memory settles once every CLI is up and the sessions idle; a benchmark may wait for it.
    tokio::time::sleep(settle).await;
    let after = rss_kib();
    for session in &sessions {
        stop(session).await;
    }
    opened?;
    Ok(after.saturating_sub(before) as f64 / f64::from(count))
}

pub(crate) async fn run(args: DriverArgs, mode: Mode) -> anyhow::Result<()> {
    let world = World::new().await?;
    if mode.is_smoke() {
        let latencies = measure_latency(&world, 1, 0).await?;
        measure_memory(&world, 1, Duration::ZERO).await?;
        if latencies.to_stdin.len() != 1 {
            bail!(
                "one command sent, {} answers measured",
                latencies.to_stdin.len()
            );
        }
        smoke::passed(
            "agents-driver",
            "one command reached the fake CLI's stdin and its answer came back as a text delta and a completed turn; one idle session opened and stopped",
        );
        return Ok(());
    }
    if args.warmup >= args.commands {
        bail!(
            "--warmup {} leaves none of the {} commands to measure",
            args.warmup,
            args.commands
        );
    }
    let mut latencies = measure_latency(&world, args.commands, args.warmup).await?;
    latencies.to_stdin.sort_unstable();
    latencies.to_event.sort_unstable();
    let per_session =
        measure_memory(&world, args.idle_sessions, Duration::from_millis(500)).await?;

    let (to_stdin, to_event) = (&latencies.to_stdin, &latencies.to_event);
    println!(
        "driver overhead over {} commands (after {} warm-up), microseconds:",
        to_stdin.len(),
        args.warmup
    );
    println!("{:<28} {:>10} {:>10}", "path", "p50 µs", "p99 µs");
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "send() -> CLI stdin",
        percentile_us(to_stdin, 0.5),
        percentile_us(to_stdin, 0.99)
    );
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "CLI stdout line -> event",
        percentile_us(to_event, 0.5),
        percentile_us(to_event, 0.99)
    );
    println!(
        "resident memory per idle session (driver only, {} sessions): {per_session:.0} KiB",
        args.idle_sessions
    );
    println!(
        "goals: p99 each way <= 1 ms: {}; <= 2 MiB per session: {}",
        crate::mcp::verdict(
            percentile_us(to_stdin, 0.99) <= 1000.0 && percentile_us(to_event, 0.99) <= 1000.0
        ),
        crate::mcp::verdict(per_session <= 2048.0)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fake_clis_stamps() {
        assert_eq!(parse_stamps("12 34"), Some((12, 34)));
        assert_eq!(parse_stamps("12"), None);
        assert_eq!(parse_stamps("a b"), None);
    }

    #[test]
    fn percentiles_of_nothing_are_zero() {
        assert_eq!(percentile_us(&[], 0.5), 0.0);
        assert_eq!(percentile_us(&[1000, 2000, 3000], 0.5), 2.0);
    }
}
