//! Driver overhead benchmark (not a test): how long the driver takes from `send()` to the bytes
//! on the CLI's stdin, and from a stdout line to the event reaching the consumer, p50 and p99;
//! and resident memory per idle session, excluding the CLI.
//!
//! The "CLI" is this same program started with `--fake-agent`: it speaks just enough Claude
//! stream-json to answer each user line at once, stamping CLOCK_MONOTONIC when the line arrived
//! and when its answer was written, so the driver's own share can be separated from the
//! runtime's.
//!
//! Run: `cargo run --release -p paddock-agents --example driver_bench`

use std::io::{BufRead, Write};
use std::time::Duration;

use paddock_agents::{
    AgentConfig, AgentDriverSdk, AgentEvent, BackendId, BrokerCredentials, Command, HostConfig,
    Launch, ModelApi, OpenRequest, StopRequest,
};

fn now_ns() -> u64 {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64
}

fn fake_agent() {
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

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)] as f64 / 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    if std::env::args().any(|arg| arg == "--fake-agent") {
        fake_agent();
        return Ok(());
    }
    let exe = std::env::current_exe()?;
    let dir = tempfile::tempdir()?;
    let wrapper = dir.path().join("claude");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec '{}' --fake-agent\n", exe.display()),
    )?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    }
    // Launches need a credential broker; the fake CLI never calls the upstream it points at.
    let broker =
        paddock_credentials::CredentialBroker::start(paddock_credentials::CredentialBrokerConfig {
            upstreams: vec![paddock_credentials::UpstreamConfig {
                name: "anthropic".into(),
                url: "http://127.0.0.1:9".into(),
                credential: paddock_secrets::SecretString::new("sk-bench-unused"),
                header: "x-api-key".into(),
                scheme: None,
            }],
            ..Default::default()
        })
        .await?;
    let sdk = AgentDriverSdk::new(
        HostConfig::new(dir.path().join("state"))
            .with_program("claude", &wrapper)
            .with_credentials(std::sync::Arc::new(BrokerCredentials::single(
                std::sync::Arc::new(broker),
                ModelApi::AnthropicMessages,
            ))),
    );
    let open = |id: String| {
        let sdk = sdk.clone();
        let cwd = dir.path().to_path_buf();
        async move {
            sdk.open(OpenRequest {
                backend: BackendId::Claude,
                launch: Launch {
                    working_directory: cwd,
                    instructions: None,
                    launch_id: id,
                },
                config: AgentConfig::default(),
                env: Vec::new(),
            })
            .await
        }
    };

    // Latency: 2000 commands through one session.
    let session = open("bench-latency".into()).await?;
    let mut events = session
        .events()
        .ok_or_else(|| anyhow::anyhow!("no events"))?;
    let (mut to_stdin, mut to_event) = (Vec::new(), Vec::new());
    const COMMANDS: usize = 2000;
    for index in 0..COMMANDS {
        let command = Command::user(format!("c{index}"), "ping");
        let sent = now_ns();
        if index == 0 {
            session.start(command).await;
        } else {
            session.send(command).await;
        }
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
                .await?
                .ok_or_else(|| anyhow::anyhow!("stream ended"))?;
            match event {
                AgentEvent::AssistantTextDelta { text } => {
                    let arrived = now_ns();
                    let mut parts = text.split(' ').map(|part| part.parse::<u64>().unwrap_or(0));
                    let (received, emitted) =
                        (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
                    if index >= 100 {
                        to_stdin.push(received.saturating_sub(sent));
                        to_event.push(arrived.saturating_sub(emitted));
                    }
                }
                AgentEvent::TurnCompleted { .. } => break,
                _ => {}
            }
        }
    }
    session
        .stop(StopRequest {
            reason: "bench".into(),
            force_after: Duration::from_secs(5),
        })
        .await;
    to_stdin.sort_unstable();
    to_event.sort_unstable();

    // Memory: RSS of this process with 50 idle sessions open, per session.
    let before = rss_kib();
    let mut sessions = Vec::new();
    for index in 0..50 {
        sessions.push(open(format!("bench-memory-{index}")).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    for session in &sessions {
        session
            .stop(StopRequest {
                reason: "bench".into(),
                force_after: Duration::from_secs(5),
            })
            .await;
    }

    println!(
        "driver overhead over {} commands (after 100 warm-up), microseconds:",
        to_stdin.len()
    );
    println!("{:<28} {:>10} {:>10}", "path", "p50 µs", "p99 µs");
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "send() -> CLI stdin",
        percentile(&to_stdin, 0.5),
        percentile(&to_stdin, 0.99)
    );
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "CLI stdout line -> event",
        percentile(&to_event, 0.5),
        percentile(&to_event, 0.99)
    );
    let per_session = (after.saturating_sub(before)) as f64 / 50.0;
    println!("resident memory per idle session (driver only, 50 sessions): {per_session:.0} KiB");
    println!(
        "goals: p99 each way <= 1 ms: {}; <= 2 MiB per session: {}",
        if percentile(&to_stdin, 0.99) <= 1000.0 && percentile(&to_event, 0.99) <= 1000.0 {
            "met"
        } else {
            "missed"
        },
        if per_session <= 2048.0 {
            "met"
        } else {
            "missed"
        }
    );
    Ok(())
}
