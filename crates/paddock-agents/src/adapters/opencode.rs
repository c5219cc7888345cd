//! OpenCode (`opencode serve`, the v1 server API of OpenCode 1.x): one authenticated,
//! loopback-only HTTP server per logical session. Lifetime `session`, transport `service`,
//! mid-turn delivery `steer`: a prompt posted while the session runs joins the running loop,
//! which answers it before going idle.
//!
//! The server announces its address on stdout (`opencode server listening on http://…`); the
//! protocol then asks the [`HttpBridge`] to connect. The bridge subscribes to `GET /event`
//! (SSE) and performs the protocol's requests with Basic auth (user `opencode`, a password
//! made per launch and given to the server only through `OPENCODE_SERVER_PASSWORD`); events
//! and responses come back to the protocol as the bridge's lines (see [`super::http_bridge`]).
//!
//! A turn ends at `session.idle` (or `session.status` idle), counted only after the server
//! reported the session busy since the last prompt: OpenCode sends a second, stale idle after
//! an abort, which must not end the next turn.
//!
//! OpenCode reaches its model through the bundled OpenAI-compatible provider (Chat
//! Completions) configured in a launch-private config file whose base URL is the credential
//! proxy and whose key is read from `OPENAI_API_KEY` (the voucher) by reference.
//!
//! MCP servers are `"mcp"` entries of that config (`"type": "local"`, the command and its
//! arguments as one list, `"environment"`); OpenCode names their tools `<server>_<tool>`.
//! [`ToolAccess::McpOnly`] replaces the mode's permissions with `"*": "deny"` followed by
//! `"<server>_*": "allow"` for each server (OpenCode 1.x applies the last matching rule, and
//! removes a tool denied for every pattern from the model's list): checked against `opencode`
//! 1.18.33, the model is then offered only the servers' tools — no bash, read, edit, glob,
//! grep, list, task, webfetch, todo or skill tool. OpenCode 1.x has merged its old `"tools"`
//! switches into `"permission"`, so no `"tools"` block is written.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{Value, json};

use super::http_bridge::{self, HttpBridge, request};
use super::{
    Adapter, AdapterDescriptor, Bridge, Decoded, LaunchPlan, Prepared, Protocol, SupportedVersions,
};
use crate::contract::{
    AgentEvent, BackendId, Capabilities, Command, Lifetime, MidTurnDelivery, Mode, Model,
    OpenRequest, PermissionDecision, ToolAccess, Transport, TurnOutcome,
};
use crate::credentials::ModelApi;
use crate::host::LaunchDir;

/// The provider name Paddock configures in OpenCode's launch-private config.
const PROVIDER: &str = "paddock";
/// The model used when the request names none.
const DEFAULT_MODEL: &str = "gpt-5";
/// The Basic-auth user; OpenCode's default, set explicitly.
const USERNAME: &str = "opencode";
/// The name under which `prepare` hands the server password to the bridge.
const PASSWORD: &str = "opencode_server_password";
/// The server's event stream (SSE).
const EVENTS_PATH: &str = "/event";
/// Tool output kept in `tool_call_finished`.
const MAX_OUTPUT: usize = 4000;

#[derive(Debug, Default)]
pub struct OpenCode;

const DESCRIPTOR: AdapterDescriptor = AdapterDescriptor {
    backend: BackendId::OpenCode,
    capabilities: Capabilities {
        lifetime: Lifetime::Session,
        transport: Transport::Service,
        mid_turn_delivery: MidTurnDelivery::Steer,
    },
    model_api: Some(ModelApi::OpenAiChat),
    asks_permission: true,
    mcp_client: true,
    program: Cow::Borrowed("opencode"),
    version_args: &["--version"],
    install_hint: Cow::Borrowed("`opencode` is not on PATH (npm install -g opencode-ai)"),
    // Only the v1 server API is spoken: another major version is refused before launch.
    supported: Some(SupportedVersions {
        major: 1,
        description: "the OpenCode v1 server API (opencode 1.x)",
    }),
};

impl Adapter for OpenCode {
    fn descriptor(&self) -> &AdapterDescriptor {
        &DESCRIPTOR
    }

