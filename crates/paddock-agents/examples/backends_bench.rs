//! What each runtime costs behind the contract (not a test): for every backend whose CLI is in
//! `tests/agents/node_modules/.bin` (installed by `scripts/setup --dev`), against the scripted
//! model server through the credential proxy, the median over a few sessions of
//!
//! - open → `session_started` (the CLI up and its vendor session known),
//! - `start` → the first text delta and → `turn_completed` (a five-word answer),
//! - a second turn in the same session (`send` → `turn_completed`, the warm path),
//! - the resident memory of the runtime's whole process group while idle.
//!
//! Run: `cargo run --release -p paddock-agents --example backends_bench [-- --runs 3]`

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_agents::{
    AgentConfig, AgentDriverSdk, AgentEvent, BackendId, BrokerCredentials, Command, HostConfig,
    Launch, Model, ModelApi, OpenRequest, Session, StopRequest, adapters,
};
use paddock_testkit::model::{ScriptedModel, Turn};
use tokio::sync::mpsc::UnboundedReceiver;

/// A backend as the bench drives it: the CLI, its API and the model name to ask for.
struct Runtime {
    backend: BackendId,
    label: &'static str,
    bin: &'static str,
    api: ModelApi,
    /// The ACP lane runs Zed's Claude Code agent.
    acp: bool,
}

const RUNTIMES: &[Runtime] = &[
    Runtime {
        backend: BackendId::Claude,
        label: "claude",
        bin: "claude",
        api: ModelApi::AnthropicMessages,
        acp: false,
    },
    Runtime {
        backend: BackendId::Codex,
        label: "codex",
        bin: "codex",
        api: ModelApi::OpenAiResponses,
        acp: false,
    },
    Runtime {
        backend: BackendId::OpenCode,
        label: "opencode",
        bin: "opencode",
        api: ModelApi::OpenAiChat,
        acp: false,
    },
    Runtime {
        backend: BackendId::Pi,
        label: "pi",
        bin: "pi",
        api: ModelApi::AnthropicMessages,
        acp: false,
    },
    Runtime {
        backend: BackendId::Claude,
        label: "acp (claude-code-acp)",
        bin: "claude-code-acp",
        api: ModelApi::AnthropicMessages,
        acp: true,
    },
];

#[derive(Default)]
struct Sample {
    open: Duration,
    first_delta: Duration,
    turn: Duration,
    warm_turn: Duration,
    rss_kib: u64,
}

/// The summed resident memory of every process in the group `pid` leads.
fn group_rss_kib(pid: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|candidate| {
            let stat = std::fs::read_to_string(format!("/proc/{candidate}/stat")).ok()?;
            // Fields after the command name: state, ppid, pgrp, …
            let rest = stat.rsplit_once(')')?.1;
            let pgrp: u32 = rest.split_whitespace().nth(2)?.parse().ok()?;
            (pgrp == pid).then_some(candidate)
        })
        .filter_map(|member| {
            let status = std::fs::read_to_string(format!("/proc/{member}/status")).ok()?;
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

async fn until(
    events: &mut UnboundedReceiver<AgentEvent>,
    mut done: impl FnMut(&AgentEvent) -> bool,
) -> anyhow::Result<()> {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(120), events.recv())
            .await?
            .ok_or_else(|| anyhow::anyhow!("the event stream ended"))?;
        if let AgentEvent::TurnCompleted { outcome, .. } = &event
            && *outcome != paddock_agents::TurnOutcome::Completed
        {
            anyhow::bail!("the turn ended {outcome:?}");
        }
        if done(&event) {
            return Ok(());
        }
    }
}

