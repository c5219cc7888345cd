//! `paddock-bench tasks`: what the daemon's tasks cost, in two measurements.
//!
//! - **runTask → the first model request**, against the same Claude Code CLI started directly
//!   with the same configuration (the daemon's Claude flags, `claude -p --input-format
//!   stream-json --output-format stream-json …`, the goal as the one line on stdin, and the
//!   task's `paddock mcp` server and tool flags, as a user who added Paddock to Claude Code
//!   would run it) against the same scripted model server: from sending `runTask` (MCP
//!   over HTTP, a warm web device waiting) until the model server has read the agent's first
//!   scripted request, against from spawning the CLI until the same moment. Goal: Paddock adds
//!   at most 50 ms at the median. Every round ends its task: the scripted model answers a final
//!   text, the task completes and its device goes back. A third side, the CLI with no MCP
//!   server at all, shows what starting one costs Claude Code.
//! - **a 20-step `executePlan`** against the same 20 `inputText` calls as separate `tools/call`
//!   requests on the same device session. Goal: an overhead (plan time / calls time - 1) of at
//!   most 0.5x; with no HTTP request per step the plan should be the faster.
//!
//! Each side's answer is checked: the task's first request carries its goal and the task
//! completes with the scripted text, the direct CLI prints it, the plan reports every step ok
//! and every separate call succeeds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_agents::adapters::claude::{Claude, ClaudeProtocol};
use paddock_agents::adapters::{Adapter as _, Protocol as _};
use paddock_agents::{AgentConfig, BackendId, Command, McpServer, OpenRequest, ToolAccess};
use paddock_process::ChildSpec;
use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::model::{Recorded, ScriptedModel, Turn};
use serde_json::{Value, json};

use crate::daemon::{PrivateDaemon, paddock_binary};
use crate::devices::{Latency, paddock_client};
use crate::mcp::verdict;
use crate::mcp_client::McpClient;
use crate::pool::{check_bound, wait_for_warm_pool};
use crate::smoke::{self, Mode};

/// Warm web devices the daemon keeps: one, so each task takes the warm one.
const WEB_WARM: usize = 1;
/// The key the daemon's Claude upstream holds, and the direct CLI sends.
const API_KEY: &str = "sk-ant-bench-tasks-key";
/// What the scripted model answers every agent's first request with; it ends the turn, so the
/// task completes (and the direct CLI exits).
const FINAL_ANSWER: &str = "Done: the bench task is over.";
/// How long an agent may take to send its first request, and a task to end after it.
const AGENT_TIMEOUT: Duration = Duration::from_secs(120);
/// Session of the plan measurement's device.
const PLAN_SESSION: &str = "bench-plan";
/// The field each step types into, on the fixture's sign-in page.
const PLAN_FIELD: &str = "Email";
/// What the direct CLI's environment takes from this process (node must be on its PATH).
const INHERITED_ENV: [&str; 3] = ["PATH", "LANG", "TZ"];

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TasksArgs {
    /// Timed rounds of each measurement; each round measures every side, rotating which goes
    /// first.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Untimed warm-up rounds before each measurement (the first CLI launch reads a cold disk).
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// Steps of the plan, and separate calls on the other side.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    steps: u32,
    /// The paddock binary (default: beside this one).
    #[arg(long)]
    paddock: Option<PathBuf>,
    /// Where the agent CLIs are (default: `tests/agents/node_modules/.bin` of this checkout).
    #[arg(long)]
    agents_dir: Option<PathBuf>,
}

/// Both measurements' samples.
#[derive(Debug, Default)]
struct Samples {
    hosted: Latency,
    direct: Latency,
    direct_bare: Latency,
    plan: Latency,
    calls: Latency,
}

/// The sides of the first-request measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launch {
    /// `runTask` on the daemon.
    Hosted,
    /// The CLI spawned directly with the task's configuration: `paddock mcp` as its one MCP
    /// server, only that server's tools.
    Direct,
    /// The CLI spawned directly with no MCP server.
    DirectBare,
}

impl Launch {
    const ALL: [Self; 3] = [Self::Hosted, Self::Direct, Self::DirectBare];

    fn name(self) -> &'static str {
        match self {
            Self::Hosted => "runTask",
            Self::Direct => "the direct CLI",
            Self::DirectBare => "the direct CLI without an MCP server",
        }
    }
}

