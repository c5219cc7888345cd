//! The ACP lane: any agent that speaks the Agent Client Protocol (JSON-RPC 2.0 over stdio,
//! one message per `\n`-terminated line) behind the session contract. An [`AcpProfile`] says
//! how to start one agent (program, arguments, auth method, model API, backend id); the
//! protocol is the same for all of them.
//!
//! Lifetime `session`, mid-turn delivery `steer`: the root command of a turn is one
//! `session/prompt` request; a command that arrives while the turn runs is a concurrent
//! `session/prompt` with its own JSON-RPC id. The turn ends once the root prompt and every
//! steer of that turn have been answered, and the root's `stopReason` decides the outcome. A
//! response whose id is not the running turn's root or one of its steers (an answer to an
//! earlier turn) is ignored, so it can never settle the current turn. Interrupt is the
//! `session/cancel` notification: the process keeps running and the agent answers the pending
//! prompts with `stopReason: cancelled`.
//!
//! The client advertises no file-system and no terminal capability; any request the agent
//! makes that the lane does not serve (`fs/*`, `terminal/*`, vendor extensions) is answered
//! with a JSON-RPC error at once, so the agent never waits on us.
//!
//! The request's MCP servers go into `session/new` (and `session/load`) as ACP stdio servers
//! (`name`, `command`, `args`, `env` as `{name, value}` pairs); every ACP agent must take
//! those. ACP has no way to switch an agent's own tools off, so [`ToolAccess::McpOnly`]
//! changes nothing on the wire: the agent's tool calls still come as
//! `session/request_permission`, and the host's answers (its permission policy) decide which
//! run. An agent that runs a tool without asking is not held back.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::{Adapter, AdapterDescriptor, Decoded, LaunchPlan, Prepared, Protocol};
#[cfg(doc)]
use crate::contract::ToolAccess;
use crate::contract::{
    AgentEvent, BackendId, Capabilities, Command, Lifetime, McpServer, MidTurnDelivery, Mode,
    Model, OpenRequest, PermissionDecision, Transport, TurnOutcome,
};
use crate::credentials::ModelApi;
use crate::host::LaunchDir;

/// The ACP protocol version this lane speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// How a profile passes [`Model::Named`] to its agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSelection {
    /// The agent has no launch-time model choice; a named model is ignored.
    Unsupported,
    /// A flag placed before the profile's arguments (`--model <name> acp`).
    Flag(String),
    /// An environment variable holding the name.
    Env(String),
}

/// How to launch one ACP agent. The lane's protocol is the same for every profile.
#[derive(Debug, Clone)]
pub struct AcpProfile {
    /// The backend, the program, its version query and install hint, and the model API; the
    /// capabilities are the lane's and the same for every profile.
    descriptor: AdapterDescriptor,
    /// Arguments that start ACP mode (`["acp"]`).
    pub args: Vec<String>,
    /// The auth method to `authenticate` with when the agent advertises it; `None` never
    /// authenticates (the agent reads its credentials from the environment).
    pub auth_method: Option<String>,
    pub model: ModelSelection,
    /// ACP mode ids for the contract's modes (`session/set_mode` after the session exists).
    /// A mode with no entry keeps the agent's default.
    pub modes: Vec<(Mode, String)>,
    /// Fixed environment for the agent.
    pub env: Vec<(String, String)>,
    /// Environment variables that each get a fresh directory inside the launch directory (a
    /// config directory the agent must not share with the user's own).
    pub private_dirs: Vec<String>,
}

/// Every ACP agent's capabilities: one process per session, prompts steer the running turn.
const CAPABILITIES: Capabilities = Capabilities {
    lifetime: Lifetime::Session,
    transport: Transport::Process,
    mid_turn_delivery: MidTurnDelivery::Steer,
};

impl AcpProfile {
    /// A profile for `program args…` reported as `backend`: no authentication, no model API,
    /// no modes, and no version query (an agent that only speaks ACP is reported installed
    /// when its program exists).
    pub fn new(backend: BackendId, program: impl Into<String>, args: &[&str]) -> Self {
        let program = program.into();
        Self {
            descriptor: AdapterDescriptor {
                backend,
                capabilities: CAPABILITIES,
                model_api: None,
                asks_permission: true,
                mcp_client: true,
                install_hint: Cow::Owned(format!("`{program}` is not on PATH")),
                program: Cow::Owned(program),
                version_args: &[],
                supported: None,
            },
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            auth_method: None,
            model: ModelSelection::Unsupported,
            modes: Vec::new(),
            env: Vec::new(),
            private_dirs: Vec::new(),
        }
    }

