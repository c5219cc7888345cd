//! The task host: an agent on a device, as one call. `runTask` queues a task and answers at
//! once; in the background the host binds a device to the task's own session (`task-<id>`),
//! opens the app, and launches the agent through the agents subsystem with one MCP server —
//! `paddock mcp`, which reaches this daemon with the launch's voucher — and nothing else
//! pre-approved. That connection is served with the task policy on the task's session only
//! ([`TaskHost::agent_ctx`]). Every tool call the agent makes, every message it writes and
//! every permission it was denied is a step in the store; a screenshot is kept every few
//! device steps and at the end. The task ends `completed` with the agent's final answer, or
//! `failed`/`stopped` with a reason, and its device always goes back to the pool.
//!
//! With `--tool-call-recording` the owner's sessions record their tool calls the same way
//! (owner `session:<id>` in the store), so `exportPlan {sessionUuid}` can turn them into a plan.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use paddock_agents::{McpServer, ToolAccess};
use paddock_client::control::{
    AgentsEventsParams, AgentsOpenParams, AgentsSendParams, AgentsStopParams, ControlError,
    ErrorCode, SensitiveText,
};
use paddock_devices::{Action, Device, ObserveOptions, Pool, RefillHold};
use paddock_store::{ChoiceScope, Choices, Store};
use paddock_tools::auth::AuthContextInit;
use paddock_tools::backend::{BoxFuture, DeviceRequest};
use paddock_tools::tasks::{
    CallRecorder, MediaKind, PlanSource, RecordedCall, TaskBackend, TaskMedia, TaskMessageReceipt,
    TaskRequest, TaskStarted, TaskState, TaskSummary, TrajectoryPage, TrajectoryStep,
};
use paddock_tools::{AuthContext, AuthKind, Policy, SessionKey, ToolCtx, ToolError, ToolErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::agents::{AgentsHost, CursorItem, LaunchExtras};

/// The MCP server's name in the agent's configuration: its tools are `mcp__paddock__<tool>`
/// in Claude Code, `paddock_<tool>` in OpenCode.
pub const MCP_SERVER_NAME: &str = "paddock";
/// How long a stopped task's agent gets before its process group is killed.
const AGENT_STOP_GRACE: Duration = Duration::from_secs(3);
/// The longest the warm pool's refill waits for a task's agent to reach its model (an agent
/// that never does, hung before its first request, holds it no longer).
const REFILL_HOLD_LIMIT: Duration = Duration::from_secs(30);
/// How long the app gets to settle after it is opened.
const APP_SETTLE: Duration = Duration::from_secs(3);
/// Screenshots kept in the trajectory: this wide, this JPEG quality.
const SCREENSHOT_WIDTH: u32 = 360;
const SCREENSHOT_QUALITY: u8 = 60;

/// What the agent is told besides its goal.
const INSTRUCTIONS: &str = "You are working a device for a task. The device is already \
acquired for you and bound to this session: use only the tools of the `paddock` MCP server \
(start with `observe`; act with `tapOn`, `inputText`, `swipeOn`, `pressButton`, `openLink`, \
and observe again after each action). Shell, file and web tools are not available. When the \
goal is reached, or cannot be reached, stop calling tools and answer with one short final \
message that states the result.";

/// Task settings of the daemon.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    /// The backend a `runTask` without `backend` gets.
    pub default_backend: String,
    /// A screenshot is kept every this many tool calls (0: only at the end).
    pub screenshot_every: u64,
    /// `--tool-call-recording`: the owner's sessions record their tool calls too.
    pub record_sessions: bool,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            default_backend: "claude".to_owned(),
            screenshot_every: 5,
            record_sessions: false,
        }
    }
}

/// The daemon's tasks. Cheap to clone.
#[derive(Clone)]
pub struct TaskHost {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TaskHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHost").finish_non_exhaustive()
    }
}

struct Inner {
    store: Arc<Store>,
    pool: Pool,
    agents: AgentsHost,
    policy: Arc<Policy>,
    /// The owner's principal, named as the owner of every agent context.
    owner: String,
    /// `<state dir>/tasks`: each task's agent works in its own empty directory here.
    dir: PathBuf,
    options: TaskOptions,
    boot: String,
    next: AtomicU64,
    live: Mutex<HashMap<String, Arc<Run>>>,
    shutting_down: AtomicBool,
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ending {
    state: TaskState,
    reason: Option<String>,
}

impl Ending {
    fn failed(reason: impl Into<String>) -> Self {
        Self {
            state: TaskState::Failed,
            reason: Some(reason.into()),
        }
    }
}

/// A task that has not ended yet.
struct Run {
    id: String,
    session: SessionKey,
    request: TaskRequest,
    summary: Mutex<TaskSummary>,
    next_seq: AtomicU64,
    tool_calls: AtomicU64,
    agent: Mutex<Option<String>>,
    /// Messages sent while a turn ran: the turn that ends then is not the last.
    pending_messages: AtomicU64,
    /// The first ending wins; the driver acts on it.
    end: watch::Sender<Option<Ending>>,
    /// True once the device is back and the task is stored in its final state.
    done: watch::Sender<bool>,
}

impl Run {
    fn summary(&self) -> std::sync::MutexGuard<'_, TaskSummary> {
        self.summary.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the task unless it has already ended; true when this call ended it.
    fn finish(&self, ending: Ending) -> bool {
        self.end.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(ending);
            true
        })
    }

    fn owner(&self) -> String {
        task_owner(&self.id)
    }
}

