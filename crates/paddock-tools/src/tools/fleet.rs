//! The fleet server's tools: spec 002's Devices, Device-control and Tasks domains under its
//! snake_case names. Each is answered by one of the daemon's own tools, run on the machine
//! that holds the device ([`FleetBackend`]); these map the spec's arguments onto that tool and
//! its answer back, with the daemon's error codes folded into spec 002's five.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::catalog::{Hints, OperationDef, ToolDef};
use crate::error::{ToolError, ToolErrorCode};
use crate::fleet::{FleetBackend, FleetDevice};
use crate::tools::args::Bounded;
use crate::tools::results::schema_of;
use crate::tools::{Call, ErasedTool, Output, Tool};

/// Every fleet tool, in listing order.
pub(crate) const REGISTERED: &[&dyn ErasedTool] = &[
    &ListDevices,
    &GetDevice,
    &GetDeviceScreenshot,
    &GetDeviceUiState,
    &ListAppsOnDevice,
    &CreateDevice,
    &TerminateDevice,
    &DeviceAction,
    &ManageDevice,
    &ManageDeviceApps,
    &ManageDeviceFiles,
    &ConfigureDevice,
    &RunTask,
    &GetTask,
    &ListTasks,
    &StopTask,
    &SendTaskMessage,
    &GetTaskMedia,
];

fn fleet(call: &Call<'_>) -> Result<Arc<dyn FleetBackend>, ToolError> {
    call.ctx.fleet.clone().ok_or_else(|| {
        ToolError::new(
            ToolErrorCode::Unavailable,
            "fleet tools run on `paddock server`; this host has no joined daemons",
        )
    })
}

/// A daemon's answer as this tool's: its content as is, an error's code folded into spec
/// 002's five (`not_found`, `forbidden`, `rate_limited`, `upstream_error`, `invalid_input`).
fn forwarded(mut result: CallToolResult) -> Output {
    if result.is_error == Some(true) {
        for content in &mut result.content {
            if let ContentBlock::Text(text) = content {
                text.text = fold_code(&text.text);
            }
        }
    }
    Output::Forwarded(result)
}

/// `[device_lost] …` → `[upstream_error] …`, and so on; spec 002's own codes stay.
fn fold_code(text: &str) -> String {
    let Some(rest) = text.strip_prefix('[') else {
        return text.to_owned();
    };
    let Some((code, message)) = rest.split_once(']') else {
        return text.to_owned();
    };
    let folded = match code {
        "not_found" | "forbidden" | "rate_limited" | "upstream_error" | "invalid_input" => code,
        "unsupported_platform" => "invalid_input",
        _ => "upstream_error",
    };
    format!("[{folded}]{message}")
}

/// An operation that no platform of this release offers through the fleet.
fn unmapped(tool: &str, operation: &str, platform: &str) -> ToolError {
    ToolError::invalid_input(format!(
        "`{tool}` operation `{operation}` is not available for {platform} devices in this release (README's fleet table lists what is)"
    ))
}

async fn find_device(fleet: &dyn FleetBackend, device_id: &str) -> Result<FleetDevice, ToolError> {
    fleet
        .devices()
        .await?
        .into_iter()
        .find(|device| device.id == device_id)
        .ok_or_else(|| {
            ToolError::not_found(format!(
                "no device `{device_id}` in the fleet; `list_devices` lists them"
            ))
        })
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Spec 002 names (snake_case) for a few closed sets.
macro_rules! snake_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
        #[schemars(description = "")]
        pub(crate) enum $name {
            $(#[serde(rename = $wire)] $variant),+
        }

        impl $name {
            fn wire(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire),+
                }
            }
        }
    };
}

snake_enum! {
    /// A platform of the fleet.
    FleetPlatform { Web => "web", Android => "android" }
}

snake_enum! {
    /// A web emulation profile.
    FleetProfile { Pixel7 => "pixel7", Iphone15 => "iphone15", Desktop => "desktop" }
}

// ---------------------------------------------------------------- Devices

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListDevicesArgs {
    /// Only devices of this platform.
    platform: Option<FleetPlatform>,
    /// Only the devices of this machine.
    machine_id: Option<String>,
}

/// One device of the fleet.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DeviceEntry {
    device_id: String,
    machine_id: String,
    machine_name: String,
    /// `web` or `android`.
    platform: String,
    /// The web emulation profile, or the Android model.
    profile: String,
    /// The daemon's pool state (`warm`, `bound`, `booting`, …), or `offline`.
    state: String,
    /// Whether its machine is connected now.
    online: bool,
}

impl From<FleetDevice> for DeviceEntry {
    fn from(device: FleetDevice) -> Self {
        Self {
            device_id: device.id,
            machine_id: device.machine_id,
            machine_name: device.machine_name,
            platform: device.platform,
            profile: device.profile,
            state: device.state,
            online: device.online,
        }
    }
}

/// `list_devices`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DeviceList {
    devices: Vec<DeviceEntry>,
}

#[derive(Debug)]
pub(crate) struct ListDevices;

impl Tool for ListDevices {
    type Args = ListDevicesArgs;

