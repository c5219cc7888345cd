//! Pi (`pi --mode rpc`): one process per session speaking strict LF-delimited JSON. Lifetime
//! `session`, mid-turn delivery `steer`: a command sent while the agent runs is delivered at
//! once as a steering prompt that the running turn takes up (see [`PiProtocol`]). Pi reaches its model through a
//! custom provider in an isolated agent directory (`PI_CODING_AGENT_DIR`) whose base URL is the
//! credential proxy and whose key is the voucher's environment variable. Pi has no permission
//! prompts.
//!
//! Pi has no MCP client (its README: "No MCP"; MCP would need an extension Paddock does not
//! install), so `open` refuses MCP servers for it with [`OpenError::NoMcpClient`] before
//! anything is launched. [`ToolAccess::McpOnly`] without servers gives `--no-tools`: the
//! agent then has no tool at all.
//!
//! [`OpenError::NoMcpClient`]: crate::contract::OpenError::NoMcpClient

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Value, json};

use super::{Adapter, AdapterDescriptor, Decoded, LaunchPlan, Prepared, Protocol};
use crate::contract::{
    AgentEvent, BackendId, Capabilities, Command, Lifetime, MidTurnDelivery, Model, OpenRequest,
    PermissionDecision, ToolAccess, Transport, TurnOutcome,
};
use crate::credentials::ModelApi;

#[derive(Debug, Default)]
pub struct Pi;

const DESCRIPTOR: AdapterDescriptor = AdapterDescriptor {
    backend: BackendId::Pi,
    capabilities: Capabilities {
        lifetime: Lifetime::Session,
        transport: Transport::Process,
        mid_turn_delivery: MidTurnDelivery::Steer,
    },
    model_api: Some(ModelApi::AnthropicMessages),
    asks_permission: false,
    mcp_client: false,
    program: Cow::Borrowed("pi"),
    version_args: &["--version"],
    install_hint: Cow::Borrowed(
        "`pi` is not on PATH (npm install -g @mariozechner/pi-coding-agent)",
    ),
    supported: None,
};

/// The provider name Paddock configures in Pi's isolated agent directory.
const PROVIDER: &str = "paddock";
const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

impl Adapter for Pi {
    fn descriptor(&self) -> &AdapterDescriptor {
        &DESCRIPTOR
    }

    fn launch(&self, request: &OpenRequest) -> LaunchPlan {
        let model = match &request.config.model {
            Model::Named(model) => model.clone(),
            Model::Default => DEFAULT_MODEL.to_owned(),
        };
        let mut args: Vec<std::ffi::OsString> = [
            "--mode",
            "rpc",
            "--no-session",
            "--offline",
            "--provider",
            PROVIDER,
            "--model",
        ]
        .iter()
        .map(Into::into)
        .collect();
        args.push(model.into());
        if request.config.tools == ToolAccess::McpOnly {
            args.push("--no-tools".into());
        }
        if let Some(instructions) = &request.launch.instructions {
            args.extend([
                "--append-system-prompt".into(),
                instructions.content.clone().into(),
            ]);
        }
        LaunchPlan {
            args,
            env: vec![
                ("PI_SKIP_VERSION_CHECK".into(), "1".into()),
                ("PI_OFFLINE".into(), "1".into()),
                ("PI_TELEMETRY".into(), "0".into()),
            ],
        }
    }