    fn launch(&self, _request: &OpenRequest) -> LaunchPlan {
        let args = ["serve", "--hostname", "127.0.0.1", "--port", "0"]
            .iter()
            .map(Into::into)
            .collect();
        let env = [
            ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
            ("OPENCODE_DISABLE_SHARE", "1"),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
            ("OPENCODE_DISABLE_CLAUDE_CODE", "1"),
            // No external plugins: nothing is installed from npm at startup.
            ("OPENCODE_PURE", "1"),
            ("OPENCODE_SERVER_USERNAME", USERNAME),
        ]
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
        LaunchPlan { args, env }
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
                std::io::Error::other("the credential broker gave OpenCode no model base URL")
            })?;
        let root = dir.root.join("opencode");
        let xdg = [
            ("XDG_CONFIG_HOME", "config"),
            ("XDG_DATA_HOME", "data"),
            ("XDG_CACHE_HOME", "cache"),
            ("XDG_STATE_HOME", "state"),
        ];
        let mut env = Vec::new();
        for (name, sub) in xdg {
            let path = root.join(sub);
            std::fs::create_dir_all(&path)?;
            env.push((name.to_owned(), path.display().to_string()));
        }
        let mut config = config(request, &base_url);
        if let Some(instructions) = &request.launch.instructions {
            let path = root.join("instructions.md");
            std::fs::write(&path, &instructions.content)?;
            config["instructions"] = json!([path.display().to_string()]);
        }
        let config_path = root.join("opencode.json");
        std::fs::write(&config_path, config.to_string())?;
        env.push((
            "OPENCODE_CONFIG".to_owned(),
            config_path.display().to_string(),
        ));
        let password = new_password()?;
        env.push(("OPENCODE_SERVER_PASSWORD".to_owned(), password.clone()));
        Ok(Prepared {
            env,
            private: vec![(PASSWORD.to_owned(), password)],
        })
    }

    fn protocol(&self, _request: &OpenRequest, _prepared: &Prepared) -> Box<dyn Protocol> {
        Box::new(OpenCodeProtocol::default())
    }

    fn bridge(&self, prepared: &Prepared) -> Option<Box<dyn Bridge>> {
        let password = prepared.private(PASSWORD)?;
        Some(Box::new(
            HttpBridge::new(EVENTS_PATH).with_basic_auth(USERNAME, password),
        ))
    }
}

/// OpenCode's launch-private config: one OpenAI-compatible provider behind the credential
/// proxy (the key by reference to the voucher's variable), no other provider, no updates or
/// sharing, and permissions from the mode.
fn config(request: &OpenRequest, base_url: &str) -> Value {
    let model = match &request.config.model {
        Model::Named(model) => model.clone(),
        Model::Default => DEFAULT_MODEL.to_owned(),
    };
    let permission = match (request.config.tools, request.config.mode) {
        (ToolAccess::McpOnly, _) => mcp_only_permission(request),
        (ToolAccess::Default, Mode::Default) => {
            json!({ "bash": "ask", "edit": "ask", "webfetch": "ask", "question": "deny" })
        }
        (ToolAccess::Default, Mode::AcceptEdits) => {
            json!({ "bash": "ask", "edit": "allow", "webfetch": "ask", "question": "deny" })
        }
        (ToolAccess::Default, Mode::Plan) => {
            json!({ "bash": "ask", "edit": "deny", "webfetch": "ask", "question": "deny" })
        }
        (ToolAccess::Default, Mode::BypassPermissions) => json!({
            "bash": "allow", "edit": "allow", "webfetch": "allow", "external_directory": "allow",
            "doom_loop": "allow", "question": "deny"
        }),
    };
    let mut config = json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "enabled_providers": [PROVIDER],
        "model": format!("{PROVIDER}/{model}"),
        "small_model": format!("{PROVIDER}/{model}"),
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Paddock",
                "options": { "baseURL": base_url, "apiKey": "{env:OPENAI_API_KEY}" },
                "models": { model.clone(): { "name": model } }
            }
        },
        "permission": permission,
    });
    if !request.config.mcp_servers.is_empty() {
        config["mcp"] = mcp(request);
    }
    config
}

/// The `"mcp"` block: one local (stdio) server per entry.
fn mcp(request: &OpenRequest) -> Value {
    let servers: serde_json::Map<String, Value> = request
        .config
        .mcp_servers
        .iter()
        .map(|server| {
            let mut command = vec![server.command.display().to_string()];
            command.extend(server.args.iter().cloned());
            let environment = server.env_object();
            let entry = json!({
                "type": "local",
                "command": command,
                "environment": environment,
                "enabled": true,
            });
            (server.name.clone(), entry)
        })
        .collect();
    Value::Object(servers)
}

/// Deny everything, then allow each server's tools. OpenCode applies the last matching rule,
/// so `"*"` must come first: a JSON object's keys keep their order here or are sorted, and
/// `*` sorts before every server name (`[a-z0-9_-]`).
fn mcp_only_permission(request: &OpenRequest) -> Value {
    let mut permission = serde_json::Map::new();
    permission.insert("*".into(), json!("deny"));
    for server in &request.config.mcp_servers {
        permission.insert(format!("{}_*", server.name), json!("allow"));
    }
    Value::Object(permission)
}

/// 32 random hex digits, for one server's Basic auth.
fn new_password() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| std::io::Error::other(error.to_string()))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether an id from OpenCode is safe in a request path.
fn safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The loopback URL in OpenCode's listening line, if it is one.
fn listening_url(line: &str) -> Option<String> {
    let rest = line.split("listening on ").nth(1)?;
    let url = rest.split_whitespace().next()?.trim_end_matches('/');
    let authority = url.strip_prefix("http://")?;
    let (host, port) = authority.rsplit_once(':')?;
    let loopback = matches!(host, "127.0.0.1" | "localhost" | "[::1]");
    (loopback && port.parse::<u16>().is_ok_and(|port| port != 0)).then(|| url.to_owned())
}