    /// The agent reaches `api` through Paddock's credential proxy (it then gets a voucher);
    /// `None` for an agent that calls its vendor's own service.
    pub fn with_model_api(mut self, api: Option<ModelApi>) -> Self {
        self.descriptor.model_api = api;
        self
    }

    /// What `probe` says when the program is missing.
    pub fn with_install_hint(mut self, hint: impl Into<String>) -> Self {
        self.descriptor.install_hint = Cow::Owned(hint.into());
        self
    }

    /// `program <args>` prints the version (for `probe`).
    pub fn with_version_args(mut self, args: &'static [&'static str]) -> Self {
        self.descriptor.version_args = args;
        self
    }

    /// The descriptor adapters built from this profile report.
    pub fn descriptor(&self) -> &AdapterDescriptor {
        &self.descriptor
    }

    /// Zed's Claude Code agent (`claude-code-acp`, npm `@zed-industries/claude-code-acp`): no
    /// ACP authentication (Claude Code reads `ANTHROPIC_API_KEY`, the voucher), the Anthropic
    /// Messages API through the credential proxy, Claude Code's configuration kept inside the
    /// launch directory and its update checks and telemetry off. The session reports
    /// [`BackendId::Claude`].
    pub fn claude_code_acp() -> Self {
        let mut profile = Self::new(BackendId::Claude, "claude-code-acp", &[])
            .with_model_api(Some(ModelApi::AnthropicMessages))
            .with_install_hint(
                "`claude-code-acp` is not on PATH (npm install -g @zed-industries/claude-code-acp)",
            );
        // Claude Code's Bash tool writes beneath `CLAUDE_CODE_TMPDIR` (else `/tmp`, which a
        // sandboxed launch cannot write).
        profile.private_dirs = vec!["CLAUDE_CONFIG_DIR".into(), "CLAUDE_CODE_TMPDIR".into()];
        profile.env = [
            ("DISABLE_AUTOUPDATER", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
        ]
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
        profile
    }

    /// Cursor's agent CLI: `cursor-agent acp`, authenticated with `cursor_login`.
    ///
    /// Cursor's agent calls Cursor's own service, not a model API Paddock proxies, so the
    /// profile declares no [`ModelApi`] and the launch gets no voucher. Its login comes from
    /// the environment the host gives it: `CURSOR_API_KEY` (or `CURSOR_AUTH_TOKEN`) in the
    /// host's or the request's environment layer, or a prior `cursor-agent login` in the
    /// `HOME` the host points it at. The key is never put in argv (`--api-key` exists but
    /// would show in `ps`). Its `cursor_login` method then finds those credentials.
    pub fn cursor() -> Self {
        let mut profile = Self::new(BackendId::Cursor, "cursor-agent", &["acp"])
            .with_version_args(&["--version"])
            .with_install_hint(
                "`cursor-agent` is not on PATH (install Cursor's CLI: https://cursor.com/cli)",
            );
        profile.auth_method = Some("cursor_login".into());
        profile.model = ModelSelection::Flag("--model".into());
        profile.modes = vec![(Mode::Plan, "plan".into())];
        profile
    }
}

/// An ACP agent launched from a profile. See the module documentation.
#[derive(Debug, Clone)]
pub struct AcpAdapter {
    profile: AcpProfile,
    resume: Option<String>,
}

impl AcpAdapter {
    /// The host finds the profile's program (its registered path for the backend's name, else
    /// PATH) when it opens or probes the adapter.
    pub fn new(profile: AcpProfile) -> Self {
        Self {
            profile,
            resume: None,
        }
    }

    /// Resumes the agent's session `vendor_session_id` with `session/load` (when the agent
    /// advertises `loadSession`) instead of creating a new one.
    pub fn resuming(mut self, vendor_session_id: impl Into<String>) -> Self {
        self.resume = Some(vendor_session_id.into());
        self
    }

    pub fn profile(&self) -> &AcpProfile {
        &self.profile
    }
}

