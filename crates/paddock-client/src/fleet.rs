//! The fleet control plane's wire protocol (spec 004's host commands and events): JSON text
//! frames on the WebSocket a joined daemon keeps to `paddock server`
//! (`/api/daemon/control`, authenticated by the machine key), and the activation exchange
//! (`POST /api/daemon/activate`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The route a daemon activates a pairing token at.
pub const ACTIVATE_PATH: &str = "/api/daemon/activate";
/// The route of the control WebSocket.
pub const CONTROL_PATH: &str = "/api/daemon/control";
/// Where a daemon mints an agent's runner key with its machine key.
pub const RUNNER_KEYS_PATH: &str = "/api/daemon/runner-keys";
/// The agent data plane: `POST {AGENT_PATH}/<operation>` with a runner key.
pub const AGENT_PATH: &str = "/api/agent";
/// The data plane's operations.
pub const AGENT_OPERATIONS: [&str; 5] = ["send", "inboxPull", "ack", "read", "listChannels"];
/// Where an owner posts a message to a bot, and reads the conversation (API key).
pub const MESSAGES_PATH: &str = "/api/messages";
/// Where an owner stops a bot's running session (API key).
pub const AGENT_STOP_PATH: &str = "/api/agents/stop";
/// The channel an owner's messages arrive in on the bot's daemon, and that its replies go to.
pub const FLEET_OWNER_DM: &str = "/.dm/owner#fleet";

/// What a refusal from the server says: the message of its `{"error": {"code", "message"}}`
/// body (or of an older `{"error": "…"}`), else the start of the body as text.
pub fn refusal_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| {
            let error = value.get("error")?;
            error
                .get("message")
                .unwrap_or(error)
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(300).collect())
}

/// What a daemon sends to activate a pairing (or reconnect) token.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActivateRequest {
    pub token: String,
    pub hostname: String,
    pub platform: String,
    pub arch: String,
}

impl ActivateRequest {
    /// Never prints the token.
    pub fn describe(&self) -> String {
        format!("{} ({}/{})", self.hostname, self.platform, self.arch)
    }
}

/// The server's answer to an activation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivateResponse {
    pub machine_id: String,
    pub name: String,
    /// `pdk_mk_…`: shown this once; the daemon keeps it, the server keeps only its hash.
    pub machine_key: String,
}

/// A device as a daemon reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InventoryDevice {
    pub id: String,
    pub platform: String,
    pub profile: String,
    pub state: String,
}

/// Server → daemon.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ServerFrame {
    /// After the upgrade: who the server takes this daemon for.
    Welcome { machine_id: String, name: String },
    /// A host command; the daemon answers with a [`DaemonFrame::Result`] of the same `id`.
    Command { id: u64, command: HostCommand },
}

/// A host command.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum HostCommand {
    /// Runs the daemon tool `tool` in the fleet's session of `device_id` (bound to it on
    /// first use).
    #[serde(rename_all = "camelCase")]
    DeviceCall {
        device_id: String,
        tool: String,
        arguments: Map<String, Value>,
    },
    /// Runs a daemon tool outside any device session (tasks, provisioning).
    MachineCall {
        tool: String,
        arguments: Map<String, Value>,
    },
    /// Ends the fleet's session of `device_id`: the pool takes the device back and resets it
    /// (or stops it, when its warm set is full).
    #[serde(rename_all = "camelCase")]
    Release { device_id: String },
    /// Wipes `device_id` (pages, storage, files) and starts it fresh, keeping it in the
    /// fleet's session.
    #[serde(rename_all = "camelCase")]
    Reset { device_id: String },
    /// Messages wait on the server for bot `agent_id`: a bodiless notice. The daemon takes
    /// the bodies over the data plane with the agent's runner key and decides whether to
    /// start a session, tell the running one, or coalesce.
    #[serde(rename_all = "camelCase")]
    AgentWake {
        agent_id: String,
        target: String,
        latest_seq: i64,
        count: i64,
    },
    /// Stops bot `agent_id`'s running session, if it has one.
    #[serde(rename_all = "camelCase")]
    AgentStop { agent_id: String },
}

/// A daemon's request for an agent's runner key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunnerKeyRequest {
    pub agent_id: String,
}

/// The server's answer: a new runner key (the agent's older ones stop working).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerKeyResponse {
    pub agent_id: String,
    /// `pdk_rk_…`: shown this once; the server keeps only its hash.
    pub runner_key: String,
}

/// One message of an agent's conversation on the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessageEntry {
    pub seq: i64,
    /// `in` (to the agent) or `out` (from it).
    pub direction: String,
    pub target: String,
    pub sender: String,
    pub text: String,
    pub created_at_ms: i64,
}

/// `inboxPull`'s answer: inbound messages past the acknowledged boundary (they stay there
/// until `ack`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxPullAnswer {
    pub messages: Vec<AgentMessageEntry>,
    pub acked: i64,
}

/// `ack`'s request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AckRequest {
    pub upto: i64,
}

/// `send`'s request (and an owner's `POST /api/messages`, with `bot`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendRequest {
    pub target: String,
    pub text: String,
}

/// Daemon → server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DaemonFrame {
    /// The daemon's devices and bots, whole, on connect and whenever they change.
    Inventory {
        devices: Vec<InventoryDevice>,
        /// The bots defined on the daemon (`paddock bot add`), which owners can message.
        #[serde(default)]
        bots: Vec<String>,
    },
    /// The answer to command `id`: an MCP `CallToolResult` object, or an error.
    Result {
        id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<FrameError>,
    },
}

/// A command that could not run at all (unknown device, malformed command).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameError {
    /// One of spec 002's codes: `not_found`, `forbidden`, `invalid_input`, `upstream_error`.
    pub code: String,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_their_documented_shape() {
        let frame = ServerFrame::Command {
            id: 7,
            command: HostCommand::DeviceCall {
                device_id: "web-1".into(),
                tool: "observe".into(),
                arguments: Map::new(),
            },
        };
        assert_eq!(
            serde_json::to_value(&frame).ok(),
            Some(serde_json::json!({
                "type": "command",
                "id": 7,
                "command": {"kind": "deviceCall", "deviceId": "web-1", "tool": "observe", "arguments": {}},
            }))
        );
        let back: Result<DaemonFrame, _> = serde_json::from_str(
            r#"{"type":"result","id":7,"error":{"code":"not_found","message":"x"}}"#,
        );
        assert!(matches!(
            back,
            Ok(DaemonFrame::Result {
                id: 7,
                error: Some(_),
                ..
            })
        ));
    }
}
