//! Codex (`codex app-server`): one process per session speaking JSON-RPC 2.0 over stdio, one
//! JSON object a line, without the `"jsonrpc"` member. Lifetime `session`, mid-turn delivery
//! `safe_boundary_queue`: the logical session holds a command sent mid-turn and starts the next
//! turn once `turn/completed` arrived.
//!
//! The handshake is `initialize` → the `initialized` notification → `thread/start`; the thread
//! id it answers is the vendor session, and every command becomes a `turn/start` on that thread
//! (a command that arrives before the thread exists waits for it). `turn/interrupt` needs the
//! turn id from `turn/started`. Codex asks for approval with server→client requests
//! (`item/commandExecution/requestApproval`, `item/fileChange/requestApproval`, and the older
//! `execCommandApproval`/`applyPatchApproval`); the answer is the JSON-RPC response with a
//! decision.
//!
//! Codex reaches its model through a custom provider in a launch-private `CODEX_HOME`, whose
//! base URL is the credential proxy and whose key Codex reads from `OPENAI_API_KEY` (the
//! voucher) by name; the home also switches off update checks, analytics, feedback uploads,
//! telemetry export and the features that fetch from OpenAI's services.
//!
//! MCP servers are `[mcp_servers.<name>]` tables in that home (`command`, `args`, `env`).
//! Codex offers a server's tools to the model as one Responses API `namespace` tool,
//! `mcp__<name>`, of plain functions (`observe`), and a call names both (`"namespace":
//! "mcp__paddock", "name": "observe"`); the app server reports it as an `mcpToolCall` item.
//! Codex starts an MCP server with only a short allowlist of its own environment, so the
//! server's `env` must carry what it needs. [`ToolAccess::McpOnly`], checked against `codex`
//! 0.171.0 by the tools it offers the model:
//!
//! - the `shell_tool`, `unified_exec`, `view_image` and `goals` features are off, so the model
//!   gets no `exec_command`/`write_stdin` (the shell, through which this version also applies
//!   patches), no `view_image` (a file reader) and no goal tools; web search is off in every
//!   launch;
//! - every server gets `default_tools_approval_mode = "approve"`, so Codex never asks before
//!   one of its calls. Codex's default (`auto`) asks — a request this client refuses like any
//!   it does not serve, which fails the call — before a call of a tool annotated destructive
//!   (in some versions also open-world or unannotated ones). Paddock's device tools are
//!   annotated neither, so 0.171.0 runs them unattended with or without the key
//!   (`crates/paddock/tests/tasks_codex.rs` signs in through them); the key keeps other
//!   servers' tools, and a stricter rule in a later Codex, from asking;
//! - the thread runs with sandbox `read-only` and approval policy `never` whatever the mode,
//!   so anything that still tried to write (an `apply_patch` tool a model's metadata may
//!   bring) is refused instead of asking.
//!
//! What stays: Codex's MCP resource tools (`list_mcp_resources`, `list_mcp_resource_templates`,
//! `read_mcp_resource`, which reach only the configured servers) and `request_user_input`
//! (no config key switches it off; the client refuses its request, so it only fails).

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Value, json};

use super::{Adapter, AdapterDescriptor, Decoded, LaunchPlan, Prepared, Protocol};
use crate::contract::{
    AgentConfig, AgentEvent, BackendId, Capabilities, Command, Lifetime, MidTurnDelivery, Mode,
    Model, OpenRequest, PermissionDecision, ToolAccess, Transport, TurnOutcome,
};
use crate::credentials::ModelApi;
use crate::host::LaunchDir;

#[derive(Debug, Default)]
pub struct Codex;

const DESCRIPTOR: AdapterDescriptor = AdapterDescriptor {
    backend: BackendId::Codex,
    capabilities: Capabilities {
        lifetime: Lifetime::Session,
        transport: Transport::Process,
        mid_turn_delivery: MidTurnDelivery::SafeBoundaryQueue,
    },
    model_api: Some(ModelApi::OpenAiResponses),
    asks_permission: true,
    mcp_client: true,
    program: Cow::Borrowed("codex"),
    version_args: &["--version"],
    install_hint: Cow::Borrowed("`codex` is not on PATH (npm install -g @openai/codex)"),
    supported: None,
};

/// The provider id Paddock configures in Codex's isolated home.
const PROVIDER: &str = "paddock";

/// Features switched off in every launch: each one fetches from OpenAI's services (plugin and
/// app catalogues, update notices, hosted tools) or starts work outside the session's process
/// group (the app-server daemon), none of which a Paddock session may do.
const DISABLED_FEATURES: &[&str] = &[
    "apps",
    "plugins",
    "remote_plugin",
    "plugin_sharing",
    "in_app_updates",
    "image_generation",
    "browser_use",
    "computer_use",
    "skill_mcp_dependency_install",
    "tool_suggest",
    "daemon_auto_start",
    "multi_agent",
];

/// Features also switched off for [`ToolAccess::McpOnly`]: the shell (and with it patches),
/// the image viewer (it reads files) and the goal tools.
const MCP_ONLY_DISABLED_FEATURES: &[&str] = &["shell_tool", "unified_exec", "view_image", "goals"];

impl Adapter for Codex {
    fn descriptor(&self) -> &AdapterDescriptor {
        &DESCRIPTOR
    }

    fn launch(&self, _request: &OpenRequest) -> LaunchPlan {
        LaunchPlan {
            args: vec!["app-server".into(), "--listen".into(), "stdio://".into()],
            env: Vec::new(),
        }
    }