impl Adapter for AcpAdapter {
    fn descriptor(&self) -> &AdapterDescriptor {
        self.profile.descriptor()
    }

    fn launch(&self, request: &OpenRequest) -> LaunchPlan {
        let mut args: Vec<OsString> = Vec::new();
        let mut env = self.profile.env.clone();
        if let Model::Named(model) = &request.config.model {
            match &self.profile.model {
                ModelSelection::Flag(flag) => args.extend([flag.into(), model.into()]),
                ModelSelection::Env(name) => env.push((name.clone(), model.clone())),
                ModelSelection::Unsupported => {}
            }
        }
        args.extend(self.profile.args.iter().map(Into::into));
        LaunchPlan { args, env }
    }

    fn prepare(
        &self,
        _request: &OpenRequest,
        dir: &LaunchDir,
        _secrets: &[(OsString, OsString)],
    ) -> std::io::Result<Prepared> {
        let mut env = Vec::new();
        for name in &self.profile.private_dirs {
            let path = dir.root.join(format!("acp-{}", name.to_ascii_lowercase()));
            std::fs::create_dir_all(&path)?;
            env.push((name.clone(), path.display().to_string()));
        }
        Ok(Prepared {
            env,
            private: Vec::new(),
        })
    }

    fn protocol(&self, request: &OpenRequest, _prepared: &Prepared) -> Box<dyn Protocol> {
        let mode = self
            .profile
            .modes
            .iter()
            .find(|(mode, _)| *mode == request.config.mode)
            .map(|(_, id)| id.clone());
        Box::new(AcpProtocol::new(AcpSessionConfig {
            cwd: request.launch.working_directory.clone(),
            auth_method: self.profile.auth_method.clone(),
            resume: self.resume.clone(),
            mode,
            instructions: request
                .launch
                .instructions
                .as_ref()
                .map(|instructions| instructions.content.clone()),
            mcp_servers: request.config.mcp_servers.clone(),
        }))
    }
}

/// What one ACP session needs to know at start.
#[derive(Debug, Clone, Default)]
pub struct AcpSessionConfig {
    /// The session's working directory (`session/new`'s `cwd`).
    pub cwd: PathBuf,
    pub auth_method: Option<String>,
    /// A vendor session to `session/load`.
    pub resume: Option<String>,
    /// A mode id to `session/set_mode` once the session exists.
    pub mode: Option<String>,
    /// Sent as a leading text block of the first prompt: ACP has no system-prompt field.
    pub instructions: Option<String>,
    /// `session/new`'s `mcpServers`.
    pub mcp_servers: Vec<McpServer>,
}

/// ACP's stdio MCP server shape.
fn acp_mcp_servers(servers: &[McpServer]) -> Value {
    servers
        .iter()
        .map(|server| {
            let env: Vec<Value> = server
                .env
                .iter()
                .map(|(name, value)| json!({ "name": name, "value": value }))
                .collect();
            json!({
                "name": server.name,
                "command": server.command.display().to_string(),
                "args": server.args,
                "env": env,
            })
        })
        .collect()
}

/// Where the handshake is; each pending step remembers its request id.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Initializing(u64),
    Authenticating(u64),
    Opening(u64),
    SettingMode(u64),
    Ready,
    /// The handshake failed; the next command starts it again from `session/new`.
    NoSession,
}

/// A prompt waiting for the session.
#[derive(Debug, Clone)]
struct Waiting {
    text: String,
    root: bool,
}

/// A permission request the agent is waiting on.
#[derive(Debug, Clone)]
struct PendingPermission {
    /// The agent's JSON-RPC id, echoed back verbatim.
    rpc_id: Value,
    /// `(optionId, kind)` in the agent's order.
    options: Vec<(String, String)>,
}

