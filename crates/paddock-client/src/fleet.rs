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
}

/// Daemon → server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DaemonFrame {
    /// The daemon's devices, whole, on connect and whenever they change.
    Inventory { devices: Vec<InventoryDevice> },
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