    fn prepare(
        &self,
        request: &OpenRequest,
        dir: &crate::host::LaunchDir,
        secrets: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> std::io::Result<Prepared> {
        let base_url = secrets
            .iter()
            .find(|(name, _)| name == "ANTHROPIC_BASE_URL")
            .map(|(_, value)| value.to_string_lossy().into_owned())
            .ok_or_else(|| {
                std::io::Error::other("the credential broker gave Pi no model base URL")
            })?;
        let model = match &request.config.model {
            Model::Named(model) => model.clone(),
            Model::Default => DEFAULT_MODEL.to_owned(),
        };
        let agent_dir = dir.root.join("pi-agent");
        std::fs::create_dir_all(&agent_dir)?;
        // `apiKey` names the environment variable that holds the voucher: Pi resolves it when
        // it calls the model, so the voucher never lands in this file.
        let models = json!({
            "providers": {
                PROVIDER: {
                    "baseUrl": base_url,
                    "api": "anthropic-messages",
                    "apiKey": "ANTHROPIC_API_KEY",
                    "models": [{ "id": model }]
                }
            }
        });
        std::fs::write(agent_dir.join("models.json"), models.to_string())?;
        Ok(Prepared {
            env: vec![(
                "PI_CODING_AGENT_DIR".into(),
                agent_dir.display().to_string(),
            )],
            private: Vec::new(),
        })
    }

    fn protocol(&self, _request: &OpenRequest, _prepared: &Prepared) -> Box<dyn Protocol> {
        Box::new(PiProtocol::default())
    }
}

/// The request id of a turn's root prompt.
const ROOT_PROMPT: &str = "paddock-prompt";

/// Pi's RPC commands and events.
///
/// Steering uses `prompt` with `streamingBehavior: "steer"` rather than `steer`: while Pi runs,
/// both queue the message for the running turn, but if the run has just ended (its `agent_end`
/// is still on its way to us) a plain `steer` would wait for the next prompt, whereas the prompt
/// starts a new run at once. The logical turn then spans both runs: `agent_end` ends it only
/// when no run is active and every steer has been answered.
#[derive(Debug, Default)]
pub struct PiProtocol {
    session_announced: bool,
    /// A Pi run is active (between `agent_start` and `agent_end`).
    running: bool,
    /// Steers sent and not yet answered: id → (text, seen in Pi's steering queue).
    steers: HashMap<String, (String, bool)>,
    next_steer: u64,
    /// An answered steer found Pi idle and starts a run of its own.
    run_coming: bool,
    /// The outcome of the last run, held while steers are outstanding.
    ended: Option<TurnOutcome>,
}

impl PiProtocol {
    /// The turn's end, once nothing else belongs to it.
    fn settle(&mut self, out: &mut Vec<Decoded>) {
        if !self.running
            && !self.run_coming
            && self.steers.is_empty()
            && let Some(outcome) = self.ended.take()
        {
            out.push(Decoded::TurnEnded(outcome));
        }
    }
}

fn message_text(message: &Value) -> String {
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| block["type"] == "text")
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

impl Protocol for PiProtocol {
    fn startup(&mut self) -> Vec<String> {
        vec![json!({ "id": "paddock-state", "type": "get_state" }).to_string()]
    }

    fn user(&mut self, command: &Command) -> Vec<String> {
        self.running = true;
        self.ended = None;
        vec![json!({ "id": ROOT_PROMPT, "type": "prompt", "message": command.text }).to_string()]
    }

    fn steer(&mut self, command: &Command) -> Option<Vec<String>> {
        self.next_steer += 1;
        let id = format!("paddock-steer-{}", self.next_steer);
        self.steers
            .insert(id.clone(), (command.text.clone(), false));
        Some(vec![
            json!({ "id": id, "type": "prompt", "message": command.text, "streamingBehavior": "steer" })
                .to_string(),
        ])
    }

    fn interrupt(&mut self, _request_id: &str) -> Vec<String> {
        vec![json!({ "type": "abort" }).to_string()]
    }

    fn permission(
        &mut self,
        _request_id: &str,
        _decision: &PermissionDecision,
        _input: &Value,
    ) -> Vec<String> {
        Vec::new()
    }