async fn one_session(runtime: &Runtime, program: &PathBuf, run: usize) -> anyhow::Result<Sample> {
    let model = ScriptedModel::start(vec![
        Turn::streamed("one two three four five"),
        Turn::streamed("six seven eight nine ten"),
    ])?;
    let (name, header, scheme) = runtime.api.upstream_auth();
    let broker =
        paddock_credentials::CredentialBroker::start(paddock_credentials::CredentialBrokerConfig {
            upstreams: vec![paddock_credentials::UpstreamConfig {
                name: name.into(),
                url: model.base_url(),
                credential: paddock_secrets::SecretString::new("sk-bench"),
                header: header.into(),
                scheme: scheme.map(str::to_owned),
            }],
            ..Default::default()
        })
        .await?;
    let dir = tempfile::tempdir()?;
    let host = HostConfig::new(dir.path().join("state"))
        .with_program(runtime.backend.as_str(), program)
        .with_credentials(Arc::new(BrokerCredentials::single(
            Arc::new(broker),
            runtime.api,
        )));
    let sdk = AgentDriverSdk::new(host);
    let request = OpenRequest {
        backend: runtime.backend,
        launch: Launch {
            working_directory: dir.path().to_path_buf(),
            instructions: None,
            launch_id: format!("bench-{run}"),
        },
        config: AgentConfig {
            // Codex's and OpenCode's own defaults are models the scripted server does not know.
            model: Model::Named("scripted-model".into()),
            ..AgentConfig::default()
        },
        env: Vec::new(),
    };
    let opened = Instant::now();
    let session: Session = if runtime.acp {
        let adapter = adapters::acp::AcpAdapter::new(
            adapters::acp::AcpProfile::claude_code_acp(),
            sdk.host(),
        )
        .with_program(program);
        sdk.open_with(Arc::new(adapter), request).await?
    } else {
        sdk.open(request).await?
    };
    let mut events = session
        .events()
        .ok_or_else(|| anyhow::anyhow!("no events"))?;
    let mut sample = Sample::default();
    let started = Instant::now();
    session.start(Command::user("c1", "count to five")).await;
    let mut first = None;
    let mut session_started = None;
    until(&mut events, |event| {
        match event {
            AgentEvent::SessionStarted { .. } => {
                session_started.get_or_insert_with(Instant::now);
            }
            AgentEvent::AssistantTextDelta { .. } => {
                first.get_or_insert_with(Instant::now);
            }
            _ => {}
        }
        matches!(event, AgentEvent::TurnCompleted { .. })
    })
    .await?;
    let done = Instant::now();
    sample.open = session_started.unwrap_or(done).duration_since(opened);
    sample.first_delta = first.unwrap_or(done).duration_since(started);
    sample.turn = done.duration_since(started);
    tokio::time::sleep(Duration::from_millis(500)).await;
    if let Some(pid) = session.snapshot().await.pid {
        sample.rss_kib = group_rss_kib(pid);
    }
    let warm = Instant::now();
    session.send(Command::user("c2", "count on")).await;
    until(&mut events, |event| {
        matches!(event, AgentEvent::TurnCompleted { .. })
    })
    .await?;
    sample.warm_turn = warm.elapsed();
    session
        .stop(StopRequest {
            reason: "bench".into(),
            force_after: Duration::from_secs(10),
        })
        .await;
    Ok(sample)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::args()
        .skip_while(|arg| arg != "--runs")
        .nth(1)
        .and_then(|value| value.parse().ok())
        .unwrap_or(3);
    let bin =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules/.bin");
    println!("median of {runs} sessions per runtime, scripted model through the credential proxy");
    println!(
        "{:<22} {:>12} {:>14} {:>10} {:>11} {:>12}",
        "runtime", "open ms", "1st delta ms", "turn ms", "warm ms", "idle RSS MiB"
    );
    for runtime in RUNTIMES {
        let program = bin.join(runtime.bin);
        if !program.exists() {
            println!(
                "{:<22} not installed ({})",
                runtime.label,
                program.display()
            );
            continue;
        }
        let mut samples = Vec::new();
        for run in 0..runs {
            match one_session(runtime, &program, run).await {
                Ok(sample) => samples.push(sample),
                Err(error) => println!("{:<22} run {run} failed: {error}", runtime.label),
            }
        }
        if samples.is_empty() {
            continue;
        }
        let ms = |pick: fn(&Sample) -> Duration| {
            median(
                samples
                    .iter()
                    .map(|s| pick(s).as_secs_f64() * 1000.0)
                    .collect(),
            )
        };
        println!(
            "{:<22} {:>12.0} {:>14.0} {:>10.0} {:>11.0} {:>12.0}",
            runtime.label,
            ms(|s| s.open),
            ms(|s| s.first_delta),
            ms(|s| s.turn),
            ms(|s| s.warm_turn),
            median(samples.iter().map(|s| s.rss_kib as f64 / 1024.0).collect()),
        );
    }
    Ok(())
}