    fn prepare(
        &self,
        request: &OpenRequest,
        dir: &LaunchDir,
        secrets: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> std::io::Result<Prepared> {
        let base_url = secrets
            .iter()
            .find(|(name, _)| name == "OPENAI_BASE_URL")
            .map(|(_, value)| value.to_string_lossy().into_owned())
            .ok_or_else(|| {
                std::io::Error::other("the credential broker gave Codex no model base URL")
            })?;
        let home = dir.root.join("codex-home");
        std::fs::create_dir_all(&home)?;
        let forwarded = forwarded_env(request, secrets);
        std::fs::write(
            home.join("config.toml"),
            config_toml(&base_url, &request.config, &forwarded),
        )?;
        Ok(Prepared {
            env: vec![("CODEX_HOME".into(), home.display().to_string())],
            private: Vec::new(),
        })
    }

    fn protocol(&self, request: &OpenRequest, _prepared: &Prepared) -> Box<dyn Protocol> {
        Box::new(CodexProtocol::new(request))
    }
}

/// Paddock's session variables an MCP server needs to reach the daemon as this launch. Codex
/// starts MCP servers with little of its own environment, so they are written into each
/// server's table: paths and names only — the voucher file's path, never the voucher.
const FORWARDED_TO_MCP: [&str; 3] = [
    "PADDOCK_CONTROL_SOCKET",
    "PADDOCK_PROXY_TOKEN_FILE",
    "PADDOCK_BOT_ID",
];

fn forwarded_env(
    request: &OpenRequest,
    secrets: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Vec<(String, String)> {
    let from_secrets = secrets
        .iter()
        .filter_map(|(name, value)| Some((name.to_str()?.to_owned(), value.to_str()?.to_owned())));
    FORWARDED_TO_MCP
        .iter()
        .filter_map(|wanted| {
            request
                .env
                .iter()
                .cloned()
                .chain(from_secrets.clone())
                .find(|(name, _)| name == wanted)
        })
        .collect()
}

/// `config.toml` for the launch's `CODEX_HOME`. The provider's `env_key` names the variable
/// that holds the voucher, so the voucher never lands in the file. `forwarded` variables are
/// added to every MCP server's environment unless the server sets them itself.
fn config_toml(base_url: &str, agent: &AgentConfig, forwarded: &[(String, String)]) -> String {
    let mut config = String::new();
    // Without a named model Codex uses its own default, whose metadata it knows.
    if let Model::Named(model) = &agent.model {
        config.push_str(&format!("model = {}\n", toml_string(model)));
    }
    config.push_str(&format!(
        "model_provider = {}\n\
         check_for_update_on_startup = false\n\
         web_search = \"disabled\"\n\
         \n\
         [analytics]\n\
         enabled = false\n\
         \n\
         [feedback]\n\
         enabled = false\n\
         \n\
         [history]\n\
         persistence = \"none\"\n\
         \n\
         [otel]\n\
         exporter = \"none\"\n\
         trace_exporter = \"none\"\n\
         metrics_exporter = \"none\"\n\
         log_user_prompt = false\n\
         \n\
         [features]\n",
        toml_string(PROVIDER)
    ));
    let mcp_only = agent.tools == ToolAccess::McpOnly;
    let extra: &[&str] = if mcp_only {
        MCP_ONLY_DISABLED_FEATURES
    } else {
        &[]
    };
    for feature in DISABLED_FEATURES.iter().chain(extra) {
        config.push_str(&format!("{feature} = false\n"));
    }
    config.push_str(&format!(
        "\n[model_providers.{PROVIDER}]\n\
         name = \"Paddock\"\n\
         base_url = {}\n\
         env_key = \"OPENAI_API_KEY\"\n\
         wire_api = \"responses\"\n",
        toml_string(base_url)
    ));
    // Server names are `[a-z0-9_-]`, so they are bare keys; environment names are quoted.
    for server in &agent.mcp_servers {
        let args: Vec<String> = server.args.iter().map(|arg| toml_string(arg)).collect();
        config.push_str(&format!(
            "\n[mcp_servers.{}]\n\
             command = {}\n\
             args = [{}]\n",
            server.name,
            toml_string(&server.command.display().to_string()),
            args.join(", ")
        ));
        if mcp_only {
            config.push_str("default_tools_approval_mode = \"approve\"\n");
        }
        let inherited = forwarded
            .iter()
            .filter(|(name, _)| !server.env.iter().any(|(own, _)| own == name));
        let env: Vec<&(String, String)> = server.env.iter().chain(inherited).collect();
        if !env.is_empty() {
            config.push_str(&format!("\n[mcp_servers.{}.env]\n", server.name));
            for (name, value) in env {
                config.push_str(&format!("{} = {}\n", toml_string(name), toml_string(value)));
            }
        }
    }
    config
}

/// A TOML basic string. JSON's escapes are all valid TOML; TOML also forbids a raw DEL.
fn toml_string(value: &str) -> String {
    Value::String(value.to_owned())
        .to_string()
        .replace('\u{7f}', "\\u007F")
}

/// What an answer from Codex answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Initialize,
    ThreadStart,
    TurnStart,
    TurnInterrupt,
}

/// The shape of a pending approval, which decides the answer's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approval {
    /// `item/*/requestApproval`: `accept` / `decline`.
    Item,
    /// `execCommandApproval` / `applyPatchApproval`: `approved` / `denied`.
    Legacy,
}

/// One session's `codex app-server` protocol state.
#[derive(Debug)]
pub struct CodexProtocol {
    /// `thread/start`'s parameters, fixed at launch.
    thread_params: Value,
    next_id: u64,
    pending: HashMap<u64, Pending>,
    thread_id: Option<String>,
    turn_id: Option<String>,
    /// A command that arrived before the thread existed.
    waiting: Option<String>,
    /// An interrupt that arrived before the turn id.
    interrupt_waiting: bool,
    /// Approval requests by the id Paddock shows, with Codex's own id.
    approvals: HashMap<String, (Value, Approval)>,
}

