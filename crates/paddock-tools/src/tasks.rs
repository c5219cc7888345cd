//! The tasks port: what the task tools (`runTask`, `getTask`, …) and `exportPlan` need from the
//! daemon, as Rust types. The daemon's task host implements it; the tools only validate, call
//! and shape answers. The result types here are what the tools return as `structuredContent`,
//! and their `outputSchema`s are derived from them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::backend::BoxFuture;
use crate::error::ToolError;
use crate::session::SessionKey;

/// A task's lifecycle: `queued → running → completed | failed | stopped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "")]
pub enum TaskState {
    Queued,
    Running,
    Completed,
    Failed,
    Stopped,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "stopped" => Self::Stopped,
            _ => return None,
        })
    }

    /// Completed, failed or stopped: nothing changes any more.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Stopped)
    }
}

/// What `runTask` asks for, validated by the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRequest {
    pub goal: String,
    /// `claude`, `codex`, `opencode`, `pi` or `cursor`; the daemon's default when `None`.
    pub backend: Option<String>,
    pub model: Option<String>,
    /// The platform of a device taken from the pool (web when neither this nor `device_id`).
    pub platform: paddock_devices::Platform,
    /// A named device of the pool instead.
    pub device_id: Option<String>,
    pub profile: Option<String>,
    /// A configured app opened on the device before the agent starts.
    pub app: Option<String>,
    pub max_steps: u32,
    pub timeout_secs: u64,
    /// Configurable tools listed for the agent besides the default set.
    pub enable_tools: Vec<String>,
}

/// `runTask`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStarted {
    pub task_id: String,
    pub state: TaskState,
}

/// A task in short: `getTask view=summary`, and each entry of `listTasks`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSummary {
    pub task_id: String,
    pub goal: String,
    pub state: TaskState,
    /// Why it failed or stopped (`max_steps`, `timeout`, `device_lost`, `agent_exited`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub backend: String,
    /// The device it works on, once it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
    /// Tool calls made so far (what `maxSteps` counts).
    pub steps: u64,
    pub max_steps: u32,
    /// The agent's last message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_message: Option<String>,
    /// The agent's final answer, once completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    pub created_at_unix_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at_unix_ms: Option<u64>,
}

impl TaskSummary {
    /// `getTask view=status`: one line.
    pub fn status_line(&self) -> String {
        let mut line = format!(
            "{} {}: {} of {} steps",
            self.task_id,
            self.state.as_str(),
            self.steps,
            self.max_steps
        );
        if let Some(reason) = &self.reason {
            line.push_str(&format!(" ({reason})"));
        }
        line
    }
}

/// One recorded step of a trajectory.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrajectoryStep {
    /// 1, 2, … in the order things happened.
    pub seq: u64,
    pub at_unix_ms: u64,
    /// `text` (the agent's words), `tool` (a Paddock tool call), `denied` (a permission the
    /// agent asked for and was refused), `state` (the task's state changed).
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The call's arguments: password text masked, the rest through the PII filters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// The call's answer (for a device action, the screen after it), or its error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Whether a screenshot was kept for this step (`getTaskMedia kind=screenshot step=…`).
    pub screenshot: bool,
}

/// `getTask view=trajectory`: one page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrajectoryPage {
    pub task_id: String,
    pub steps: Vec<TrajectoryStep>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// What `getTaskMedia` returns.
#[derive(Debug, Clone)]
pub enum TaskMedia {
    Screenshot { step: Option<u64>, jpeg: Vec<u8> },
    UiState { step: Option<u64>, state: Value },
}

/// Which media `getTaskMedia` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    Screenshot,
    UiState,
}

/// `sendTaskMessage`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskMessageReceipt {
    pub task_id: String,
    /// `accepted` (delivered now), `queued` (delivered at the backend's next safe point) or
    /// `rejected`.
    pub receipt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A device tool call as recorded for a trajectory or a plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedCall {
    pub tool: String,
    /// The arguments as called, with text typed into a password field replaced by a mask.
    pub arguments: Map<String, Value>,
    /// The arguments for a replay — targets by text, id or label instead of refs, password
    /// text as a `${PASSWORD_n}` variable — when the tool changes the device; `None` for reads
    /// and for tools a plan does not replay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_arguments: Option<Map<String, Value>>,
    pub ok: bool,
    /// The answer's text, or the error.
    pub outcome: String,
    pub duration_ms: u64,
    /// The elements on screen after the call (JSON), for a call that acts on the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ui_state: Option<Value>,
}