/// One ACP session's protocol state.
#[derive(Debug)]
pub struct AcpProtocol {
    config: AcpSessionConfig,
    next_id: u64,
    phase: Phase,
    /// Whether the agent advertised `loadSession`.
    can_load: bool,
    /// Whether the agent listed the profile's auth method.
    auth_listed: bool,
    session_id: Option<String>,
    announced: bool,
    waiting: Vec<Waiting>,
    instructions_sent: bool,
    /// The running turn's root prompt id.
    root: Option<u64>,
    /// The root's outcome once it answered, while steers are still out.
    root_outcome: Option<TurnOutcome>,
    /// Steer prompt ids of the running turn not yet answered.
    steers: HashSet<u64>,
    /// Assistant text since the last message boundary.
    text: String,
    /// Tool calls announced without their input yet: id → name.
    tools_announced: HashMap<String, String>,
    /// Tool calls started and not finished: id → name.
    tools_started: HashMap<String, String>,
    permissions: HashMap<String, PendingPermission>,
}

impl AcpProtocol {
    pub fn new(config: AcpSessionConfig) -> Self {
        Self {
            config,
            next_id: 0,
            phase: Phase::NoSession,
            can_load: false,
            auth_listed: false,
            session_id: None,
            announced: false,
            waiting: Vec::new(),
            instructions_sent: false,
            root: None,
            root_outcome: None,
            steers: HashSet::new(),
            text: String::new(),
            tools_announced: HashMap::new(),
            tools_started: HashMap::new(),
            permissions: HashMap::new(),
        }
    }

