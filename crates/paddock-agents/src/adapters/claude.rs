//! Claude Code: one `claude -p` process per session speaking stream-json on stdin/stdout.
//! Lifetime `session`, mid-turn delivery `safe_boundary_queue` (a second user line mid-turn
//! would only queue inside the CLI, so the logical session queues it instead and delivers it
//! after `result`). Interrupts use the `control_request` envelope; with
//! `--permission-prompt-tool stdio` the CLI asks `can_use_tool` over the same channel.
//!
//! MCP servers are given inline with `--mcp-config '{"mcpServers":{…}}'` (the JSON holds only
//! paths, so it may show in `ps`) and `--strict-mcp-config`, so no other MCP configuration is
//! read. [`ToolAccess::McpOnly`] passes `--tools ""`, which removes every built-in tool (shell,
//! file read and edit, web, sub-agents, to-dos: the session's `init` then lists only
//! `mcp__<server>__<tool>`), and `--allowedTools mcp__<server>` for each server, which runs
//! that server's tools without a `can_use_tool` request. Checked against `claude` 2.1.70.

use std::borrow::Cow;
use std::ffi::OsString;

use serde_json::{Value, json};

use super::{Adapter, AdapterDescriptor, Decoded, LaunchPlan, Prepared, Protocol};
use crate::contract::{
    AgentConfig, AgentEvent, BackendId, Capabilities, Command, Instructions, Lifetime,
    MidTurnDelivery, Mode, Model, OpenRequest, PermissionDecision, ToolAccess, Transport,
    TurnOutcome,
};
use crate::credentials::ModelApi;
use crate::host::LaunchDir;

#[derive(Debug, Default)]
pub struct Claude;

const DESCRIPTOR: AdapterDescriptor = AdapterDescriptor {
    backend: BackendId::Claude,
    capabilities: Capabilities {
        lifetime: Lifetime::Session,
        transport: Transport::Process,
        mid_turn_delivery: MidTurnDelivery::SafeBoundaryQueue,
    },
    model_api: Some(ModelApi::AnthropicMessages),
    asks_permission: true,
    mcp_client: true,
    program: Cow::Borrowed("claude"),
    version_args: &["--version"],
    install_hint: Cow::Borrowed(
        "`claude` is not on PATH (npm install -g @anthropic-ai/claude-code)",
    ),
    supported: None,
};

/// The flags every session starts Claude Code with: stream-json in and out (the goal and
/// every message as a `user` line on stdin), partial messages, and permission prompts over the
/// control protocol. Tool, mode, model and instruction flags follow them.
const SESSION_ARGS: [&str; 9] = [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--include-partial-messages",
    "--verbose",
    "--permission-prompt-tool",
    "stdio",
];

impl Adapter for Claude {
    fn descriptor(&self) -> &AdapterDescriptor {
        &DESCRIPTOR
    }

    fn launch(&self, request: &OpenRequest) -> LaunchPlan {
        let mut args: Vec<std::ffi::OsString> = SESSION_ARGS.iter().map(Into::into).collect();
        let mode = match request.config.mode {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::BypassPermissions => "bypassPermissions",
        };
        // Each of these flags takes a list of values, up to the next flag: every one here is
        // followed by another flag (`--permission-mode` at the latest).
        args.extend(tool_args(&request.config));
        args.extend(["--permission-mode".into(), mode.into()]);
        if let Model::Named(model) = &request.config.model {
            args.extend(["--model".into(), model.into()]);
        }
        if let Some(Instructions { content, .. }) = &request.launch.instructions {
            args.extend(["--append-system-prompt".into(), content.into()]);
        }
        LaunchPlan {
            args,
            env: vec![
                ("DISABLE_AUTOUPDATER".into(), "1".into()),
                (
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                    "1".into(),
                ),
                ("DISABLE_TELEMETRY".into(), "1".into()),
                ("DISABLE_ERROR_REPORTING".into(), "1".into()),
            ],
        }
    }

    fn prepare(
        &self,
        _request: &OpenRequest,
        dir: &LaunchDir,
        _secrets: &[(OsString, OsString)],
    ) -> std::io::Result<Prepared> {
        // The Bash tool keeps its working files in `$CLAUDE_CODE_TMPDIR/claude-<uid>`, `/tmp`
        // unless set (it ignores TMPDIR): keep them in the launch, where a sandboxed launch
        // can write and from where they are removed at close.
        Ok(Prepared {
            env: vec![("CLAUDE_CODE_TMPDIR".into(), dir.tmp.display().to_string())],
            private: Vec::new(),
        })
    }