fn task_owner(id: &str) -> String {
    format!("task:{id}")
}

fn session_owner(session: &SessionKey) -> String {
    format!("session:{session}")
}

/// A stored step: what the trajectory shows, and for a tool call the recorded call a plan is
/// built from.
#[derive(Debug, Serialize, Deserialize)]
struct StoredBody {
    step: TrajectoryStep,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call: Option<RecordedCall>,
}

impl TaskHost {
    /// The task host over `store`, binding devices from `pool` and launching agents through
    /// `agents`. Tasks a previous daemon run left `queued` or `running` end here as
    /// `failed: daemon_restarted`.
    pub fn new(
        store: Arc<Store>,
        pool: Pool,
        agents: AgentsHost,
        owner: String,
        state_dir: &std::path::Path,
        options: TaskOptions,
    ) -> anyhow::Result<Self> {
        let catalog = paddock_tools::catalog::builtin();
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes)
            .map_err(|error| anyhow::anyhow!("OS random source: {error}"))?;
        let host = Self {
            inner: Arc::new(Inner {
                store,
                pool,
                agents,
                policy: Arc::new(Policy::task(&catalog)),
                owner,
                dir: state_dir.join("tasks"),
                options,
                boot: bytes.iter().map(|byte| format!("{byte:02x}")).collect(),
                next: AtomicU64::new(1),
                live: Mutex::new(HashMap::new()),
                shutting_down: AtomicBool::new(false),
            }),
        };
        host.end_interrupted()?;
        Ok(host)
    }

    /// A recorder of the owner's sessions' tool calls, when the daemon records them.
    pub fn session_recorder(&self) -> Option<Arc<dyn CallRecorder>> {
        self.inner.options.record_sessions.then(|| {
            Arc::new(SessionRecorder {
                host: self.clone(),
                numbering: Mutex::new(()),
            }) as Arc<dyn CallRecorder>
        })
    }

    fn end_interrupted(&self) -> anyhow::Result<()> {
        let store = &self.inner.store;
        for state in [TaskState::Queued, TaskState::Running] {
            for body in store.tasks(Some(state.as_str()))? {
                let Ok(mut summary) = serde_json::from_str::<TaskSummary>(&body) else {
                    continue;
                };
                summary.state = TaskState::Failed;
                summary.reason = Some("daemon_restarted".to_owned());
                summary.ended_at_unix_ms = Some(unix_ms());
                put(store, &summary)?;
            }
        }
        Ok(())
    }

    /// Whether `task` is running and may open its agent's MCP connection.
    pub fn check_agent(&self, task: &str) -> Result<String, ControlError> {
        self.live(task)
            .map(|run| run.session.as_str().to_owned())
            .ok_or_else(|| {
                ControlError::new(
                    ErrorCode::Forbidden,
                    format!("task `{task}` has ended: its agent's MCP connection is closed"),
                )
            })
    }

    /// The context a task's agent connection is served with — the task policy, the task's
    /// device session, the task's recorder — and a future that resolves when the task ends.
    pub fn agent_ctx(
        &self,
        task: &str,
        backend: Arc<dyn paddock_tools::Backend>,
    ) -> Result<(ToolCtx, BoxFuture<'static, ()>), ControlError> {
        let run = self.live(task).ok_or_else(|| {
            ControlError::new(ErrorCode::Forbidden, format!("task `{task}` has ended"))
        })?;
        let auth = AuthContext::new(
            AuthKind::Agent,
            AuthContextInit {
                subject: run.owner(),
                owner_id: Some(self.inner.owner.clone()),
                ..AuthContextInit::default()
            },
        )
        .map_err(|error| ControlError::new(ErrorCode::Internal, error.to_string()))?;
        let ctx = ToolCtx {
            auth,
            policy: self.inner.policy.clone(),
            profile: run.owner(),
            session: Some(run.session.clone()),
            backend,
            tasks: None,
            recorder: Some(Arc::new(TaskRecorder {
                host: self.clone(),
                run: run.clone(),
            })),
            fleet: None,
        };
        let mut end = run.end.subscribe();
        let ended = Box::pin(async move {
            let _ = end.wait_for(Option::is_some).await;
        });
        Ok((ctx, ended))
    }

    /// Stops every running task (the daemon is shutting down) and waits, bounded, for their
    /// devices to go back.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let runs: Vec<Arc<Run>> = self.lock_live().values().cloned().collect();
        for run in &runs {
            run.finish(Ending::failed("daemon_shutdown"));
        }
        let waits = runs.iter().map(|run| {
            let mut done = run.done.subscribe();
            async move {
                let _ = done.wait_for(|done| *done).await;
            }
        });
        let all = futures_util::future::join_all(waits);
        if tokio::time::timeout(AGENT_STOP_GRACE * 3, all)
            .await
            .is_err()
        {
            warn!("running tasks did not all end in time");
        }
    }

    fn lock_live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Run>>> {
        self.inner
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn live(&self, task: &str) -> Option<Arc<Run>> {
        self.lock_live().get(task).cloned()
    }

    /// The task's summary: live, else from the store.
    fn find(&self, task: &str) -> Result<TaskSummary, ToolError> {
        if let Some(run) = self.live(task) {
            return Ok(run.summary().clone());
        }
        let body = self
            .inner
            .store
            .task(task)
            .map_err(|error| ToolError::internal(error.to_string()))?
            .ok_or_else(|| {
                ToolError::not_found(format!("no task `{task}`; listTasks shows them"))
            })?;
        serde_json::from_str(&body).map_err(|error| {
            ToolError::internal(format!("task `{task}` is stored unreadably: {error}"))
        })
    }

    fn persist(&self, run: &Run) {
        let summary = run.summary().clone();
        if let Err(error) = put(&self.inner.store, &summary) {
            warn!(task = %run.id, %error, "could not store a task");
        }
    }

    /// Appends a step to `owner`'s trajectory; returns its number.
    fn append(&self, owner: &str, seq: u64, step: TrajectoryStep, call: Option<RecordedCall>) {
        let body = StoredBody { step, call };
        let written = serde_json::to_string(&body)
            .map_err(|error| error.to_string())
            .and_then(|text| {
                self.inner
                    .store
                    .append_step(owner, seq, &text, None)
                    .map_err(|error| error.to_string())
            });
        if let Err(error) = written {
            warn!(%owner, seq, %error, "could not store a step");
        }
    }

    /// A step of a task's own (agent text, a denial, the end).
    fn note(&self, run: &Run, kind: &str, text: Option<String>, tool: Option<String>) -> u64 {
        let seq = run.next_seq.fetch_add(1, Ordering::SeqCst);
        let step = TrajectoryStep {
            seq,
            at_unix_ms: unix_ms(),
            kind: kind.to_owned(),
            text: text.map(|text| filtered_text(&text)),
            tool,
            arguments: None,
            ok: None,
            outcome: None,
            duration_ms: None,
            screenshot: false,
        };
        self.append(&run.owner(), seq, step, None);
        seq
    }

    /// Keeps a screenshot of `device` with step `seq` of `owner`.
    async fn keep_screenshot(&self, owner: &str, seq: u64, device: &dyn Device) {
        match device
            .screenshot(Some(SCREENSHOT_WIDTH), SCREENSHOT_QUALITY)
            .await
        {
            Ok(shot) => {
                if let Err(error) = self.inner.store.set_step_image(owner, seq, &shot.jpeg) {
                    warn!(%owner, seq, %error, "could not store a screenshot");
                }
            }
            Err(error) => info!(%owner, seq, %error, "no screenshot for this step"),
        }
    }

    /// Runs one task to its end: the device, the agent, its events, then the cleanup.
    async fn drive(self, run: Arc<Run>) {
        {
            let mut summary = run.summary();
            summary.state = TaskState::Running;
        }
        self.persist(&run);
        let deadline = Instant::now() + Duration::from_secs(run.request.timeout_secs);
        let mut end = run.end.subscribe();
        let ending = tokio::select! {
            ending = self.work(&run) => ending,
            _ = end.wait_for(Option::is_some) => None,
            () = tokio::time::sleep_until(deadline.into()) => Some(Ending::failed("timeout")),
        };
        if let Some(ending) = ending {
            run.finish(ending);
        }
        let ending = run
            .end
            .borrow()
            .clone()
            .unwrap_or_else(|| Ending::failed("internal"));
        self.clean_up(&run, ending).await;
    }

    /// The task's work until something ends it: `None` when the ending came from elsewhere
    /// (a stop, the step limit) and is already set.
    async fn work(&self, run: &Run) -> Option<Ending> {
        let request = &run.request;
        // Taking the warm device would boot its replacement at once, competing with the agent's
        // start for the CPU: the refill waits until the agent has reached its model.
        let refill_hold = self.inner.pool.hold_refill();
        let acquired = match &request.device_id {
            Some(id) => self.inner.pool.acquire_id(run.session.as_str(), id).await,
            None => {
                paddock_tools::Backend::acquire(
                    &self.inner.pool,
                    run.session.as_str(),
                    DeviceRequest {
                        platform: request.platform,
                        profile: request.profile.as_deref(),
                        avd: None,
                    },
                )
                .await
            }
        };
        let device = match acquired {
            Ok((device, _)) => device,
            Err(error) => return Some(Ending::failed(format!("device_unavailable: {error}"))),
        };
        run.summary().device_id = Some(device.id().to_owned());
        self.persist(run);
        if let Some(app) = &request.app {
            let apps = paddock_tools::Backend::apps(&self.inner.pool);
            let Some(app) = apps.into_iter().find(|known| &known.id == app) else {
                return Some(Ending::failed(format!("no app `{app}` is configured")));
            };
            if let Err(error) = device
                .act(
                    Action::LaunchApp(app),
                    APP_SETTLE,
                    ObserveOptions::default(),
                )
                .await
            {
                return Some(Ending::failed(format!("app_failed: {error}")));
            }
        }
        let agent = match self.open_agent(run).await {
            Ok(agent) => agent,
            Err(error) => {
                return Some(Ending::failed(format!(
                    "agent_unavailable: {}",
                    error.message
                )));
            }
        };
        *run.agent.lock().unwrap_or_else(PoisonError::into_inner) = Some(agent.clone());
        self.release_hold_once_up(run, &agent, refill_hold);
        let mut cursor = match self
            .inner
            .agents
            .follow(&AgentsEventsParams { id: agent, from: 1 })
        {
            Ok(cursor) => cursor,
            Err(error) => return Some(Ending::failed(format!("agent_exited: {}", error.message))),
        };
        let died = device.died();
        tokio::pin!(died);
        loop {
            let item = tokio::select! {
                item = cursor.next() => item,
                () = &mut died => return Some(Ending::failed("device_lost")),
            };
            match item {
                CursorItem::Closed(closed) => {
                    let detail = closed
                        .exit_code
                        .map(|code| format!(" (exit code {code})"))
                        .unwrap_or_default();
                    return Some(Ending::failed(format!("agent_exited{detail}")));
                }
                CursorItem::Event(frame) => {
                    if let Some(ending) = self.on_event(run, &frame.event) {
                        return Some(ending);
                    }
                }
            }
        }
    }

    /// Drops `hold` once the agent has sent its first model request, the task has ended, or
    /// [`REFILL_HOLD_LIMIT`] has passed, whichever comes first.
    fn release_hold_once_up(&self, run: &Run, agent: &str, hold: RefillHold) {
        let first_request = self.inner.agents.first_proxied_request(agent);
        let mut end = run.end.subscribe();
        let task = run.id.clone();
        tokio::spawn(async move {
            // Without a voucher there is nothing to wait for.
            let first_request = async {
                if let Some(first_request) = first_request {
                    first_request.await;
                }
            };
            let why = tokio::select! {
                () = first_request => "its agent reached its model",
                _ = end.wait_for(Option::is_some) => "it ended",
                () = tokio::time::sleep(REFILL_HOLD_LIMIT) => "its agent is slow to start",
            };
            drop(hold);
            info!(%task, "the warm pool refills: {why}");
        });
    }

    /// Records what an agent event says; an ending when it ends the task.
    fn on_event(&self, run: &Run, event: &Value) -> Option<Ending> {
        let text = |key: &str| event.get(key).and_then(Value::as_str).map(str::to_owned);
        match event.get("type").and_then(Value::as_str)? {
            "assistant_message_completed" => {
                let message = text("text").filter(|text| !text.trim().is_empty())?;
                let filtered = filtered_text(&message);
                run.summary().last_message = Some(filtered.clone());
                self.note(run, "message", Some(filtered), None);
                self.persist(run);
                None
            }
            "permission_requested" => {
                let tool = text("tool");
                let seq = run.next_seq.fetch_add(1, Ordering::SeqCst);
                let mut arguments = event.get("input").cloned();
                if let Some(arguments) = arguments.as_mut() {
                    filter_value(arguments);
                }
                let step = TrajectoryStep {
                    seq,
                    at_unix_ms: unix_ms(),
                    kind: "denied".to_owned(),
                    text: Some(
                        "permission denied: a task's agent may use only its device tools"
                            .to_owned(),
                    ),
                    tool,
                    arguments,
                    ok: Some(false),
                    outcome: None,
                    duration_ms: None,
                    screenshot: false,
                };
                self.append(&run.owner(), seq, step, None);
                None
            }
            "turn_completed" => match event.get("outcome").and_then(Value::as_str) {
                Some("completed") => {
                    if run
                        .pending_messages
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        // A message sent during this turn is answered by the next one.
                        return None;
                    }
                    let mut summary = run.summary();
                    summary.result = summary.last_message.clone();
                    drop(summary);
                    Some(Ending {
                        state: TaskState::Completed,
                        reason: None,
                    })
                }
                Some("interrupted") => None,
                _ => Some(Ending::failed(format!(
                    "agent_failed: {}",
                    text("reason").unwrap_or_else(|| "the turn failed".to_owned())
                ))),
            },
            "command_failed" => Some(Ending::failed(format!(
                "agent_failed: {}",
                text("reason").unwrap_or_default()
            ))),
            _ => None,
        }
    }

    async fn open_agent(&self, run: &Run) -> Result<String, ControlError> {
        let agents = &self.inner.agents;
        let command = agents.paddock_command().ok_or_else(|| {
            ControlError::new(
                ErrorCode::Internal,
                "the daemon does not know its own executable, which the agent's MCP server runs",
            )
        })?;
        let cwd = self.inner.dir.join(&run.id);
        crate::files::create_private_dir(&self.inner.dir)
            .and_then(|()| crate::files::create_private_dir(&cwd))
            .map_err(|error| ControlError::new(ErrorCode::Internal, error.to_string()))?;
        let backend = run
            .request
            .backend
            .clone()
            .unwrap_or_else(|| self.inner.options.default_backend.clone());
        let opened = agents
            .open_with(
                AgentsOpenParams {
                    backend,
                    cwd,
                    model: run.request.model.clone(),
                    mode: None,
                    instructions: Some(INSTRUCTIONS.to_owned()),
                    env: Vec::new(),
                    bot: None,
                    permissions: Some("deny".to_owned()),
                    upstream: None,
                    prompt: Some(SensitiveText::new(&run.request.goal)),
                    sandbox: None,
                },
                LaunchExtras {
                    mcp_servers: vec![McpServer {
                        name: MCP_SERVER_NAME.to_owned(),
                        command: command.to_path_buf(),
                        args: vec!["mcp".to_owned()],
                        env: Vec::new(),
                    }],
                    tools: ToolAccess::McpOnly,
                    task: Some(run.id.clone()),
                },
            )
            .await?;
        Ok(opened.session.id)
    }

    /// After the end: the agent stopped, a last screenshot, the device back, the task stored.
    async fn clean_up(&self, run: &Run, ending: Ending) {
        let agent = run
            .agent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(agent) = agent {
            let stopped = self
                .inner
                .agents
                .stop(AgentsStopParams {
                    id: agent,
                    reason: Some(format!("its task ended ({})", ending.state.as_str())),
                    force_after_ms: Some(
                        u64::try_from(AGENT_STOP_GRACE.as_millis()).unwrap_or(u64::MAX),
                    ),
                })
                .await;
            if let Err(error) = stopped {
                info!(task = %run.id, error = %error.message, "the task's agent was already gone");
            }
        }
        let what = match &ending.reason {
            Some(reason) => format!("{}: {reason}", ending.state.as_str()),
            None => ending.state.as_str().to_owned(),
        };
        let seq = self.note(run, "end", Some(what), None);
        if let Ok(device) = self.inner.pool.device(run.session.as_str())
            && device.is_alive()
        {
            self.keep_screenshot(&run.owner(), seq, device.as_ref())
                .await;
        }
        let _ = self
            .inner
            .pool
            .release(run.session.as_str(), "released when its task ended")
            .await;
        {
            let mut summary = run.summary();
            summary.state = ending.state;
            summary.reason = ending.reason.clone();
            summary.steps = run.tool_calls.load(Ordering::SeqCst);
            summary.ended_at_unix_ms = Some(unix_ms());
        }
        self.persist(run);
        self.lock_live().remove(&run.id);
        info!(task = %run.id, state = ending.state.as_str(), reason = ?ending.reason, "task ended");
        run.done.send_replace(true);
    }

    fn check_request(&self, request: &TaskRequest) -> Result<String, ToolError> {
        let backend = request
            .backend
            .clone()
            .unwrap_or_else(|| self.inner.options.default_backend.clone());
        if paddock_agents::BackendId::parse(&backend).is_none() {
            return Err(ToolError::invalid_input(format!(
                "unknown backend `{backend}`; known: claude, codex, opencode, pi, cursor"
            )));
        }
        if let Some(app) = &request.app
            && !paddock_tools::Backend::apps(&self.inner.pool)
                .iter()
                .any(|known| &known.id == app)
        {
            return Err(ToolError::not_found(format!(
                "no app `{app}` is configured; see listApps"
            )));
        }
        if let Some(id) = &request.device_id
            && !paddock_tools::Backend::list_devices(&self.inner.pool, None)
                .iter()
                .any(|device| &device.id == id)
        {
            return Err(ToolError::not_found(format!(
                "no device `{id}` in the pool; listDevices shows them"
            )));
        }
        // The task policy names catalog tools only, so it answers for unknown names too.
        for name in &request.enable_tools {
            if !self.inner.policy.allows_tool(name) {
                return Err(ToolError::invalid_input(format!(
                    "`{name}` in `enableTools` is not a device tool a task's agent may use"
                )));
            }
        }
        Ok(backend)
    }

    fn start(&self, request: TaskRequest) -> Result<TaskStarted, ToolError> {
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Err(ToolError::new(
                ToolErrorCode::Unavailable,
                "the daemon is shutting down and starts no tasks",
            ));
        }
        let backend = self.check_request(&request)?;
        let id = format!(
            "tsk-{}-{}",
            self.inner.boot,
            self.inner.next.fetch_add(1, Ordering::SeqCst)
        );
        let session = SessionKey::parse(&format!("task-{id}"))?;
        if !request.enable_tools.is_empty() {
            let choices: Choices = request
                .enable_tools
                .iter()
                .map(|name| (name.clone(), true))
                .collect();
            self.inner
                .store
                .write_choices(&ChoiceScope::Session(session.as_str().to_owned()), &choices)
                .map_err(|error| ToolError::internal(error.to_string()))?;
        }
        let summary = TaskSummary {
            task_id: id.clone(),
            goal: filtered_text(&request.goal),
            state: TaskState::Queued,
            reason: None,
            backend,
            device_id: None,
            steps: 0,
            max_steps: request.max_steps,
            last_message: None,
            result: None,
            created_at_unix_ms: unix_ms(),
            ended_at_unix_ms: None,
        };
        put(&self.inner.store, &summary).map_err(|error| ToolError::internal(error.to_string()))?;
        let (end, _) = watch::channel(None);
        let (done, _) = watch::channel(false);
        let run = Arc::new(Run {
            id: id.clone(),
            session,
            request,
            summary: Mutex::new(summary),
            next_seq: AtomicU64::new(1),
            tool_calls: AtomicU64::new(0),
            agent: Mutex::new(None),
            pending_messages: AtomicU64::new(0),
            end,
            done,
        });
        self.lock_live().insert(id.clone(), run.clone());
        info!(task = %id, "task queued");
        tokio::spawn(self.clone().drive(run));
        Ok(TaskStarted {
            task_id: id,
            state: TaskState::Queued,
        })
    }

    fn steps_of(&self, owner: &str) -> Result<Vec<StoredBody>, ToolError> {
        let mut all = Vec::new();
        let mut after = 0;
        loop {
            let page = self
                .inner
                .store
                .steps(owner, after, 500)
                .map_err(|error| ToolError::internal(error.to_string()))?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            all.extend(
                page.iter()
                    .filter_map(|stored| serde_json::from_str::<StoredBody>(&stored.body).ok()),
            );
        }
        Ok(all)
    }
}