    fn decode(&mut self, line: &str) -> Vec<Decoded> {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return vec![Decoded::Event(AgentEvent::Error {
                message: "Pi wrote a line that is not JSON".into(),
            })];
        };
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let mut out = Vec::new();
        match message["type"].as_str() {
            Some("response") => {
                if message["command"] == "get_state" && !self.session_announced {
                    self.session_announced = true;
                    let id = message["data"]["sessionId"].as_str().map(str::to_owned);
                    if let Some(id) = &id {
                        out.push(Decoded::VendorSession(id.clone()));
                    }
                    out.push(Decoded::Event(AgentEvent::SessionStarted {
                        vendor_session_id: id,
                    }));
                    return out;
                }
                let id = message["id"].as_str().unwrap_or_default();
                let refused = message["success"] == false;
                if refused {
                    out.push(Decoded::Event(AgentEvent::Error {
                        message: format!(
                            "Pi refused `{}`: {}",
                            text(&message["command"]),
                            text(&message["error"])
                        ),
                    }));
                }
                if id == ROOT_PROMPT && refused {
                    // No run starts: the turn ends here.
                    self.running = false;
                    self.ended = Some(TurnOutcome::Failed(text(&message["error"])));
                } else if let Some((_, queued)) = self.steers.remove(id) {
                    // Not queued into a run: Pi was idle and starts a run for it.
                    if !queued && !refused {
                        self.run_coming = true;
                    }
                }
                self.settle(&mut out);
            }
            Some("queue_update") => {
                let steering: Vec<&str> = message["steering"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                for (text, queued) in self.steers.values_mut() {
                    *queued |= steering.contains(&text.as_str());
                }
            }
            Some("agent_start") => {
                self.running = true;
                self.run_coming = false;
                self.ended = None;
            }
            Some("message_update") => {
                let event = &message["assistantMessageEvent"];
                if event["type"] == "text_delta" {
                    out.push(Decoded::Event(AgentEvent::AssistantTextDelta {
                        text: text(&event["delta"]),
                    }));
                }
            }
            Some("message_end") if message["message"]["role"] == "assistant" => {
                let body = message_text(&message["message"]);
                if !body.is_empty() {
                    out.push(Decoded::Event(AgentEvent::AssistantMessageCompleted {
                        text: body,
                    }));
                }
                let usage = &message["message"]["usage"];
                if usage.is_object() {
                    out.push(Decoded::Event(AgentEvent::Usage {
                        input_tokens: usage["input"].as_u64().unwrap_or(0),
                        output_tokens: usage["output"].as_u64().unwrap_or(0),
                    }));
                }
            }
            Some("tool_execution_start") => out.push(Decoded::Event(AgentEvent::ToolCallStarted {
                call_id: text(&message["toolCallId"]),
                name: text(&message["toolName"]),
                input: message["args"].clone(),
            })),
            Some("tool_execution_end") => out.push(Decoded::Event(AgentEvent::ToolCallFinished {
                call_id: text(&message["toolCallId"]),
                is_error: message["isError"].as_bool().unwrap_or(false),
                output: message_text(&message["result"])
                    .chars()
                    .take(4000)
                    .collect(),
            })),
            Some("agent_end") => {
                // An aborted or failed run ends with an assistant message whose stop reason
                // says so.
                let last = message["messages"]
                    .as_array()
                    .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "assistant"));
                let outcome = match last.map(|m| m["stopReason"].as_str().unwrap_or_default()) {
                    Some("error") => TurnOutcome::Failed(
                        last.and_then(|m| m["errorMessage"].as_str())
                            .unwrap_or("the model call failed")
                            .to_owned(),
                    ),
                    Some("aborted") => TurnOutcome::Interrupted,
                    _ => TurnOutcome::Completed,
                };
                self.running = false;
                self.ended = Some(outcome);
                self.settle(&mut out);
            }
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{AgentConfig, Launch, McpServer, OpenError};

    fn request(config: AgentConfig) -> OpenRequest {
        OpenRequest {
            backend: BackendId::Pi,
            launch: Launch {
                working_directory: std::env::temp_dir(),
                instructions: None,
                launch_id: "l".into(),
            },
            config,
            env: Vec::new(),
        }
    }

    #[tokio::test]
    async fn open_refuses_mcp_servers_before_anything_is_launched() {
        let state = tempfile::tempdir().unwrap();
        // Whether or not `pi` is installed: the refusal comes before the program lookup.
        let sdk = crate::AgentDriverSdk::new(crate::HostConfig::new(state.path()));
        let server = McpServer {
            name: "paddock".into(),
            command: "/opt/paddock/bin/paddock".into(),
            args: vec!["mcp".into()],
            env: Vec::new(),
        };
        let error = sdk
            .open(request(AgentConfig {
                mcp_servers: vec![server],
                ..AgentConfig::default()
            }))
            .await
            .err()
            .unwrap();
        assert_eq!(
            error,
            OpenError::NoMcpClient {
                backend: BackendId::Pi
            }
        );
        assert!(error.is_invalid_request());
        assert!(
            error.to_string().contains("`pi` has no MCP client"),
            "{error}"
        );
        assert!(!state.path().join("launches").exists());
    }

    #[test]
    fn mcp_only_without_servers_disables_every_tool() {
        let args = |config| Pi.launch(&request(config)).args;
        let unattended = args(AgentConfig {
            tools: ToolAccess::McpOnly,
            ..AgentConfig::default()
        });
        assert_eq!(unattended.last().unwrap(), "--no-tools");
        let default = args(AgentConfig::default());
        assert!(!default.iter().any(|arg| arg == "--no-tools"));
        assert_eq!(default.len() + 1, unattended.len());
    }

