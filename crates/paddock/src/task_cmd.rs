//! `paddock task …`: the daemon's task tools (`runTask`, `listTasks`, `getTask`, `stopTask`,
//! `sendTaskMessage`, `getTaskMedia`) from the command line, over the MCP client. Each command
//! maps its flags to one tool's arguments and prints the answer; the work and the checks are
//! the tools'.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use paddock_tools::tasks::{TaskState, TaskSummary, TrajectoryStep};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::mcp_client::{McpClient, ToolAnswer, print_error};

/// How long one task tool call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How often `task run` asks for new steps while it follows a task.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(500);

/// The hint for a daemon that does not serve a task tool.
const NO_TASK_HOST_HINT: &str = "this daemon has no task host, so it serves no task tools; `paddock daemon status` shows which daemon answered";

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Hand a goal to a coding agent that works a device of its own (`runTask`): prints the
    /// task id, then follows its steps live (on stderr) until it ends and prints its result:
    /// exit 0 when it completed, 1 when it failed or was stopped. `--detach` returns at once.
    Run(RunArgs),
    /// The daemon's tasks, newest first (`listTasks`).
    Ls {
        /// Only tasks in this state: queued, running, completed, failed, stopped.
        #[arg(long)]
        state: Option<String>,
        /// Print the tool's JSON answer instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// A task's summary, or with `--trajectory` every recorded step (`getTask`).
    Show {
        /// The task id.
        id: String,
        /// Every recorded step instead of the summary (all pages).
        #[arg(long)]
        trajectory: bool,
        /// Print JSON: the summary, or `{taskId, state, steps}`.
        #[arg(long)]
        json: bool,
    },
    /// Stop a task; its device goes back to the pool (`stopTask`).
    Stop {
        /// The task id.
        id: String,
    },
    /// Send a message to a running task's agent (`sendTaskMessage`).
    Send {
        /// The task id.
        id: String,
        /// The message.
        text: String,
    },
    /// Write a task's screenshot (the image bytes) or, with `--ui-state`, its screen state
    /// (JSON) to a file (`getTaskMedia`).
    Media {
        /// The task id.
        id: String,
        /// The trajectory step (default: the latest).
        #[arg(long)]
        step: Option<u64>,
        /// The screen's elements as JSON instead of the screenshot.
        #[arg(long)]
        ui_state: bool,
        /// Where to write it; `-` is stdout.
        #[arg(long, short = 'o')]
        out: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What the agent is to do, in plain words.
    goal: String,
    /// The agent CLI: claude, codex, opencode, pi, cursor (default: the daemon's).
    #[arg(long)]
    backend: Option<String>,
    /// The model, as the backend names it.
    #[arg(long)]
    model: Option<String>,
    /// The device's platform: `web` (default) or `android`.
    #[arg(long, value_parser = ["web", "android"])]
    platform: Option<String>,
    /// The web device's emulation profile (`pixel7`, `iphone15`, `desktop`).
    #[arg(long)]
    profile: Option<String>,
    /// A configured app opened before the agent starts.
    #[arg(long)]
    app: Option<String>,
    /// A device of the pool by id (default: a web device).
    #[arg(long = "device", value_name = "ID")]
    device: Option<String>,
    /// Tool calls the agent may make before the task fails (default 50).
    #[arg(long)]
    max_steps: Option<u32>,
    /// Seconds before the task fails (default 900).
    #[arg(long)]
    timeout_secs: Option<u64>,
    /// Print the task id and return at once, without following the task.
    #[arg(long)]
    detach: bool,
}

impl RunArgs {
    /// `runTask`'s arguments: the goal and each flag that was given.
    fn tool_arguments(&self) -> Value {
        let mut arguments = Map::new();
        arguments.insert("goal".into(), json!(self.goal));
        let optional = [
            ("backend", self.backend.as_ref().map(|text| json!(text))),
            ("model", self.model.as_ref().map(|text| json!(text))),
            ("platform", self.platform.as_ref().map(|text| json!(text))),
            ("profile", self.profile.as_ref().map(|text| json!(text))),
            ("app", self.app.as_ref().map(|text| json!(text))),
            ("deviceId", self.device.as_ref().map(|text| json!(text))),
            ("maxSteps", self.max_steps.map(|steps| json!(steps))),
            ("timeoutSecs", self.timeout_secs.map(|secs| json!(secs))),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                arguments.insert(name.into(), value);
            }
        }
        Value::Object(arguments)
    }
}