/// What the runs share: the model server, the fixture app, the daemon and a client for it.
struct Bench {
    model: ScriptedModel,
    fixture: FixtureApp,
    claude: PathBuf,
    paddock: PathBuf,
    /// Start every side on a quiet machine (not in a smoke run, which shares the machine with
    /// the test suite and times nothing).
    wait_quiet: bool,
    /// Per-launch homes of the direct CLI.
    work: tempfile::TempDir,
    client: McpClient,
    /// Dropped last: stopping it ends whatever task a failed round left.
    daemon: PrivateDaemon,
}

pub(crate) async fn run(args: TasksArgs, mode: Mode) -> anyhow::Result<()> {
    let paddock = paddock_binary(args.paddock.clone())?;
    let agents_dir = args
        .agents_dir
        .clone()
        .unwrap_or_else(crate::node_package::default_agents_dir);
    let mut bench = Bench::start(&paddock, &agents_dir, !mode.is_smoke())?;
    let (rounds, warmup) = if mode.is_smoke() {
        (1, 0)
    } else {
        (args.rounds, args.warmup)
    };

    progress(&format!(
        "runTask and the direct CLI to their first model request: {rounds} rounds + {warmup} warm-up"
    ));
    let mut samples = Samples::default();
    for round in 0..warmup + rounds {
        let timed = round >= warmup;
        // Rotating which side goes first spreads drift over all of them.
        let mut order = Launch::ALL;
        order.rotate_left(round as usize % Launch::ALL.len());
        for launch in order {
            let elapsed = match launch {
                Launch::Hosted => bench.hosted_first_request(round),
                Launch::Direct | Launch::DirectBare => {
                    bench.direct_first_request(round, launch).await
                }
            }
            .with_context(|| format!("{}, round {round}", launch.name()))?;
            if timed {
                match launch {
                    Launch::Hosted => samples.hosted.push(elapsed),
                    Launch::Direct => samples.direct.push(elapsed),
                    Launch::DirectBare => samples.direct_bare.push(elapsed),
                }
            }
        }
    }

    progress(&format!(
        "executePlan of {} steps and as many tools/call: {rounds} rounds + {warmup} warm-up",
        args.steps
    ));
    bench.open_plan_device()?;
    for round in 0..warmup + rounds {
        let timed = round >= warmup;
        for plan in [round % 2 == 0, round % 2 != 0] {
            if plan {
                let elapsed = bench
                    .plan_run(args.steps)
                    .with_context(|| format!("executePlan, round {round}"))?;
                if timed {
                    samples.plan.push(elapsed);
                }
            } else {
                let elapsed = bench
                    .separate_calls(args.steps)
                    .with_context(|| format!("the separate calls, round {round}"))?;
                if timed {
                    samples.calls.push(elapsed);
                }
            }
        }
    }
    bench
        .client
        .call_tool("releaseDevice", &json!({}), Some(PLAN_SESSION))?;

    if mode.is_smoke() {
        smoke::passed(
            "tasks",
            &format!(
                "runTask's agent reached the model with its goal and the task completed with the scripted answer, the CLI started directly reached it too and printed the answer (with the task's MCP server and without one), executePlan ran {} steps ok and as many separate inputText calls succeeded",
                args.steps
            ),
        );
        return Ok(());
    }
    report(&args, &agents_dir, &bench, &samples, rounds, warmup);
    Ok(())
}