    fn protocol(&self, _request: &OpenRequest, _prepared: &Prepared) -> Box<dyn Protocol> {
        Box::new(ClaudeProtocol::default())
    }
}

/// The MCP and tool flags for `config`: none for no servers and [`ToolAccess::Default`].
fn tool_args(config: &AgentConfig) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    if !config.mcp_servers.is_empty() {
        args.extend(["--mcp-config".into(), mcp_config(config).to_string().into()]);
    }
    if !config.mcp_servers.is_empty() || config.tools == ToolAccess::McpOnly {
        args.push("--strict-mcp-config".into());
    }
    if config.tools == ToolAccess::McpOnly {
        args.extend(["--tools".into(), "".into()]);
        if !config.mcp_servers.is_empty() {
            let allowed: Vec<String> = config
                .mcp_servers
                .iter()
                .map(|server| format!("mcp__{}", server.name))
                .collect();
            args.extend(["--allowedTools".into(), allowed.join(",").into()]);
        }
    }
    args
}

/// `--mcp-config`'s JSON: one stdio server per entry.
fn mcp_config(config: &AgentConfig) -> Value {
    let servers: serde_json::Map<String, Value> = config
        .mcp_servers
        .iter()
        .map(|server| {
            let env = server.env_object();
            let entry = json!({
                "type": "stdio",
                "command": server.command.display().to_string(),
                "args": server.args,
                "env": env,
            });
            (server.name.clone(), entry)
        })
        .collect();
    json!({ "mcpServers": servers })
}

/// Encodes stream-json commands and normalises stream-json lines.
#[derive(Debug, Default)]
pub struct ClaudeProtocol {
    session_announced: bool,
}

impl Protocol for ClaudeProtocol {
    fn user(&mut self, command: &Command) -> Vec<String> {
        vec![json!({
            "type": "user",
            "message": { "role": "user", "content": [{ "type": "text", "text": command.text }] },
        })
        .to_string()]
    }

    fn interrupt(&mut self, request_id: &str) -> Vec<String> {
        vec![json!({ "type": "control_request", "request_id": request_id, "request": { "subtype": "interrupt" } }).to_string()]
    }

    fn permission(
        &mut self,
        request_id: &str,
        decision: &PermissionDecision,
        input: &Value,
    ) -> Vec<String> {
        let response = match decision {
            PermissionDecision::Allow => json!({ "behavior": "allow", "updatedInput": input }),
            PermissionDecision::Deny { message } => {
                json!({ "behavior": "deny", "message": message })
            }
        };
        vec![
            json!({
                "type": "control_response",
                "response": { "subtype": "success", "request_id": request_id, "response": response },
            })
            .to_string(),
        ]
    }

