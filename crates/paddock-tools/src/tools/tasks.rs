//! The task tools (`runTask`, `getTask`, `listTasks`, `stopTask`, `sendTaskMessage`,
//! `getTaskMedia`) and the plan tools (`exportPlan`, and the plan-only `executePlan`). The work
//! is the daemon's ([`TaskBackend`](crate::tasks::TaskBackend)); these validate, call and shape
//! the answers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use paddock_devices::ObserveOptions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::{Hints, ToolDef};
use crate::error::{ToolError, ToolErrorCode};
use crate::plan::Plan;
use crate::render::observation_text;
use crate::session::SessionKey;
use crate::tasks::{
    MediaKind, PlanSource, TaskBackend, TaskMedia, TaskMessageReceipt, TaskRequest, TaskStarted,
    TaskState, TaskSummary, TrajectoryStep,
};
use crate::tools::args::{Bounded, Platform, Profile, wire_enum};
use crate::tools::device::{WEB_AND_ANDROID, bounded, require_session, session_device};
use crate::tools::results::schema_of;
use crate::tools::{Call, Image, Output, Tool};

/// `maxSteps` when the call names none.
pub const DEFAULT_MAX_STEPS: u32 = 50;
/// `timeoutSecs` when the call names none.
pub const DEFAULT_TIMEOUT_SECS: u64 = 900;
/// Trajectory steps per page when the call names no `limit`.
const DEFAULT_PAGE: usize = 50;

fn tasks(call: &Call<'_>) -> Result<Arc<dyn TaskBackend>, ToolError> {
    call.ctx.tasks.clone().ok_or_else(|| {
        ToolError::new(
            ToolErrorCode::Unavailable,
            "tasks run on the Paddock daemon; this server has no task host",
        )
    })
}

wire_enum! {
    /// An agent backend.
    Backend { Claude, Codex, Opencode, Pi, Cursor }
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Opencode => "opencode",
            Self::Pi => "pi",
            Self::Cursor => "cursor",
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RunTaskArgs {
    /// What the agent is to do, in plain words.
    goal: String,
    /// The agent CLI (default: the daemon's `[tasks] backend`, else `claude`).
    backend: Option<Backend>,
    /// The model, as the backend names it (default: the backend's).
    model: Option<String>,
    /// The platform of a device from the pool (default `web`).
    platform: Option<Platform>,
    /// A device of the pool by id, instead of `platform`.
    device_id: Option<String>,
    /// Web: the emulation profile (default: the pool's).
    profile: Option<Profile>,
    /// A configured app opened before the agent starts (see `listApps`).
    app: Option<String>,
    /// Tool calls the agent may make before the task fails with `max_steps` (default 50).
    max_steps: Option<Bounded<1, 1000>>,
    /// Seconds before the task fails with `timeout` (default 900).
    timeout_secs: Option<Bounded<5, 86400>>,
    /// Configurable device tools to list for the agent besides the default set.
    #[serde(default)]
    enable_tools: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct RunTask;

impl Tool for RunTask {
    type Args = RunTaskArgs;

    const DEF: ToolDef = ToolDef::new(
        "runTask",
        "Run a task",
        "Hands a goal to a coding agent (Claude Code, Codex, …) that works a device of its own until it is done: the daemon takes a device from the pool, starts the agent with only that device's tools, and records every step. Answers at once with the task's id; follow it with `getTask`, stop it with `stopTask`, talk to it with `sendTaskMessage`. States: queued → running → completed | failed | stopped.",
        Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: true,
        },
    )
    .needs_tasks();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<TaskStarted>()
    }

    async fn run(call: Call<'_>, args: RunTaskArgs) -> Result<Output, ToolError> {
        let tasks = tasks(&call)?;
        if args.goal.trim().is_empty() {
            return Err(ToolError::invalid_input(
                "`goal` is empty: say what the agent is to do",
            ));
        }
        if args.device_id.is_some() && args.platform.is_some() {
            return Err(ToolError::invalid_input(
                "give `deviceId` or `platform`, not both",
            ));
        }
        let started = tasks
            .run(TaskRequest {
                goal: args.goal,
                backend: args.backend.map(|backend| backend.name().to_owned()),
                model: args.model,
                platform: args
                    .platform
                    .map_or(paddock_devices::Platform::Web, Into::into),
                device_id: args.device_id,
                profile: args.profile.map(|profile| profile.name().to_owned()),
                app: args.app,
                max_steps: args.max_steps.map_or(DEFAULT_MAX_STEPS, Bounded::get),
                timeout_secs: args
                    .timeout_secs
                    .map_or(DEFAULT_TIMEOUT_SECS, |secs| u64::from(secs.get())),
                enable_tools: args.enable_tools,
            })
            .await?;
        Output::structured(&started)
    }
}