    #[test]
    fn normalises_pi_events() {
        let mut decoder = PiProtocol::default();
        let lines = [
            r#"{"id":"paddock-state","type":"response","command":"get_state","success":true,"data":{"sessionId":"s-1"}}"#,
            r#"{"type":"agent_start"}"#,
            r#"{"type":"message_update","message":{},"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hel"}}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hello"}],"usage":{"input":3,"output":2}}}"#,
            r#"{"type":"tool_execution_start","toolCallId":"t1","toolName":"bash","args":{"command":"ls"}}"#,
            r#"{"type":"tool_execution_end","toolCallId":"t1","toolName":"bash","result":{"content":[{"type":"text","text":"a\nb"}]},"isError":false}"#,
            r#"{"type":"agent_end","messages":[{"role":"assistant","stopReason":"stop"}]}"#,
            r#"{"type":"agent_end","messages":[{"role":"assistant","stopReason":"aborted"}]}"#,
        ];
        let decoded: Vec<Decoded> = lines.iter().flat_map(|line| decoder.decode(line)).collect();
        assert_eq!(decoded[0], Decoded::VendorSession("s-1".into()));
        assert_eq!(
            decoded[2],
            Decoded::Event(AgentEvent::AssistantTextDelta { text: "Hel".into() })
        );
        assert_eq!(
            decoded[3],
            Decoded::Event(AgentEvent::AssistantMessageCompleted {
                text: "Hello".into()
            })
        );
        assert_eq!(
            decoded[4],
            Decoded::Event(AgentEvent::Usage {
                input_tokens: 3,
                output_tokens: 2
            })
        );
        assert!(
            matches!(&decoded[6], Decoded::Event(AgentEvent::ToolCallFinished { output, .. }) if output == "a\nb")
        );
        assert_eq!(decoded[7], Decoded::TurnEnded(TurnOutcome::Completed));
        assert_eq!(decoded[8], Decoded::TurnEnded(TurnOutcome::Interrupted));
    }

    fn ends(decoded: &[Decoded]) -> usize {
        decoded
            .iter()
            .filter(|item| matches!(item, Decoded::TurnEnded(_)))
            .count()
    }

    fn feed(protocol: &mut PiProtocol, lines: &[&str]) -> Vec<Decoded> {
        lines
            .iter()
            .flat_map(|line| protocol.decode(line))
            .collect()
    }

    const END: &str =
        r#"{"type":"agent_end","messages":[{"role":"assistant","stopReason":"stop"}]}"#;

    #[test]
    fn a_steer_queued_into_the_run_ends_with_it() {
        let mut pi = PiProtocol::default();
        pi.user(&Command::user("c1", "go"));
        let steer: Value =
            serde_json::from_str(&pi.steer(&Command::user("c2", "also")).unwrap()[0]).unwrap();
        assert_eq!(steer["streamingBehavior"], "steer");
        let decoded = feed(
            &mut pi,
            &[
                r#"{"type":"agent_start"}"#,
                r#"{"type":"queue_update","steering":["also"],"followUp":[]}"#,
                r#"{"id":"paddock-steer-1","type":"response","command":"prompt","success":true}"#,
                r#"{"type":"queue_update","steering":[],"followUp":[]}"#,
            ],
        );
        assert_eq!(ends(&decoded), 0);
        assert_eq!(
            feed(&mut pi, &[END]),
            vec![Decoded::TurnEnded(TurnOutcome::Completed)]
        );
    }

    #[test]
    fn a_steer_that_finds_pi_idle_keeps_the_turn_open_for_its_run() {
        let mut pi = PiProtocol::default();
        pi.user(&Command::user("c1", "go"));
        assert_eq!(ends(&feed(&mut pi, &[r#"{"type":"agent_start"}"#])), 0);
        pi.steer(&Command::user("c2", "also"));
        // The run ended before Pi read the steer: the turn stays open.
        assert_eq!(ends(&feed(&mut pi, &[END])), 0);
        let decoded = feed(
            &mut pi,
            &[
                r#"{"id":"paddock-steer-1","type":"response","command":"prompt","success":true}"#,
                r#"{"type":"agent_start"}"#,
            ],
        );
        assert_eq!(ends(&decoded), 0);
        assert_eq!(ends(&feed(&mut pi, &[END])), 1);
    }

    #[test]
    fn a_refused_root_prompt_fails_the_turn() {
        let mut pi = PiProtocol::default();
        pi.user(&Command::user("c1", "go"));
        let decoded = feed(
            &mut pi,
            &[
                r#"{"id":"paddock-prompt","type":"response","command":"prompt","success":false,"error":"no model"}"#,
            ],
        );
        assert!(decoded.contains(&Decoded::TurnEnded(TurnOutcome::Failed("no model".into()))));
    }
}
