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

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::{Adapter, BoxFuture, Decoded, LaunchPlan, Prepared, Protocol};
use crate::contract::{
    AgentEvent, BackendId, Capabilities, Command, Lifetime, MidTurnDelivery, Mode, Model,
    OpenRequest, PermissionDecision, Probe, Transport, TurnOutcome,
};
use crate::credentials::ModelApi;
use crate::host::{HostConfig, LaunchDir};

#[derive(Debug)]
pub struct Codex {
    program: Option<PathBuf>,
}

impl Codex {
    pub fn new(host: &HostConfig) -> Self {
        Self {
            program: host.find_program("codex", "codex"),
        }
    }
}

const CAPABILITIES: Capabilities = Capabilities {
    lifetime: Lifetime::Session,
    transport: Transport::Process,
    mid_turn_delivery: MidTurnDelivery::SafeBoundaryQueue,
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

impl Adapter for Codex {
    fn backend(&self) -> BackendId {
        BackendId::Codex
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn program(&self) -> Option<PathBuf> {
        self.program.clone()
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        Box::pin(super::probe_version(
            BackendId::Codex,
            self.program.clone(),
            CAPABILITIES,
            "`codex` is not on PATH (npm install -g @openai/codex)",
        ))
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
        std::fs::write(
            home.join("config.toml"),
            config_toml(&base_url, &request.config.model),
        )?;
        Ok(Prepared {
            env: vec![("CODEX_HOME".into(), home.display().to_string())],
            private: Vec::new(),
        })
    }

    fn model_api(&self) -> Option<ModelApi> {
        Some(ModelApi::OpenAiResponses)
    }

    fn protocol(&self, request: &OpenRequest, _prepared: &Prepared) -> Box<dyn Protocol> {
        Box::new(CodexProtocol::new(request))
    }
}

/// `config.toml` for the launch's `CODEX_HOME`. The provider's `env_key` names the variable
/// that holds the voucher, so the voucher never lands in the file.
fn config_toml(base_url: &str, model: &Model) -> String {
    let mut config = String::new();
    // Without a named model Codex uses its own default, whose metadata it knows.
    if let Model::Named(model) = model {
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
    for feature in DISABLED_FEATURES {
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
        let (approval, sandbox) = match request.config.mode {
            Mode::Default => ("untrusted", "workspace-write"),
            Mode::AcceptEdits => ("on-request", "workspace-write"),
            Mode::Plan => ("on-request", "read-only"),
            Mode::BypassPermissions => ("never", "danger-full-access"),
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