wire_enum! {
    /// What `getTask` returns.
    View { Summary, Status, Trajectory }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GetTaskArgs {
    task_id: String,
    /// `summary` (default): goal, state, steps, last message, result; `status`: one line;
    /// `trajectory`: the recorded steps, a page at a time.
    view: Option<View>,
    /// Trajectory: the `nextCursor` of the previous page.
    cursor: Option<String>,
    /// Trajectory: steps per page (default 50).
    limit: Option<Bounded<1, 500>>,
}

/// `getTask`'s answer: the view asked for.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskView {
    task_id: String,
    state: TaskState,
    /// `view: summary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<TaskSummary>,
    /// `view: status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    /// `view: trajectory`: this page's steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<Vec<TrajectoryStep>>,
    /// `view: trajectory`: pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

#[derive(Debug)]
pub(crate) struct GetTask;

impl Tool for GetTask {
    type Args = GetTaskArgs;

    const DEF: ToolDef = ToolDef::new(
        "getTask",
        "Get a task",
        "A task's summary (goal, state, steps, last message, result), its status in one line, or its trajectory: every recorded step (agent text, each tool call with its arguments, outcome and duration, refused permissions), a page at a time.",
        Hints::READ,
    )
    .needs_tasks();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<TaskView>()
    }

    async fn run(call: Call<'_>, args: GetTaskArgs) -> Result<Output, ToolError> {
        let tasks = tasks(&call)?;
        let summary = tasks.summary(&args.task_id).await?;
        let mut view = TaskView {
            task_id: summary.task_id.clone(),
            state: summary.state,
            summary: None,
            status: None,
            steps: None,
            next_cursor: None,
        };
        match args.view.unwrap_or(View::Summary) {
            View::Summary => view.summary = Some(summary),
            View::Status => view.status = Some(summary.status_line()),
            View::Trajectory => {
                let after = match args.cursor.as_deref() {
                    None => 0,
                    Some(cursor) => cursor.parse::<u64>().map_err(|_| {
                        ToolError::invalid_input(format!(
                            "`cursor` `{cursor}` is not one this server gave; pass a `nextCursor` from an earlier page"
                        ))
                    })?,
                };
                let limit = args
                    .limit
                    .map_or(DEFAULT_PAGE, |limit| limit.get() as usize);
                let page = tasks.trajectory(&args.task_id, after, limit).await?;
                view.steps = Some(page.steps);
                view.next_cursor = page.next_cursor;
            }
        }
        Output::structured(&view)
    }
}

wire_enum! {
    /// A task state, for filtering.
    StateFilter { Queued, Running, Completed, Failed, Stopped }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ListTasksArgs {
    /// Only tasks in this state.
    state: Option<StateFilter>,
}

/// `listTasks`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskList {
    /// Newest first.
    tasks: Vec<TaskSummary>,
}

#[derive(Debug)]
pub(crate) struct ListTasks;

impl Tool for ListTasks {
    type Args = ListTasksArgs;