fn put(store: &Store, summary: &TaskSummary) -> anyhow::Result<()> {
    let body = serde_json::to_string(summary)?;
    store.put_task(
        &summary.task_id,
        summary.state.as_str(),
        summary.created_at_unix_ms,
        &body,
    )?;
    Ok(())
}

/// Text through the PII default filters; text they cannot judge in time is withheld.
fn filtered_text(text: &str) -> String {
    match paddock_pii::redact_defaults(text) {
        Ok(redacted) => redacted.text,
        Err(_) => "[withheld: the PII filters could not check this text]".to_owned(),
    }
}

/// Every string in `value` through the PII default filters.
fn filter_value(value: &mut Value) {
    match value {
        Value::String(text) => *text = filtered_text(text),
        Value::Array(items) => items.iter_mut().for_each(filter_value),
        Value::Object(map) => map.values_mut().for_each(filter_value),
        _ => {}
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A stored call (see [`stored_call`]: already filtered) as a trajectory step.
fn tool_step(seq: u64, call: &RecordedCall) -> TrajectoryStep {
    TrajectoryStep {
        seq,
        at_unix_ms: unix_ms(),
        kind: "tool".to_owned(),
        text: None,
        tool: Some(call.tool.clone()),
        arguments: Some(Value::Object(call.arguments.clone())),
        ok: Some(call.ok),
        outcome: Some(call.outcome.clone()),
        duration_ms: Some(call.duration_ms),
        screenshot: false,
    }
}

/// The stored form of a call: its arguments (passwords already masked) and outcome through
/// the PII default filters; the trajectory step is built from it. The plan arguments stay as
/// typed (a replay must type the same text); password text is already a variable there.
fn stored_call(mut call: RecordedCall) -> RecordedCall {
    let mut arguments = Value::Object(std::mem::take(&mut call.arguments));
    filter_value(&mut arguments);
    if let Value::Object(map) = arguments {
        call.arguments = map;
    }
    call.outcome = filtered_text(&call.outcome);
    call
}

/// Records a task's agent's calls and enforces its `maxSteps`.
struct TaskRecorder {
    host: TaskHost,
    run: Arc<Run>,
}

impl CallRecorder for TaskRecorder {
    fn admit(&self, _session: &SessionKey, _tool: &str) -> Result<(), ToolError> {
        let max = u64::from(self.run.request.max_steps);
        let admitted =
            self.run
                .tool_calls
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |count| {
                    (count < max).then_some(count + 1)
                });
        match admitted {
            Ok(_) => {
                self.run.summary().steps = self.run.tool_calls.load(Ordering::SeqCst);
                Ok(())
            }
            Err(_) => {
                self.run.finish(Ending::failed("max_steps"));
                Err(ToolError::forbidden(format!(
                    "this task has used all of its {max} steps (maxSteps); it has ended"
                )))
            }
        }
    }

    fn refused(&self, tool: &str, arguments: &serde_json::Map<String, Value>, error: &ToolError) {
        // A refused call is a tool call too: it counts against `maxSteps`.
        if self.admit(&self.run.session, tool).is_err() {
            return;
        }
        let mut arguments = arguments.clone();
        if tool == "inputText" && arguments.contains_key("text") {
            // Nothing says which field it was meant for: typed text is never stored.
            arguments.insert(
                "text".into(),
                Value::String(paddock_tools::recording::MASK.into()),
            );
        }
        self.record(
            &self.run.session,
            RecordedCall {
                tool: tool.to_owned(),
                arguments,
                plan_arguments: None,
                ok: false,
                outcome: error.to_string(),
                duration_ms: 0,
                ui_state: None,
            },
        );
    }

    fn record(&self, _session: &SessionKey, call: RecordedCall) {
        let run = &self.run;
        let seq = run.next_seq.fetch_add(1, Ordering::SeqCst);
        let call = stored_call(call);
        let mut step = tool_step(seq, &call);
        let every = self.host.inner.options.screenshot_every;
        let count = run.tool_calls.load(Ordering::SeqCst);
        let shoot = call.ui_state.is_some() && every > 0 && count.is_multiple_of(every);
        step.screenshot = shoot;
        self.host.append(&run.owner(), seq, step, Some(call));
        if shoot && let Ok(device) = self.host.inner.pool.device(run.session.as_str()) {
            let host = self.host.clone();
            let owner = run.owner();
            tokio::spawn(async move {
                host.keep_screenshot(&owner, seq, device.as_ref()).await;
            });
        }
    }
}

/// Records the owner's sessions' calls (`--tool-call-recording`). Steps are numbered after the
/// session's last stored one, one call at a time (a session may have several connections).
struct SessionRecorder {
    host: TaskHost,
    numbering: Mutex<()>,
}

impl CallRecorder for SessionRecorder {
    fn admit(&self, _session: &SessionKey, _tool: &str) -> Result<(), ToolError> {
        Ok(())
    }

    fn record(&self, session: &SessionKey, call: RecordedCall) {
        let owner = session_owner(session);
        let _numbering = self
            .numbering
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let seq = match self.host.inner.store.last_step(&owner) {
            Ok(last) => last.unwrap_or(0) + 1,
            Err(error) => {
                warn!(%owner, %error, "could not number a recorded call");
                return;
            }
        };
        let call = stored_call(call);
        let step = tool_step(seq, &call);
        self.host.append(&owner, seq, step, Some(call));
    }
}

fn not_running(task: &str, summary: &TaskSummary) -> ToolError {
    ToolError::invalid_input(format!(
        "task `{task}` has ended ({}); it takes no more messages",
        summary.status_line()
    ))
}

impl TaskBackend for TaskHost {
    fn run(&self, request: TaskRequest) -> BoxFuture<'_, Result<TaskStarted, ToolError>> {
        Box::pin(async move { self.start(request) })
    }

    fn summary(&self, task_id: &str) -> BoxFuture<'_, Result<TaskSummary, ToolError>> {
        let found = self.find(task_id);
        Box::pin(async move { found })
    }

    fn trajectory(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<TrajectoryPage, ToolError>> {
        let task_id = task_id.to_owned();
        Box::pin(async move {
            self.find(&task_id)?;
            let page = self
                .inner
                .store
                .steps(&task_owner(&task_id), after, limit.saturating_add(1))
                .map_err(|error| ToolError::internal(error.to_string()))?;
            let more = page.len() > limit;
            let steps: Vec<TrajectoryStep> = page
                .iter()
                .take(limit)
                .filter_map(|stored| {
                    let mut body = serde_json::from_str::<StoredBody>(&stored.body).ok()?;
                    body.step.screenshot = stored.has_image;
                    Some(body.step)
                })
                .collect();
            let next_cursor = more
                .then(|| page.get(limit.saturating_sub(1)))
                .flatten()
                .map(|last| last.seq.to_string());
            Ok(TrajectoryPage {
                task_id,
                steps,
                next_cursor,
            })
        })
    }

    fn list(&self, state: Option<TaskState>) -> BoxFuture<'_, Result<Vec<TaskSummary>, ToolError>> {
        Box::pin(async move {
            let bodies = self
                .inner
                .store
                .tasks(state.map(TaskState::as_str))
                .map_err(|error| ToolError::internal(error.to_string()))?;
            Ok(bodies
                .iter()
                .filter_map(|body| serde_json::from_str::<TaskSummary>(body).ok())
                .map(|stored| match self.live(&stored.task_id) {
                    Some(run) => run.summary().clone(),
                    None => stored,
                })
                .collect())
        })
    }

    fn stop(&self, task_id: &str) -> BoxFuture<'_, Result<TaskSummary, ToolError>> {
        let task_id = task_id.to_owned();
        Box::pin(async move {
            let Some(run) = self.live(&task_id) else {
                // Already over: its summary says how it ended.
                return self.find(&task_id);
            };
            run.finish(Ending {
                state: TaskState::Stopped,
                reason: Some("stopped by the owner".to_owned()),
            });
            let mut done = run.done.subscribe();
            let _ = done.wait_for(|done| *done).await;
            self.find(&task_id)
        })
    }

    fn send(
        &self,
        task_id: &str,
        text: &str,
    ) -> BoxFuture<'_, Result<TaskMessageReceipt, ToolError>> {
        let task_id = task_id.to_owned();
        let text = text.to_owned();
        Box::pin(async move {
            let Some(run) = self.live(&task_id) else {
                return Err(not_running(&task_id, &self.find(&task_id)?));
            };
            let agent = run
                .agent
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
                .ok_or_else(|| {
                    ToolError::new(
                        ToolErrorCode::Unavailable,
                        format!("task `{task_id}`'s agent has not started yet; send again shortly"),
                    )
                })?;
            let receipt = self
                .inner
                .agents
                .send(AgentsSendParams {
                    id: agent,
                    text: SensitiveText::new(&text),
                })
                .await
                .map_err(|error| ToolError::new(ToolErrorCode::Unavailable, error.message))?;
            if receipt.receipt != "rejected" {
                run.pending_messages.fetch_add(1, Ordering::SeqCst);
                self.note(&run, "user", Some(text), None);
            }
            Ok(TaskMessageReceipt {
                task_id,
                receipt: receipt.receipt,
                reason: receipt.reason,
            })
        })
    }

    fn media(
        &self,
        task_id: &str,
        kind: MediaKind,
        step: Option<u64>,
    ) -> BoxFuture<'_, Result<TaskMedia, ToolError>> {
        let task_id = task_id.to_owned();
        Box::pin(async move {
            self.find(&task_id)?;
            let owner = task_owner(&task_id);
            let missing = || {
                ToolError::not_found(match step {
                    Some(step) => {
                        format!("task `{task_id}` has no {} at step {step}", kind_name(kind))
                    }
                    None => format!("task `{task_id}` has no {} yet", kind_name(kind)),
                })
            };
            match kind {
                MediaKind::Screenshot => {
                    let (seq, jpeg) = self
                        .inner
                        .store
                        .step_image(&owner, step)
                        .map_err(|error| ToolError::internal(error.to_string()))?
                        .ok_or_else(missing)?;
                    Ok(TaskMedia::Screenshot {
                        step: Some(seq),
                        jpeg,
                    })
                }
                MediaKind::UiState => {
                    let steps = self.steps_of(&owner)?;
                    let found = steps
                        .into_iter()
                        .rev()
                        .filter(|body| step.is_none_or(|wanted| body.step.seq == wanted))
                        .find_map(|body| {
                            let state = body.call?.ui_state?;
                            Some((body.step.seq, state))
                        })
                        .ok_or_else(missing)?;
                    Ok(TaskMedia::UiState {
                        step: Some(found.0),
                        state: found.1,
                    })
                }
            }
        })
    }

    fn recorded(&self, source: PlanSource) -> BoxFuture<'_, Result<Vec<RecordedCall>, ToolError>> {
        Box::pin(async move {
            let owner = match &source {
                PlanSource::Task(task) => {
                    self.find(task)?;
                    task_owner(task)
                }
                PlanSource::Session(session) => {
                    if !self.inner.options.record_sessions {
                        return Err(ToolError::new(
                            ToolErrorCode::Unavailable,
                            "this daemon does not record sessions' tool calls; start it with `--tool-call-recording` to export a session's plan",
                        ));
                    }
                    session_owner(session)
                }
            };
            let calls: Vec<RecordedCall> = self
                .steps_of(&owner)?
                .into_iter()
                .filter_map(|body| body.call)
                .collect();
            if calls.is_empty() && matches!(source, PlanSource::Session(_)) {
                return Err(ToolError::not_found(
                    "no tool calls are recorded for this session",
                ));
            }
            Ok(calls)
        })
    }
}