pub async fn run(command: TaskCommand) -> anyhow::Result<ExitCode> {
    let mut client = match McpClient::connect().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let outcome = dispatch(&mut client, command).await;
    client.close().await;
    Ok(outcome.unwrap_or_else(|error| print_error(&error, NO_TASK_HOST_HINT, str::to_owned)))
}

async fn dispatch(client: &mut McpClient, command: TaskCommand) -> anyhow::Result<ExitCode> {
    match command {
        TaskCommand::Run(args) => run_task(client, args).await,
        TaskCommand::Ls { state, json } => list(client, state, json).await,
        TaskCommand::Show {
            id,
            trajectory: false,
            json,
        } => show(client, &id, json).await,
        TaskCommand::Show {
            id,
            trajectory: true,
            json,
        } => trajectory(client, &id, json).await,
        TaskCommand::Stop { id } => stop(client, &id).await,
        TaskCommand::Send { id, text } => send(client, &id, &text).await,
        TaskCommand::Media {
            id,
            step,
            ui_state,
            out,
        } => media(client, &id, step, ui_state, &out).await,
    }
}

/// The structured answer as `T`, or an error naming the tool.
fn answer_as<T: serde::de::DeserializeOwned>(answer: &ToolAnswer, tool: &str) -> anyhow::Result<T> {
    serde_json::from_value(answer.structured().clone()).with_context(|| {
        format!("the daemon's `{tool}` answer is not the shape this command reads")
    })
}

/// `runTask`'s answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Started {
    task_id: String,
}

/// `getTask`'s answer, as far as these commands read it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskView {
    task_id: String,
    state: TaskState,
    summary: Option<TaskSummary>,
    #[serde(default)]
    steps: Vec<TrajectoryStep>,
    next_cursor: Option<String>,
}

async fn get_task(client: &mut McpClient, arguments: Value) -> anyhow::Result<TaskView> {
    let answer = client.call_tool("getTask", arguments, CALL_TIMEOUT).await?;
    answer_as(&answer, "getTask")
}

fn ended(state: TaskState) -> bool {
    matches!(
        state,
        TaskState::Completed | TaskState::Failed | TaskState::Stopped
    )
}