    const DEF: ToolDef = ToolDef::new(
        "listTasks",
        "List tasks",
        "The daemon's tasks, newest first, optionally only those in one state.",
        Hints::READ,
    )
    .needs_tasks();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<TaskList>()
    }

    async fn run(call: Call<'_>, args: ListTasksArgs) -> Result<Output, ToolError> {
        let state = args.state.map(|state| match state {
            StateFilter::Queued => TaskState::Queued,
            StateFilter::Running => TaskState::Running,
            StateFilter::Completed => TaskState::Completed,
            StateFilter::Failed => TaskState::Failed,
            StateFilter::Stopped => TaskState::Stopped,
        });
        let tasks = tasks(&call)?.list(state).await?;
        Output::structured(&TaskList { tasks })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct TaskIdArgs {
    task_id: String,
}

#[derive(Debug)]
pub(crate) struct StopTask;

impl Tool for StopTask {
    type Args = TaskIdArgs;

    const DEF: ToolDef = ToolDef::new(
        "stopTask",
        "Stop a task",
        "Stops a task: its agent is ended (mid-step if need be) and its device goes back to the pool. Answers with the task as it ended; stopping a task that already ended changes nothing.",
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
    )
    .needs_tasks();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<TaskSummary>()
    }

    async fn run(call: Call<'_>, args: TaskIdArgs) -> Result<Output, ToolError> {
        let summary = tasks(&call)?.stop(&args.task_id).await?;
        Output::structured(&summary)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SendTaskMessageArgs {
    task_id: String,
    /// The message for the agent.
    text: String,
}

#[derive(Debug)]
pub(crate) struct SendTaskMessage;

impl Tool for SendTaskMessage {
    type Args = SendTaskMessageArgs;

    const DEF: ToolDef = ToolDef::new(
        "sendTaskMessage",
        "Message a task's agent",
        "Sends a message to a running task's agent. It is delivered as the backend delivers messages mid-turn: Claude Code and Pi at the next safe point (the answer says `queued`), others at once (`accepted`).",
        Hints::ACT,
    )
    .needs_tasks();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<TaskMessageReceipt>()
    }

    async fn run(call: Call<'_>, args: SendTaskMessageArgs) -> Result<Output, ToolError> {
        if args.text.trim().is_empty() {
            return Err(ToolError::invalid_input("`text` is empty"));
        }
        let receipt = tasks(&call)?.send(&args.task_id, &args.text).await?;
        Output::structured(&receipt)
    }
}

wire_enum! {
    /// Which media of a task.
    Media { Screenshot, UiState }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GetTaskMediaArgs {
    task_id: String,
    /// `screenshot` (a JPEG) or `uiState` (the screen's elements as JSON).
    kind: Media,
    /// The trajectory step (default: the latest there is).
    step: Option<u64>,
}

#[derive(Debug)]
pub(crate) struct GetTaskMedia;

impl Tool for GetTaskMedia {
    type Args = GetTaskMediaArgs;

    const DEF: ToolDef = ToolDef::new(
        "getTaskMedia",
        "Get a task's screenshot or screen state",
        "A task's screenshot (JPEG image content) or screen state (the elements on screen, JSON) at a trajectory step, or the latest. Screenshots are kept every few steps and at the end.",
        Hints::READ,
    )
    .needs_tasks();

    async fn run(call: Call<'_>, args: GetTaskMediaArgs) -> Result<Output, ToolError> {
        let kind = match args.kind {
            Media::Screenshot => MediaKind::Screenshot,
            Media::UiState => MediaKind::UiState,
        };
        match tasks(&call)?.media(&args.task_id, kind, args.step).await? {
            TaskMedia::Screenshot { step, jpeg } => Ok(Output::Rich {
                text: match step {
                    Some(step) => format!("screenshot of task {} at step {step}", args.task_id),
                    None => format!("screenshot of task {}", args.task_id),
                },
                image: Some(Image::Inline(jpeg)),
                structured: None,
            }),
            TaskMedia::UiState { state, .. } => Ok(Output::Rich {
                text: state.to_string(),
                image: None,
                structured: None,
            }),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ExportPlanArgs {
    /// A task's device tool calls.
    task_id: Option<String>,
    /// A recorded session's device tool calls (the daemon must run with
    /// `--tool-call-recording`).
    session_uuid: Option<String>,
}

#[derive(Debug)]
pub(crate) struct ExportPlan;

impl Tool for ExportPlan {
    type Args = ExportPlanArgs;

    const DEF: ToolDef = ToolDef::new(
        "exportPlan",
        "Export a plan",
        "The device tool calls of a task (or of a session recorded with `--tool-call-recording`) as a replayable plan: a versioned JSON document (schema: docs/plan.schema.json) of the calls that changed the device, in order, with targets by text, id or label instead of refs. Text typed into password fields becomes a `${PASSWORD_n}` variable. Replay it with `executePlan` or `paddock plan run`.",
        Hints::READ,
    )
    .needs_tasks();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<Plan>()
    }

    async fn run(call: Call<'_>, args: ExportPlanArgs) -> Result<Output, ToolError> {
        let source = match (args.task_id, args.session_uuid) {
            (Some(task), None) => PlanSource::Task(task),
            (None, Some(session)) => PlanSource::Session(SessionKey::parse(&session)?),
            _ => {
                return Err(ToolError::invalid_input(
                    "give exactly one of `taskId` or `sessionUuid`",
                ));
            }
        };
        let label = match &source {
            PlanSource::Task(task) => format!("task {task}"),
            PlanSource::Session(session) => format!("session {session}"),
        };
        let calls = tasks(&call)?.recorded(source).await?;
        Output::structured(&Plan::from_calls(Some(label), &calls))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ExecutePlanArgs {
    /// A plan document, as `exportPlan` returns it.
    plan: Plan,
    /// Stop at the first failing step (default true).
    stop_on_error: Option<bool>,
    /// Values of the plan's variables (`PASSWORD_1`, …).
    #[serde(default)]
    variables: BTreeMap<String, String>,
}

/// One replayed step.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StepOutcome {
    /// 1, 2, … in plan order.
    step: usize,
    tool: String,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    duration_ms: u64,
}

/// `executePlan`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlanRun {
    /// Whether every step ran and succeeded.
    ok: bool,
    steps: Vec<StepOutcome>,
    /// The first failing step, if one failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_step: Option<usize>,
    /// The screen at the first failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    observation: Option<String>,
}

#[derive(Debug)]
pub(crate) struct ExecutePlan;

impl Tool for ExecutePlan {
    type Args = ExecutePlanArgs;

    const DEF: ToolDef = ToolDef {
        plan_only: true,
        ..ToolDef::new(
            "executePlan",
            "Execute a plan",
            "Replays a plan (from `exportPlan`) on the session's device, step by step, and reports each step's outcome, with the screen at the first failure. Plan-only: never listed, callable by name.",
            Hints::ACT,
        )
        .on_device(WEB_AND_ANDROID)
    };

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<PlanRun>()
    }

    async fn run(call: Call<'_>, args: ExecutePlanArgs) -> Result<Output, ToolError> {
        let plan = args.plan;
        plan.check_version().map_err(ToolError::invalid_input)?;
        let session = require_session(&call)?;
        // The device must be there before the first step (and on a platform plans support).
        session_device(&call)?;
        let stop_on_error = args.stop_on_error.unwrap_or(true);
        let mut outcomes = Vec::with_capacity(plan.steps.len());
        let mut failed_step = None;
        for (index, step) in plan.steps.iter().enumerate() {
            let started = Instant::now();
            let outcome = run_step(
                &call,
                &session,
                &step.tool,
                &step.arguments,
                &args.variables,
            )
            .await;
            let error = outcome.err().map(|error| error.to_string());
            if error.is_some() && failed_step.is_none() {
                failed_step = Some(index + 1);
            }
            let failed = error.is_some();
            outcomes.push(StepOutcome {
                step: index + 1,
                tool: step.tool.clone(),
                ok: !failed,
                error,
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
            if failed && stop_on_error {
                break;
            }
        }
        let observation = match failed_step {
            Some(_) => match session_device(&call) {
                Ok(device) => bounded(device.observe(ObserveOptions::default()))
                    .await
                    .ok()
                    .map(|observation| observation_text(&observation)),
                Err(_) => None,
            },
            None => None,
        };
        Output::structured(&PlanRun {
            ok: failed_step.is_none() && outcomes.len() == plan.steps.len(),
            steps: outcomes,
            failed_step,
            observation,
        })
    }
}

/// Runs one plan step as its tool, on the caller's session, under the caller's policy.
async fn run_step(
    call: &Call<'_>,
    session: &SessionKey,
    tool: &str,
    arguments: &Map<String, Value>,
    variables: &BTreeMap<String, String>,
) -> Result<(), ToolError> {
    let entry = call
        .registry
        .tool(tool)
        .filter(|entry| call.registry.visible(&entry.def, call.ctx))
        .ok_or_else(|| {
            ToolError::not_found(format!(
                "the plan names `{tool}`, which is not a tool you can call"
            ))
        })?;
    if entry.def.platforms.is_empty() {
        return Err(ToolError::invalid_input(format!(
            "`{tool}` is not a device tool; a plan replays device tools only"
        )));
    }
    let arguments =
        crate::plan::substitute(arguments, variables).map_err(ToolError::invalid_input)?;
    let step = Call {
        registry: call.registry,
        ctx: call.ctx,
        tool: &entry.def,
        session: Some(session.clone()),
    };
    entry.handler.call(step, arguments).await.map(drop)
}