fn kind_name(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Screenshot => "screenshot",
        MediaKind::UiState => "screen state",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, state: TaskState) -> TaskSummary {
        TaskSummary {
            task_id: id.to_owned(),
            goal: "a goal".to_owned(),
            state,
            reason: None,
            backend: "claude".to_owned(),
            device_id: None,
            steps: 0,
            max_steps: 50,
            last_message: None,
            result: Some("done".to_owned()).filter(|_| state == TaskState::Completed),
            created_at_unix_ms: 1,
            ended_at_unix_ms: None,
        }
    }

    #[tokio::test]
    async fn tasks_a_previous_daemon_left_unfinished_fail_as_daemon_restarted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&dir.path().join("paddock.db")).unwrap());
        put(&store, &summary("tsk-old-1", TaskState::Running)).unwrap();
        put(&store, &summary("tsk-old-2", TaskState::Queued)).unwrap();
        put(&store, &summary("tsk-old-3", TaskState::Completed)).unwrap();
        let broker = paddock_credentials::CredentialBroker::start(
            paddock_credentials::CredentialBrokerConfig::default(),
        )
        .await
        .unwrap();
        let agents = AgentsHost::new(
            broker,
            dir.path(),
            None,
            paddock_client::ClientEnv::from_process(),
            None,
            &paddock_client::config::AgentsConfig::default(),
        )
        .unwrap();
        let pool = Pool::new(
            paddock_devices::PoolConfig::default(),
            store.clone(),
            "test".to_owned(),
        );
        let host = TaskHost::new(
            store,
            pool,
            agents,
            "uid:0".to_owned(),
            dir.path(),
            TaskOptions::default(),
        )
        .unwrap();
        for id in ["tsk-old-1", "tsk-old-2"] {
            let ended = host.summary(id).await.unwrap();
            assert_eq!(ended.state, TaskState::Failed, "{id}");
            assert_eq!(ended.reason.as_deref(), Some("daemon_restarted"), "{id}");
            assert!(ended.ended_at_unix_ms.is_some());
        }
        let done = host.summary("tsk-old-3").await.unwrap();
        assert_eq!(done.state, TaskState::Completed);
        assert_eq!(done.result.as_deref(), Some("done"));
        assert_eq!(
            host.summary("tsk-none").await.unwrap_err().code,
            ToolErrorCode::NotFound
        );
    }

    #[test]
    fn pii_filters_reach_every_string_of_the_arguments() {
        let mut arguments = serde_json::json!({
            "text": "mail ada@example.com",
            "nested": { "list": ["call +1 415 555 0100", 3] },
        });
        filter_value(&mut arguments);
        let text = arguments.to_string();
        assert!(!text.contains("ada@example.com"), "{text}");
        assert!(!text.contains("555 0100"), "{text}");
        assert_eq!(arguments["nested"]["list"][1], 3);
    }
}