/// The v1 server protocol for one logical session (one OpenCode session).
#[derive(Debug, Default)]
pub struct OpenCodeProtocol {
    /// The server's address was handed to the bridge.
    connected: bool,
    /// `POST /session` was sent.
    creating: bool,
    session: Option<String>,
    /// Prompts waiting for the session to exist.
    pending: Vec<String>,
    /// Steers waiting for the running turn to reach the model: OpenCode reads a session's
    /// messages before it creates the assistant message of a step, so a prompt posted earlier
    /// would merge into the root prompt's model call instead of steering the turn.
    held: Vec<String>,
    /// The running turn's first assistant message exists.
    stepping: bool,
    /// An interrupt arrived before the session existed.
    interrupt_pending: bool,
    /// A root turn is running.
    turn_open: bool,
    /// A prompt was sent and the server has not reported the session busy since.
    awaiting_busy: bool,
    /// Prompts sent whose user message the server has not announced yet. OpenCode answers
    /// `prompt_async` and writes the message in the background; a steer posted late in a
    /// step can land after the running loop has gone idle, and then starts a loop of its
    /// own. Until every prompt's message exists, neither a busy nor an idle decides the turn.
    unseen_prompts: usize,
    user_messages: HashSet<String>,
    /// How the running turn ends, when it did not simply complete.
    failure: Option<TurnOutcome>,
    assistant_messages: HashSet<String>,
    text_parts: HashSet<String>,
    completed_parts: HashSet<String>,
    tools_started: HashSet<String>,
    tools_finished: HashSet<String>,
}

impl OpenCodeProtocol {
    fn prompt(&self, session: &str, text: &str) -> String {
        request(
            "POST",
            &format!("/session/{session}/prompt_async"),
            json!({ "parts": [{ "type": "text", "text": text }] }),
            "prompt",
        )
    }

    /// Sends `text` now, or keeps it until the session exists.
    fn send_prompt(&mut self, text: &str) -> Vec<String> {
        self.awaiting_busy = true;
        self.unseen_prompts += 1;
        match &self.session {
            Some(session) => vec![self.prompt(session, text)],
            None => {
                self.pending.push(text.to_owned());
                Vec::new()
            }
        }
    }

    /// Sends the held steers.
    fn release_held(&mut self, out: &mut Vec<Decoded>) {
        for text in std::mem::take(&mut self.held) {
            for line in self.send_prompt(&text) {
                out.push(Decoded::Write(line));
            }
        }
    }

    /// An idle ends the turn once the server ran a loop after every prompt's message; a
    /// failed or aborted turn ends at its idle whatever is still in flight.
    fn idle_ends_turn(&self) -> bool {
        !self.awaiting_busy && (self.unseen_prompts == 0 || self.failure.is_some())
    }

    fn end_turn(&mut self, out: &mut Vec<Decoded>) {
        if !self.turn_open {
            return;
        }
        if !self.held.is_empty() && self.failure.is_none() {
            // The turn went idle before its steers went out: they continue it.
            self.stepping = true;
            self.release_held(out);
            return;
        }
        self.held.clear();
        self.stepping = false;
        self.turn_open = false;
        self.awaiting_busy = false;
        self.unseen_prompts = 0;
        let outcome = self.failure.take().unwrap_or(TurnOutcome::Completed);
        out.push(Decoded::TurnEnded(outcome));
    }

    fn bridge_line(&mut self, message: &Value, out: &mut Vec<Decoded>) {
        match message["bridge"].as_str() {
            Some("event") => self.event(&message["event"], out),
            Some("response") => self.response(message, out),
            Some("failed") => {
                out.push(Decoded::Event(AgentEvent::Error {
                    message: format!(
                        "could not reach the OpenCode server ({}): {}",
                        message["tag"].as_str().unwrap_or("request"),
                        message["message"].as_str().unwrap_or_default()
                    ),
                }));
                if matches!(message["tag"].as_str(), Some("prompt" | "create")) {
                    self.failure = Some(TurnOutcome::Failed(
                        "could not reach the OpenCode server".into(),
                    ));
                    self.end_turn(out);
                }
            }
            Some("ended") => out.push(Decoded::Event(AgentEvent::Error {
                message: format!(
                    "the OpenCode event stream ended: {}",
                    message["message"].as_str().unwrap_or_default()
                ),
            })),
            _ => {}
        }
    }