    const DEF: ToolDef = ToolDef::new(
        "list_devices",
        "List the fleet's devices",
        "Every device of every machine that joined this server: its machine, platform, profile and state. A machine that is not connected shows its devices `offline`.",
        Hints::READ,
    );

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<DeviceList>()
    }

    async fn run(call: Call<'_>, args: ListDevicesArgs) -> Result<Output, ToolError> {
        let devices = fleet(&call)?
            .devices()
            .await?
            .into_iter()
            .filter(|device| {
                args.platform
                    .is_none_or(|platform| device.platform == platform.wire())
                    && args
                        .machine_id
                        .as_deref()
                        .is_none_or(|machine| device.machine_id == machine)
            })
            .map(DeviceEntry::from)
            .collect();
        Output::structured(&DeviceList { devices })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceIdArgs {
    /// The device's id, as `list_devices` shows it.
    device_id: String,
}

#[derive(Debug)]
pub(crate) struct GetDevice;

impl Tool for GetDevice {
    type Args = DeviceIdArgs;

    const DEF: ToolDef = ToolDef::new(
        "get_device",
        "Get a device",
        "One device of the fleet: its machine, platform, profile and state.",
        Hints::READ,
    );

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<DeviceEntry>()
    }

    async fn run(call: Call<'_>, args: DeviceIdArgs) -> Result<Output, ToolError> {
        let device = find_device(fleet(&call)?.as_ref(), &args.device_id).await?;
        Output::structured(&DeviceEntry::from(device))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScreenshotArgs {
    /// The device's id, as `list_devices` shows it.
    device_id: String,
    /// The image's width in pixels (default: the screen's CSS width).
    width: Option<Bounded<64, 4096>>,
}

#[derive(Debug)]
pub(crate) struct GetDeviceScreenshot;

impl Tool for GetDeviceScreenshot {
    type Args = ScreenshotArgs;

    const DEF: ToolDef = ToolDef::new(
        "get_device_screenshot",
        "Screenshot a device",
        "A JPEG of the device's screen, as image content.",
        Hints::READ,
    );

    async fn run(call: Call<'_>, args: ScreenshotArgs) -> Result<Output, ToolError> {
        let mut arguments = Map::new();
        if let Some(width) = args.width {
            arguments.insert("width".into(), json!(width.get()));
        }
        let result = fleet(&call)?
            .device_call(args.device_id, "screenshot", arguments)
            .await?;
        Ok(forwarded(result))
    }
}

snake_enum! {
    /// How `get_device_ui_state` answers.
    UiFormat { Text => "text", Json => "json" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UiStateArgs {
    /// The device's id, as `list_devices` shows it.
    device_id: String,
    /// `text` (default: one line per element, with refs such as `e12` that `device_action`
    /// accepts) or `json`.
    format: Option<UiFormat>,
}

#[derive(Debug)]
pub(crate) struct GetDeviceUiState;

impl Tool for GetDeviceUiState {
    type Args = UiStateArgs;

    const DEF: ToolDef = ToolDef::new(
        "get_device_ui_state",
        "Read a device's screen",
        "The elements on the device's screen with their refs (`e12`), roles, text and bounds. Act on a ref with `device_action`.",
        Hints::READ,
    );

    async fn run(call: Call<'_>, args: UiStateArgs) -> Result<Output, ToolError> {
        let mut arguments = Map::new();
        if let Some(format) = args.format {
            arguments.insert("format".into(), json!(format.wire()));
        }
        let result = fleet(&call)?
            .device_call(args.device_id, "observe", arguments)
            .await?;
        Ok(forwarded(result))
    }
}

#[derive(Debug)]
pub(crate) struct ListAppsOnDevice;

impl Tool for ListAppsOnDevice {
    type Args = DeviceIdArgs;

    const DEF: ToolDef = ToolDef::new(
        "list_apps_on_device",
        "List a device's apps",
        "The apps a device can launch: a web device's configured apps (name and URL), an Android device's installed packages.",
        Hints::READ,
    );

    async fn run(call: Call<'_>, args: DeviceIdArgs) -> Result<Output, ToolError> {
        let result = fleet(&call)?
            .device_call(args.device_id, "listApps", Map::new())
            .await?;
        Ok(forwarded(result))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateDeviceArgs {
    /// The platform (default `web`; Android devices are connected, not created).
    platform: Option<FleetPlatform>,
    /// Web: the emulation profile (default: the daemon's).
    profile: Option<FleetProfile>,
    /// The machine to create it on (default: the connected machine with the fewest devices).
    machine_id: Option<String>,
}

/// `create_device`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CreatedDevice {
    device_id: String,
    machine_id: String,
    /// `warm`: ready, in the machine's pool.
    state: String,
}

#[derive(Debug)]
pub(crate) struct CreateDevice;

impl Tool for CreateDevice {
    type Args = CreateDeviceArgs;

    const DEF: ToolDef = ToolDef::new(
        "create_device",
        "Create a device",
        "Starts a new device on a machine of the fleet (the named one, else the connected machine with the fewest devices) and adds it to that machine's pool.",
        Hints::ACT,
    )
    .commerce();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<CreatedDevice>()
    }

    async fn run(call: Call<'_>, args: CreateDeviceArgs) -> Result<Output, ToolError> {
        let fleet = fleet(&call)?;
        let platform = args.platform.unwrap_or(FleetPlatform::Web);
        if platform == FleetPlatform::Android {
            return Err(unmapped("create_device", "create", "android"));
        }
        let machine = match args.machine_id {
            Some(machine) => machine,
            None => fleet
                .machines()
                .await?
                .into_iter()
                .filter(|machine| machine.online)
                .min_by_key(|machine| machine.devices)
                .map(|machine| machine.id)
                .ok_or_else(|| {
                    ToolError::new(
                        ToolErrorCode::UpstreamError,
                        "no machine of the fleet is connected; join one with `paddock daemon join`",
                    )
                })?,
        };
        let mut arguments = Map::new();
        arguments.insert("platform".into(), json!(platform.wire()));
        arguments.insert("boot".into(), json!(false));
        if let Some(profile) = args.profile {
            arguments.insert("profile".into(), json!(profile.wire()));
        }
        let result = fleet
            .machine_call(machine.clone(), "provisionDevice", arguments)
            .await?;
        if result.is_error == Some(true) {
            return Ok(forwarded(result));
        }
        let device_id = result
            .structured_content
            .as_ref()
            .and_then(|value| value.pointer("/device/id"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ToolError::new(
                    ToolErrorCode::UpstreamError,
                    "the daemon's answer named no device",
                )
            })?;
        Output::structured(&CreatedDevice {
            device_id: device_id.to_owned(),
            machine_id: machine,
            state: "warm".to_owned(),
        })
    }
}

#[derive(Debug)]
pub(crate) struct TerminateDevice;

impl Tool for TerminateDevice {
    type Args = DeviceIdArgs;

    const DEF: ToolDef = ToolDef::new(
        "terminate_device",
        "Terminate a device",
        "Ends the fleet's use of a device: its daemon takes it back and wipes it (pages, storage, files); it returns to that machine's pool, or is stopped when the pool already has its warm devices.",
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
    )
    .commerce();

    async fn run(call: Call<'_>, args: DeviceIdArgs) -> Result<Output, ToolError> {
        fleet(&call)?.release_device(args.device_id.clone()).await?;
        Ok(Output::Json(json!({
            "device_id": args.device_id,
            "state": "released",
        })))
    }
}

// ---------------------------------------------------------------- Device-control

const fn write(name: &'static str) -> OperationDef {
    OperationDef {
        name,
        read_only: false,
        commerce: false,
    }
}

const fn read(name: &'static str) -> OperationDef {
    OperationDef {
        name,
        read_only: true,
        commerce: false,
    }
}

snake_enum! {
    /// `device_action`'s operations.
    ActionOperation {
        Tap => "tap",
        Swipe => "swipe",
        KeyboardWrite => "keyboard_write",
        KeyboardKey => "keyboard_key",
        KeyboardClear => "keyboard_clear",
        GlobalAction => "global_action",
    }
}

snake_enum! {
    /// A swipe's direction.
    SwipeDirection { Up => "up", Down => "down", Left => "left", Right => "right" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceActionArgs {
    /// The device's id, as `list_devices` shows it.
    device_id: String,
    operation: ActionOperation,
    /// `tap`, `keyboard_write`, `keyboard_clear`: the element's ref from
    /// `get_device_ui_state`, such as `e12`.
    #[serde(rename = "ref")]
    element_ref: Option<String>,
    /// `tap`: the element's visible text, instead of a ref or coordinates.
    text: Option<String>,
    /// `tap`: screen x in CSS pixels (with `y`).
    x: Option<f64>,
    /// `tap`: screen y in CSS pixels (with `x`).
    y: Option<f64>,
    /// `swipe`: the finger's direction (`up` reveals content below).
    direction: Option<SwipeDirection>,
    /// `keyboard_write`: the text to type.
    value: Option<String>,
    /// `keyboard_key`: a key such as `enter`, `tab`, `escape`, `backspace`, `arrowDown`;
    /// `global_action`: `back`, `forward`, `home`, `reload` or `appSwitch`.
    key: Option<String>,
}

#[derive(Debug)]
pub(crate) struct DeviceAction;

const ACTION_OPERATIONS: &[OperationDef] = &[
    write("tap"),
    write("swipe"),
    write("keyboard_write"),
    write("keyboard_key"),
    write("keyboard_clear"),
    write("global_action"),
];

impl Tool for DeviceAction {
    type Args = DeviceActionArgs;

    const DEF: ToolDef = ToolDef::new(
        "device_action",
        "Act on a device",
        "Low-level input on a device: `tap` (a ref, a text or x/y), `swipe` (a direction), `keyboard_write` (type `value`, into `ref` if given), `keyboard_key` (press `key`), `keyboard_clear` (clear the focused field or `ref`), `global_action` (`back`, `home`, …). Answers with what changed on the screen.",
        Hints::ACT,
    )
    .operations(ACTION_OPERATIONS);

    async fn run(call: Call<'_>, args: DeviceActionArgs) -> Result<Output, ToolError> {
        let mut arguments = Map::new();
        let mut put = |name: &str, value: Value| {
            arguments.insert(name.to_owned(), value);
        };
        let tool = match args.operation {
            ActionOperation::Tap => {
                match (&args.element_ref, &args.text, args.x, args.y) {
                    (Some(element), _, _, _) => put("ref", json!(element)),
                    (None, Some(text), _, _) => put("text", json!(text)),
                    (None, None, Some(x), Some(y)) => {
                        put("x", json!(x));
                        put("y", json!(y));
                    }
                    _ => {
                        return Err(ToolError::invalid_input(
                            "`tap` needs `ref`, `text`, or both `x` and `y`",
                        ));
                    }
                }
                "tapOn"
            }
            ActionOperation::Swipe => {
                let direction = args.direction.ok_or_else(|| {
                    ToolError::invalid_input("`swipe` needs `direction`: up, down, left or right")
                })?;
                put("direction", json!(direction.wire()));
                "swipeOn"
            }
            ActionOperation::KeyboardWrite => {
                let value = args
                    .value
                    .ok_or_else(|| ToolError::invalid_input("`keyboard_write` needs `value`"))?;
                match args.element_ref {
                    Some(element) => {
                        put("ref", json!(element));
                        put("text", json!(value));
                        "inputText"
                    }
                    None => {
                        put("text", json!(value));
                        "sendKeys"
                    }
                }
            }
            ActionOperation::KeyboardKey | ActionOperation::GlobalAction => {
                let key = args.key.ok_or_else(|| {
                    ToolError::invalid_input(format!(
                        "`{}` needs `key`, such as `enter` or `back`",
                        args.operation.wire()
                    ))
                })?;
                put("button", json!(key));
                "pressButton"
            }
            ActionOperation::KeyboardClear => {
                if let Some(element) = args.element_ref {
                    put("ref", json!(element));
                }
                "clearText"
            }
        };
        let result = fleet(&call)?
            .device_call(args.device_id, tool, arguments)
            .await?;
        Ok(forwarded(result))
    }
}

snake_enum! {
    /// `manage_device`'s operations.
    ManageOperation {
        Reboot => "reboot",
        Reset => "reset",
        Rename => "rename",
        WaitReady => "wait_ready",
        GetCapabilities => "get_capabilities",
        Count => "count",
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManageDeviceArgs {
    operation: ManageOperation,
    /// The device (every operation but `count`).
    device_id: Option<String>,
    /// `wait_ready`: how long to wait, in seconds (default 30).
    timeout_secs: Option<Bounded<1, 300>>,
}

/// `manage_device count`'s answer.
#[derive(Debug, Default, Serialize)]
struct DeviceCount {
    total: usize,
    online: usize,
    offline: usize,
    warm: usize,
    bound: usize,
}

#[derive(Debug)]
pub(crate) struct ManageDevice;

const MANAGE_OPERATIONS: &[OperationDef] = &[
    write("reboot"),
    write("reset"),
    write("rename"),
    read("wait_ready"),
    read("get_capabilities"),
    read("count"),
];

impl Tool for ManageDevice {
    type Args = ManageDeviceArgs;

    const DEF: ToolDef = ToolDef::new(
        "manage_device",
        "Manage a device",
        "`reset` (wipe the device and start it fresh; on web also `reboot`), `wait_ready` (until its machine is connected and it is usable), `get_capabilities` (platform, profile and the operations it supports), `count` (the fleet's devices by state). `rename` is not offered by this release.",
        Hints::IDEMPOTENT_CHANGE,
    )
    .operations(MANAGE_OPERATIONS);

    async fn run(call: Call<'_>, args: ManageDeviceArgs) -> Result<Output, ToolError> {
        let fleet = fleet(&call)?;
        if args.operation == ManageOperation::Count {
            let mut count = DeviceCount::default();
            for device in fleet.devices().await? {
                count.total += 1;
                if device.online {
                    count.online += 1;
                } else {
                    count.offline += 1;
                }
                match device.state.as_str() {
                    "warm" => count.warm += 1,
                    "bound" => count.bound += 1,
                    _ => {}
                }
            }
            return Ok(Output::Json(json!(count_json(&count))));
        }
        let device_id = args.device_id.ok_or_else(|| {
            ToolError::invalid_input(format!("`{}` needs `device_id`", args.operation.wire()))
        })?;
        let device = find_device(fleet.as_ref(), &device_id).await?;
        match args.operation {
            ManageOperation::Reset | ManageOperation::Reboot => {
                if args.operation == ManageOperation::Reboot && device.platform != "web" {
                    return Err(unmapped("manage_device", "reboot", &device.platform));
                }
                fleet.reset_device(device_id.clone()).await?;
                Ok(Output::Json(json!({
                    "device_id": device_id,
                    "state": "reset",
                })))
            }
            ManageOperation::Rename => Err(unmapped("manage_device", "rename", &device.platform)),
            ManageOperation::WaitReady => {
                let limit = args.timeout_secs.map_or(30, Bounded::get);
                let deadline =
                    tokio::time::Instant::now() + std::time::Duration::from_secs(limit.into());
                loop {
                    let now = find_device(fleet.as_ref(), &device_id).await?;
                    if now.online && matches!(now.state.as_str(), "warm" | "bound") {
                        return Output::structured(&DeviceEntry::from(now));
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(ToolError::new(
                            ToolErrorCode::UpstreamError,
                            format!(
                                "device `{device_id}` was not ready within {limit} s (state `{}`, machine {})",
                                now.state,
                                if now.online {
                                    "connected"
                                } else {
                                    "not connected"
                                }
                            ),
                        ));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
            }
            ManageOperation::GetCapabilities => Ok(Output::Json(capabilities(&device))),
            ManageOperation::Count => Err(ToolError::internal("count is answered above")),
        }
    }
}

fn count_json(count: &DeviceCount) -> Value {
    json!({
        "total": count.total,
        "online": count.online,
        "offline": count.offline,
        "warm": count.warm,
        "bound": count.bound,
    })
}

/// What a device supports through the fleet, by platform (README's fleet table).
fn capabilities(device: &FleetDevice) -> Value {
    let web = device.platform == "web";
    json!({
        "device_id": device.id,
        "platform": device.platform,
        "profile": device.profile,
        "device_action": ["tap", "swipe", "keyboard_write", "keyboard_key", "keyboard_clear", "global_action"],
        "manage_device": if web {
            json!(["reboot", "reset", "wait_ready", "get_capabilities", "count"])
        } else {
            json!(["reset", "wait_ready", "get_capabilities", "count"])
        },
        "manage_device_apps": ["start", "stop", "list_packages"],
        "manage_device_files": if web { json!(["list", "download", "delete"]) } else { json!([]) },
        "configure_device": if web {
            json!(["get_language", "set_language", "get_timezone", "set_timezone", "get_location", "set_location"])
        } else {
            json!([])
        },
    })
}

snake_enum! {
    /// `manage_device_apps`'s operations.
    AppsOperation {
        Install => "install",
        Delete => "delete",
        Start => "start",
        Stop => "stop",
        ListPackages => "list_packages",
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManageDeviceAppsArgs {
    /// The device's id, as `list_devices` shows it.
    device_id: String,
    operation: AppsOperation,
    /// `start`, `stop`: the app (a web device's configured app name, an Android package).
    package: Option<String>,
}

#[derive(Debug)]
pub(crate) struct ManageDeviceApps;

const APPS_OPERATIONS: &[OperationDef] = &[
    write("install"),
    write("delete"),
    write("start"),
    write("stop"),
    read("list_packages"),
];

impl Tool for ManageDeviceApps {
    type Args = ManageDeviceAppsArgs;

    const DEF: ToolDef = ToolDef::new(
        "manage_device_apps",
        "Manage a device's apps",
        "`start` and `stop` an app, `list_packages`. `install` and `delete` are not offered through the fleet in this release.",
        Hints::ACT,
    )
    .operations(APPS_OPERATIONS);

    async fn run(call: Call<'_>, args: ManageDeviceAppsArgs) -> Result<Output, ToolError> {
        let fleet = fleet(&call)?;
        let (tool, arguments) = match args.operation {
            AppsOperation::ListPackages => ("listApps", Map::new()),
            AppsOperation::Start | AppsOperation::Stop => {
                let package = args.package.ok_or_else(|| {
                    ToolError::invalid_input(format!("`{}` needs `package`", args.operation.wire()))
                })?;
                let tool = if args.operation == AppsOperation::Start {
                    "launchApp"
                } else {
                    "terminateApp"
                };
                (tool, object(json!({ "appId": package })))
            }
            AppsOperation::Install | AppsOperation::Delete => {
                let device = find_device(fleet.as_ref(), &args.device_id).await?;
                return Err(unmapped(
                    "manage_device_apps",
                    args.operation.wire(),
                    &device.platform,
                ));
            }
        };
        Ok(forwarded(
            fleet.device_call(args.device_id, tool, arguments).await?,
        ))
    }
}

snake_enum! {
    /// `manage_device_files`'s operations.
    FilesOperation { List => "list", Upload => "upload", Download => "download", Delete => "delete" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManageDeviceFilesArgs {
    /// The device's id, as `list_devices` shows it.
    device_id: String,
    operation: FilesOperation,
    /// `download`, `delete`: the file's name as `list` shows it.
    name: Option<String>,
}

#[derive(Debug)]
pub(crate) struct ManageDeviceFiles;

const FILES_OPERATIONS: &[OperationDef] = &[
    read("list"),
    write("upload"),
    read("download"),
    write("delete"),
];

impl Tool for ManageDeviceFiles {
    type Args = ManageDeviceFilesArgs;

    const DEF: ToolDef = ToolDef::new(
        "manage_device_files",
        "Manage a device's files",
        "A web device's downloads: `list`, `download` (the file as an embedded resource), `delete`. `upload` is not offered through the fleet in this release.",
        Hints::ACT,
    )
    .operations(FILES_OPERATIONS);

    async fn run(call: Call<'_>, args: ManageDeviceFilesArgs) -> Result<Output, ToolError> {
        let fleet = fleet(&call)?;
        if args.operation == FilesOperation::Upload {
            let device = find_device(fleet.as_ref(), &args.device_id).await?;
            return Err(unmapped("manage_device_files", "upload", &device.platform));
        }
        let mut arguments = object(json!({ "operation": args.operation.wire() }));
        if let Some(name) = args.name {
            arguments.insert("name".into(), json!(name));
        }
        Ok(forwarded(
            fleet
                .device_call(args.device_id, "files", arguments)
                .await?,
        ))
    }
}

snake_enum! {
    /// `configure_device`'s operations (spec 002's list).
    ConfigureOperation {
        GetLanguage => "get_language",
        SetLanguage => "set_language",
        GetTimezone => "get_timezone",
        SetTimezone => "set_timezone",
        GetLocation => "get_location",
        SetLocation => "set_location",
        GetTime => "get_time",
        GetOverlay => "get_overlay",
        SetOverlay => "set_overlay",
        ProxyConnect => "proxy_connect",
        ProxyDisconnect => "proxy_disconnect",
        GetProxyStatus => "get_proxy_status",
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigureDeviceArgs {
    /// The device's id, as `list_devices` shows it.
    device_id: String,
    operation: ConfigureOperation,
    /// `set_language`: a BCP 47 locale such as `de-DE`.
    language: Option<String>,
    /// `set_timezone`: an IANA timezone such as `Asia/Tokyo`.
    timezone: Option<String>,
    /// `set_location`: degrees, -90 to 90.
    latitude: Option<f64>,
    /// `set_location`: degrees, -180 to 180.
    longitude: Option<f64>,
}

#[derive(Debug)]
pub(crate) struct ConfigureDevice;

const CONFIGURE_OPERATIONS: &[OperationDef] = &[
    read("get_language"),
    write("set_language"),
    read("get_timezone"),
    write("set_timezone"),
    read("get_location"),
    write("set_location"),
    read("get_time"),
    read("get_overlay"),
    write("set_overlay"),
    write("proxy_connect"),
    write("proxy_disconnect"),
    read("get_proxy_status"),
];

impl Tool for ConfigureDevice {
    type Args = ConfigureDeviceArgs;

    const DEF: ToolDef = ToolDef::new(
        "configure_device",
        "Configure a device",
        "A web device's language, timezone and location (`get_*`, `set_*`). The other operations are not offered by this release's platforms and answer `[invalid_input]`.",
        Hints::IDEMPOTENT_CHANGE,
    )
    .operations(CONFIGURE_OPERATIONS);

    async fn run(call: Call<'_>, args: ConfigureDeviceArgs) -> Result<Output, ToolError> {
        use ConfigureOperation as Op;
        let fleet = fleet(&call)?;
        let arguments = match args.operation {
            Op::GetLanguage | Op::GetTimezone | Op::GetLocation => {
                object(json!({ "operation": "get" }))
            }
            Op::SetLanguage => {
                let language = args.language.ok_or_else(|| {
                    ToolError::invalid_input("`set_language` needs `language`, such as `de-DE`")
                })?;
                object(json!({ "operation": "set", "locale": language }))
            }
            Op::SetTimezone => {
                let timezone = args.timezone.ok_or_else(|| {
                    ToolError::invalid_input(
                        "`set_timezone` needs `timezone`, such as `Asia/Tokyo`",
                    )
                })?;
                object(json!({ "operation": "set", "timezone": timezone }))
            }
            Op::SetLocation => {
                let (Some(latitude), Some(longitude)) = (args.latitude, args.longitude) else {
                    return Err(ToolError::invalid_input(
                        "`set_location` needs `latitude` and `longitude`",
                    ));
                };
                object(json!({
                    "operation": "set",
                    "geolocation": { "latitude": latitude, "longitude": longitude },
                }))
            }
            other => {
                let device = find_device(fleet.as_ref(), &args.device_id).await?;
                return Err(unmapped("configure_device", other.wire(), &device.platform));
            }
        };
        Ok(forwarded(
            fleet
                .device_call(args.device_id, "configureDevice", arguments)
                .await?,
        ))
    }
}

// ---------------------------------------------------------------- Tasks

/// A fleet task id: the machine's id, a dot, the daemon's task id.
fn task_id(machine: &str, local: &str) -> String {
    format!("{machine}.{local}")
}

fn split_task_id(id: &str) -> Result<(String, String), ToolError> {
    match id.split_once('.') {
        Some((machine, local)) if !machine.is_empty() && !local.is_empty() => {
            Ok((machine.to_owned(), local.to_owned()))
        }
        _ => Err(ToolError::not_found(format!(
            "no task `{id}`: fleet task ids look like `m_….t_…`, as `run_task` and `list_tasks` give them"
        ))),
    }
}

/// Rewrites the daemon's `taskId` values in a task answer into fleet task ids.
fn with_fleet_task_ids(mut result: CallToolResult, machine: &str) -> CallToolResult {
    fn rewrite(value: &mut Value, machine: &str) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(local)) = map.remove("taskId") {
                    map.insert("task_id".to_owned(), json!(task_id(machine, &local)));
                    map.insert("machine_id".to_owned(), json!(machine));
                }
                for child in map.values_mut() {
                    rewrite(child, machine);
                }
            }
            Value::Array(items) => {
                for item in items {
                    rewrite(item, machine);
                }
            }
            _ => {}
        }
    }
    if let Some(structured) = result.structured_content.as_mut() {
        rewrite(structured, machine);
        // The text mirror of structured content follows it.
        if let [content] = result.content.as_mut_slice()
            && let ContentBlock::Text(text) = content
            && serde_json::from_str::<Value>(&text.text).is_ok()
        {
            text.text = structured.to_string();
        }
    }
    result
}

snake_enum! {
    /// An agent backend.
    FleetBackendName {
        Claude => "claude",
        Codex => "codex",
        Opencode => "opencode",
        Pi => "pi",
        Cursor => "cursor",
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunTaskArgs {
    /// What the agent is to do, in plain words.
    goal: String,
    /// The device to work on; without it, a free device of `platform` on the connected machine
    /// with the fewest tasks.
    device_id: Option<String>,
    /// Without `device_id`: the platform (default `web`).
    platform: Option<FleetPlatform>,
    /// The agent CLI (default: the daemon's).
    backend: Option<FleetBackendName>,
    /// The model, as the backend names it.
    model: Option<String>,
    /// Tool calls the agent may make (default 50).
    max_steps: Option<Bounded<1, 1000>>,
    /// Wall-clock limit in seconds (default 900).
    timeout_secs: Option<Bounded<10, 86_400>>,
}

#[derive(Debug)]
pub(crate) struct RunTask;

impl Tool for RunTask {
    type Args = RunTaskArgs;

    const DEF: ToolDef = ToolDef::new(
        "run_task",
        "Run a task",
        "Hands `goal` to an agent that works a device of the fleet until it is done, on the machine that holds the device. Answers at once with `task_id`; follow it with `get_task`.",
        Hints::ACT,
    );

    async fn run(call: Call<'_>, args: RunTaskArgs) -> Result<Output, ToolError> {
        let fleet = fleet(&call)?;
        let mut arguments = object(json!({ "goal": args.goal }));
        let machine = match &args.device_id {
            Some(device_id) => {
                let device = find_device(fleet.as_ref(), device_id).await?;
                if !device.online {
                    return Err(ToolError::new(
                        ToolErrorCode::UpstreamError,
                        format!(
                            "device `{device_id}` is offline: its machine `{}` is not connected",
                            device.machine_id
                        ),
                    ));
                }
                arguments.insert("deviceId".into(), json!(device_id));
                device.machine_id
            }
            None => {
                let platform = args.platform.unwrap_or(FleetPlatform::Web);
                arguments.insert("platform".into(), json!(platform.wire()));
                let devices = fleet.devices().await?;
                devices
                    .iter()
                    .filter(|device| {
                        device.online && device.platform == platform.wire() && device.state == "warm"
                    })
                    .map(|device| device.machine_id.clone())
                    .next()
                    .ok_or_else(|| {
                        ToolError::new(
                            ToolErrorCode::UpstreamError,
                            format!(
                                "no connected machine has a free {} device; `list_devices` shows the fleet",
                                platform.wire()
                            ),
                        )
                    })?
            }
        };
        if let Some(backend) = args.backend {
            arguments.insert("backend".into(), json!(backend.wire()));
        }
        if let Some(model) = args.model {
            arguments.insert("model".into(), json!(model));
        }
        if let Some(steps) = args.max_steps {
            arguments.insert("maxSteps".into(), json!(steps.get()));
        }
        if let Some(timeout) = args.timeout_secs {
            arguments.insert("timeoutSecs".into(), json!(timeout.get()));
        }
        let result = fleet
            .machine_call(machine.clone(), "runTask", arguments)
            .await?;
        Ok(forwarded(with_fleet_task_ids(result, &machine)))
    }
}

snake_enum! {
    /// `get_task`'s views.
    TaskView { Summary => "summary", Status => "status", Trajectory => "trajectory" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetTaskArgs {
    /// The task's id, as `run_task` gave it.
    task_id: String,
    /// `summary` (default), `status` or `trajectory` (a page of steps).
    view: Option<TaskView>,
    /// `trajectory`: where the previous page ended (its `nextCursor`).
    cursor: Option<String>,
    /// `trajectory`: steps per page (default 50).
    limit: Option<Bounded<1, 500>>,
}

#[derive(Debug)]
pub(crate) struct GetTask;

impl Tool for GetTask {
    type Args = GetTaskArgs;

    const DEF: ToolDef = ToolDef::new(
        "get_task",
        "Get a task",
        "A task's `summary`, `status` or a page of its `trajectory` (every tool call the agent made, with its outcome).",
        Hints::READ,
    );

    async fn run(call: Call<'_>, args: GetTaskArgs) -> Result<Output, ToolError> {
        let (machine, local) = split_task_id(&args.task_id)?;
        let mut arguments = object(json!({ "taskId": local }));
        if let Some(view) = args.view {
            arguments.insert("view".into(), json!(view.wire()));
        }
        if let Some(cursor) = args.cursor {
            arguments.insert("cursor".into(), json!(cursor));
        }
        if let Some(limit) = args.limit {
            arguments.insert("limit".into(), json!(limit.get()));
        }
        let result = fleet(&call)?
            .machine_call(machine.clone(), "getTask", arguments)
            .await?;
        Ok(forwarded(with_fleet_task_ids(result, &machine)))
    }
}

snake_enum! {
    /// A task state.
    TaskStateFilter {
        Queued => "queued",
        Running => "running",
        Completed => "completed",
        Failed => "failed",
        Stopped => "stopped",
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListTasksArgs {
    /// Only tasks in this state.
    state: Option<TaskStateFilter>,
}

#[derive(Debug)]
pub(crate) struct ListTasks;

impl Tool for ListTasks {
    type Args = ListTasksArgs;

    const DEF: ToolDef = ToolDef::new(
        "list_tasks",
        "List tasks",
        "The tasks of every connected machine, newest first per machine. `unreachable` names the machines that did not answer.",
        Hints::READ,
    );

    async fn run(call: Call<'_>, args: ListTasksArgs) -> Result<Output, ToolError> {
        let fleet = fleet(&call)?;
        let mut arguments = Map::new();
        if let Some(state) = args.state {
            arguments.insert("state".into(), json!(state.wire()));
        }
        let machines: Vec<_> = fleet
            .machines()
            .await?
            .into_iter()
            .filter(|machine| machine.online)
            .collect();
        let answers = futures_util::future::join_all(machines.iter().map(|machine| {
            let fleet = fleet.clone();
            let arguments = arguments.clone();
            let id = machine.id.clone();
            async move {
                (
                    id.clone(),
                    fleet.machine_call(id, "listTasks", arguments).await,
                )
            }
        }))
        .await;
        let mut tasks = Vec::new();
        let mut unreachable = Vec::new();
        for (machine, answer) in answers {
            match answer {
                Ok(result) if result.is_error != Some(true) => {
                    let result = with_fleet_task_ids(result, &machine);
                    if let Some(Value::Array(listed)) = result
                        .structured_content
                        .and_then(|mut value| value.get_mut("tasks").map(Value::take))
                    {
                        tasks.extend(listed);
                    }
                }
                _ => unreachable.push(machine),
            }
        }
        Ok(Output::Json(
            json!({ "tasks": tasks, "unreachable": unreachable }),
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskIdArgs {
    /// The task's id, as `run_task` gave it.
    task_id: String,
}

#[derive(Debug)]
pub(crate) struct StopTask;

impl Tool for StopTask {
    type Args = TaskIdArgs;

    const DEF: ToolDef = ToolDef::new(
        "stop_task",
        "Stop a task",
        "Stops a running task; its agent ends and its device goes back to its machine's pool.",
        Hints::IDEMPOTENT_CHANGE,
    );

    async fn run(call: Call<'_>, args: TaskIdArgs) -> Result<Output, ToolError> {
        let (machine, local) = split_task_id(&args.task_id)?;
        let result = fleet(&call)?
            .machine_call(
                machine.clone(),
                "stopTask",
                object(json!({ "taskId": local })),
            )
            .await?;
        Ok(forwarded(with_fleet_task_ids(result, &machine)))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendTaskMessageArgs {
    /// The task's id, as `run_task` gave it.
    task_id: String,
    /// The message for the task's agent.
    text: String,
}

#[derive(Debug)]
pub(crate) struct SendTaskMessage;

impl Tool for SendTaskMessage {
    type Args = SendTaskMessageArgs;

    const DEF: ToolDef = ToolDef::new(
        "send_task_message",
        "Message a task's agent",
        "Sends text to a running task's agent, delivered the way its backend takes messages mid-turn.",
        Hints::ACT,
    );

    async fn run(call: Call<'_>, args: SendTaskMessageArgs) -> Result<Output, ToolError> {
        let (machine, local) = split_task_id(&args.task_id)?;
        let result = fleet(&call)?
            .machine_call(
                machine.clone(),
                "sendTaskMessage",
                object(json!({ "taskId": local, "text": args.text })),
            )
            .await?;
        Ok(forwarded(with_fleet_task_ids(result, &machine)))
    }
}

snake_enum! {
    /// `get_task_media`'s kinds.
    MediaKindArg { Screenshot => "screenshot", UiState => "ui_state" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetTaskMediaArgs {
    /// The task's id, as `run_task` gave it.
    task_id: String,
    /// `screenshot` (an image) or `ui_state` (the observation).
    kind: MediaKindArg,
    /// The trajectory step (default: the latest).
    step: Option<Bounded<0, 100_000>>,
}

#[derive(Debug)]
pub(crate) struct GetTaskMedia;

impl Tool for GetTaskMedia {
    type Args = GetTaskMediaArgs;

    const DEF: ToolDef = ToolDef::new(
        "get_task_media",
        "Get a task's media",
        "A task's screenshot (image content) or UI state (the observation) at a step, default the latest.",
        Hints::READ,
    );

    async fn run(call: Call<'_>, args: GetTaskMediaArgs) -> Result<Output, ToolError> {
        let (machine, local) = split_task_id(&args.task_id)?;
        let mut arguments = object(json!({ "taskId": local, "kind": args.kind.wire() }));
        if let Some(step) = args.step {
            arguments.insert("step".into(), json!(step.get()));
        }
        let result = fleet(&call)?
            .machine_call(machine.clone(), "getTaskMedia", arguments)
            .await?;
        Ok(forwarded(with_fleet_task_ids(result, &machine)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_codes_fold_into_the_specs_five() {
        assert_eq!(fold_code("[device_lost] gone"), "[upstream_error] gone");
        assert_eq!(fold_code("[unsupported_platform] no"), "[invalid_input] no");
        assert_eq!(fold_code("[not_found] x"), "[not_found] x");
        assert_eq!(fold_code("plain"), "plain");
    }

    #[test]
    fn task_ids_round_trip() {
        let id = task_id("m_1", "t_2");
        assert_eq!(
            split_task_id(&id).ok(),
            Some(("m_1".to_owned(), "t_2".to_owned()))
        );
        assert!(split_task_id("nodot").is_err());
        assert!(split_task_id(".x").is_err());
    }
}