fn report(
    args: &TasksArgs,
    agents_dir: &Path,
    bench: &Bench,
    samples: &Samples,
    rounds: u32,
    warmup: u32,
) {
    let claude_version = agents_dir.parent().and_then(Path::parent).map_or_else(
        || "(unknown version)".to_owned(),
        |dir| crate::node_package::installed_version(dir, "@anthropic-ai/claude-code"),
    );
    println!(
        "tasks: Paddock's tasks, same run; Claude Code {claude_version} against the scripted model at {}, daemon with --web-warm {WEB_WARM} (Chromium)",
        bench.model.base_url()
    );
    println!(
        "{rounds} rounds after {warmup} warm-up, sides rotating; both the hosted and the direct agent start `paddock mcp` (the direct one as the owner, the hosted one with its voucher) and offer only its tools; the hosted one reaches the model through the daemon's credential proxy; the pool's refill waits for the task's agent to reach the model; every side starts once the pool is settled and the CPUs are quiet (<= 10% busy for 0.5 s)"
    );
    println!();
    println!(
        "{:<48} {:>10} {:>10} {:>5}",
        "measurement", "p50 ms", "p90 ms", "n"
    );
    let row = |name: &str, latency: &Latency| {
        println!(
            "{name:<48} {:>10.1} {:>10.1} {:>5}",
            latency.p50(),
            latency.p90(),
            latency.len()
        );
    };
    row("runTask → first model request", &samples.hosted);
    row("claude started directly → first request", &samples.direct);
    row("  the same without an MCP server", &samples.direct_bare);
    row(
        &format!("executePlan ({} × inputText)", args.steps),
        &samples.plan,
    );
    row(
        &format!("{} × tools/call inputText", args.steps),
        &samples.calls,
    );
    println!();
    let added = samples.hosted.p50() - samples.direct.p50();
    let added_p90 = samples.hosted.p90() - samples.direct.p90();
    let ratio = samples.hosted.p50() / samples.direct.p50().max(f64::MIN_POSITIVE);
    println!(
        "runTask added over the direct CLI p50:     {added:>8.1} ms (ratio {ratio:.2}x; p90 {added_p90:.1} ms; goal <= 50 ms: {})",
        verdict(added <= 50.0)
    );
    let mcp_cost = samples.direct.p50() - samples.direct_bare.p50();
    println!(
        "  the MCP server's start, in the direct CLI:  {mcp_cost:>6.1} ms (p50, with it - without it)"
    );
    let overhead = samples.plan.p50() / samples.calls.p50().max(f64::MIN_POSITIVE) - 1.0;
    let overhead_p90 = samples.plan.p90() / samples.calls.p90().max(f64::MIN_POSITIVE) - 1.0;
    println!(
        "executePlan overhead over the calls p50:   {overhead:>+8.3}x (plan / calls - 1; p90 {overhead_p90:+.3}x; goal <= 0.5x: {})",
        verdict(overhead <= 0.5)
    );
}

