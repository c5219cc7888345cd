//! The structured results of the tools that return data rather than a screen: each is the type
//! its handler serialises (through [`Output::structured`](super::Output::structured)) and the
//! type its `outputSchema` is derived from, so the two cannot drift apart. Field doc comments
//! become the schema's descriptions.

use std::collections::BTreeMap;

use paddock_store::ChoiceScope;
use schemars::JsonSchema;
use serde::Serialize;

/// A tool's `outputSchema`, for a tool that returns `T`.
pub(crate) fn schema_of<T: JsonSchema>() -> Option<serde_json::Map<String, serde_json::Value>> {
    Some(super::schema::output_schema::<T>())
}

/// Where a discovery choice was written.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Scope {
    /// `profile` (the caller's connection profile) or `session` (one routing session).
    kind: ScopeKind,
    /// The profile's key or the session's id.
    id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
enum ScopeKind {
    Profile,
    Session,
}

impl From<&ChoiceScope> for Scope {
    fn from(scope: &ChoiceScope) -> Self {
        match scope {
            ChoiceScope::Profile(key) => Self {
                kind: ScopeKind::Profile,
                id: key.clone(),
            },
            ChoiceScope::Session(key) => Self {
                kind: ScopeKind::Session,
                id: key.clone(),
            },
        }
    }
}

/// The configurable tools listed after a write, or why they could not be read back.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnabledAfter {
    /// The configurable tools selected for discovery after the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// Why `enabledTools` could not be read back (the write itself succeeded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools_error: Option<String>,
}

/// `setToolEnabled`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolChoices {
    pub scope: Scope,
    /// The tools whose state the call changed.
    pub changed: Vec<String>,
    /// Always-on tools named in the call (accepted, nothing to change).
    pub skipped: Vec<String>,
    #[serde(flatten)]
    pub after: EnabledAfter,
}

/// `discovery`'s answer: the status of every layer, or what a reset removed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum DiscoveryAnswer {
    Status(DiscoveryStatus),
    Reset(DiscoveryReset),
}

/// `discovery {operation: status}`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DiscoveryStatus {
    /// The caller's policy profile.
    pub policy: String,
    /// The caller's connection profile key.
    pub profile: String,
    /// The routing session, if the call named one.
    pub session: Option<String>,
    /// Every tool the policy allows, with whether tools/list shows it and which layer decided.
    pub tools: Vec<ToolStatus>,
    pub layers: Layers,
}

/// One tool in `discovery`'s status.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolStatus {
    pub name: String,
    /// Whether tools/list shows it.
    pub listed: bool,
    /// Listed whatever any layer says.
    pub always_on: bool,
    /// The layer that decided: `default`, `environment`, `commandLine`, `profile`, `session`
    /// or `alwaysOn`.
    pub decided_by: String,
}

/// The choices of each discovery layer, tool name to listed or omitted.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Layers {
    pub environment: BTreeMap<String, bool>,
    pub command_line: BTreeMap<String, bool>,
    pub profile: BTreeMap<String, bool>,
    pub session: BTreeMap<String, bool>,
}

/// `discovery {operation: reset}`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DiscoveryReset {
    pub scope: Scope,
    /// How many saved choices were removed.
    pub removed: usize,
    #[serde(flatten)]
    pub after: EnabledAfter,
}

/// `listDevices`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DeviceList {
    pub devices: Vec<ListedDevice>,
}

/// One device of the pool.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListedDevice {
    pub id: String,
    /// `web`, `android` or `ios`.
    pub platform: String,
    /// The emulation profile (web) or model.
    pub profile: String,
    /// `warm` (ready), `bound` (held by a session) or `resetting`.
    pub state: String,
    /// The session holding it.
    pub session: Option<String>,
    /// Android: what the device reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub android: Option<AndroidDetails>,
}

/// An Android device's facts.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AndroidDetails {
    /// The adb serial (`emulator-5554`, `R58M…`, `192.168.1.5:5555`).
    pub serial: String,
    pub model: String,
    pub api_level: u32,
    /// Physical pixels, portrait.
    pub screen_width_px: u32,
    pub screen_height_px: u32,
    pub density_dpi: u32,
    /// The emulator's AVD name, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avd_name: Option<String>,
}

/// `listApps`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AppList {
    pub apps: Vec<ListedApp>,
}

/// One configured app.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListedApp {
    pub id: String,
    pub name: String,
    pub url: String,
}

/// A device as an acquisition names it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DeviceRef {
    pub id: String,
    /// `web`, `android` or `ios`.
    pub platform: String,
    /// The emulation profile (web) or model.
    pub profile: String,
}

/// What a session's tool declaration (`enableTools`) resulted in.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Declared {
    /// Always-on tools named in `enableTools` (nothing to declare).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<String>>,
    /// Why the declaration was not saved (the device was acquired).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_tools_error: Option<String>,
    /// The configurable tools tools/list shows in the session.
    pub enabled_tools: Vec<String>,
    /// The configurable tools it does not show (callable by name, or enable them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gated_tools: Option<Vec<String>>,
}

/// `getWeb`'s (`getAndroid`'s, `getApple`'s) answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Acquired {
    /// The routing session the device is bound to: send it with every device tool.
    pub session_uuid: String,
    pub device: DeviceRef,
    /// False when the session already held this device.
    pub newly_acquired: bool,
    /// The screen after opening `app`, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
    #[serde(flatten)]
    pub declared: Declared,
}

/// `provisionDevice`'s answer: a warm device added to the pool, or one booted for the session.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Provisioned {
    Booted(BootedDevice),
    Warm(WarmDevice),
}

/// `provisionDevice {boot: true}`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BootedDevice {
    pub session_uuid: String,
    pub device: DeviceRef,
    #[serde(flatten)]
    pub declared: Declared,
}

/// `provisionDevice {boot: false}`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WarmDevice {
    pub device: WarmDeviceRef,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WarmDeviceRef {
    pub id: String,
    pub platform: String,
    /// Always `warm`.
    pub state: String,
}

/// `releaseDevice`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Released {
    /// The released device's id.
    pub released: String,
    pub session_uuid: String,
}