    /// The agent's session id, once it exists.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    fn request(&mut self, method: &str, params: Value) -> (u64, String) {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        (id, line.to_string())
    }

    /// `session/load` or `session/new`, and the phase that waits for it.
    fn open_session(&mut self) -> String {
        let cwd = self.config.cwd.display().to_string();
        let servers = acp_mcp_servers(&self.config.mcp_servers);
        let (id, line) = match self.config.resume.clone() {
            Some(session) if self.can_load => self.request(
                "session/load",
                json!({ "sessionId": session, "cwd": cwd, "mcpServers": servers }),
            ),
            _ => self.request("session/new", json!({ "cwd": cwd, "mcpServers": servers })),
        };
        self.phase = Phase::Opening(id);
        line
    }

    /// Starts (again) from `authenticate` when needed, else from `session/new`.
    fn reopen(&mut self) -> String {
        match self.config.auth_method.clone() {
            Some(method) if self.auth_listed => {
                let (id, line) = self.request("authenticate", json!({ "methodId": method }));
                self.phase = Phase::Authenticating(id);
                line
            }
            _ => self.open_session(),
        }
    }

    fn prompt(&mut self, text: &str, root: bool) -> String {
        let mut blocks = Vec::new();
        if !self.instructions_sent {
            self.instructions_sent = true;
            if let Some(instructions) = &self.config.instructions {
                blocks.push(json!({ "type": "text", "text": instructions }));
            }
        }
        blocks.push(json!({ "type": "text", "text": text }));
        let session = self.session_id.clone().unwrap_or_default();
        let (id, line) = self.request(
            "session/prompt",
            json!({ "sessionId": session, "prompt": blocks }),
        );
        if root {
            self.root = Some(id);
            self.root_outcome = None;
            self.steers.clear();
        } else {
            self.steers.insert(id);
        }
        line
    }

    /// Sends a prompt now when the session exists, else keeps it for later.
    fn submit(&mut self, text: &str, root: bool) -> Vec<String> {
        if self.phase == Phase::Ready {
            return vec![self.prompt(text, root)];
        }
        if root {
            // A new root replaces whatever a failed turn left waiting.
            self.waiting.clear();
        }
        self.waiting.push(Waiting {
            text: text.to_owned(),
            root,
        });
        if self.phase == Phase::NoSession && self.next_id > 0 {
            // The handshake failed before: try again for this command.
            return vec![self.reopen()];
        }
        Vec::new()
    }

    /// The session exists: send what waited for it.
    fn release(&mut self, out: &mut Vec<Decoded>) {
        self.phase = Phase::Ready;
        for waiting in std::mem::take(&mut self.waiting) {
            let line = self.prompt(&waiting.text, waiting.root);
            out.push(Decoded::Write(line));
        }
    }

    /// The handshake step failed: report it and end the turn waiting on it, if any.
    fn handshake_failed(&mut self, step: &str, error: &Value, out: &mut Vec<Decoded>) {
        let reason = format!("ACP {step} failed: {}", error_text(error));
        self.phase = Phase::NoSession;
        out.push(Decoded::Event(AgentEvent::Error {
            message: reason.clone(),
        }));
        if self.waiting.iter().any(|waiting| waiting.root) {
            self.waiting.clear();
            out.push(Decoded::TurnEnded(TurnOutcome::Failed(reason)));
        }
    }

    /// Ends the assistant message collected so far.
    fn flush_text(&mut self, out: &mut Vec<Decoded>) {
        if !self.text.is_empty() {
            out.push(Decoded::Event(AgentEvent::AssistantMessageCompleted {
                text: std::mem::take(&mut self.text),
            }));
        }
    }

    /// Ends the turn when its root and all its steers have answered.
    fn settle(&mut self, out: &mut Vec<Decoded>) {
        if self.root.is_none() || !self.steers.is_empty() {
            return;
        }
        if let Some(outcome) = self.root_outcome.take() {
            self.flush_text(out);
            self.root = None;
            self.permissions.clear();
            out.push(Decoded::TurnEnded(outcome));
        }
    }

    fn on_response(&mut self, id: u64, message: &Value, out: &mut Vec<Decoded>) {
        let error = message.get("error");
        let result = message.get("result").unwrap_or(&Value::Null);
        match self.phase.clone() {
            Phase::Initializing(pending) if pending == id => {
                if let Some(error) = error {
                    return self.handshake_failed("initialize", error, out);
                }
                self.can_load = result["agentCapabilities"]["loadSession"]
                    .as_bool()
                    .unwrap_or(false);
                self.auth_listed = match &self.config.auth_method {
                    Some(method) => result["authMethods"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|listed| listed["id"].as_str() == Some(method)),
                    None => false,
                };
                if self.config.resume.is_some() && !self.can_load {
                    out.push(Decoded::Event(AgentEvent::Error {
                        message: "the agent cannot load sessions; a new session was started".into(),
                    }));
                }
                let line = self.reopen();
                out.push(Decoded::Write(line));
                return;
            }
            Phase::Authenticating(pending) if pending == id => {
                if let Some(error) = error {
                    return self.handshake_failed("authenticate", error, out);
                }
                let line = self.open_session();
                out.push(Decoded::Write(line));
                return;
            }
            Phase::Opening(pending) if pending == id => {
                if let Some(error) = error {
                    return self.handshake_failed("session setup", error, out);
                }
                let session = match (&self.config.resume, self.can_load) {
                    (Some(resumed), true) => Some(resumed.clone()),
                    _ => result["sessionId"].as_str().map(str::to_owned),
                };
                let Some(session) = session else {
                    return self.handshake_failed(
                        "session/new",
                        &json!({ "message": "the answer has no sessionId" }),
                        out,
                    );
                };
                self.session_id = Some(session.clone());
                out.push(Decoded::VendorSession(session.clone()));
                if !self.announced {
                    self.announced = true;
                    out.push(Decoded::Event(AgentEvent::SessionStarted {
                        vendor_session_id: Some(session.clone()),
                    }));
                }
                let offered = |mode: &str| {
                    result["modes"]["availableModes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|listed| listed["id"].as_str() == Some(mode))
                };
                match self.config.mode.clone() {
                    Some(mode) if offered(&mode) => {
                        let (id, line) = self.request(
                            "session/set_mode",
                            json!({ "sessionId": session, "modeId": mode }),
                        );
                        self.phase = Phase::SettingMode(id);
                        out.push(Decoded::Write(line));
                    }
                    Some(mode) => {
                        out.push(Decoded::Event(AgentEvent::Error {
                            message: format!(
                                "the agent offers no mode `{mode}`; its default mode is used"
                            ),
                        }));
                        self.release(out);
                    }
                    None => self.release(out),
                }
                return;
            }
            Phase::SettingMode(pending) if pending == id => {
                if let Some(error) = error {
                    out.push(Decoded::Event(AgentEvent::Error {
                        message: format!("ACP session/set_mode failed: {}", error_text(error)),
                    }));
                }
                self.release(out);
                return;
            }
            _ => {}
        }
        if self.root == Some(id) {
            self.flush_text(out);
            let outcome = match error {
                Some(error) => TurnOutcome::Failed(error_text(error)),
                None => stop_outcome(result["stopReason"].as_str().unwrap_or("end_turn")),
            };
            if let Some(usage) = result.get("usage").filter(|usage| usage.is_object()) {
                out.push(Decoded::Event(AgentEvent::Usage {
                    input_tokens: usage["inputTokens"].as_u64().unwrap_or(0),
                    output_tokens: usage["outputTokens"].as_u64().unwrap_or(0),
                }));
            }
            self.root_outcome = Some(outcome);
            self.settle(out);
        } else if self.steers.remove(&id) {
            self.flush_text(out);
            if let Some(error) = error {
                out.push(Decoded::Event(AgentEvent::Error {
                    message: format!("the agent refused a steered prompt: {}", error_text(error)),
                }));
            }
            self.settle(out);
        }
        // Any other id answers a turn that has already ended: it settles nothing.
    }

    fn on_request(&mut self, message: &Value, out: &mut Vec<Decoded>) {
        let rpc_id = message["id"].clone();
        let method = message["method"].as_str().unwrap_or_default();
        if method == "session/request_permission" {
            let params = &message["params"];
            let tool_call = &params["toolCall"];
            let call_id = tool_call["toolCallId"].as_str().unwrap_or_default();
            let input = tool_call
                .get("rawInput")
                .cloned()
                .filter(|input| !is_empty_input(input))
                .unwrap_or(Value::Null);
            let name = self
                .tools_started
                .get(call_id)
                .or_else(|| self.tools_announced.get(call_id))
                .cloned()
                .unwrap_or_else(|| tool_name(tool_call));
            if !call_id.is_empty() && !self.tools_started.contains_key(call_id) {
                self.start_tool(call_id, name.clone(), input.clone(), out);
            }
            let options = params["options"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|option| {
                    Some((
                        option["optionId"].as_str()?.to_owned(),
                        option["kind"].as_str().unwrap_or_default().to_owned(),
                    ))
                })
                .collect();
            let request_id = match &rpc_id {
                Value::String(id) => id.clone(),
                other => other.to_string(),
            };
            self.permissions
                .insert(request_id.clone(), PendingPermission { rpc_id, options });
            out.push(Decoded::Permission {
                request_id,
                tool: name,
                input,
            });
            return;
        }
        let error = json!({
            "jsonrpc": "2.0",
            "id": rpc_id,
            "error": { "code": METHOD_NOT_FOUND, "message": format!("the client does not support `{method}`") },
        });
        out.push(Decoded::Write(error.to_string()));
    }

    fn start_tool(&mut self, call_id: &str, name: String, input: Value, out: &mut Vec<Decoded>) {
        self.flush_text(out);
        self.tools_announced.remove(call_id);
        self.tools_started.insert(call_id.to_owned(), name.clone());
        out.push(Decoded::Event(AgentEvent::ToolCallStarted {
            call_id: call_id.to_owned(),
            name,
            input,
        }));
    }

    fn on_update(&mut self, params: &Value, out: &mut Vec<Decoded>) {
        // Updates before the session exists are a `session/load` replaying history; updates
        // for another session are not ours.
        if self.phase != Phase::Ready || params["sessionId"].as_str() != self.session_id.as_deref()
        {
            return;
        }
        let update = &params["update"];
        match update["sessionUpdate"].as_str().unwrap_or_default() {
            "agent_message_chunk" if update["content"]["type"] == "text" => {
                let text = update["content"]["text"].as_str().unwrap_or_default();
                if !text.is_empty() {
                    self.text.push_str(text);
                    out.push(Decoded::Event(AgentEvent::AssistantTextDelta {
                        text: text.to_owned(),
                    }));
                }
            }
            "tool_call" | "tool_call_update" => {
                let Some(call_id) = update["toolCallId"].as_str() else {
                    return;
                };
                let input = update.get("rawInput").cloned().unwrap_or(Value::Null);
                let name = match self.tools_announced.get(call_id) {
                    Some(name) => name.clone(),
                    None => tool_name(update),
                };
                let status = update["status"].as_str().unwrap_or_default();
                let finished = matches!(status, "completed" | "failed");
                if !self.tools_started.contains_key(call_id) {
                    if !is_empty_input(&input) || finished {
                        let input = if is_empty_input(&input) {
                            Value::Null
                        } else {
                            input
                        };
                        self.start_tool(call_id, name, input, out);
                    } else if update["sessionUpdate"] == "tool_call" {
                        // Announced while its input still streams: start it once the input
                        // is known (a later update, a permission request, or its end).
                        self.flush_text(out);
                        self.tools_announced.insert(call_id.to_owned(), name);
                    }
                }
                if finished && self.tools_started.remove(call_id).is_some() {
                    out.push(Decoded::Event(AgentEvent::ToolCallFinished {
                        call_id: call_id.to_owned(),
                        is_error: status == "failed",
                        output: tool_output(update).chars().take(4000).collect(),
                    }));
                }
            }
            // Plans, thoughts, mode and command lists, usage and echoed user chunks are not
            // part of the contract.
            _ => {}
        }
    }
}

