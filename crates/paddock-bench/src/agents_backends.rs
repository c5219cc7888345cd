//! `paddock-bench agents-backends`: what each runtime costs behind the session contract. For
//! every backend whose CLI is in `tests/agents/node_modules/.bin` (installed by
//! `scripts/setup --dev`), against the scripted model server through the credential proxy, the
//! median over a few sessions of
//!
//! - open → `session_started` (the CLI up and its vendor session known),
//! - `start` → the first text delta and → `turn_completed` (a five-word answer),
//! - a second turn in the same session (`send` → `turn_completed`, the warm path),
//! - the resident memory of the runtime's whole process group while idle.
//!
//! Every turn's text must be the scripted answer, so a runtime that answers with an error or
//! nothing fails the run instead of looking fast.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_agents::{
    AgentConfig, AgentDriverSdk, AgentEvent, BrokerCredentials, Command, HostConfig, Launch, Model,
    OpenRequest, Session, StopRequest, adapters,
};
use paddock_agents::{BackendId, ModelApi};
use paddock_testkit::model::{ScriptedModel, Turn};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::smoke::{self, Mode};

/// The scripted answers of the first and the second turn.
const FIRST_ANSWER: &str = "one two three four five";
const SECOND_ANSWER: &str = "six seven eight nine ten";
/// How long a real CLI may take to produce one event.
const EVENT_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BackendsArgs {
    /// Sessions per runtime; the medians are over these.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Only these runtimes (claude, codex, opencode, pi, acp); repeatable. With `--smoke`,
    /// a runtime named here must be installed.
    #[arg(long = "runtime", value_name = "NAME")]
    runtimes: Vec<String>,
    /// Where the CLIs are (default: `tests/agents/node_modules/.bin` of this checkout).
    #[arg(long)]
    agents_dir: Option<PathBuf>,
}

/// A backend as the bench drives it: the CLI, its API and the model name to ask for.
#[derive(Debug)]
struct Runtime {
    backend: BackendId,
    /// What `--runtime` calls it.
    name: &'static str,
    label: &'static str,
    bin: &'static str,
    api: ModelApi,
    /// The ACP lane runs Zed's Claude Code agent.
    acp: bool,
}

const RUNTIMES: &[Runtime] = &[
    Runtime {
        backend: BackendId::Claude,
        name: "claude",
        label: "claude",
        bin: "claude",
        api: ModelApi::AnthropicMessages,
        acp: false,
    },
    Runtime {
        backend: BackendId::Codex,
        name: "codex",
        label: "codex",
        bin: "codex",
        api: ModelApi::OpenAiResponses,
        acp: false,
    },
    Runtime {
        backend: BackendId::OpenCode,
        name: "opencode",
        label: "opencode",
        bin: "opencode",
        api: ModelApi::OpenAiChat,
        acp: false,
    },
    Runtime {
        backend: BackendId::Pi,
        name: "pi",
        label: "pi",
        bin: "pi",
        api: ModelApi::AnthropicMessages,
        acp: false,
    },
    Runtime {
        backend: BackendId::Claude,
        name: "acp",
        label: "acp (claude-code-acp)",
        bin: "claude-code-acp",
        api: ModelApi::AnthropicMessages,
        acp: true,
    },
];

#[derive(Debug, Default)]
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

/// What a turn said: its text deltas joined, and its completed messages.
#[derive(Debug, Default)]
struct TurnText {
    deltas: String,
    messages: Vec<String>,
}

impl TurnText {
    /// Whether the turn said `expected`, streamed or as a whole message.
    fn says(&self, expected: &str) -> bool {
        self.deltas.contains(expected) || self.messages.iter().any(|text| text.contains(expected))
    }
}

/// Waits for the turn to complete, calling `seen` on every event before it, and returns what
/// the turn said. A turn that ends other than completed is an error.
async fn turn_text(
    events: &mut UnboundedReceiver<AgentEvent>,
    mut seen: impl FnMut(&AgentEvent),
) -> anyhow::Result<TurnText> {
    let mut text = TurnText::default();
    loop {
        let event = tokio::time::timeout(EVENT_TIMEOUT, events.recv())
            .await
            .with_context(|| format!("no event within {EVENT_TIMEOUT:?}"))?
            .context("the event stream ended")?;
        seen(&event);
        match &event {
            AgentEvent::AssistantTextDelta { text: delta } => text.deltas.push_str(delta),
            AgentEvent::AssistantMessageCompleted { text: message } => {
                text.messages.push(message.clone());
            }
            AgentEvent::TurnCompleted { outcome, .. } => {
                if *outcome != paddock_agents::TurnOutcome::Completed {
                    bail!("the turn ended {outcome:?}");
                }
                return Ok(text);
            }
            _ => {}
        }
    }
}

fn check_answer(turn: &str, text: &TurnText, expected: &str) -> anyhow::Result<()> {
    if !text.says(expected) {
        bail!(
            "the {turn} turn did not say the scripted `{expected}`: deltas `{}`, messages {:?}",
            text.deltas,
            text.messages
        );
    }
    Ok(())
}