impl CodexProtocol {
    pub fn new(request: &OpenRequest) -> Self {
        // Default asks before any command that is not known to be read-only; the workspace
        // sandbox (Codex's bundled bubblewrap with seccomp, which works in unprivileged
        // containers) confines what does run to the working directory.
        let (approval, sandbox) = match (request.config.tools, request.config.mode) {
            // Unattended: nothing may ask, and nothing may write (see the module docs).
            (ToolAccess::McpOnly, _) => ("never", "read-only"),
            (ToolAccess::Default, Mode::Default) => ("untrusted", "workspace-write"),
            (ToolAccess::Default, Mode::AcceptEdits) => ("on-request", "workspace-write"),
            (ToolAccess::Default, Mode::Plan) => ("on-request", "read-only"),
            (ToolAccess::Default, Mode::BypassPermissions) => ("never", "danger-full-access"),
        };
        let mut thread_params = json!({
            "cwd": request.launch.working_directory.display().to_string(),
            "approvalPolicy": approval,
            "approvalsReviewer": "user",
            "sandbox": sandbox,
            "modelProvider": PROVIDER,
        });
        if let Model::Named(model) = &request.config.model {
            thread_params["model"] = json!(model);
        }
        if let Some(instructions) = &request.launch.instructions {
            thread_params["developerInstructions"] = json!(instructions.content);
        }
        Self {
            thread_params,
            next_id: 1,
            pending: HashMap::new(),
            thread_id: None,
            turn_id: None,
            waiting: None,
            interrupt_waiting: false,
            approvals: HashMap::new(),
        }
    }

    fn request(&mut self, method: &str, params: Value, kind: Pending) -> String {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.insert(id, kind);
        json!({ "id": id, "method": method, "params": params }).to_string()
    }

    fn turn_start(&mut self, thread_id: &str, text: &str) -> String {
        self.turn_id = None;
        self.request(
            "turn/start",
            json!({ "threadId": thread_id, "input": [{ "type": "text", "text": text }] }),
            Pending::TurnStart,
        )
    }

    fn turn_interrupt(&mut self) -> Option<String> {
        let thread_id = self.thread_id.clone()?;
        let turn_id = self.turn_id.clone()?;
        Some(self.request(
            "turn/interrupt",
            json!({ "threadId": thread_id, "turnId": turn_id }),
            Pending::TurnInterrupt,
        ))
    }

    /// An answer to one of Paddock's requests.
    fn answer(&mut self, message: &Value, out: &mut Vec<Decoded>) {
        let Some(kind) = message["id"]
            .as_u64()
            .and_then(|id| self.pending.remove(&id))
        else {
            return;
        };
        let error = message.get("error").map(|error| {
            error["message"]
                .as_str()
                .unwrap_or("Codex refused the request")
                .to_owned()
        });
        match (kind, error) {
            (Pending::Initialize, None) => {
                out.push(Decoded::Write(
                    json!({ "method": "initialized" }).to_string(),
                ));
                let params = self.thread_params.clone();
                out.push(Decoded::Write(self.request(
                    "thread/start",
                    params,
                    Pending::ThreadStart,
                )));
            }
            (Pending::ThreadStart, None) => {
                let Some(id) = message["result"]["thread"]["id"]
                    .as_str()
                    .map(str::to_owned)
                else {
                    out.push(error_event("Codex started a thread without an id"));
                    self.fail_waiting(out, "Codex started a thread without an id");
                    return;
                };
                self.thread_id = Some(id.clone());
                out.push(Decoded::VendorSession(id.clone()));
                out.push(Decoded::Event(AgentEvent::SessionStarted {
                    vendor_session_id: Some(id.clone()),
                }));
                if let Some(text) = self.waiting.take() {
                    out.push(Decoded::Write(self.turn_start(&id, &text)));
                }
            }
            (Pending::TurnStart, None) => {
                if let Some(id) = message["result"]["turn"]["id"].as_str() {
                    self.turn_id = Some(id.to_owned());
                    if std::mem::take(&mut self.interrupt_waiting)
                        && let Some(line) = self.turn_interrupt()
                    {
                        out.push(Decoded::Write(line));
                    }
                }
            }
            (Pending::TurnInterrupt, None) => {}
            (Pending::Initialize | Pending::ThreadStart, Some(error)) => {
                let reason = format!("Codex could not start a thread: {error}");
                out.push(error_event(&reason));
                self.fail_waiting(out, &reason);
            }
            // The turn never started, so no `turn/completed` will end it.
            (Pending::TurnStart, Some(error)) => {
                self.interrupt_waiting = false;
                out.push(Decoded::TurnEnded(TurnOutcome::Failed(format!(
                    "Codex refused the turn: {error}"
                ))));
            }
            (Pending::TurnInterrupt, Some(error)) => {
                out.push(error_event(&format!(
                    "Codex refused the interrupt: {error}"
                )));
            }
        }
    }

    /// Ends the turn of a command that waited for a thread that will not come.
    fn fail_waiting(&mut self, out: &mut Vec<Decoded>, reason: &str) {
        if self.waiting.take().is_some() {
            out.push(Decoded::TurnEnded(TurnOutcome::Failed(reason.to_owned())));
        }
    }

