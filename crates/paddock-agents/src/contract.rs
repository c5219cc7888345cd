//! The public contract: requests, receipts, events, snapshots and terminal facts.

use std::fmt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;

/// The agent runtimes Paddock knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendId {
    Claude,
    Codex,
    OpenCode,
    Pi,
    Cursor,
}

impl BackendId {
    pub const ALL: [BackendId; 5] = [
        Self::Claude,
        Self::Codex,
        Self::OpenCode,
        Self::Pi,
        Self::Cursor,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::OpenCode => "opencode",
            Self::Pi => "pi",
            Self::Cursor => "cursor",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|backend| backend.as_str() == text)
    }
}

impl fmt::Display for BackendId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How long one runtime process lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// One process spans many turns.
    Session,
    /// One process per turn.
    Turn,
}

/// How the runtime is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Process,
    InProcessSdk,
    Service,
}

/// What happens to a message that arrives while a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MidTurnDelivery {
    /// Queued and delivered when the turn reaches a safe boundary (its end).
    SafeBoundaryQueue,
    /// Steers the running turn.
    Steer,
    /// Refused.
    Reject,
}

impl Lifetime {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Turn => "turn",
        }
    }
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Process => "process",
            Self::InProcessSdk => "in_process_sdk",
            Self::Service => "service",
        }
    }
}

impl MidTurnDelivery {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SafeBoundaryQueue => "safe_boundary_queue",
            Self::Steer => "steer",
            Self::Reject => "reject",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub lifetime: Lifetime,
    pub transport: Transport,
    pub mid_turn_delivery: MidTurnDelivery,
}

/// What `probe` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub backend: BackendId,
    pub installed: bool,
    pub program: Option<PathBuf>,
    pub version: Option<String>,
    pub capabilities: Capabilities,
    /// Why it is not usable, when it is not.
    pub problem: Option<String>,
}

/// Instructions given to the agent at launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instructions {
    pub format: InstructionsFormat,
    pub content: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstructionsFormat {
    Markdown,
    Text,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub working_directory: PathBuf,
    pub instructions: Option<Instructions>,
    /// The host's id for this launch; names the launch directory.
    pub launch_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Model {
    #[default]
    Default,
    Named(String),
}

/// The runtime's permission mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Tools that need permission raise `PermissionRequested`.
    #[default]
    Default,
    /// File edits are allowed without asking.
    AcceptEdits,
    /// Read-only planning.
    Plan,
    /// Every tool runs without asking.
    BypassPermissions,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentConfig {
    pub model: Model,
    pub mode: Mode,
}

/// Everything `open` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRequest {
    pub backend: BackendId,
    pub launch: Launch,
    pub config: AgentConfig,
    /// Environment the host adds for this launch (above the host layer).
    pub env: Vec<(String, String)>,
}

/// A message for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The host's id; receipts and events refer to it.
    pub id: String,
    pub text: String,
}

impl Command {
    pub fn user(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            text: text.into(),
        }
    }
}

/// The answer to `start` or `send`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Receipt {
    /// Delivered to the runtime now.
    Accepted,
    /// Waiting behind the running turn; `position` 1 is next.
    Queued {
        position: usize,
    },
    Rejected {
        reason: String,
    },
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    Completed,
    Interrupted,
    Failed(String),
}

/// A permission answer.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionDecision {
    Allow,
    Deny { message: String },
}

/// Normalised events, the same for every runtime.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    SessionStarted {
        vendor_session_id: Option<String>,
    },
    CommandAccepted {
        command_id: String,
    },
    CommandFailed {
        command_id: String,
        reason: String,
    },
    TurnStarted {
        command_id: String,
    },
    AssistantTextDelta {
        text: String,
    },
    AssistantMessageCompleted {
        text: String,
    },
    ToolCallStarted {
        call_id: String,
        name: String,
        input: Value,
    },
    ToolCallFinished {
        call_id: String,
        is_error: bool,
        output: String,
    },
    PermissionRequested {
        request_id: String,
        tool: String,
        input: Value,
    },
    Usage {
        input_tokens: u64,
        output_tokens: u64,
    },
    TurnCompleted {
        command_id: String,
        outcome: TurnOutcome,
    },
    Error {
        message: String,
    },
}

impl AgentEvent {
    /// A short type name, for logs and `--json` output.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::SessionStarted { .. } => "session_started",
            Self::CommandAccepted { .. } => "command_accepted",
            Self::CommandFailed { .. } => "command_failed",
            Self::TurnStarted { .. } => "turn_started",
            Self::AssistantTextDelta { .. } => "assistant_text_delta",
            Self::AssistantMessageCompleted { .. } => "assistant_message_completed",
            Self::ToolCallStarted { .. } => "tool_call_started",
            Self::ToolCallFinished { .. } => "tool_call_finished",
            Self::PermissionRequested { .. } => "permission_requested",
            Self::Usage { .. } => "usage",
            Self::TurnCompleted { .. } => "turn_completed",
            Self::Error { .. } => "error",
        }
    }
}

/// The logical state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Launched; no command yet.
    Ready,
    Idle,
    Busy,
    Stopping,
    Closed,
}

/// `snapshot()`: logical state without process or SDK objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub backend: BackendId,
    pub state: SessionState,
    pub current_command: Option<String>,
    pub queued: Vec<String>,
    pub vendor_session_id: Option<String>,
    pub pid: Option<u32>,
    pub pending_permissions: Vec<String>,
}

/// Why the session closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// `stop` was called.
    Stopped { reason: String, forced: bool },
    /// The runtime exited on its own or was killed.
    Crashed,
}

/// What `closed` reports, exactly once.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedFacts {
    pub reason: CloseReason,
    pub exit_status: Option<ExitStatus>,
    /// Commands that never ran, each reported as `CommandFailed`.
    pub failed_commands: Vec<String>,
    /// Whether the launch directory was removed.
    pub launch_dir_removed: bool,
    /// Whether the process group is gone.
    pub processes_reaped: bool,
}

/// `stop` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopRequest {
    pub reason: String,
    /// After this, the process group is killed.
    pub force_after: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("backend `{backend}` is not installed")]
    NotInstalled { backend: BackendId },
    #[error("backend `{backend}` is not supported by this release")]
    Unsupported { backend: BackendId },
    #[error("`{backend}` {version} is not supported: this release drives {supported}")]
    UnsupportedVersion {
        backend: BackendId,
        version: String,
        supported: String,
    },
    #[error("could not prepare the launch directory: {0}")]
    LaunchDir(String),
    #[error("could not start `{program}`: {message}")]
    Spawn { program: String, message: String },
    #[error("working directory `{0}` does not exist")]
    WorkingDirectory(PathBuf),
    #[error(
        "`{backend}` calls a model API, and no credential broker is configured; launches never get a real key"
    )]
    NoCredentialBroker { backend: BackendId },
    #[error("could not mint credentials for the launch: {0}")]
    Credentials(String),
    #[error("cannot sandbox the launch: {0}")]
    Sandbox(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("the session is closed")]
    Closed,
    #[error("no turn is running")]
    NotBusy,
    #[error("no permission request `{0}` is pending")]
    UnknownPermission(String),
    #[error("could not write to the agent: {0}")]
    Write(String),
}