    fn response(&mut self, message: &Value, out: &mut Vec<Decoded>) {
        let status = message["status"].as_u64().unwrap_or(0);
        let tag = message["tag"].as_str().unwrap_or_default();
        let ok = (200..300).contains(&status);
        if tag == "create" && ok {
            let Some(id) = message["body"]["id"].as_str().filter(|id| safe_id(id)) else {
                out.push(Decoded::Event(AgentEvent::Error {
                    message: "OpenCode created a session without a usable id".into(),
                }));
                self.failure = Some(TurnOutcome::Failed("OpenCode created no session".into()));
                self.end_turn(out);
                return;
            };
            self.session = Some(id.to_owned());
            out.push(Decoded::VendorSession(id.to_owned()));
            out.push(Decoded::Event(AgentEvent::SessionStarted {
                vendor_session_id: Some(id.to_owned()),
            }));
            if std::mem::take(&mut self.interrupt_pending) {
                self.pending.clear();
                self.awaiting_busy = false;
                self.unseen_prompts = 0;
                if self.turn_open {
                    self.turn_open = false;
                    out.push(Decoded::TurnEnded(TurnOutcome::Interrupted));
                }
            }
            for text in std::mem::take(&mut self.pending) {
                out.push(Decoded::Write(self.prompt(id, &text)));
            }
            return;
        }
        if ok {
            return;
        }
        let detail = match &message["body"] {
            Value::Object(body) => body
                .get("data")
                .and_then(|data| data.get("message"))
                .or_else(|| body.get("message"))
                .or_else(|| body.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            Value::String(text) => text.chars().take(200).collect(),
            _ => String::new(),
        };
        out.push(Decoded::Event(AgentEvent::Error {
            message: format!("OpenCode answered `{tag}` with HTTP {status}: {detail}"),
        }));
        if matches!(tag, "prompt" | "create") {
            self.failure = Some(TurnOutcome::Failed(format!(
                "OpenCode refused the prompt (HTTP {status})"
            )));
            self.end_turn(out);
        }
    }

    fn event(&mut self, event: &Value, out: &mut Vec<Decoded>) {
        let kind = event["type"].as_str().unwrap_or_default();
        let properties = &event["properties"];
        if kind == "server.connected" {
            if self.session.is_none() && !self.creating {
                self.creating = true;
                out.push(Decoded::Write(request(
                    "POST",
                    "/session",
                    json!({}),
                    "create",
                )));
            }
            return;
        }
        // One server per logical session: anything about another session is not ours.
        match (properties["sessionID"].as_str(), &self.session) {
            (Some(id), Some(ours)) if id == ours => {}
            _ => return,
        }
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        match kind {
            "message.updated" => {
                let info = &properties["info"];
                if info["role"] == "user"
                    && let Some(id) = info["id"].as_str()
                    && self.user_messages.insert(id.to_owned())
                    && self.unseen_prompts > 0
                {
                    // A loop must run after this message before the turn can end.
                    self.unseen_prompts -= 1;
                    self.awaiting_busy = true;
                }
                // A new assistant message means the turn's step has read the session's
                // messages (updates of an earlier message, which trail an abort, do not).
                let new = info["role"] == "assistant"
                    && info["id"]
                        .as_str()
                        .is_some_and(|id| self.assistant_messages.insert(id.to_owned()));
                if new && self.turn_open && !self.stepping {
                    self.stepping = true;
                    self.release_held(out);
                }
            }
            "message.part.delta" => {
                let part = properties["partID"].as_str().unwrap_or_default();
                if properties["field"] == "text" && self.text_parts.contains(part) {
                    out.push(Decoded::Event(AgentEvent::AssistantTextDelta {
                        text: text(&properties["delta"]),
                    }));
                }
            }
            "message.part.updated" => self.part(&properties["part"], out),
            "permission.asked" => {
                let id = properties["id"].as_str().unwrap_or_default();
                if !safe_id(id) {
                    out.push(Decoded::Event(AgentEvent::Error {
                        message: "OpenCode asked a permission without a usable id".into(),
                    }));
                    return;
                }
                out.push(Decoded::Permission {
                    request_id: id.to_owned(),
                    tool: text(&properties["permission"]),
                    input: json!({
                        "patterns": properties["patterns"],
                        "metadata": properties["metadata"],
                        "call_id": properties["tool"]["callID"],
                    }),
                });
            }
            "session.status" => match properties["status"]["type"].as_str() {
                Some("busy") if self.turn_open && self.unseen_prompts == 0 => {
                    self.awaiting_busy = false;
                }
                Some("idle") if self.idle_ends_turn() => self.end_turn(out),
                _ => {}
            },
            "session.idle" if self.idle_ends_turn() => self.end_turn(out),
            "session.error" => {
                let error = &properties["error"];
                if error["name"] == "MessageAbortedError" {
                    self.failure = Some(TurnOutcome::Interrupted);
                } else {
                    let message = error["data"]["message"]
                        .as_str()
                        .or_else(|| error["name"].as_str())
                        .unwrap_or("the session failed")
                        .to_owned();
                    out.push(Decoded::Event(AgentEvent::Error {
                        message: format!("OpenCode: {message}"),
                    }));
                    self.failure = Some(TurnOutcome::Failed(message));
                }
                // The error belongs to the running turn even if no busy preceded it.
                if self.turn_open {
                    self.awaiting_busy = false;
                }
            }
            _ => {}
        }
    }

    fn part(&mut self, part: &Value, out: &mut Vec<Decoded>) {
        let id = part["id"].as_str().unwrap_or_default().to_owned();
        let message = part["messageID"].as_str().unwrap_or_default();
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        match part["type"].as_str() {
            Some("text") if self.assistant_messages.contains(message) => {
                self.text_parts.insert(id.clone());
                let finished = part["time"]["end"].is_number();
                if finished && !part["synthetic"].as_bool().unwrap_or(false) {
                    let body = text(&part["text"]);
                    if !body.is_empty() && self.completed_parts.insert(id) {
                        out.push(Decoded::Event(AgentEvent::AssistantMessageCompleted {
                            text: body,
                        }));
                    }
                }
            }
            Some("tool") => {
                let call_id = part["callID"].as_str().unwrap_or(&id).to_owned();
                let state = &part["state"];
                let status = state["status"].as_str().unwrap_or_default();
                if matches!(status, "running" | "completed" | "error")
                    && self.tools_started.insert(call_id.clone())
                {
                    out.push(Decoded::Event(AgentEvent::ToolCallStarted {
                        call_id: call_id.clone(),
                        name: text(&part["tool"]),
                        input: state["input"].clone(),
                    }));
                }
                let output = match status {
                    "completed" => Some((false, text(&state["output"]))),
                    "error" => Some((true, text(&state["error"]))),
                    _ => None,
                };
                if let Some((is_error, output)) = output
                    && self.tools_finished.insert(call_id.clone())
                {
                    out.push(Decoded::Event(AgentEvent::ToolCallFinished {
                        call_id,
                        is_error,
                        output: output.chars().take(MAX_OUTPUT).collect(),
                    }));
                }
            }
            Some("step-finish") => {
                let tokens = &part["tokens"];
                if tokens.is_object() {
                    out.push(Decoded::Event(AgentEvent::Usage {
                        input_tokens: tokens["input"].as_u64().unwrap_or(0),
                        output_tokens: tokens["output"].as_u64().unwrap_or(0),
                    }));
                }
            }
            _ => {}
        }
    }
}

impl Protocol for OpenCodeProtocol {
    fn user(&mut self, command: &Command) -> Vec<String> {
        self.turn_open = true;
        self.stepping = false;
        self.failure = None;
        self.send_prompt(&command.text)
    }