    fn decode(&mut self, line: &str) -> Vec<Decoded> {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return vec![Decoded::Event(AgentEvent::Error {
                message: "the CLI wrote a line that is not JSON".into(),
            })];
        };
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let mut out = Vec::new();
        match message.get("type").and_then(Value::as_str) {
            Some("system") if message["subtype"] == "init" => {
                if let Some(id) = message.get("session_id").and_then(Value::as_str) {
                    out.push(Decoded::VendorSession(id.to_owned()));
                    if !self.session_announced {
                        self.session_announced = true;
                        out.push(Decoded::Event(AgentEvent::SessionStarted {
                            vendor_session_id: Some(id.to_owned()),
                        }));
                    }
                }
            }
            Some("stream_event") => {
                let event = &message["event"];
                if event["type"] == "content_block_delta" && event["delta"]["type"] == "text_delta"
                {
                    out.push(Decoded::Event(AgentEvent::AssistantTextDelta {
                        text: text(&event["delta"]["text"]),
                    }));
                }
            }
            Some("assistant") => {
                let mut message_text = String::new();
                for block in message["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    match block["type"].as_str() {
                        Some("text") => {
                            message_text.push_str(block["text"].as_str().unwrap_or_default())
                        }
                        Some("tool_use") => out.push(Decoded::Event(AgentEvent::ToolCallStarted {
                            call_id: text(&block["id"]),
                            name: text(&block["name"]),
                            input: block["input"].clone(),
                        })),
                        _ => {}
                    }
                }
                if !message_text.is_empty() {
                    out.insert(
                        0,
                        Decoded::Event(AgentEvent::AssistantMessageCompleted {
                            text: message_text,
                        }),
                    );
                }
            }
            Some("user") => {
                for block in message["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if block["type"] == "tool_result" {
                        let output = match &block["content"] {
                            Value::String(text) => text.clone(),
                            Value::Array(parts) => parts
                                .iter()
                                .filter_map(|part| part["text"].as_str())
                                .collect::<Vec<_>>()
                                .join("\n"),
                            _ => String::new(),
                        };
                        out.push(Decoded::Event(AgentEvent::ToolCallFinished {
                            call_id: text(&block["tool_use_id"]),
                            is_error: block["is_error"].as_bool().unwrap_or(false),
                            output: output.chars().take(4000).collect(),
                        }));
                    }
                }
            }
            Some("result") => {
                let usage = &message["usage"];
                if usage.is_object() {
                    out.push(Decoded::Event(AgentEvent::Usage {
                        input_tokens: usage["input_tokens"].as_u64().unwrap_or(0),
                        output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
                    }));
                }
                let outcome = if message["is_error"].as_bool().unwrap_or(false) {
                    TurnOutcome::Failed(
                        message["result"]
                            .as_str()
                            .or_else(|| message["error"].as_str())
                            .or_else(|| message["subtype"].as_str())
                            .unwrap_or("the turn failed")
                            .to_owned(),
                    )
                } else {
                    TurnOutcome::Completed
                };
                out.push(Decoded::TurnEnded(outcome));
            }
            Some("control_request") if message["request"]["subtype"] == "can_use_tool" => {
                out.push(Decoded::Permission {
                    request_id: text(&message["request_id"]),
                    tool: text(&message["request"]["tool_name"]),
                    input: message["request"]["input"].clone(),
                });
            }
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Launch, McpServer};

    fn request(config: AgentConfig) -> OpenRequest {
        OpenRequest {
            backend: BackendId::Claude,
            launch: Launch {
                working_directory: "/work".into(),
                instructions: None,
                launch_id: "l".into(),
            },
            config,
            env: Vec::new(),
        }
    }

    fn server(name: &str) -> McpServer {
        McpServer {
            name: name.into(),
            command: "/opt/paddock/bin/paddock".into(),
            args: vec!["mcp".into(), "--task".into(), "t1".into()],
            env: vec![("PADDOCK_STATE".into(), "/state".into())],
        }
    }

    fn args(config: AgentConfig) -> Vec<String> {
        Claude
            .launch(&request(config))
            .args
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    /// The value after `flag`.
    fn after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
        let at = args.iter().position(|arg| arg == flag)?;
        args.get(at + 1).map(String::as_str)
    }

    #[test]
    fn without_mcp_servers_the_launch_is_unchanged() {
        assert_eq!(
            args(AgentConfig::default()),
            [
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--include-partial-messages",
                "--verbose",
                "--permission-prompt-tool",
                "stdio",
                "--permission-mode",
                "default",
            ]
        );
    }

    #[test]
    fn mcp_servers_are_given_inline_and_strictly() {
        let args = args(AgentConfig {
            mcp_servers: vec![server("paddock"), server("device-2")],
            ..AgentConfig::default()
        });
        let config: Value = serde_json::from_str(after(&args, "--mcp-config").unwrap()).unwrap();
        assert_eq!(
            config["mcpServers"]["paddock"],
            json!({
                "type": "stdio",
                "command": "/opt/paddock/bin/paddock",
                "args": ["mcp", "--task", "t1"],
                "env": { "PADDOCK_STATE": "/state" },
            })
        );
        assert_eq!(config["mcpServers"].as_object().unwrap().len(), 2);
        assert!(args.iter().any(|arg| arg == "--strict-mcp-config"));
        // The runtime's own tools stay as they are.
        assert!(
            !args
                .iter()
                .any(|arg| arg == "--tools" || arg == "--allowedTools")
        );
    }

    #[test]
    fn mcp_only_removes_the_built_in_tools_and_pre_approves_the_servers() {
        let args = args(AgentConfig {
            mcp_servers: vec![server("paddock"), server("device-2")],
            tools: ToolAccess::McpOnly,
            ..AgentConfig::default()
        });
        assert_eq!(after(&args, "--tools"), Some(""));
        assert_eq!(
            after(&args, "--allowedTools"),
            Some("mcp__paddock,mcp__device-2")
        );
        // Every list-taking flag is followed by another flag, so none swallows a value.
        for flag in ["--mcp-config", "--tools", "--allowedTools"] {
            let at = args.iter().position(|arg| arg == flag).unwrap();
            assert!(args[at + 2].starts_with("--"), "{args:?}");
        }
        let alone = self::args(AgentConfig {
            tools: ToolAccess::McpOnly,
            ..AgentConfig::default()
        });
        assert_eq!(after(&alone, "--tools"), Some(""));
        assert!(alone.iter().any(|arg| arg == "--strict-mcp-config"));
        assert!(
            !alone
                .iter()
                .any(|arg| arg == "--allowedTools" || arg == "--mcp-config")
        );
    }

    /// Lines recorded from `claude` 2.1.70 against the scripted model server.
    const RECORDED: &[&str] = &[
        r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"8dc1ec95-6840-46bc-8595-4d4de817715c","tools":["Bash"],"model":"claude-sonnet-4-6","permissionMode":"default"}"#,
        r#"{"type":"stream_event","event":{"message":{"content":[],"id":"msg_1","type":"message"},"type":"message_start"},"session_id":"s"}"#,
        r#"{"type":"stream_event","event":{"delta":{"text":"Hello ","type":"text_delta"},"index":0,"type":"content_block_delta"},"session_id":"s"}"#,
        r#"{"type":"assistant","message":{"content":[{"text":"Hello there.","type":"text"}],"id":"msg_1","role":"assistant"}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"echo hi"}}]}}"#,
        r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"echo hi"}}}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"hi","is_error":false}]}}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Hello there.","session_id":"s","usage":{"input_tokens":12,"output_tokens":7}}"#,
        r#"{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s"}"#,
    ];

    #[test]
    fn normalises_recorded_lines() {
        let mut decoder = ClaudeProtocol::default();
        let decoded: Vec<Decoded> = RECORDED
            .iter()
            .flat_map(|line| decoder.decode(line))
            .collect();
        assert_eq!(
            decoded[0],
            Decoded::VendorSession("8dc1ec95-6840-46bc-8595-4d4de817715c".into())
        );
        assert!(matches!(
            &decoded[1],
            Decoded::Event(AgentEvent::SessionStarted {
                vendor_session_id: Some(_)
            })
        ));
        assert_eq!(
            decoded[2],
            Decoded::Event(AgentEvent::AssistantTextDelta {
                text: "Hello ".into()
            })
        );
        assert_eq!(
            decoded[3],
            Decoded::Event(AgentEvent::AssistantMessageCompleted {
                text: "Hello there.".into()
            })
        );
        assert!(
            matches!(&decoded[4], Decoded::Event(AgentEvent::ToolCallStarted { name, .. }) if name == "Bash")
        );
        assert!(
            matches!(&decoded[5], Decoded::Permission { request_id, tool, .. } if request_id == "r1" && tool == "Bash")
        );
        assert!(
            matches!(&decoded[6], Decoded::Event(AgentEvent::ToolCallFinished { output, is_error: false, .. }) if output == "hi")
        );
        assert_eq!(
            decoded[7],
            Decoded::Event(AgentEvent::Usage {
                input_tokens: 12,
                output_tokens: 7
            })
        );
        assert_eq!(decoded[8], Decoded::TurnEnded(TurnOutcome::Completed));
        assert!(
            matches!(&decoded[9], Decoded::TurnEnded(TurnOutcome::Failed(reason)) if reason == "error_during_execution")
        );
        // A second init does not announce the session again.
        assert_eq!(decoder.decode(RECORDED[0]).len(), 1);
        assert!(matches!(
            &decoder.decode("not json")[0],
            Decoded::Event(AgentEvent::Error { .. })
        ));
    }

    #[test]
    fn encodes_the_control_envelopes() {
        let mut claude = ClaudeProtocol::default();
        let allow: Value = serde_json::from_str(
            &claude.permission("r1", &PermissionDecision::Allow, &json!({"a": 1}))[0],
        )
        .unwrap();
        assert_eq!(
            allow["response"]["response"],
            json!({ "behavior": "allow", "updatedInput": { "a": 1 } })
        );
        let interrupt: Value = serde_json::from_str(&claude.interrupt("i1")[0]).unwrap();
        assert_eq!(interrupt["request"]["subtype"], "interrupt");
        let user: Value =
            serde_json::from_str(&claude.user(&Command::user("c", "hi\u{2028}there"))[0]).unwrap();
        assert_eq!(user["message"]["content"][0]["text"], "hi\u{2028}there");
    }
}