impl Bench {
    fn start(paddock: &Path, agents_dir: &Path, wait_quiet: bool) -> anyhow::Result<Self> {
        let claude = agents_dir.join("claude");
        if !claude.exists() {
            bail!(
                "Claude Code is not installed at `{}`\nhint: scripts/setup --dev installs the agent CLIs",
                claude.display()
            );
        }
        let model = ScriptedModel::start(Vec::new())?;
        let fixture = FixtureApp::start()?;
        let path = format!(
            "{}:{}",
            agents_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // A runTask naming no upstream resolves Claude's from the daemon's environment.
        let daemon = PrivateDaemon::start_with_env(
            paddock,
            &["--web-warm", &WEB_WARM.to_string()],
            &[
                ("PATH", path),
                ("ANTHROPIC_BASE_URL", model.base_url()),
                ("ANTHROPIC_API_KEY", API_KEY.to_owned()),
            ],
            "",
        )?;
        let client = paddock_client(&daemon)?;
        Ok(Self {
            model,
            fixture,
            claude,
            // The direct CLI starts it from its own working directory.
            paddock: std::fs::canonicalize(paddock)
                .with_context(|| format!("`{}`", paddock.display()))?,
            wait_quiet,
            work: tempfile::tempdir()?,
            client,
            daemon,
        })
    }

    /// Waits for the warm pool to settle and, unless this is a smoke run, for quiet CPUs.
    fn settle(&mut self) -> anyhow::Result<()> {
        wait_for_warm_pool(&mut self.client, WEB_WARM)?;
        if self.wait_quiet {
            wait_for_quiet_cpu()?;
        }
        Ok(())
    }

    /// One task on a settled warm pool: from sending `runTask` to the model server having read
    /// its agent's first scripted request. The task then completes with the scripted answer.
    fn hosted_first_request(&mut self, round: u32) -> anyhow::Result<Duration> {
        self.settle()?;
        let goal = goal("hosted", round);
        let before = self.expect_first_request();
        let sent = Instant::now();
        let started = self
            .client
            .call_tool("runTask", &json!({ "goal": goal }), None)?;
        let task = started.structured()["taskId"]
            .as_str()
            .with_context(|| format!("runTask answered without a `taskId`: {}", started.result))?
            .to_owned();
        let request = match self.first_request_after(before, &goal) {
            Ok(request) => request,
            Err(error) => {
                // Not left running into the next round.
                let _ = self
                    .client
                    .call_tool("stopTask", &json!({ "taskId": task }), None);
                return Err(error.context(format!("task `{task}`")));
            }
        };
        let summary = self.wait_ended(&task)?;
        if summary["state"] != "completed" || summary["result"] != FINAL_ANSWER {
            bail!(
                "task `{task}` did not complete with the scripted answer `{FINAL_ANSWER}`: {summary}"
            );
        }
        Ok(request.received_at.saturating_duration_since(sent))
    }

    /// The same CLI spawned directly, with a fresh home as a hosted launch has, against the
    /// same model server; until the server has read its first scripted request. It then prints
    /// the scripted answer and exits. [`Launch::Direct`] has the task's MCP server and tool
    /// flags, [`Launch::DirectBare`] neither.
    async fn direct_first_request(
        &mut self,
        round: u32,
        launch: Launch,
    ) -> anyhow::Result<Duration> {
        // The previous task's device resets in the background; not during this launch.
        self.settle()?;
        let with_mcp = launch == Launch::Direct;
        let side = if with_mcp { "direct" } else { "bare" };
        let goal = goal(side, round);
        let spec = self.direct_spec(&format!("{side}-{round}"), with_mcp)?;
        let before = self.expect_first_request();
        let sent = Instant::now();
        let output = tokio::spawn(paddock_process::output_fed(
            spec,
            Some(user_message(&goal)),
            AGENT_TIMEOUT,
        ));
        let request = tokio::task::block_in_place(|| self.first_request_after(before, &goal));
        // On an error the CLI is still waited for (or killed at the deadline) before returning.
        let output = output.await.context("the CLI's runner")??;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let request = request.with_context(|| {
            format!(
                "`{}` exited {}; stdout:\n{stdout}\nstderr:\n{}",
                self.claude.display(),
                output.status,
                output.stderr
            )
        })?;
        if !output.status.success() || !stdout.contains(FINAL_ANSWER) {
            bail!(
                "`{}` exited {} without printing the scripted answer `{FINAL_ANSWER}`; stdout:\n{stdout}\nstderr:\n{}",
                self.claude.display(),
                output.status,
                output.stderr
            );
        }
        // Claude Code answers without an MCP server that failed to start; that side would
        // then measure the bare CLI.
        if with_mcp && mcp_status(&stdout, "paddock").as_deref() != Some("connected") {
            bail!(
                "`{}` did not connect its `paddock` MCP server; stdout:\n{stdout}",
                self.claude.display()
            );
        }
        Ok(request.received_at.saturating_duration_since(sent))
    }

    fn direct_spec(&self, name: &str, with_mcp: bool) -> anyhow::Result<ChildSpec> {
        let launch = self.work.path().join(name);
        let (home, tmp, cwd) = (launch.join("home"), launch.join("tmp"), launch.join("work"));
        for dir in [&home, &tmp, &cwd] {
            std::fs::create_dir_all(dir).with_context(|| format!("create `{}`", dir.display()))?;
        }
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = INHERITED_ENV
            .iter()
            .filter_map(|name| Some((name.into(), std::env::var_os(name)?)))
            .collect();
        // The daemon's Claude adapter plans this launch, as it does a task's: its flags and
        // environment defaults, and with `with_mcp` the task's MCP server (here the owner's
        // `paddock mcp` on its own session, not the voucher's) and tool access.
        let mcp_servers = if with_mcp {
            vec![McpServer {
                name: "paddock".to_owned(),
                command: self.paddock.clone(),
                args: vec!["mcp".into(), "--session-id".into(), format!("bench-{name}")],
                env: self
                    .daemon
                    .client_env()
                    .into_iter()
                    .map(|(name, value)| {
                        (
                            name.to_string_lossy().into_owned(),
                            value.to_string_lossy().into_owned(),
                        )
                    })
                    .collect(),
            }]
        } else {
            Vec::new()
        };
        let tools = if with_mcp {
            ToolAccess::McpOnly
        } else {
            ToolAccess::Default
        };
        let plan = Claude.launch(&OpenRequest {
            backend: BackendId::Claude,
            launch: paddock_agents::Launch {
                working_directory: cwd.clone(),
                instructions: None,
                launch_id: name.to_owned(),
            },
            config: AgentConfig {
                mcp_servers,
                tools,
                ..AgentConfig::default()
            },
            env: Vec::new(),
        });
        env.extend(
            [
                ("HOME", home.into_os_string()),
                ("TMPDIR", tmp.clone().into_os_string()),
                ("CLAUDE_CODE_TMPDIR", tmp.into_os_string()),
                ("ANTHROPIC_BASE_URL", self.model.base_url().into()),
                ("ANTHROPIC_API_KEY", API_KEY.into()),
            ]
            .into_iter()
            .map(|(name, value)| (name.into(), value))
            .chain(
                plan.env
                    .into_iter()
                    .map(|(name, value)| (name.into(), value.into())),
            ),
        );
        let args = plan.args;
        Ok(ChildSpec {
            program: self.claude.clone(),
            args,
            env,
            current_dir: Some(cwd),
            ..ChildSpec::default()
        })
    }

    /// Scripts the answer to the next agent's first request; returns how many scripted
    /// requests came before it.
    fn expect_first_request(&self) -> usize {
        let before = self.model.scripted_requests().len();
        self.model.push(Turn::text(FINAL_ANSWER));
        before
    }

    /// Waits for the scripted request after the first `before` ones, which must carry `goal`.
    fn first_request_after(&self, before: usize, goal: &str) -> anyhow::Result<Recorded> {
        self.model
            .wait_streams_started(before + 1, AGENT_TIMEOUT)
            .context("the agent never asked the model")?;
        let request = self
            .model
            .scripted_requests()
            .into_iter()
            .nth(before)
            .context("the model server lost the agent's request")?;
        if !request.last_user_text().contains(goal) {
            bail!(
                "the agent's first request does not carry its goal `{goal}`; its last user message: {}",
                request.last_user_text()
            );
        }
        Ok(request)
    }

    /// Polls `getTask` until the task has ended; its summary.
    fn wait_ended(&mut self, task: &str) -> anyhow::Result<Value> {
        let client = &mut self.client;
        paddock_testkit::wait_until(AGENT_TIMEOUT, || {
            let answer = client
                .call_tool("getTask", &json!({ "taskId": task }), None)
                .ok()?;
            let summary = answer.structured()["summary"].clone();
            matches!(
                summary["state"].as_str(),
                Some("completed" | "failed" | "stopped")
            )
            .then_some(summary)
        })
        .with_context(|| format!("task `{task}` did not end"))
    }

    /// The plan measurement's device, on the fixture's sign-in page.
    fn open_plan_device(&mut self) -> anyhow::Result<()> {
        wait_for_warm_pool(&mut self.client, WEB_WARM)?;
        let acquired = self
            .client
            .call_tool("getWeb", &json!({}), Some(PLAN_SESSION))?;
        check_bound(&acquired, PLAN_SESSION).context("getWeb")?;
        self.client.call_tool(
            "openLink",
            &json!({ "url": self.fixture.url("/login") }),
            Some(PLAN_SESSION),
        )?;
        Ok(())
    }

    /// One `executePlan` of `steps` steps; every step must be reported ok.
    fn plan_run(&mut self, steps: u32) -> anyhow::Result<Duration> {
        let plan = json!({
            "version": 1,
            "steps": (0..steps)
                .map(|step| json!({ "tool": "inputText", "arguments": step_arguments(step) }))
                .collect::<Vec<_>>(),
        });
        let answer =
            self.client
                .call_tool("executePlan", &json!({ "plan": plan }), Some(PLAN_SESSION))?;
        check_plan_run(answer.structured(), steps)?;
        Ok(answer.elapsed)
    }

    /// The same steps as separate `tools/call` requests, each of which must succeed.
    fn separate_calls(&mut self, steps: u32) -> anyhow::Result<Duration> {
        let started = Instant::now();
        for step in 0..steps {
            self.client
                .call_tool("inputText", &step_arguments(step), Some(PLAN_SESSION))
                .with_context(|| format!("call {}", step + 1))?;
        }
        Ok(started.elapsed())
    }
}

/// A goal naming its side and round, so each request is recognised as its launch's.
/// Waits until the machine is quiet: two consecutive quarter-second windows with the CPUs at
/// most 10% busy. Every side starts so, whatever the previous one left running in the
/// background (a refill's Chromium booting, a released one shutting down, a CLI exiting).
fn wait_for_quiet_cpu() -> anyhow::Result<()> {
    /// (busy, total) jiffies of all CPUs, from `/proc/stat`'s first line.
    fn jiffies() -> anyhow::Result<(u64, u64)> {
        let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
        let fields: Vec<u64> = stat
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("cpu "))
            .context("/proc/stat has no `cpu` line")?
            .split_whitespace()
            .filter_map(|field| field.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
        let total: u64 = fields.iter().take(8).sum();
        let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
        Ok((total.saturating_sub(idle), total))
    }
    const WINDOW: Duration = Duration::from_millis(250);
    const LIMIT: Duration = Duration::from_secs(60);
    let deadline = Instant::now() + LIMIT;
    let mut quiet_windows = 0;
    let mut last = jiffies()?;
    while quiet_windows < 2 {
        if Instant::now() >= deadline {
            bail!(
                "the machine stayed busy for {}s; run the benchmark on a quiet machine",
                LIMIT.as_secs()
            );
        }
        std::thread::sleep(WINDOW);
        let now = jiffies()?;
        let (busy, total) = (
            now.0.saturating_sub(last.0),
            now.1.saturating_sub(last.1).max(1),
        );
        quiet_windows = if busy * 10 <= total {
            quiet_windows + 1
        } else {
            0
        };
        last = now;
    }
    Ok(())
}

/// The status Claude Code's `system`/`init` line gives MCP server `name`.
fn mcp_status(stdout: &str, name: &str) -> Option<String> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|message| message["type"] == "system" && message["subtype"] == "init")?["mcp_servers"]
        .as_array()?
        .iter()
        .find(|server| server["name"] == name)?["status"]
        .as_str()
        .map(str::to_owned)
}