impl Protocol for AcpProtocol {
    fn startup(&mut self) -> Vec<String> {
        let (id, line) = self.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": { "readTextFile": false, "writeTextFile": false },
                    "terminal": false,
                },
                "clientInfo": { "name": "paddock", "version": env!("CARGO_PKG_VERSION") },
            }),
        );
        self.phase = Phase::Initializing(id);
        vec![line]
    }

    fn user(&mut self, command: &Command) -> Vec<String> {
        self.submit(&command.text, true)
    }

    fn steer(&mut self, command: &Command) -> Option<Vec<String>> {
        Some(self.submit(&command.text, false))
    }

    fn interrupt(&mut self, _request_id: &str) -> Vec<String> {
        let mut lines = Vec::new();
        // The agent must answer pending permission requests too; ACP says "cancelled".
        for (_, permission) in self.permissions.drain() {
            lines.push(
                json!({
                    "jsonrpc": "2.0",
                    "id": permission.rpc_id,
                    "result": { "outcome": { "outcome": "cancelled" } },
                })
                .to_string(),
            );
        }
        match &self.session_id {
            Some(session) if self.phase == Phase::Ready => lines.push(
                json!({
                    "jsonrpc": "2.0",
                    "method": "session/cancel",
                    "params": { "sessionId": session },
                })
                .to_string(),
            ),
            // Nothing reached the agent yet: the prompts that waited are dropped, and the
            // turn ends when the handshake's next answer arrives.
            _ => {
                if self.waiting.iter().any(|waiting| waiting.root) {
                    self.waiting.clear();
                    self.root_outcome = Some(TurnOutcome::Interrupted);
                }
            }
        }
        lines
    }

    fn permission(
        &mut self,
        request_id: &str,
        decision: &PermissionDecision,
        _input: &Value,
    ) -> Vec<String> {
        let Some(pending) = self.permissions.remove(request_id) else {
            return Vec::new();
        };
        let wanted: &[&str] = match decision {
            PermissionDecision::Allow => &["allow_once", "allow_always"],
            // ACP carries no reason with a rejection; the message stays with the host.
            PermissionDecision::Deny { .. } => &["reject_once", "reject_always"],
        };
        let chosen = wanted.iter().find_map(|kind| {
            pending
                .options
                .iter()
                .find(|(_, option_kind)| option_kind == kind)
                .map(|(id, _)| id.clone())
        });
        let outcome = match chosen {
            Some(option) => json!({ "outcome": "selected", "optionId": option }),
            // The agent offered no option of that kind: cancelling is the only safe answer.
            None => json!({ "outcome": "cancelled" }),
        };
        vec![
            json!({ "jsonrpc": "2.0", "id": pending.rpc_id, "result": { "outcome": outcome } })
                .to_string(),
        ]
    }

    fn decode(&mut self, line: &str) -> Vec<Decoded> {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return vec![Decoded::Event(AgentEvent::Error {
                message: "the ACP agent wrote a line that is not JSON".into(),
            })];
        };
        let mut out = Vec::new();
        let has_id = message.get("id").is_some_and(|id| !id.is_null());
        match (message.get("method").and_then(Value::as_str), has_id) {
            (Some(_), true) => self.on_request(&message, &mut out),
            (Some("session/update"), false) => self.on_update(&message["params"], &mut out),
            (Some(_), false) => {}
            (None, true) => {
                if let Some(id) = message["id"].as_u64() {
                    self.on_response(id, &message, &mut out);
                }
            }
            (None, false) => {}
        }
        // A turn interrupted before it reached the agent ends with the next message.
        if self.root.is_none()
            && self.waiting.is_empty()
            && self.root_outcome == Some(TurnOutcome::Interrupted)
        {
            self.root_outcome = None;
            out.push(Decoded::TurnEnded(TurnOutcome::Interrupted));
        }
        out
    }
}

