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

/// A stdio MCP server the agent is given. [`McpServer::check`] is what `open` accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The server's name as the runtime shows it (tools become e.g. `mcp__<name>__<tool>` in
    /// Claude Code): 1 to 32 characters of `a-z`, `0-9`, `_` and `-`.
    pub name: String,
    /// The server's executable, an absolute path.
    pub command: PathBuf,
    pub args: Vec<String>,
    /// Variables the server process gets (names and values are not secrets: paths only).
    /// Some runtimes (Codex) give an MCP server little or nothing of their own environment,
    /// so this must carry everything the server needs.
    pub env: Vec<(String, String)>,
}

/// The longest [`McpServer::name`].
pub const MCP_SERVER_NAME_MAX: usize = 32;

impl McpServer {
    /// [`McpServer::env`] as a JSON object of strings, the shape JSON configs take it in.
    pub(crate) fn env_object(&self) -> serde_json::Map<String, Value> {
        self.env
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect()
    }

    /// Why the runtimes cannot be given this server, if they cannot. The name becomes part of
    /// tool names, config keys and permission rules, so it is held to a set every runtime
    /// takes as it is; every value is written into a text config (JSON or TOML), so the
    /// command must be UTF-8, and nothing may hold a NUL, which no process can receive.
    pub fn check(&self) -> Result<(), OpenError> {
        let invalid = |problem: String| OpenError::InvalidMcpServer {
            name: self.name.clone(),
            problem,
        };
        let name_ok = (1..=MCP_SERVER_NAME_MAX).contains(&self.name.len())
            && self
                .name
                .bytes()
                .all(|byte| matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'));
        if !name_ok {
            return Err(invalid(format!(
                "the name must be 1 to {MCP_SERVER_NAME_MAX} characters of `a-z`, `0-9`, `_` and `-`"
            )));
        }
        let Some(command) = self.command.to_str() else {
            return Err(invalid(format!(
                "the command `{}` is not valid UTF-8",
                self.command.display()
            )));
        };
        if !self.command.is_absolute() {
            return Err(invalid(format!(
                "the command `{command}` is not an absolute path"
            )));
        }
        if command.contains('\0') || self.args.iter().any(|arg| arg.contains('\0')) {
            return Err(invalid("the command or an argument holds a NUL".into()));
        }
        for (variable, value) in &self.env {
            if variable.is_empty() || variable.contains(['=', '\0']) || value.contains('\0') {
                return Err(invalid(format!(
                    "the variable `{variable}` needs a name without `=` and a value without NUL"
                )));
            }
        }
        Ok(())
    }
}

/// Which tools the agent may use without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolAccess {
    /// The runtime's own defaults (today's behaviour).
    #[default]
    Default,
    /// Unattended: only the tools of `mcp_servers` are pre-approved; the runtime's own shell,
    /// file-edit, file-read and web tools are disabled or denied. What each runtime can and
    /// cannot switch off is documented on its adapter.
    McpOnly,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentConfig {
    pub model: Model,
    pub mode: Mode,
    /// MCP servers the runtime starts for the session (stdio). A runtime without an MCP
    /// client refuses a non-empty list at `open` ([`OpenError::NoMcpClient`]).
    pub mcp_servers: Vec<McpServer>,
    pub tools: ToolAccess,
}

impl AgentConfig {
    /// Checks every MCP server and that no two share a name (a runtime would keep one).
    pub fn check_mcp_servers(&self) -> Result<(), OpenError> {
        for (index, server) in self.mcp_servers.iter().enumerate() {
            server.check()?;
            if self.mcp_servers[..index]
                .iter()
                .any(|earlier| earlier.name == server.name)
            {
                return Err(OpenError::InvalidMcpServer {
                    name: server.name.clone(),
                    problem: "another server has the same name".into(),
                });
            }
        }
        Ok(())
    }
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
    #[error("MCP server `{name}` cannot be given to the agent: {problem}")]
    InvalidMcpServer { name: String, problem: String },
    #[error(
        "`{backend}` has no MCP client, so it cannot be given MCP servers; hint: use a backend that has one (claude, codex, opencode, cursor)"
    )]
    NoMcpClient { backend: BackendId },
}

impl OpenError {
    /// Whether the request itself asked for something this launch cannot give (a bad MCP
    /// server, MCP servers for a runtime without an MCP client): retrying will not help.
    pub fn is_invalid_request(&self) -> bool {
        matches!(
            self,
            Self::InvalidMcpServer { .. } | Self::NoMcpClient { .. }
        )
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn server(name: &str) -> McpServer {
        McpServer {
            name: name.into(),
            command: "/opt/paddock/bin/paddock".into(),
            args: vec!["mcp".into()],
            env: vec![("PADDOCK_STATE".into(), "/state".into())],
        }
    }

    fn problem(server: McpServer) -> String {
        match server.check() {
            Err(OpenError::InvalidMcpServer { problem, .. }) => problem,
            other => panic!("expected InvalidMcpServer, got {other:?}"),
        }
    }

    #[test]
    fn mcp_server_names_and_commands_are_checked() {
        assert_eq!(server("paddock").check(), Ok(()));
        assert_eq!(server("a").check(), Ok(()));
        assert_eq!(server("device_2-x").check(), Ok(()));
        assert_eq!(server(&"a".repeat(32)).check(), Ok(()));
        for bad in [
            "",
            "Paddock",
            "pad dock",
            "pad.dock",
            "päddock",
            &"a".repeat(33),
        ] {
            let error = server(bad).check().unwrap_err();
            assert!(error.is_invalid_request());
            assert!(
                error.to_string().contains(&format!("MCP server `{bad}`")),
                "{error}"
            );
            assert!(error.to_string().contains("1 to 32 characters"), "{error}");
        }
        let relative = McpServer {
            command: "bin/paddock".into(),
            ..server("paddock")
        };
        assert!(problem(relative).contains("`bin/paddock` is not an absolute path"));
        let nul = McpServer {
            args: vec!["a\0b".into()],
            ..server("paddock")
        };
        assert!(problem(nul).contains("NUL"));
        let variable = McpServer {
            env: vec![("A=B".into(), "x".into())],
            ..server("paddock")
        };
        assert!(problem(variable).contains("`A=B`"));
    }

    #[test]
    fn two_servers_may_not_share_a_name() {
        let config = AgentConfig {
            mcp_servers: vec![server("paddock"), server("other"), server("paddock")],
            ..AgentConfig::default()
        };
        assert_eq!(
            config.check_mcp_servers(),
            Err(OpenError::InvalidMcpServer {
                name: "paddock".into(),
                problem: "another server has the same name".into(),
            })
        );
        assert_eq!(AgentConfig::default().check_mcp_servers(), Ok(()));
    }

    proptest! {
        #[test]
        fn names_of_the_allowed_set_pass(name in "[a-z0-9_-]{1,32}") {
            prop_assert_eq!(server(&name).check(), Ok(()));
        }

        #[test]
        fn a_name_with_any_other_character_fails(
            prefix in "[a-z0-9_-]{0,10}",
            other in any::<char>().prop_filter("outside the set", |c| {
                !matches!(c, 'a'..='z' | '0'..='9' | '_' | '-')
            }),
        ) {
            let name = format!("{prefix}{other}");
            prop_assert!(server(&name).check().is_err());
        }
    }
}