/// Receives every tool call of the sessions it watches: a task's agent connection, or every
/// session when the daemon records tool calls (`--tool-call-recording`).
pub trait CallRecorder: Send + Sync {
    /// Before a call runs: an error refuses it (a task over its `maxSteps`).
    fn admit(&self, session: &SessionKey, tool: &str) -> Result<(), ToolError>;
    /// After a call ran.
    fn record(&self, session: &SessionKey, call: RecordedCall);
    /// A call refused before it could run (a tool outside the caller's policy, another
    /// session's id): `arguments` as sent, `error` as answered.
    fn refused(&self, _tool: &str, _arguments: &Map<String, Value>, _error: &ToolError) {}
}

/// Where `exportPlan` takes its calls from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanSource {
    Task(String),
    Session(SessionKey),
}

/// What the daemon provides to the task tools.
pub trait TaskBackend: Send + Sync {
    /// Queues a task and starts it in the background.
    fn run(&self, request: TaskRequest) -> BoxFuture<'_, Result<TaskStarted, ToolError>>;
    fn summary(&self, task_id: &str) -> BoxFuture<'_, Result<TaskSummary, ToolError>>;
    /// Steps after `after` (0 for the first page), at most `limit`.
    fn trajectory(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<TrajectoryPage, ToolError>>;
    fn list(&self, state: Option<TaskState>) -> BoxFuture<'_, Result<Vec<TaskSummary>, ToolError>>;
    /// Stops a task; its answer is the task as it ended.
    fn stop(&self, task_id: &str) -> BoxFuture<'_, Result<TaskSummary, ToolError>>;
    fn send(
        &self,
        task_id: &str,
        text: &str,
    ) -> BoxFuture<'_, Result<TaskMessageReceipt, ToolError>>;
    /// A step's screenshot or screen state; the latest when `step` is `None`.
    fn media(
        &self,
        task_id: &str,
        kind: MediaKind,
        step: Option<u64>,
    ) -> BoxFuture<'_, Result<TaskMedia, ToolError>>;
    /// The device tool calls recorded for a task or a session, in order.
    fn recorded(&self, source: PlanSource) -> BoxFuture<'_, Result<Vec<RecordedCall>, ToolError>>;
}

/// A task host that holds no tasks and starts none: every call is `[unavailable]`. For tool
/// surfaces without a daemon behind them (contract snapshots, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTasks;

fn no_tasks<T: Send + 'static>() -> BoxFuture<'static, Result<T, ToolError>> {
    Box::pin(async {
        Err(ToolError::new(
            crate::error::ToolErrorCode::Unavailable,
            "this server runs no tasks",
        ))
    })
}

impl TaskBackend for NoTasks {
    fn run(&self, _request: TaskRequest) -> BoxFuture<'_, Result<TaskStarted, ToolError>> {
        no_tasks()
    }
    fn summary(&self, _task_id: &str) -> BoxFuture<'_, Result<TaskSummary, ToolError>> {
        no_tasks()
    }
    fn trajectory(
        &self,
        _task_id: &str,
        _after: u64,
        _limit: usize,
    ) -> BoxFuture<'_, Result<TrajectoryPage, ToolError>> {
        no_tasks()
    }
    fn list(
        &self,
        _state: Option<TaskState>,
    ) -> BoxFuture<'_, Result<Vec<TaskSummary>, ToolError>> {
        no_tasks()
    }
    fn stop(&self, _task_id: &str) -> BoxFuture<'_, Result<TaskSummary, ToolError>> {
        no_tasks()
    }
    fn send(
        &self,
        _task_id: &str,
        _text: &str,
    ) -> BoxFuture<'_, Result<TaskMessageReceipt, ToolError>> {
        no_tasks()
    }
    fn media(
        &self,
        _task_id: &str,
        _kind: MediaKind,
        _step: Option<u64>,
    ) -> BoxFuture<'_, Result<TaskMedia, ToolError>> {
        no_tasks()
    }
    fn recorded(&self, _source: PlanSource) -> BoxFuture<'_, Result<Vec<RecordedCall>, ToolError>> {
        no_tasks()
    }
}