async fn one_session(runtime: &Runtime, program: &Path, run: u32) -> anyhow::Result<Sample> {
    let model = ScriptedModel::start(vec![
        Turn::streamed(FIRST_ANSWER),
        Turn::streamed(SECOND_ANSWER),
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
        // The host found above registers the program under the profile's backend name.
        let adapter = adapters::acp::AcpAdapter::new(adapters::acp::AcpProfile::claude_code_acp());
        sdk.open_with(Arc::new(adapter), request).await?
    } else {
        sdk.open(request).await?
    };
    let sample = two_turns(&session, opened).await;
    session
        .stop(StopRequest {
            reason: "bench".into(),
            force_after: STOP_GRACE,
        })
        .await;
    sample
}

async fn two_turns(session: &Session, opened: Instant) -> anyhow::Result<Sample> {
    let mut events = session
        .events()
        .context("the session has no event stream")?;
    let mut sample = Sample::default();
    let started = Instant::now();
    session.start(Command::user("c1", "count to five")).await;
    let mut first = None;
    let mut session_started = None;
    let text = turn_text(&mut events, |event| match event {
        AgentEvent::SessionStarted { .. } => {
            session_started.get_or_insert_with(Instant::now);
        }
        AgentEvent::AssistantTextDelta { .. } => {
            first.get_or_insert_with(Instant::now);
        }
        _ => {}
    })
    .await
    .context("the first turn")?;
    let done = Instant::now();
    check_answer("first", &text, FIRST_ANSWER)?;
    sample.open = session_started.unwrap_or(done).duration_since(opened);
    sample.first_delta = first.unwrap_or(done).duration_since(started);
    sample.turn = done.duration_since(started);
    // The memory of a session at rest, not of one still writing its first answer's files.
    tokio::time::sleep(Duration::from_millis(500)).await;
    if let Some(pid) = session.snapshot().await.pid {
        sample.rss_kib = group_rss_kib(pid);
    }
    let warm = Instant::now();
    session.send(Command::user("c2", "count on")).await;
    let text = turn_text(&mut events, |_| {})
        .await
        .context("the second turn")?;
    sample.warm_turn = warm.elapsed();
    check_answer("second", &text, SECOND_ANSWER)?;
    Ok(sample)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The runtimes `--runtime` names, or all of them.
fn chosen(names: &[String]) -> anyhow::Result<Vec<&'static Runtime>> {
    if names.is_empty() {
        return Ok(RUNTIMES.iter().collect());
    }
    names
        .iter()
        .map(|name| {
            RUNTIMES
                .iter()
                .find(|runtime| runtime.name == name)
                .with_context(|| {
                    format!(
                        "no runtime `{name}`; the runtimes are {}",
                        RUNTIMES
                            .iter()
                            .map(|runtime| runtime.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
        })
        .collect()
}

pub(crate) async fn run(args: BackendsArgs, mode: Mode) -> anyhow::Result<()> {
    let bin = args
        .agents_dir
        .clone()
        .unwrap_or_else(crate::node_package::default_agents_dir);
    let runtimes = chosen(&args.runtimes)?;
    if mode.is_smoke() {
        return smoke(&bin, &runtimes, !args.runtimes.is_empty()).await;
    }
    let runs = args.runs;
    println!("median of {runs} sessions per runtime, scripted model through the credential proxy");
    println!(
        "{:<22} {:>12} {:>14} {:>10} {:>11} {:>12}",
        "runtime", "open ms", "1st delta ms", "turn ms", "warm ms", "idle RSS MiB"
    );
    let mut failures = 0;
    for runtime in runtimes {
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
                Err(error) => {
                    failures += 1;
                    println!("{:<22} run {run} failed: {error:#}", runtime.label);
                }
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
    if failures > 0 {
        bail!("{failures} sessions failed; see above");
    }
    Ok(())
}

/// One session of each runtime (each named one, which must be installed; else each installed
/// one, at least one): both turns must answer the scripted text.
async fn smoke(bin: &Path, runtimes: &[&Runtime], named: bool) -> anyhow::Result<()> {
    let mut checked = Vec::new();
    for runtime in runtimes {
        let program = bin.join(runtime.bin);
        if !program.exists() {
            if named {
                bail!(
                    "`{}` is not installed at `{}`\nhint: scripts/setup --dev installs the agent CLIs",
                    runtime.name,
                    program.display()
                );
            }
            continue;
        }
        one_session(runtime, &program, 0)
            .await
            .with_context(|| format!("runtime `{}`", runtime.name))?;
        checked.push(runtime.name);
    }
    if checked.is_empty() {
        bail!(
            "no agent CLI is installed in `{}`\nhint: scripts/setup --dev installs them",
            bin.display()
        );
    }
    smoke::passed(
        "agents-backends",
        &format!(
            "{} answered `{FIRST_ANSWER}` then `{SECOND_ANSWER}` through the credential proxy",
            checked.join(", ")
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_are_chosen_by_name() {
        assert_eq!(chosen(&[]).unwrap().len(), RUNTIMES.len());
        let acp = chosen(&["acp".to_owned()]).unwrap();
        assert!(acp.len() == 1 && acp[0].acp);
        let error = chosen(&["cursor".to_owned()]).unwrap_err().to_string();
        assert!(
            error.contains("`cursor`") && error.contains("claude, codex"),
            "{error}"
        );
    }

    #[test]
    fn answers_must_be_the_scripted_text() {
        let streamed = TurnText {
            deltas: "one two three four five".to_owned(),
            messages: Vec::new(),
        };
        check_answer("first", &streamed, FIRST_ANSWER).unwrap();
        let whole = TurnText {
            deltas: String::new(),
            messages: vec!["one two three four five\n".to_owned()],
        };
        check_answer("first", &whole, FIRST_ANSWER).unwrap();
        assert!(check_answer("first", &TurnText::default(), FIRST_ANSWER).is_err());
    }
}