async fn run_task(client: &mut McpClient, args: RunArgs) -> anyhow::Result<ExitCode> {
    let answer = client
        .call_tool("runTask", args.tool_arguments(), CALL_TIMEOUT)
        .await?;
    let started: Started = answer_as(&answer, "runTask")?;
    println!("{}", started.task_id);
    if args.detach {
        return Ok(ExitCode::SUCCESS);
    }
    // Each new step as it is recorded; the task has ended once its state is final and no
    // page is left (its end is its last step).
    let mut after: Option<String> = None;
    let mut ticks = tokio::time::interval(FOLLOW_INTERVAL);
    let state = loop {
        ticks.tick().await;
        let mut arguments =
            json!({ "taskId": started.task_id, "view": "trajectory", "limit": 100 });
        if let Some(after) = &after {
            arguments["cursor"] = json!(after);
        }
        let page = get_task(client, arguments).await?;
        for step in &page.steps {
            eprintln!("{}", step_line(step));
        }
        if let Some(last) = page.steps.last() {
            after = Some(last.seq.to_string());
        }
        if ended(page.state) && page.next_cursor.is_none() {
            break page.state;
        }
    };
    let view = get_task(client, json!({ "taskId": started.task_id })).await?;
    if let Some(result) = view.summary.and_then(|summary| summary.result) {
        println!("{result}");
    }
    Ok(if state == TaskState::Completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn list(
    client: &mut McpClient,
    state: Option<String>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let arguments = match state {
        Some(state) => json!({ "state": state }),
        None => json!({}),
    };
    let answer = client
        .call_tool("listTasks", arguments, CALL_TIMEOUT)
        .await?;
    let mut stdout = std::io::stdout().lock();
    if as_json {
        writeln!(stdout, "{}", answer.structured())?;
        return Ok(ExitCode::SUCCESS);
    }
    #[derive(Deserialize)]
    struct TaskList {
        tasks: Vec<TaskSummary>,
    }
    let list: TaskList = answer_as(&answer, "listTasks")?;
    writeln!(
        stdout,
        "{:<20} {:<10} {:<9} {:<10} GOAL",
        "ID", "STATE", "STEPS", "BACKEND"
    )?;
    for task in &list.tasks {
        writeln!(
            stdout,
            "{:<20} {:<10} {:<9} {:<10} {}",
            task.task_id,
            task.state.as_str(),
            format!("{}/{}", task.steps, task.max_steps),
            task.backend,
            task.goal.lines().next().unwrap_or_default()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn show(client: &mut McpClient, id: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let view = get_task(client, json!({ "taskId": id, "view": "summary" })).await?;
    let summary = view
        .summary
        .context("the daemon's `getTask` answer has no summary")?;
    let mut stdout = std::io::stdout().lock();
    if as_json {
        writeln!(stdout, "{}", serde_json::to_string(&summary)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(stdout, "task     {}", summary.task_id)?;
    writeln!(stdout, "goal     {}", summary.goal)?;
    match &summary.reason {
        Some(reason) => writeln!(stdout, "state    {} ({reason})", summary.state.as_str())?,
        None => writeln!(stdout, "state    {}", summary.state.as_str())?,
    }
    writeln!(stdout, "backend  {}", summary.backend)?;
    writeln!(
        stdout,
        "device   {}",
        summary.device_id.as_deref().unwrap_or("-")
    )?;
    writeln!(
        stdout,
        "steps    {} of {}",
        summary.steps, summary.max_steps
    )?;
    if let Some(message) = &summary.last_message {
        writeln!(stdout, "message  {message}")?;
    }
    if let Some(result) = &summary.result {
        writeln!(stdout, "result   {result}")?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn trajectory(client: &mut McpClient, id: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let mut cursor: Option<String> = None;
    let mut steps = Vec::new();
    let (task_id, state) = loop {
        let mut arguments = json!({ "taskId": id, "view": "trajectory" });
        if let Some(cursor) = &cursor {
            arguments["cursor"] = json!(cursor);
        }
        let page = get_task(client, arguments).await?;
        steps.extend(page.steps);
        match page.next_cursor {
            // A cursor that does not move on would page forever.
            Some(next) if cursor.as_ref() == Some(&next) => {
                anyhow::bail!("the daemon gave the same `nextCursor` `{next}` twice")
            }
            Some(next) => cursor = Some(next),
            None => break (page.task_id, page.state),
        }
    };
    let mut stdout = std::io::stdout().lock();
    if as_json {
        let document = json!({ "taskId": task_id, "state": state, "steps": steps });
        writeln!(stdout, "{document}")?;
        return Ok(ExitCode::SUCCESS);
    }
    for step in &steps {
        writeln!(stdout, "{}", step_line(step))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One trajectory step in a line: `#3 tool tapOn ok 35 ms: …`, `#4 text: …`.
fn step_line(step: &TrajectoryStep) -> String {
    let mut line = format!("#{} {}", step.seq, step.kind);
    if let Some(tool) = &step.tool {
        line.push_str(&format!(" {tool}"));
    }
    match step.ok {
        Some(true) => line.push_str(" ok"),
        Some(false) => line.push_str(" error"),
        None => {}
    }
    if let Some(duration) = step.duration_ms {
        line.push_str(&format!(" {duration} ms"));
    }
    let detail = step.text.as_deref().or(step.outcome.as_deref());
    if let Some(first) = detail.and_then(|text| text.lines().next()) {
        line.push_str(&format!(": {first}"));
    }
    if step.screenshot {
        line.push_str(" [screenshot]");
    }
    line
}

async fn stop(client: &mut McpClient, id: &str) -> anyhow::Result<ExitCode> {
    let answer = client
        .call_tool("stopTask", json!({ "taskId": id }), CALL_TIMEOUT)
        .await?;
    let summary: TaskSummary = answer_as(&answer, "stopTask")?;
    println!("{}", summary.status_line());
    Ok(ExitCode::SUCCESS)
}

/// `sendTaskMessage`'s answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Receipt {
    task_id: String,
    /// `accepted`, `queued` or `rejected`.
    receipt: String,
    reason: Option<String>,
}

async fn send(client: &mut McpClient, id: &str, text: &str) -> anyhow::Result<ExitCode> {
    let answer = client
        .call_tool(
            "sendTaskMessage",
            json!({ "taskId": id, "text": text }),
            CALL_TIMEOUT,
        )
        .await?;
    let receipt: Receipt = answer_as(&answer, "sendTaskMessage")?;
    if receipt.receipt == "rejected" {
        eprintln!(
            "rejected: {}",
            receipt.reason.as_deref().unwrap_or("no reason given")
        );
        return Ok(ExitCode::FAILURE);
    }
    println!("{} {}", receipt.task_id, receipt.receipt);
    Ok(ExitCode::SUCCESS)
}

async fn media(
    client: &mut McpClient,
    id: &str,
    step: Option<u64>,
    ui_state: bool,
    out: &Path,
) -> anyhow::Result<ExitCode> {
    let mut arguments = json!({
        "taskId": id,
        "kind": if ui_state { "uiState" } else { "screenshot" },
    });
    if let Some(step) = step {
        arguments["step"] = json!(step);
    }
    let answer = client
        .call_tool("getTaskMedia", arguments, CALL_TIMEOUT)
        .await?;
    let (bytes, what) = if ui_state {
        (answer.text().into_bytes(), "screen state (JSON)".to_owned())
    } else {
        use base64::Engine as _;
        let (mime_type, data) = answer
            .image()
            .context("the daemon's `getTaskMedia` answer has no image")?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .context("the daemon's screenshot is not valid base64")?;
        (bytes, format!("screenshot ({mime_type})"))
    };
    if out.as_os_str() == "-" {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(&bytes)?;
        stdout.flush()?;
    } else {
        std::fs::write(out, &bytes).with_context(|| format!("writing `{}`", out.display()))?;
        eprintln!(
            "wrote the {what} to {} ({} bytes)",
            out.display(),
            bytes.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        command: TaskCommand,
    }

    fn run_args(line: &[&str]) -> RunArgs {
        let mut argv = vec!["paddock", "run"];
        argv.extend_from_slice(line);
        match Cli::try_parse_from(argv).map(|cli| cli.command) {
            Ok(TaskCommand::Run(args)) => args,
            other => panic!("not a `task run`: {other:?}"),
        }
    }

    #[test]
    fn task_run_passes_the_goal_and_only_the_flags_given() {
        assert_eq!(
            run_args(&["sign in"]).tool_arguments(),
            json!({ "goal": "sign in" })
        );
        let every = run_args(&[
            "check the cart",
            "--backend",
            "codex",
            "--model",
            "gpt-5",
            "--profile",
            "iphone15",
            "--app",
            "shop",
            "--device",
            "web-2",
            "--max-steps",
            "20",
            "--timeout-secs",
            "300",
            "--platform",
            "web",
            "--detach",
        ]);
        assert_eq!(
            every.tool_arguments(),
            json!({
                "goal": "check the cart",
                "backend": "codex",
                "model": "gpt-5",
                "profile": "iphone15",
                "app": "shop",
                "deviceId": "web-2",
                "platform": "web",
                "maxSteps": 20,
                "timeoutSecs": 300,
            })
        );
        assert!(every.detach);
    }

    #[test]
    fn a_trajectory_step_reads_in_one_line() {
        let step: TrajectoryStep = serde_json::from_value(json!({
            "seq": 3, "atUnixMs": 1, "kind": "tool", "tool": "tapOn", "ok": true,
            "outcome": "tapped\nthe screen after", "durationMs": 35, "screenshot": true,
        }))
        .unwrap();
        assert_eq!(
            step_line(&step),
            "#3 tool tapOn ok 35 ms: tapped [screenshot]"
        );
    }
}