    /// A request from Codex: approvals become permission requests; anything else is refused
    /// at once so the turn does not wait for an answer nobody will give.
    fn server_request(&mut self, message: &Value, out: &mut Vec<Decoded>) {
        let id = message["id"].clone();
        let params = &message["params"];
        let request_id = match &id {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let (tool, input, shape) = match message["method"].as_str().unwrap_or_default() {
            "item/commandExecution/requestApproval" => (
                "shell",
                json!({
                    "command": params["command"],
                    "cwd": params["cwd"],
                    "reason": params["reason"],
                    "itemId": params["itemId"],
                }),
                Approval::Item,
            ),
            "item/fileChange/requestApproval" => (
                "apply_patch",
                json!({
                    "reason": params["reason"],
                    "grantRoot": params["grantRoot"],
                    "itemId": params["itemId"],
                }),
                Approval::Item,
            ),
            "execCommandApproval" => (
                "shell",
                json!({
                    "command": params["command"],
                    "cwd": params["cwd"],
                    "reason": params["reason"],
                    "itemId": params["callId"],
                }),
                Approval::Legacy,
            ),
            "applyPatchApproval" => (
                "apply_patch",
                json!({
                    "fileChanges": params["fileChanges"],
                    "reason": params["reason"],
                    "grantRoot": params["grantRoot"],
                    "itemId": params["callId"],
                }),
                Approval::Legacy,
            ),
            // Extra sandbox permissions: the contract has no shape for them, so none are
            // granted (the command then runs, or fails, inside the sandbox).
            "item/permissions/requestApproval" => {
                out.push(Decoded::Write(
                    json!({ "id": id, "result": { "permissions": {}, "scope": "turn" } })
                        .to_string(),
                ));
                return;
            }
            method => {
                out.push(Decoded::Write(
                    json!({ "id": id, "error": {
                        "code": -32601,
                        "message": format!("`{method}` is not supported by this client"),
                    } })
                    .to_string(),
                ));
                return;
            }
        };
        self.approvals.insert(request_id.clone(), (id, shape));
        out.push(Decoded::Permission {
            request_id,
            tool: tool.to_owned(),
            input,
        });
    }

    /// A notification from Codex.
    fn notification(&mut self, method: &str, params: &Value, out: &mut Vec<Decoded>) {
        // Sub-agents run on threads of their own; only this session's thread is reported.
        if let (Some(ours), Some(theirs)) = (&self.thread_id, params["threadId"].as_str())
            && ours != theirs
        {
            return;
        }
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        match method {
            "turn/started" => {
                if let Some(id) = params["turn"]["id"].as_str() {
                    self.turn_id = Some(id.to_owned());
                    if std::mem::take(&mut self.interrupt_waiting)
                        && let Some(line) = self.turn_interrupt()
                    {
                        out.push(Decoded::Write(line));
                    }
                }
            }
            "item/agentMessage/delta" => {
                out.push(Decoded::Event(AgentEvent::AssistantTextDelta {
                    text: text(&params["delta"]),
                }));
            }
            "item/started" => {
                if let Some(event) = tool_started(&params["item"]) {
                    out.push(Decoded::Event(event));
                }
            }
            "item/completed" => {
                let item = &params["item"];
                match item["type"].as_str() {
                    Some("agentMessage") => {
                        let body = text(&item["text"]);
                        if !body.is_empty() {
                            out.push(Decoded::Event(AgentEvent::AssistantMessageCompleted {
                                text: body,
                            }));
                        }
                    }
                    _ => {
                        if let Some(event) = tool_finished(item) {
                            out.push(Decoded::Event(event));
                        }
                    }
                }
            }
            "thread/tokenUsage/updated" => {
                let last = &params["tokenUsage"]["last"];
                if last.is_object() {
                    out.push(Decoded::Event(AgentEvent::Usage {
                        input_tokens: last["inputTokens"].as_u64().unwrap_or(0),
                        output_tokens: last["outputTokens"].as_u64().unwrap_or(0),
                    }));
                }
            }
            "error" if params["willRetry"] != true => {
                out.push(error_event(&format!(
                    "Codex: {}",
                    params["error"]["message"]
                        .as_str()
                        .unwrap_or("the turn hit an error")
                )));
            }
            "turn/completed" => {
                let turn = &params["turn"];
                let outcome = match turn["status"].as_str() {
                    Some("interrupted") => TurnOutcome::Interrupted,
                    Some("failed") => TurnOutcome::Failed(
                        turn["error"]["message"]
                            .as_str()
                            .unwrap_or("the turn failed")
                            .to_owned(),
                    ),
                    _ => TurnOutcome::Completed,
                };
                self.turn_id = None;
                self.interrupt_waiting = false;
                // Approvals still open belong to the finished turn.
                self.approvals.clear();
                out.push(Decoded::TurnEnded(outcome));
            }
            _ => {}
        }
    }
}

fn error_event(message: &str) -> Decoded {
    Decoded::Event(AgentEvent::Error {
        message: message.to_owned(),
    })
}

/// The contract's tool name and input for a tool item, if `item` is one.
fn tool_call(item: &Value) -> Option<(String, Value)> {
    match item["type"].as_str()? {
        "commandExecution" => Some((
            "shell".into(),
            json!({ "command": item["command"], "cwd": item["cwd"] }),
        )),
        "fileChange" => Some(("apply_patch".into(), json!({ "changes": item["changes"] }))),
        "mcpToolCall" => Some((
            format!(
                "{}/{}",
                item["server"].as_str().unwrap_or_default(),
                item["tool"].as_str().unwrap_or_default()
            ),
            item["arguments"].clone(),
        )),
        "dynamicToolCall" => Some((
            item["tool"].as_str().unwrap_or_default().to_owned(),
            item["arguments"].clone(),
        )),
        "webSearch" => Some(("web_search".into(), json!({ "query": item["query"] }))),
        _ => None,
    }
}

fn tool_started(item: &Value) -> Option<AgentEvent> {
    let (name, input) = tool_call(item)?;
    Some(AgentEvent::ToolCallStarted {
        call_id: item["id"].as_str().unwrap_or_default().to_owned(),
        name,
        input,
    })
}

fn tool_finished(item: &Value) -> Option<AgentEvent> {
    tool_call(item)?;
    let status = item["status"].as_str().unwrap_or("completed");
    let output = match item["type"].as_str() {
        Some("commandExecution") => item["aggregatedOutput"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        Some("mcpToolCall") => match (&item["result"], &item["error"]) {
            (result, _) if !result.is_null() => result.to_string(),
            (_, error) if !error.is_null() => error.to_string(),
            _ => String::new(),
        },
        Some("dynamicToolCall") => item["contentItems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|content| content["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    // A declined or failed item, or a command that exited non-zero, is an error.
    let is_error = status != "completed" || item["exitCode"].as_i64().is_some_and(|code| code != 0);
    Some(AgentEvent::ToolCallFinished {
        call_id: item["id"].as_str().unwrap_or_default().to_owned(),
        is_error,
        output: output.chars().take(4000).collect(),
    })
}

impl Protocol for CodexProtocol {
    fn startup(&mut self) -> Vec<String> {
        let params = json!({
            "clientInfo": { "name": "paddock", "title": "Paddock", "version": env!("CARGO_PKG_VERSION") },
        });
        vec![self.request("initialize", params, Pending::Initialize)]
    }

    fn user(&mut self, command: &Command) -> Vec<String> {
        match self.thread_id.clone() {
            Some(thread_id) => vec![self.turn_start(&thread_id, &command.text)],
            None => {
                self.waiting = Some(command.text.clone());
                Vec::new()
            }
        }
    }

    fn interrupt(&mut self, _request_id: &str) -> Vec<String> {
        // Before the turn id is known (the command may still wait for the thread), the
        // interrupt goes out as soon as the turn has one.
        match self.turn_interrupt() {
            Some(line) => vec![line],
            None => {
                self.interrupt_waiting = true;
                Vec::new()
            }
        }
    }

    fn permission(
        &mut self,
        request_id: &str,
        decision: &PermissionDecision,
        _input: &Value,
    ) -> Vec<String> {
        let Some((id, shape)) = self.approvals.remove(request_id) else {
            return Vec::new();
        };
        // Codex's answers carry no message: a declined call reaches the model as "rejected by
        // user", and the turn goes on.
        let decision = match (shape, decision) {
            (Approval::Item, PermissionDecision::Allow) => "accept",
            (Approval::Item, PermissionDecision::Deny { .. }) => "decline",
            (Approval::Legacy, PermissionDecision::Allow) => "approved",
            (Approval::Legacy, PermissionDecision::Deny { .. }) => "denied",
        };
        vec![json!({ "id": id, "result": { "decision": decision } }).to_string()]
    }

    fn decode(&mut self, line: &str) -> Vec<Decoded> {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return vec![error_event("Codex wrote a line that is not JSON")];
        };
        let mut out = Vec::new();
        match (message["method"].as_str(), message.get("id")) {
            (Some(_), Some(_)) => self.server_request(&message, &mut out),
            (Some(method), None) => {
                let method = method.to_owned();
                self.notification(&method, &message["params"], &mut out);
            }
            (None, Some(_)) => self.answer(&message, &mut out),
            (None, None) => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Instructions, InstructionsFormat, Launch, McpServer};

    fn request(mode: Mode) -> OpenRequest {
        OpenRequest {
            backend: BackendId::Codex,
            launch: Launch {
                working_directory: "/work".into(),
                instructions: Some(Instructions {
                    format: InstructionsFormat::Markdown,
                    content: "Be brief.".into(),
                }),
                launch_id: "l".into(),
            },
            config: AgentConfig {
                model: Model::Named("scripted-model".into()),
                mode,
                ..AgentConfig::default()
            },
            env: Vec::new(),
        }
    }

    fn parse(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    fn written(decoded: &[Decoded]) -> Vec<Value> {
        decoded
            .iter()
            .filter_map(|item| match item {
                Decoded::Write(line) => Some(parse(line)),
                _ => None,
            })
            .collect()
    }

    const THREAD: &str = "01a22d4a-a56a-7bb2-8dcc-e3b34918b10c";

    /// Lines recorded from `codex app-server` 0.171.0 against the scripted Responses server
    /// (long values shortened, fields the decoder does not read dropped).
    const RECORDED: &[&str] = &[
        r#"{"id":1,"result":{"userAgent":"paddock/0.171.0 (Debian 12.0.0; x86_64)","codexHome":"/l/codex-home","platformFamily":"unix","platformOs":"linux"}}"#,
        r#"{"method":"configWarning","params":{"summary":"Codex could not find bubblewrap on PATH. Codex will use the bundled bubblewrap in the meantime.","details":null},"emittedAtMs":1796056175970}"#,
        r#"{"id":2,"result":{"thread":{"id":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","sessionId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","modelProvider":"paddock","model":"scripted-model","status":{"type":"idle"}},"approvalPolicy":"untrusted","sandbox":{"type":"workspaceWrite"}}}"#,
        r#"{"method":"thread/started","params":{"thread":{"id":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","status":{"type":"idle"}}},"emittedAtMs":1796056183300}"#,
        r#"{"id":3,"result":{"turn":{"id":"01a22d4a-a5b5-7120-8123-cf2856cb3aec","items":[],"itemsView":"notLoaded","status":"inProgress","error":null}}}"#,
        r#"{"method":"turn/started","params":{"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turn":{"id":"01a22d4a-a5b5-7120-8123-cf2856cb3aec","items":[],"status":"inProgress","error":null}},"emittedAtMs":1796056196700}"#,
        r#"{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'echo conformance-tool-ran | tee conformance-output.txt'","cwd":"/work","processId":null,"source":"agent","status":"inProgress","aggregatedOutput":null,"exitCode":null},"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turnId":"01a22d4a-a5b5-7120-8123-cf2856cb3aec"},"emittedAtMs":1796056196777}"#,
        r#"{"method":"item/commandExecution/requestApproval","id":0,"params":{"kind":"command","threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turnId":"01a22d4a-a5b5-7120-8123-cf2856cb3aec","itemId":"call_1","startedAtMs":1796056196774,"environmentId":"local","command":"/bin/bash -lc 'echo conformance-tool-ran | tee conformance-output.txt'","cwd":"/work","proposedExecpolicyAmendment":["echo","conformance-tool-ran"],"availableDecisions":["accept","cancel"]}}"#,
        r#"{"method":"serverRequest/resolved","params":{"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","requestId":0},"emittedAtMs":1796056191358}"#,
        r#"{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'echo conformance-tool-ran | tee conformance-output.txt'","cwd":"/work","status":"completed","aggregatedOutput":"conformance-tool-ran\n","exitCode":0},"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turnId":"01a22d4a-a5b5-7120-8123-cf2856cb3aec"},"emittedAtMs":1796056191514}"#,
        r#"{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"call_2","command":"/bin/bash -lc 'rm -rf x'","cwd":"/work","status":"declined","aggregatedOutput":null,"exitCode":null},"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turnId":"01a22d4a-a5b5-7120-8123-cf2856cb3aec"},"emittedAtMs":1796056196781}"#,
        r#"{"method":"item/agentMessage/delta","params":{"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turnId":"01a22d4a-a5b5-7120-8123-cf2856cb3aec","itemId":"msg_scripted_1_0","delta":"done "},"emittedAtMs":1796056196815}"#,
        r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"msg_scripted_1_0","text":"done with the tool","phase":null},"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turnId":"01a22d4a-a5b5-7120-8123-cf2856cb3aec"},"emittedAtMs":1796056196821}"#,
        r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turnId":"01a22d4a-a5b5-7120-8123-cf2856cb3aec","tokenUsage":{"total":{"totalTokens":38,"inputTokens":24,"cachedInputTokens":0,"outputTokens":14,"reasoningOutputTokens":0},"last":{"totalTokens":19,"inputTokens":12,"cachedInputTokens":0,"outputTokens":7,"reasoningOutputTokens":0},"modelContextWindow":258400}},"emittedAtMs":1796056196831}"#,
        r#"{"method":"turn/completed","params":{"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turn":{"id":"01a22d4a-a5b5-7120-8123-cf2856cb3aec","items":[],"status":"completed","error":null}},"emittedAtMs":1796056196845}"#,
        r#"{"method":"turn/completed","params":{"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turn":{"id":"01a22d4a-b8d3-7f60-b776-25b7e300ec16","items":[],"status":"interrupted","error":null}},"emittedAtMs":1796056203434}"#,
        r#"{"method":"error","params":{"error":{"message":"scripted 400","codexErrorInfo":"other","additionalDetails":null},"willRetry":false,"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turnId":"01a22d54-2c1c-7a81-84fa-07380f0b0186"},"emittedAtMs":1796056820861}"#,
        r#"{"method":"turn/completed","params":{"threadId":"01a22d4a-a56a-7bb2-8dcc-e3b34918b10c","turn":{"id":"01a22d54-2c1c-7a81-84fa-07380f0b0186","items":[],"status":"failed","error":{"message":"scripted 400","codexErrorInfo":"other"}}},"emittedAtMs":1796056820874}"#,
    ];

    #[test]
    fn normalises_recorded_lines() {
        let mut codex = CodexProtocol::new(&request(Mode::Default));
        let initialize = parse(&codex.startup()[0]);
        assert_eq!(initialize["method"], "initialize");
        assert_eq!(initialize["id"], 1);
        assert!(initialize.get("jsonrpc").is_none());
        // A command before the thread exists waits for it.
        assert!(codex.user(&Command::user("c1", "run the tool")).is_empty());

        let decoded = codex.decode(RECORDED[0]);
        let sent = written(&decoded);
        assert_eq!(sent[0], json!({ "method": "initialized" }));
        assert_eq!(sent[1]["method"], "thread/start");
        assert_eq!(sent[1]["id"], 2);
        assert_eq!(
            sent[1]["params"],
            json!({
                "cwd": "/work", "approvalPolicy": "untrusted", "approvalsReviewer": "user",
                "sandbox": "workspace-write", "modelProvider": "paddock",
                "model": "scripted-model", "developerInstructions": "Be brief.",
            })
        );
        assert!(codex.decode(RECORDED[1]).is_empty());

        // The thread id is the vendor session; the waiting command starts its turn.
        let decoded = codex.decode(RECORDED[2]);
        assert_eq!(decoded[0], Decoded::VendorSession(THREAD.into()));
        assert_eq!(
            decoded[1],
            Decoded::Event(AgentEvent::SessionStarted {
                vendor_session_id: Some(THREAD.into())
            })
        );
        let turn = &written(&decoded)[0];
        assert_eq!(turn["method"], "turn/start");
        assert_eq!(turn["params"]["threadId"], THREAD);
        assert_eq!(
            turn["params"]["input"],
            json!([{ "type": "text", "text": "run the tool" }])
        );
        assert!(codex.decode(RECORDED[3]).is_empty());
        assert!(codex.decode(RECORDED[4]).is_empty());
        assert!(codex.decode(RECORDED[5]).is_empty());

        assert!(matches!(
            &codex.decode(RECORDED[6])[..],
            [Decoded::Event(AgentEvent::ToolCallStarted { call_id, name, input })]
                if call_id == "call_1" && name == "shell"
                    && input["command"].as_str().is_some_and(|c| c.contains("conformance-tool-ran"))
        ));
        let decoded = codex.decode(RECORDED[7]);
        let [
            Decoded::Permission {
                request_id,
                tool,
                input,
            },
        ] = &decoded[..]
        else {
            panic!("{decoded:?}")
        };
        assert_eq!((request_id.as_str(), tool.as_str()), ("0", "shell"));
        assert_eq!(input["cwd"], "/work");
        // The answer goes back under Codex's own (numeric) id.
        let answer = parse(&codex.permission("0", &PermissionDecision::Allow, input)[0]);
        assert_eq!(
            answer,
            json!({ "id": 0, "result": { "decision": "accept" } })
        );
        assert!(
            codex
                .permission("0", &PermissionDecision::Allow, input)
                .is_empty(),
            "answered once"
        );
        assert!(codex.decode(RECORDED[8]).is_empty());

        assert_eq!(
            codex.decode(RECORDED[9]),
            [Decoded::Event(AgentEvent::ToolCallFinished {
                call_id: "call_1".into(),
                is_error: false,
                output: "conformance-tool-ran\n".into()
            })]
        );
        assert_eq!(
            codex.decode(RECORDED[10]),
            [Decoded::Event(AgentEvent::ToolCallFinished {
                call_id: "call_2".into(),
                is_error: true,
                output: String::new()
            })]
        );
        assert_eq!(
            codex.decode(RECORDED[11]),
            [Decoded::Event(AgentEvent::AssistantTextDelta {
                text: "done ".into()
            })]
        );
        assert_eq!(
            codex.decode(RECORDED[12]),
            [Decoded::Event(AgentEvent::AssistantMessageCompleted {
                text: "done with the tool".into()
            })]
        );
        assert_eq!(
            codex.decode(RECORDED[13]),
            [Decoded::Event(AgentEvent::Usage {
                input_tokens: 12,
                output_tokens: 7
            })]
        );
        assert_eq!(
            codex.decode(RECORDED[14]),
            [Decoded::TurnEnded(TurnOutcome::Completed)]
        );
        assert_eq!(
            codex.decode(RECORDED[15]),
            [Decoded::TurnEnded(TurnOutcome::Interrupted)]
        );
        assert!(matches!(
            &codex.decode(RECORDED[16])[..],
            [Decoded::Event(AgentEvent::Error { message })] if message.contains("scripted 400")
        ));
        assert_eq!(
            codex.decode(RECORDED[17]),
            [Decoded::TurnEnded(TurnOutcome::Failed(
                "scripted 400".into()
            ))]
        );
    }

    #[test]
    fn interrupts_need_the_turn_id() {
        let mut codex = CodexProtocol::new(&request(Mode::Default));
        codex.startup();
        codex.decode(RECORDED[0]);
        codex.decode(RECORDED[2]);
        let turn = parse(&codex.user(&Command::user("c1", "go"))[0]);
        assert_eq!(turn["id"], 3);
        // Before `turn/started` the interrupt waits for the turn id…
        assert!(codex.interrupt("i1").is_empty());
        let decoded = codex.decode(RECORDED[5]);
        let interrupt = &written(&decoded)[0];
        assert_eq!(interrupt["method"], "turn/interrupt");
        assert_eq!(
            interrupt["params"],
            json!({ "threadId": THREAD, "turnId": "01a22d4a-a5b5-7120-8123-cf2856cb3aec" })
        );
        // …and goes out once: the turn/start answer does not send it again.
        assert!(written(&codex.decode(RECORDED[4])).is_empty());
        // With the turn id known it goes out at once.
        let again = parse(&codex.interrupt("i2")[0]);
        assert_eq!(again["method"], "turn/interrupt");
        // A refused turn never completes, so the refusal ends it.
        let refused = format!(
            r#"{{"id":{},"error":{{"code":-32600,"message":"thread busy"}}}}"#,
            codex.next_id
        );
        codex.user(&Command::user("c2", "again"));
        assert!(matches!(
            &codex.decode(&refused)[..],
            [Decoded::TurnEnded(TurnOutcome::Failed(reason))] if reason.contains("thread busy")
        ));
    }

    #[test]
    fn modes_map_to_approval_policy_and_sandbox() {
        let params = |mode| CodexProtocol::new(&request(mode)).thread_params;
        let default = params(Mode::Default);
        assert_eq!(
            (&default["approvalPolicy"], &default["sandbox"]),
            (&json!("untrusted"), &json!("workspace-write"))
        );
        let bypass = params(Mode::BypassPermissions);
        assert_eq!(
            (&bypass["approvalPolicy"], &bypass["sandbox"]),
            (&json!("never"), &json!("danger-full-access"))
        );
        assert_eq!(params(Mode::Plan)["sandbox"], "read-only");
        assert_eq!(params(Mode::AcceptEdits)["approvalPolicy"], "on-request");
    }

    #[test]
    fn other_server_requests_are_answered_at_once() {
        let mut codex = CodexProtocol::new(&request(Mode::Default));
        let decoded = codex.decode(
            r#"{"method":"item/tool/requestUserInput","id":"q1","params":{"threadId":"t","questions":[]}}"#,
        );
        let answer = &written(&decoded)[0];
        assert_eq!(answer["id"], "q1");
        assert_eq!(answer["error"]["code"], -32601);
        let decoded = codex.decode(
            r#"{"method":"item/permissions/requestApproval","id":7,"params":{"threadId":"t","permissions":{}}}"#,
        );
        assert_eq!(
            written(&decoded)[0],
            json!({ "id": 7, "result": { "permissions": {}, "scope": "turn" } })
        );
        // The legacy approval answers in its own vocabulary, under a string id.
        let decoded = codex.decode(
            r#"{"method":"execCommandApproval","id":"a1","params":{"conversationId":"t","callId":"c","command":["ls"],"cwd":"/w","parsedCmd":[]}}"#,
        );
        assert!(
            matches!(&decoded[..], [Decoded::Permission { request_id, .. }] if request_id == "a1")
        );
        let deny = PermissionDecision::Deny {
            message: "no".into(),
        };
        assert_eq!(
            parse(&codex.permission("a1", &deny, &Value::Null)[0]),
            json!({ "id": "a1", "result": { "decision": "denied" } })
        );
    }

    #[test]
    fn bad_lines_and_other_threads_are_not_fatal() {
        let mut codex = CodexProtocol::new(&request(Mode::Default));
        codex.startup();
        codex.decode(RECORDED[0]);
        codex.decode(RECORDED[2]);
        assert!(matches!(
            &codex.decode("not json")[..],
            [Decoded::Event(AgentEvent::Error { .. })]
        ));
        assert!(codex.decode("[1,2]").is_empty());
        assert!(codex.decode(r#"{"id":99,"result":{}}"#).is_empty());
        assert!(
            codex
                .decode(r#"{"method":"turn/completed","params":{}}"#)
                .len()
                == 1
        );
        // A sub-agent's thread is not this session's.
        assert!(
            codex
                .decode(r#"{"method":"turn/completed","params":{"threadId":"other","turn":{"status":"completed"}}}"#)
                .is_empty()
        );
    }

    #[test]
    fn the_config_names_the_key_variable_and_switches_off_phoning_home() {
        let config = config_toml(
            "http://127.0.0.1:9/v1",
            &AgentConfig {
                model: Model::Named("m\"odel\u{7f}".into()),
                ..AgentConfig::default()
            },
            &[],
        );
        assert!(
            config.starts_with("model = \"m\\\"odel\\u007F\"\n"),
            "{config}"
        );
        assert!(config.contains("model_provider = \"paddock\""));
        assert!(config.contains("[model_providers.paddock]"));
        assert!(config.contains("base_url = \"http://127.0.0.1:9/v1\""));
        assert!(config.contains("env_key = \"OPENAI_API_KEY\""));
        assert!(config.contains("wire_api = \"responses\""));
        assert!(config.contains("check_for_update_on_startup = false"));
        assert!(config.contains("[analytics]\nenabled = false"));
        assert!(config.contains("[feedback]\nenabled = false"));
        assert!(!config_toml("http://x/v1", &AgentConfig::default(), &[]).contains("\nmodel ="));
    }

    fn server(name: &str) -> McpServer {
        McpServer {
            name: name.into(),
            command: "/opt/paddock/bin/paddock".into(),
            args: vec!["mcp".into(), "--task=\"t1\"".into()],
            env: vec![("PADDOCK_STATE".into(), "/state dir".into())],
        }
    }

    #[test]
    fn without_mcp_servers_the_config_is_unchanged() {
        let config = config_toml("http://x/v1", &AgentConfig::default(), &[]);
        assert!(!config.contains("mcp_servers"), "{config}");
        assert!(!config.contains("shell_tool"), "{config}");
        let params = CodexProtocol::new(&request(Mode::Default)).thread_params;
        assert_eq!(params["sandbox"], "workspace-write");
    }

    #[test]
    fn mcp_servers_become_tables_with_their_environment() {
        let agent = AgentConfig {
            mcp_servers: vec![server("paddock"), server("device-2")],
            ..AgentConfig::default()
        };
        let config = config_toml("http://x/v1", &agent, &[]);
        assert!(
            config.contains(
                "\n[mcp_servers.paddock]\n\
                 command = \"/opt/paddock/bin/paddock\"\n\
                 args = [\"mcp\", \"--task=\\\"t1\\\"\"]\n\
                 \n[mcp_servers.paddock.env]\n\
                 \"PADDOCK_STATE\" = \"/state dir\"\n"
            ),
            "{config}"
        );
        assert!(config.contains("\n[mcp_servers.device-2]\n"), "{config}");
        // The runtime's own tools and approvals stay as they are.
        assert!(!config.contains("approval_mode"), "{config}");
        assert!(!config.contains("shell_tool"), "{config}");
    }

    #[test]
    fn paddock_session_variables_reach_every_mcp_server_unless_it_sets_them() {
        let agent = AgentConfig {
            mcp_servers: vec![server("paddock")],
            ..AgentConfig::default()
        };
        let forwarded = [
            (
                "PADDOCK_PROXY_TOKEN_FILE".to_owned(),
                "/l/voucher-v1".to_owned(),
            ),
            ("PADDOCK_STATE".to_owned(), "/elsewhere".to_owned()),
        ];
        let config = config_toml("http://x/v1", &agent, &forwarded);
        assert!(
            config.contains(
                "\n[mcp_servers.paddock.env]\n\
                 \"PADDOCK_STATE\" = \"/state dir\"\n\
                 \"PADDOCK_PROXY_TOKEN_FILE\" = \"/l/voucher-v1\"\n"
            ),
            "{config}"
        );
        let mut open = request(Mode::Default);
        open.env = vec![
            ("PADDOCK_CONTROL_SOCKET".into(), "/run/p.sock".into()),
            ("HOME".into(), "/h".into()),
        ];
        let secrets = [
            ("OPENAI_API_KEY".into(), "pdk_v_secret".into()),
            ("PADDOCK_PROXY_TOKEN_FILE".into(), "/l/voucher-v1".into()),
        ];
        assert_eq!(
            forwarded_env(&open, &secrets),
            vec![
                (
                    "PADDOCK_CONTROL_SOCKET".to_owned(),
                    "/run/p.sock".to_owned()
                ),
                (
                    "PADDOCK_PROXY_TOKEN_FILE".to_owned(),
                    "/l/voucher-v1".to_owned()
                ),
            ],
            "paths only: never the key, never other variables"
        );
    }

    #[test]
    fn mcp_only_switches_off_the_shell_and_pre_approves_the_servers() {
        let agent = AgentConfig {
            mcp_servers: vec![server("paddock")],
            tools: ToolAccess::McpOnly,
            ..AgentConfig::default()
        };
        let config = config_toml("http://x/v1", &agent, &[]);
        let features = config
            .split("[features]\n")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap();
        for feature in MCP_ONLY_DISABLED_FEATURES {
            assert!(
                features
                    .lines()
                    .any(|line| line == format!("{feature} = false")),
                "{config}"
            );
        }
        assert!(config.contains(
            "args = [\"mcp\", \"--task=\\\"t1\\\"\"]\ndefault_tools_approval_mode = \"approve\"\n"
        ));
        let mut unattended = request(Mode::BypassPermissions);
        unattended.config.tools = ToolAccess::McpOnly;
        let params = CodexProtocol::new(&unattended).thread_params;
        assert_eq!(
            (&params["approvalPolicy"], &params["sandbox"]),
            (&json!("never"), &json!("read-only"))
        );
    }
}
