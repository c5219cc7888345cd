//! The fleet port: what the fleet server's tools (spec 002's snake_case surface) need from the
//! daemons that joined it. The server's hub implements it over the control plane; each call
//! runs one of the daemon's own tools on the machine that holds the device.

use futures_util::future::BoxFuture;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// One device of a joined daemon, as the fleet lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetDevice {
    pub id: String,
    pub machine_id: String,
    pub machine_name: String,
    /// `web` or `android`.
    pub platform: String,
    /// The web emulation profile, or the Android model.
    pub profile: String,
    /// The daemon's pool state (`warm`, `bound`, …), or `offline` when its machine is not
    /// connected.
    pub state: String,
    pub online: bool,
}

/// One joined machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetMachine {
    pub id: String,
    pub name: String,
    pub online: bool,
    pub devices: usize,
}

/// The joined daemons.
pub trait FleetBackend: Send + Sync {
    /// Every device of every joined machine (offline machines' last inventory, marked so).
    fn devices(&self) -> BoxFuture<'_, Result<Vec<FleetDevice>, ToolError>>;
    fn machines(&self) -> BoxFuture<'_, Result<Vec<FleetMachine>, ToolError>>;
    /// Runs the daemon tool `tool` in the fleet's session of device `device_id` (bound to it on
    /// first use), on the machine that holds the device.
    fn device_call(
        &self,
        device_id: String,
        tool: &'static str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'_, Result<CallToolResult, ToolError>>;
    /// Runs a daemon tool that no device session carries (tasks, provisioning) on `machine_id`.
    fn machine_call(
        &self,
        machine_id: String,
        tool: &'static str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'_, Result<CallToolResult, ToolError>>;
    /// Ends the fleet's session of `device_id`: the daemon takes the device back (and resets it,
    /// or stops it when its warm set is full).
    fn release_device(&self, device_id: String) -> BoxFuture<'_, Result<(), ToolError>>;
    /// Wipes `device_id` and starts it fresh; it stays the fleet's, with the same id.
    fn reset_device(&self, device_id: String) -> BoxFuture<'_, Result<(), ToolError>>;
}
