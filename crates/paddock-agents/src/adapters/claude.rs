//! Claude Code: one `claude -p` process per session speaking stream-json on stdin/stdout.
//! Lifetime `session`, mid-turn delivery `safe_boundary_queue` (a second user line mid-turn
//! would only queue inside the CLI, so the logical session queues it instead and delivers it
//! after `result`). Interrupts use the `control_request` envelope; with
//! `--permission-prompt-tool stdio` the CLI asks `can_use_tool` over the same channel.

use std::borrow::Cow;
use std::ffi::OsString;

use serde_json::{Value, json};

use super::{Adapter, AdapterDescriptor, Decoded, LaunchPlan, Prepared, Protocol};
use crate::contract::{
    AgentEvent, BackendId, Capabilities, Command, Instructions, Lifetime, MidTurnDelivery, Mode,
    Model, OpenRequest, PermissionDecision, Transport, TurnOutcome,
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
    program: Cow::Borrowed("claude"),
    version_args: &["--version"],
    install_hint: Cow::Borrowed(
        "`claude` is not on PATH (npm install -g @anthropic-ai/claude-code)",
    ),
    supported: None,
};

impl Adapter for Claude {
    fn descriptor(&self) -> &AdapterDescriptor {
        &DESCRIPTOR
    }

    fn launch(&self, request: &OpenRequest) -> LaunchPlan {
        let mut args: Vec<std::ffi::OsString> = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--include-partial-messages",
            "--verbose",
            "--permission-prompt-tool",
            "stdio",
        ]
        .iter()
        .map(Into::into)
        .collect();
        let mode = match request.config.mode {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::BypassPermissions => "bypassPermissions",
        };
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