/// The contract's outcome for an ACP `stopReason`.
fn stop_outcome(reason: &str) -> TurnOutcome {
    match reason {
        "end_turn" => TurnOutcome::Completed,
        "cancelled" => TurnOutcome::Interrupted,
        // `max_tokens`, `max_turn_requests`, `refusal`: the agent stopped short of the answer.
        other => TurnOutcome::Failed(format!("the agent stopped: {other}")),
    }
}

/// A JSON-RPC error's message (and data, when it says more).
fn error_text(error: &Value) -> String {
    let message = error["message"].as_str().unwrap_or("unknown error");
    match &error["data"] {
        Value::Null => message.to_owned(),
        Value::String(data) => format!("{message}: {data}"),
        data => format!("{message}: {data}"),
    }
}

fn is_empty_input(input: &Value) -> bool {
    match input {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// ACP tool calls carry a `kind` (execute, read, edit…) and a human `title`, no tool name:
/// the kind is the stable part.
fn tool_name(call: &Value) -> String {
    call["kind"]
        .as_str()
        .or_else(|| call["title"].as_str())
        .unwrap_or("tool")
        .to_owned()
}

/// The text of a finished tool call: its text content blocks, else its raw output.
fn tool_output(update: &Value) -> String {
    let mut parts = Vec::new();
    for item in update["content"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("content") if item["content"]["type"] == "text" => {
                parts.push(
                    item["content"]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
            Some("diff") => parts.push(format!(
                "edited {}",
                item["path"].as_str().unwrap_or_default()
            )),
            _ => {}
        }
    }
    if !parts.is_empty() {
        return parts.join("\n");
    }
    match &update["rawOutput"] {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item["text"].as_str() {
                Some(text) => text.to_owned(),
                None => item.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{AgentConfig, Launch, ToolAccess};

    fn request(config: AgentConfig) -> OpenRequest {
        OpenRequest {
            backend: BackendId::Cursor,
            launch: Launch {
                working_directory: "/work".into(),
                instructions: None,
                launch_id: "l".into(),
            },
            config,
            env: Vec::new(),
        }
    }

    /// The `session/new` the adapter's protocol sends for `config`, after an `initialize`
    /// answer that lists no auth method.
    fn session_new(config: AgentConfig) -> Value {
        let adapter = AcpAdapter::new(AcpProfile::cursor());
        let mut protocol = adapter.protocol(&request(config), &Prepared::default());
        let init: Value = serde_json::from_str(&protocol.startup()[0]).unwrap();
        let answer = json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1}});
        let sent: Vec<Value> = protocol
            .decode(&answer.to_string())
            .into_iter()
            .filter_map(|decoded| match decoded {
                Decoded::Write(line) => serde_json::from_str(&line).ok(),
                _ => None,
            })
            .collect();
        assert_eq!(sent[0]["method"], "session/new", "{sent:?}");
        sent[0]["params"].clone()
    }

    #[test]
    fn mcp_servers_go_into_session_new() {
        let server = McpServer {
            name: "paddock".into(),
            command: "/opt/paddock/bin/paddock".into(),
            args: vec!["mcp".into(), "--task".into(), "t1".into()],
            env: vec![("PADDOCK_STATE".into(), "/state".into())],
        };
        let params = session_new(AgentConfig {
            mcp_servers: vec![server],
            ..AgentConfig::default()
        });
        assert_eq!(
            params["mcpServers"],
            json!([{
                "name": "paddock",
                "command": "/opt/paddock/bin/paddock",
                "args": ["mcp", "--task", "t1"],
                "env": [{ "name": "PADDOCK_STATE", "value": "/state" }],
            }])
        );
        assert_eq!(
            session_new(AgentConfig::default()),
            json!({ "cwd": "/work", "mcpServers": [] })
        );
        // ACP cannot switch the agent's tools off: the host's permission answers decide.
        assert_eq!(
            session_new(AgentConfig {
                tools: ToolAccess::McpOnly,
                ..AgentConfig::default()
            }),
            json!({ "cwd": "/work", "mcpServers": [] })
        );
    }
}