    fn steer(&mut self, command: &Command) -> Option<Vec<String>> {
        if self.turn_open && !self.stepping {
            self.held.push(command.text.clone());
            return Some(Vec::new());
        }
        Some(self.send_prompt(&command.text))
    }

    fn interrupt(&mut self, _request_id: &str) -> Vec<String> {
        self.held.clear();
        match &self.session {
            Some(session) => vec![request(
                "POST",
                &format!("/session/{session}/abort"),
                json!({}),
                "abort",
            )],
            None => {
                self.interrupt_pending = true;
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
        if !safe_id(request_id) {
            return Vec::new();
        }
        // A rejection with a message lets the loop go on with that feedback; without one
        // OpenCode would stop the turn.
        let body = match decision {
            PermissionDecision::Allow => json!({ "reply": "once" }),
            PermissionDecision::Deny { message } => {
                let message = if message.trim().is_empty() {
                    "The user denied this tool call."
                } else {
                    message.as_str()
                };
                json!({ "reply": "reject", "message": message })
            }
        };
        vec![request(
            "POST",
            &format!("/permission/{request_id}/reply"),
            body,
            "permission",
        )]
    }

    fn decode(&mut self, line: &str) -> Vec<Decoded> {
        let mut out = Vec::new();
        if line.starts_with('{') {
            if let Ok(message) = serde_json::from_str::<Value>(line)
                && message.get("bridge").is_some()
            {
                self.bridge_line(&message, &mut out);
            }
            return out;
        }
        // The server's own stdout: only its listening line matters.
        if !self.connected && line.contains("listening on") {
            match listening_url(line) {
                Some(url) => {
                    self.connected = true;
                    out.push(Decoded::Write(http_bridge::connect(&url)));
                }
                None => out.push(Decoded::Event(AgentEvent::Error {
                    message: "OpenCode announced an address that is not loopback HTTP".into(),
                })),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = "ses_dd2b57ba8ffeMstIEyIysgOcc8";

    fn event(value: Value) -> String {
        json!({ "bridge": "event", "event": value }).to_string()
    }

    fn decode_all(protocol: &mut OpenCodeProtocol, lines: &[String]) -> Vec<Decoded> {
        lines
            .iter()
            .flat_map(|line| protocol.decode(line))
            .collect()
    }

    fn status(kind: &str) -> String {
        event(
            json!({ "type": "session.status", "properties": { "sessionID": SESSION, "status": { "type": kind } } }),
        )
    }

    fn idle() -> String {
        event(json!({ "type": "session.idle", "properties": { "sessionID": SESSION } }))
    }

    /// OpenCode announcing a prompt's user message (it does so again on later updates).
    fn user_message(id: &str) -> String {
        event(
            json!({ "type": "message.updated", "properties": { "sessionID": SESSION, "info": { "id": id, "role": "user", "sessionID": SESSION } } }),
        )
    }

    /// A protocol whose session exists, with `c1` running.
    fn started() -> OpenCodeProtocol {
        let mut protocol = OpenCodeProtocol::default();
        let connect = protocol.decode("opencode server listening on http://127.0.0.1:4096");
        assert_eq!(
            connect,
            vec![Decoded::Write(
                json!({ "connect": "http://127.0.0.1:4096" }).to_string()
            )]
        );
        assert!(protocol.user(&Command::user("c1", "say hi")).is_empty());
        let create = protocol.decode(&event(
            json!({ "id": "evt_1", "type": "server.connected", "properties": {} }),
        ));
        assert!(
            matches!(&create[..], [Decoded::Write(line)] if line.contains(r#""path":"/session""#))
        );
        let created = protocol.decode(
            &json!({ "bridge": "response", "tag": "create", "status": 200, "body": { "id": SESSION, "version": "1.18.33" } })
                .to_string(),
        );
        assert_eq!(created[0], Decoded::VendorSession(SESSION.into()));
        assert!(
            matches!(&created[2], Decoded::Write(line) if line.contains("prompt_async") && line.contains("say hi")),
            "the buffered prompt goes out once the session exists: {created:?}"
        );
        protocol
    }

    // Recorded from opencode 1.18.33 (trimmed to the fields the decoder reads).
    #[test]
    fn normalises_a_recorded_turn_with_a_tool() {
        let mut protocol = started();
        let assistant = "msg_22d4a8976001rvvL5SrH22tXN1";
        let lines = vec![
            // The user's own part is not assistant text.
            event(
                json!({ "type": "message.updated", "properties": { "sessionID": SESSION, "info": { "id": "msg_user", "role": "user", "sessionID": SESSION } } }),
            ),
            event(
                json!({ "type": "message.part.updated", "properties": { "sessionID": SESSION, "part": { "type": "text", "text": "say hi", "messageID": "msg_user", "id": "prt_user", "time": { "start": 1, "end": 2 } } } }),
            ),
            status("busy"),
            event(
                json!({ "type": "message.updated", "properties": { "sessionID": SESSION, "info": { "id": assistant, "role": "assistant", "sessionID": SESSION } } }),
            ),
            event(
                json!({ "type": "message.part.updated", "properties": { "sessionID": SESSION, "part": { "id": "prt_tool", "messageID": assistant, "type": "tool", "tool": "bash", "callID": "call_1", "state": { "status": "pending", "input": {}, "raw": "" } } } }),
            ),
            event(
                json!({ "type": "message.part.updated", "properties": { "sessionID": SESSION, "part": { "id": "prt_tool", "messageID": assistant, "type": "tool", "tool": "bash", "callID": "call_1", "state": { "status": "running", "input": { "command": "echo hi | tee out.txt" } } } } }),
            ),
            event(
                json!({ "type": "permission.asked", "properties": { "id": "per_22d4a8f4e001RB977IATDvQC7y", "sessionID": SESSION, "permission": "bash", "patterns": ["echo hi", "tee out.txt"], "metadata": { "command": "echo hi | tee out.txt" }, "always": ["echo *", "tee *"], "tool": { "messageID": assistant, "callID": "call_1" } } }),
            ),
            event(
                json!({ "type": "message.part.updated", "properties": { "sessionID": SESSION, "part": { "id": "prt_tool", "messageID": assistant, "type": "tool", "tool": "bash", "callID": "call_1", "state": { "status": "error", "input": { "command": "echo hi | tee out.txt" }, "error": "The user rejected permission to use this specific tool call with the following feedback: no" } } } }),
            ),
            event(
                json!({ "type": "message.part.updated", "properties": { "sessionID": SESSION, "part": { "id": "prt_step", "messageID": assistant, "type": "step-finish", "reason": "tool-calls", "tokens": { "input": 5, "output": 2 } } } }),
            ),
            event(
                json!({ "type": "message.updated", "properties": { "sessionID": SESSION, "info": { "id": "msg_2", "role": "assistant", "sessionID": SESSION } } }),
            ),
            event(
                json!({ "type": "message.part.updated", "properties": { "sessionID": SESSION, "part": { "id": "prt_text", "messageID": "msg_2", "type": "text", "text": "", "time": { "start": 1 } } } }),
            ),
            event(
                json!({ "type": "message.part.delta", "properties": { "sessionID": SESSION, "messageID": "msg_2", "partID": "prt_text", "field": "text", "delta": "answer2 " } }),
            ),
            event(
                json!({ "type": "message.part.updated", "properties": { "sessionID": SESSION, "part": { "id": "prt_text", "messageID": "msg_2", "type": "text", "text": "answer2 ", "time": { "start": 1, "end": 2 } } } }),
            ),
            // Another session's events are not ours.
            event(json!({ "type": "session.idle", "properties": { "sessionID": "ses_other" } })),
            status("idle"),
            idle(),
        ];
        let decoded = decode_all(&mut protocol, &lines);
        let expected = vec![
            Decoded::Event(AgentEvent::ToolCallStarted {
                call_id: "call_1".into(),
                name: "bash".into(),
                input: json!({ "command": "echo hi | tee out.txt" }),
            }),
            Decoded::Permission {
                request_id: "per_22d4a8f4e001RB977IATDvQC7y".into(),
                tool: "bash".into(),
                input: json!({ "patterns": ["echo hi", "tee out.txt"], "metadata": { "command": "echo hi | tee out.txt" }, "call_id": "call_1" }),
            },
            Decoded::Event(AgentEvent::ToolCallFinished {
                call_id: "call_1".into(),
                is_error: true,
                output: "The user rejected permission to use this specific tool call with the following feedback: no".into(),
            }),
            Decoded::Event(AgentEvent::Usage {
                input_tokens: 5,
                output_tokens: 2,
            }),
            Decoded::Event(AgentEvent::AssistantTextDelta {
                text: "answer2 ".into(),
            }),
            Decoded::Event(AgentEvent::AssistantMessageCompleted {
                text: "answer2 ".into(),
            }),
            Decoded::TurnEnded(TurnOutcome::Completed),
        ];
        assert_eq!(decoded, expected);
    }

    #[test]
    fn a_stale_idle_after_an_abort_does_not_end_the_next_turn() {
        let mut protocol = started();
        let aborted = decode_all(
            &mut protocol,
            &[
                user_message("msg_u1"),
                status("busy"),
                event(
                    json!({ "type": "session.error", "properties": { "sessionID": SESSION, "error": { "name": "MessageAbortedError", "data": { "message": "Aborted" } } } }),
                ),
                status("idle"),
                idle(),
            ],
        );
        assert_eq!(aborted, vec![Decoded::TurnEnded(TurnOutcome::Interrupted)]);
        let prompt = protocol.user(&Command::user("c2", "still there?"));
        assert!(prompt[0].contains(&format!("/session/{SESSION}/prompt_async")));
        // OpenCode repeats the idle pair after an abort; the next turn has not started yet.
        assert!(decode_all(&mut protocol, &[status("idle"), idle()]).is_empty());
        assert_eq!(
            decode_all(
                &mut protocol,
                &[
                    user_message("msg_u2"),
                    status("busy"),
                    status("idle"),
                    idle()
                ]
            ),
            vec![Decoded::TurnEnded(TurnOutcome::Completed)]
        );
    }

    #[test]
    fn failures_and_refusals_end_the_turn_as_failed() {
        let mut protocol = started();
        let failed = decode_all(
            &mut protocol,
            &[
                status("busy"),
                event(
                    json!({ "type": "session.error", "properties": { "sessionID": SESSION, "error": { "name": "APIError", "data": { "message": "scripted 500" } } } }),
                ),
                idle(),
            ],
        );
        assert_eq!(
            failed.last(),
            Some(&Decoded::TurnEnded(TurnOutcome::Failed(
                "scripted 500".into()
            )))
        );
        protocol.user(&Command::user("c2", "again"));
        let refused = protocol.decode(
            &json!({ "bridge": "response", "tag": "prompt", "status": 400, "body": { "name": "BadRequest", "data": { "message": "bad parts" } } })
                .to_string(),
        );
        assert!(
            matches!(&refused[0], Decoded::Event(AgentEvent::Error { message }) if message.contains("bad parts"))
        );
        assert!(matches!(
            &refused[1],
            Decoded::TurnEnded(TurnOutcome::Failed(_))
        ));
    }

    #[test]
    fn a_steer_waits_until_the_turn_reaches_the_model() {
        let mut protocol = started();
        assert_eq!(
            protocol.steer(&Command::user("c2", "and this")),
            Some(Vec::new())
        );
        let released = decode_all(
            &mut protocol,
            &[
                user_message("msg_u1"),
                status("busy"),
                event(
                    json!({ "type": "message.updated", "properties": { "sessionID": SESSION, "info": { "id": "msg_a", "role": "assistant", "sessionID": SESSION } } }),
                ),
            ],
        );
        assert!(
            matches!(&released[..], [Decoded::Write(line)] if line.contains("and this")),
            "{released:?}"
        );
        // The steer's own message and busy come before the turn can end.
        assert!(decode_all(&mut protocol, &[idle()]).is_empty());
        assert!(decode_all(&mut protocol, &[user_message("msg_u2"), idle()]).is_empty());
        assert_eq!(
            decode_all(&mut protocol, &[status("busy"), idle()]),
            vec![Decoded::TurnEnded(TurnOutcome::Completed)]
        );
    }

    /// A steer posted as the step ends: the running loop goes idle before OpenCode has
    /// written the steer's message, then a loop of the steer's own answers it.
    #[test]
    fn a_steer_that_lands_after_the_loop_went_idle_still_belongs_to_the_turn() {
        let mut protocol = started();
        decode_all(
            &mut protocol,
            &[
                user_message("msg_u1"),
                status("busy"),
                event(
                    json!({ "type": "message.updated", "properties": { "sessionID": SESSION, "info": { "id": "msg_a", "role": "assistant", "sessionID": SESSION } } }),
                ),
            ],
        );
        let steer = protocol.steer(&Command::user("c2", "and this")).unwrap();
        assert!(steer[0].contains("and this"));
        // The root loop's last busy and its idle: the steer's message does not exist yet.
        assert!(decode_all(&mut protocol, &[status("busy"), status("idle"), idle()]).is_empty());
        // A repeat of the root prompt's message is not the steer's.
        assert!(
            decode_all(
                &mut protocol,
                &[user_message("msg_u1"), status("busy"), idle()]
            )
            .is_empty()
        );
        assert_eq!(
            decode_all(
                &mut protocol,
                &[user_message("msg_u2"), status("busy"), status("idle")]
            ),
            vec![Decoded::TurnEnded(TurnOutcome::Completed)]
        );
    }

    #[test]
    fn encodes_steer_interrupt_and_permission_replies() {
        let mut protocol = started();
        protocol.decode(&event(
            json!({ "type": "message.updated", "properties": { "sessionID": SESSION, "info": { "id": "msg_a", "role": "assistant", "sessionID": SESSION } } }),
        ));
        let steer = protocol.steer(&Command::user("c2", "and this")).unwrap();
        assert!(steer[0].contains("prompt_async") && steer[0].contains("and this"));
        let abort: Value = serde_json::from_str(&protocol.interrupt("i1")[0]).unwrap();
        assert_eq!(abort["path"], format!("/session/{SESSION}/abort"));
        let allow: Value = serde_json::from_str(
            &protocol.permission("per_1", &PermissionDecision::Allow, &Value::Null)[0],
        )
        .unwrap();
        assert_eq!(allow["path"], "/permission/per_1/reply");
        assert_eq!(allow["body"], json!({ "reply": "once" }));
        let deny: Value = serde_json::from_str(
            &protocol.permission(
                "per_2",
                &PermissionDecision::Deny {
                    message: String::new(),
                },
                &Value::Null,
            )[0],
        )
        .unwrap();
        assert_eq!(deny["body"]["reply"], "reject");
        assert!(!deny["body"]["message"].as_str().unwrap().is_empty());
        assert!(
            protocol
                .permission("../x", &PermissionDecision::Allow, &Value::Null)
                .is_empty()
        );
    }

    #[test]
    fn only_a_loopback_listening_line_connects() {
        assert_eq!(
            listening_url("opencode server listening on http://127.0.0.1:44637"),
            Some("http://127.0.0.1:44637".into())
        );
        assert_eq!(
            listening_url("opencode server listening on http://0.0.0.0:4096"),
            None
        );
        assert_eq!(
            listening_url("opencode server listening on http://127.0.0.1.evil:80"),
            None
        );
        let mut protocol = OpenCodeProtocol::default();
        assert!(matches!(
            &protocol.decode("opencode server listening on http://10.0.0.1:4096")[..],
            [Decoded::Event(AgentEvent::Error { .. })]
        ));
        assert!(protocol.decode("not json {").is_empty());
        assert!(
            protocol
                .decode(r#"{"bridge":"event","event":42}"#)
                .is_empty()
        );
    }

    #[test]
    fn the_config_references_the_key_and_follows_the_mode() {
        let request = OpenRequest {
            backend: BackendId::OpenCode,
            launch: crate::contract::Launch {
                working_directory: std::path::PathBuf::from("/"),
                instructions: None,
                launch_id: "l".into(),
            },
            config: crate::contract::AgentConfig::default(),
            env: Vec::new(),
        };
        let config = config(&request, "http://127.0.0.1:9/v1");
        let provider = &config["provider"][PROVIDER];
        assert_eq!(provider["options"]["apiKey"], "{env:OPENAI_API_KEY}");
        assert_eq!(provider["options"]["baseURL"], "http://127.0.0.1:9/v1");
        assert_eq!(provider["npm"], "@ai-sdk/openai-compatible");
        assert_eq!(config["permission"]["bash"], "ask");
        assert_eq!(config["autoupdate"], false);
        let mut bypass = request.clone();
        bypass.config.mode = Mode::BypassPermissions;
        assert_eq!(
            super::config(&bypass, "http://x/v1")["permission"]["bash"],
            "allow"
        );
        assert!(config.get("mcp").is_none(), "{config}");
    }

    fn mcp_request(tools: ToolAccess) -> OpenRequest {
        let server = |name: &str| crate::contract::McpServer {
            name: name.into(),
            command: "/opt/paddock/bin/paddock".into(),
            args: vec!["mcp".into(), "--task".into(), "t1".into()],
            env: vec![("PADDOCK_STATE".into(), "/state".into())],
        };
        OpenRequest {
            backend: BackendId::OpenCode,
            launch: crate::contract::Launch {
                working_directory: std::path::PathBuf::from("/"),
                instructions: None,
                launch_id: "l".into(),
            },
            config: crate::contract::AgentConfig {
                mcp_servers: vec![server("paddock"), server("device-2")],
                tools,
                ..crate::contract::AgentConfig::default()
            },
            env: Vec::new(),
        }
    }

    #[test]
    fn mcp_servers_are_local_entries_with_their_environment() {
        let config = config(&mcp_request(ToolAccess::Default), "http://x/v1");
        assert_eq!(
            config["mcp"]["paddock"],
            json!({
                "type": "local",
                "command": ["/opt/paddock/bin/paddock", "mcp", "--task", "t1"],
                "environment": { "PADDOCK_STATE": "/state" },
                "enabled": true,
            })
        );
        assert_eq!(config["mcp"].as_object().unwrap().len(), 2);
        // The mode's permissions stay as they are.
        assert_eq!(config["permission"]["bash"], "ask");
        assert!(config.get("tools").is_none());
    }

    #[test]
    fn mcp_only_denies_everything_but_the_servers_tools() {
        let config = config(&mcp_request(ToolAccess::McpOnly), "http://x/v1");
        let permission = config["permission"].as_object().unwrap();
        let rules: Vec<(&str, &str)> = permission
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str().unwrap()))
            .collect();
        assert_eq!(rules[0], ("*", "deny"), "{rules:?}");
        assert_eq!(rules.len(), 3, "{rules:?}");
        assert!(rules.contains(&("paddock_*", "allow")), "{rules:?}");
        assert!(rules.contains(&("device-2_*", "allow")), "{rules:?}");
        // Serialised, `*` still comes first: OpenCode reads the rules in file order.
        let text = config["permission"].to_string();
        assert!(text.starts_with(r#"{"*":"deny","#), "{text}");
    }
}