/// `goal` as the line Claude Code reads on stdin: the adapter's user message.
fn user_message(goal: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in ClaudeProtocol::default().user(&Command::user("bench", goal)) {
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    bytes
}

fn goal(side: &str, round: u32) -> String {
    format!("Bench task {side} {round}: say that the bench task is over")
}

fn step_arguments(step: u32) -> Value {
    json!({ "label": PLAN_FIELD, "text": format!("ada{step}@example.com") })
}

/// `executePlan`'s answer says ok, with `steps` steps, each ok.
fn check_plan_run(run: &Value, steps: u32) -> anyhow::Result<()> {
    let reported = run["steps"].as_array().map_or(0, Vec::len);
    let all_ok = run["steps"]
        .as_array()
        .is_some_and(|outcomes| outcomes.iter().all(|outcome| outcome["ok"] == true));
    if run["ok"] != true || reported != steps as usize || !all_ok {
        bail!("executePlan did not run {steps} steps ok: {run}");
    }
    Ok(())
}

fn progress(message: &str) {
    use std::io::IsTerminal as _;
    if std::io::stderr().is_terminal() {
        eprintln!("tasks: {message}…");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_run_must_report_every_step_ok() {
        let ok = |n: usize| json!({ "ok": true, "step": n, "tool": "inputText" });
        check_plan_run(&json!({ "ok": true, "steps": [ok(1), ok(2)] }), 2).unwrap();
        assert!(check_plan_run(&json!({ "ok": true, "steps": [ok(1)] }), 2).is_err());
        assert!(check_plan_run(&json!({ "ok": false, "steps": [ok(1), ok(2)] }), 2).is_err());
        let failed = json!({ "ok": true, "steps": [ok(1), { "ok": false, "step": 2 }] });
        assert!(check_plan_run(&failed, 2).is_err());
    }

    #[test]
    fn an_mcp_server_status_is_read_from_the_init_line() {
        let stdout = concat!(
            "{\"type\":\"system\",\"subtype\":\"init\",\"mcp_servers\":",
            "[{\"name\":\"paddock\",\"status\":\"failed\"}]}\n",
            "{\"type\":\"result\"}\n"
        );
        assert_eq!(mcp_status(stdout, "paddock").as_deref(), Some("failed"));
        assert_eq!(mcp_status(stdout, "other"), None);
        assert_eq!(mcp_status("{\"type\":\"result\"}", "paddock"), None);
    }

    #[test]
    fn goals_name_their_side_and_round() {
        assert_ne!(goal("hosted", 1), goal("direct", 1));
        assert_ne!(goal("direct", 1), goal("bare", 1));
        assert_ne!(goal("hosted", 1), goal("hosted", 2));
    }
}
