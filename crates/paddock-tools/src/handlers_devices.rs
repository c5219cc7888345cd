//! Device tool handlers: acquisition with `enableTools` (spec 003), observation and actions.

use std::sync::Arc;
use std::time::Duration;

use paddock_devices::{
    Action, Device, DeviceError, ImeAction, Key, ObserveOptions, Orientation, Platform, Point,
    SwipeDirection, TapKind, Target,
};
use paddock_store::{ChoiceScope, Choices};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ToolError, ToolErrorCode};
use crate::handlers::{Output, parse};
use crate::render::{observation_json, observation_text};
use crate::server::Call;
use crate::session::SessionKey;

/// How long an action waits for the UI to settle before observing anyway.
const SETTLE: Duration = Duration::from_secs(3);
/// The longest any single device operation may take.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(45);
const DEFAULT_SCREENSHOT_WIDTH: u32 = 360;

pub(crate) fn device_error(error: DeviceError) -> ToolError {
    let code = match &error {
        DeviceError::NotFound(_) => ToolErrorCode::NotFound,
        DeviceError::InvalidInput(_) => ToolErrorCode::InvalidInput,
        DeviceError::Unsupported(_) => ToolErrorCode::UnsupportedPlatform,
        DeviceError::Lost(_) => ToolErrorCode::DeviceLost,
        DeviceError::Unavailable(_) => ToolErrorCode::Unavailable,
        DeviceError::Failed(_) => ToolErrorCode::UpstreamError,
    };
    ToolError::new(code, error.to_string())
}

async fn bounded<T>(future: impl Future<Output = Result<T, DeviceError>>) -> Result<T, ToolError> {
    match tokio::time::timeout(OPERATION_TIMEOUT, future).await {
        Ok(result) => result.map_err(device_error),
        Err(_) => Err(ToolError::new(
            ToolErrorCode::Unavailable,
            format!(
                "the device did not answer within {}s",
                OPERATION_TIMEOUT.as_secs()
            ),
        )),
    }
}

fn require_session(call: &Call<'_>) -> Result<SessionKey, ToolError> {
    call.session.clone().ok_or_else(|| {
        ToolError::invalid_input(
            "this tool needs a session: call getWeb first and send its `sessionUuid` as the `x-paddock-session-id` header or the `__mcpSessionId` argument",
        )
    })
}

/// The session's device, checked against the tool's platforms.
fn session_device(
    call: &Call<'_>,
    tool: &str,
    platforms: &[Platform],
) -> Result<Arc<dyn Device>, ToolError> {
    let session = require_session(call)?;
    let device = call
        .ctx
        .backend
        .device(session.as_str())
        .map_err(device_error)?;
    if !platforms.contains(&device.platform()) {
        return Err(ToolError::new(
            ToolErrorCode::UnsupportedPlatform,
            format!(
                "`{tool}` does not support {} devices (it supports: {})",
                device.platform(),
                platforms
                    .iter()
                    .map(|platform| platform.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(device)
}

fn observation_output(
    observation: &paddock_devices::Observation,
    detail: Option<String>,
    json_format: bool,
) -> Output {
    let image = observation
        .screenshot
        .as_ref()
        .map(|shot| shot.jpeg.clone());
    if json_format {
        let mut value = observation_json(observation);
        if let Some(detail) = detail {
            value["detail"] = json!(detail);
        }
        return Output::Rich {
            text: value.to_string(),
            image,
            structured: Some(value),
        };
    }
    let mut text = String::new();
    if let Some(detail) = detail {
        text.push_str(&detail);
        text.push('\n');
    }
    text.push_str(&observation_text(observation));
    Output::Rich {
        text,
        image,
        structured: None,
    }
}

async fn act(
    call: &Call<'_>,
    tool: &str,
    platforms: &[Platform],
    action: Action,
    json_format: bool,
) -> Result<Output, ToolError> {
    let device = session_device(call, tool, platforms)?;
    let outcome = bounded(device.act(action, SETTLE, ObserveOptions::default())).await?;
    Ok(observation_output(
        &outcome.observation,
        outcome.detail,
        json_format,
    ))
}

/// Validates `enableTools` before any device work: unknown names reject the call, always-on
/// names are skipped.
fn check_enable_tools(
    call: &Call<'_>,
    names: &[String],
) -> Result<(Choices, Vec<String>), ToolError> {
    let mut changes = Choices::new();
    let mut skipped = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        match call.registry.tool(name) {
            Some(tool) if call.registry.visible(tool, call.ctx) => {
                if tool.is_always_on() {
                    skipped.push(name.clone());
                } else {
                    changes.insert(name.clone(), true);
                }
            }
            _ => unknown.push(format!("`{name}`")),
        }
    }
    if !unknown.is_empty() {
        return Err(ToolError::invalid_input(format!(
            "unknown tool name(s) in `enableTools`: {}; no device was acquired",
            unknown.join(", ")
        )));
    }
    Ok((changes, skipped))
}

/// Declares capabilities for a freshly minted session and reports the resulting sets the way
/// tools/list will resolve them.
fn declare(
    call: &Call<'_>,
    session: &SessionKey,
    changes: &Choices,
    skipped: Vec<String>,
    report_gated: bool,
) -> Value {
    let mut answer = json!({});
    if !skipped.is_empty() {
        answer["skipped"] = json!(skipped);
    }
    if !changes.is_empty() {
        let scope = ChoiceScope::Session(session.as_str().to_owned());
        if let Err(error) = call.registry.store.write_choices(&scope, changes) {
            answer["enableToolsError"] = json!(format!(
                "the device was acquired but the tool declaration was not saved ({error}); declare the tools again with setToolEnabled"
            ));
        } else {
            call.registry.discovery_changed();
        }
    }
    let profile = call.registry.profile_choices(call.ctx);
    let session_choices = call.registry.session_choices(Some(session));
    let mut enabled = Vec::new();
    let mut gated = Vec::new();
    for (tool, listed, _) in call
        .registry
        .resolve_all(call.ctx, &profile, &session_choices)
    {
        if tool.is_always_on() {
            continue;
        }
        if listed {
            enabled.push(tool.name);
        } else {
            gated.push(tool.name);
        }
    }
    answer["enabledTools"] = json!(enabled);
    if report_gated {
        answer["gatedTools"] = json!(gated);
    }
    answer
}

fn new_session_id() -> Result<SessionKey, ToolError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| ToolError::internal(format!("OS random source: {error}")))?;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    SessionKey::parse(&format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AcquireArgs {
    profile: Option<String>,
    app: Option<String>,
    avd_name: Option<String>,
    device_name: Option<String>,
    #[serde(default)]
    enable_tools: Vec<String>,
}

pub(crate) async fn acquire(
    call: Call<'_>,
    tool: &str,
    platform: Platform,
) -> Result<Output, ToolError> {
    let args: AcquireArgs = parse(tool, call.arguments.clone())?;
    let allowed = match platform {
        Platform::Web => args.avd_name.is_none() && args.device_name.is_none(),
        Platform::Android => {
            args.profile.is_none() && args.app.is_none() && args.device_name.is_none()
        }
        Platform::Ios => args.profile.is_none() && args.app.is_none() && args.avd_name.is_none(),
    };
    if !allowed {
        return Err(ToolError::invalid_input(format!(
            "invalid arguments for `{tool}`: unknown field"
        )));
    }
    let (changes, skipped) = check_enable_tools(&call, &args.enable_tools)?;
    let app = match &args.app {
        Some(id) => Some(
            call.ctx
                .backend
                .apps()
                .into_iter()
                .find(|app| &app.id == id)
                .ok_or_else(|| {
                    ToolError::not_found(format!("no app `{id}` is configured; see listApps"))
                })?,
        ),
        None => None,
    };
    let (session, device, new) = bind(&call, platform, args.profile.as_deref()).await?;
    let mut answer = json!({
        "sessionUuid": session.as_str(),
        "device": device_json(device.as_ref()),
        "newlyAcquired": new,
    });
    if let Some(app) = app {
        let outcome =
            bounded(device.act(Action::LaunchApp(app), SETTLE, ObserveOptions::default())).await?;
        answer["observation"] = json!(observation_text(&outcome.observation));
    }
    let declared = declare(&call, &session, &changes, skipped, true);
    merge(&mut answer, declared);
    Ok(Output::Json(answer))
}

/// Binds a device of `platform` to the caller's session, minting a session id when the request
/// had none.
async fn bind(
    call: &Call<'_>,
    platform: Platform,
    profile: Option<&str>,
) -> Result<(SessionKey, Arc<dyn Device>, bool), ToolError> {
    let session = match &call.session {
        Some(session) => session.clone(),
        None => new_session_id()?,
    };
    let _ = call.registry.record_session(&session);
    let (device, new) = bounded(
        call.ctx
            .backend
            .acquire(session.as_str(), platform, profile),
    )
    .await?;
    Ok((session, device, new))
}

fn device_json(device: &dyn Device) -> Value {
    json!({ "id": device.id(), "platform": device.platform().as_str(), "profile": device.profile().name })
}

fn merge(target: &mut Value, source: Value) {
    if let (Value::Object(target), Value::Object(source)) = (target, source) {
        target.extend(source);
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ProvisionArgs {
    platform: String,
    profile: Option<String>,
    boot: bool,
    #[serde(default)]
    enable_tools: Vec<String>,
}

pub(crate) async fn provision(call: Call<'_>) -> Result<Output, ToolError> {
    let args: ProvisionArgs = parse("provisionDevice", call.arguments.clone())?;
    let platform = Platform::parse(&args.platform)
        .ok_or_else(|| ToolError::invalid_input(format!("unknown platform `{}`", args.platform)))?;
    if !args.boot && !args.enable_tools.is_empty() {
        return Err(ToolError::invalid_input(
            "`enableTools` needs `boot: true`: a provision without boot mints no session to declare tools for",
        ));
    }
    let (changes, skipped) = check_enable_tools(&call, &args.enable_tools)?;
    let device_id = bounded(
        call.ctx
            .backend
            .provision(platform, args.profile.as_deref()),
    )
    .await?;
    if !args.boot {
        return Ok(Output::Json(
            json!({ "device": { "id": device_id, "platform": platform.as_str(), "state": "warm" } }),
        ));
    }
    let (session, device, _) = bind(&call, platform, args.profile.as_deref()).await?;
    let mut answer = json!({
        "sessionUuid": session.as_str(),
        "device": device_json(device.as_ref()),
    });
    merge(
        &mut answer,
        declare(&call, &session, &changes, skipped, false),
    );
    Ok(Output::Json(answer))
}

pub(crate) async fn release(call: Call<'_>) -> Result<Output, ToolError> {
    let crate::handlers::NoArgs {} = parse("releaseDevice", call.arguments.clone())?;
    let session = require_session(&call)?;
    match call.ctx.backend.release(session.as_str()).await {
        Some(device) => Ok(Output::Json(
            json!({ "released": device, "sessionUuid": session.as_str() }),
        )),
        None => Err(ToolError::not_found("no device is bound to this session")),
    }
}

pub(crate) fn list_apps(call: Call<'_>) -> Result<Output, ToolError> {
    let crate::handlers::NoArgs {} = parse("listApps", call.arguments.clone())?;
    let apps: Vec<Value> = call
        .ctx
        .backend
        .apps()
        .into_iter()
        .map(|app| json!({ "id": app.id, "name": app.name, "url": app.url }))
        .collect();
    Ok(Output::Json(json!({ "apps": apps })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ObserveArgs {
    #[serde(default)]
    full: bool,
    #[serde(default)]
    screenshot: bool,
    screenshot_width: Option<u32>,
    format: Option<Format>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Format {
    Text,
    Json,
}

pub(crate) async fn observe(call: Call<'_>, platforms: &[Platform]) -> Result<Output, ToolError> {
    let args: ObserveArgs = parse("observe", call.arguments.clone())?;
    let device = session_device(&call, "observe", platforms)?;
    let options = ObserveOptions {
        full: args.full,
        screenshot_width: (args.screenshot || args.screenshot_width.is_some())
            .then(|| args.screenshot_width.unwrap_or(DEFAULT_SCREENSHOT_WIDTH)),
        screenshot_quality: 60,
    };
    let observation = bounded(device.observe(options)).await?;
    Ok(observation_output(
        &observation,
        None,
        args.format == Some(Format::Json),
    ))
}

/// A target given as `ref`, `text`, `id` or `x`+`y`: exactly one.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TargetArgs {
    #[serde(rename = "ref")]
    reference: Option<String>,
    text: Option<String>,
    id: Option<String>,
    x: Option<f64>,
    y: Option<f64>,
}

impl TargetArgs {
    fn into_target(self) -> Result<Target, ToolError> {
        let given = [
            self.reference.is_some(),
            self.text.is_some(),
            self.id.is_some(),
            self.x.is_some() || self.y.is_some(),
        ]
        .iter()
        .filter(|given| **given)
        .count();
        if given != 1 {
            return Err(ToolError::invalid_input(
                "give exactly one target: `ref`, `text`, `id`, or `x` with `y`",
            ));
        }
        Ok(match (self.reference, self.text, self.id, self.x, self.y) {
            (Some(reference), ..) => Target::Ref(reference),
            (_, Some(text), ..) => Target::Text(text),
            (_, _, Some(id), ..) => Target::Id(id),
            (_, _, _, Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
                Target::Point(Point { x, y })
            }
            _ => {
                return Err(ToolError::invalid_input(
                    "`x` and `y` go together and must be numbers",
                ));
            }
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TapArgs {
    #[serde(flatten)]
    target: TargetFields,
    action: Option<String>,
}

/// `TargetArgs` fields for flattening (serde cannot deny unknown fields through a flatten).
#[derive(Deserialize, Default)]
struct TargetFields {
    #[serde(rename = "ref")]
    reference: Option<String>,
    text: Option<String>,
    id: Option<String>,
    x: Option<f64>,
    y: Option<f64>,
}

impl From<TargetFields> for TargetArgs {
    fn from(fields: TargetFields) -> Self {
        Self {
            reference: fields.reference,
            text: fields.text,
            id: fields.id,
            x: fields.x,
            y: fields.y,
        }
    }
}

/// A text field given by `ref`, `id` or `label`, or none (the focused field).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FieldArgs {
    #[serde(rename = "ref")]
    reference: Option<String>,
    id: Option<String>,
    label: Option<String>,
}

impl FieldArgs {
    fn into_target(self) -> Result<Option<Target>, ToolError> {
        match (self.reference, self.id, self.label) {
            (None, None, None) => Ok(None),
            (Some(reference), None, None) => Ok(Some(Target::Ref(reference))),
            (None, Some(id), None) => Ok(Some(Target::Id(id))),
            (None, None, Some(label)) => Ok(Some(Target::Text(label))),
            _ => Err(ToolError::invalid_input(
                "give at most one of `ref`, `id` or `label`",
            )),
        }
    }
}

fn split_field(arguments: &mut serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    let mut field = serde_json::Map::new();
    for key in ["ref", "id", "label"] {
        if let Some(value) = arguments.remove(key) {
            field.insert(key.to_owned(), value);
        }
    }
    field
}

pub(crate) async fn device_action(
    call: Call<'_>,
    tool: &str,
    platforms: &[Platform],
) -> Result<Output, ToolError> {
    let mut arguments = call.arguments.clone();
    let action = match tool {
        "tapOn" => {
            let args: TapArgs = parse(tool, arguments)?;
            let extra = call
                .arguments
                .keys()
                .filter(|key| !["ref", "text", "id", "x", "y", "action"].contains(&key.as_str()))
                .count();
            if extra > 0 {
                return Err(ToolError::invalid_input(
                    "invalid arguments for `tapOn`: unknown field",
                ));
            }
            let kind = match args.action.as_deref() {
                None | Some("tap") => TapKind::Tap,
                Some("doubleTap") => TapKind::DoubleTap,
                Some("longPress") => TapKind::LongPress,
                Some(other) => {
                    return Err(ToolError::invalid_input(format!(
                        "unknown tap action `{other}`"
                    )));
                }
            };
            Action::Tap {
                target: TargetArgs::from(args.target).into_target()?,
                kind,
            }
        }
        "swipeOn" => {
            let field: FieldArgs = parse(tool, split_field(&mut arguments))?;
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields, rename_all = "camelCase")]
            struct SwipeArgs {
                direction: String,
                until_visible: Option<String>,
                max_swipes: Option<u32>,
            }
            let args: SwipeArgs = parse(tool, arguments)?;
            let direction = match args.direction.as_str() {
                "up" => SwipeDirection::Up,
                "down" => SwipeDirection::Down,
                "left" => SwipeDirection::Left,
                "right" => SwipeDirection::Right,
                other => {
                    return Err(ToolError::invalid_input(format!(
                        "unknown direction `{other}`"
                    )));
                }
            };
            let max_swipes = args.max_swipes.unwrap_or(10);
            if !(1..=50).contains(&max_swipes) {
                return Err(ToolError::invalid_input(
                    "`maxSwipes` must be between 1 and 50",
                ));
            }
            Action::Swipe {
                direction,
                within: field.into_target()?,
                until_visible: args.until_visible,
                max_swipes,
            }
        }
        "dragAndDrop" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct DragArgs {
                from: TargetArgs,
                to: TargetArgs,
            }
            let args: DragArgs = parse(tool, arguments)?;
            Action::Drag {
                from: args.from.into_target()?,
                to: args.to.into_target()?,
            }
        }
        "inputText" => {
            let field: FieldArgs = parse(tool, split_field(&mut arguments))?;
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct InputArgs {
                text: String,
            }
            let args: InputArgs = parse(tool, arguments)?;
            Action::InputText {
                target: field.into_target()?,
                text: args.text,
            }
        }
        "clearText" => {
            let field: FieldArgs = parse(tool, arguments)?;
            Action::ClearText {
                target: field.into_target()?,
            }
        }
        "imeAction" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct ImeArgs {
                action: String,
            }
            let args: ImeArgs = parse(tool, arguments)?;
            Action::Ime(match args.action.as_str() {
                "done" => ImeAction::Done,
                "go" => ImeAction::Go,
                "search" => ImeAction::Search,
                "send" => ImeAction::Send,
                "next" => ImeAction::Next,
                "previous" => ImeAction::Previous,
                other => {
                    return Err(ToolError::invalid_input(format!(
                        "unknown IME action `{other}`"
                    )));
                }
            })
        }
        "pressButton" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct PressArgs {
                button: String,
            }
            let args: PressArgs = parse(tool, arguments)?;
            Action::Press(match args.button.as_str() {
                "back" => Key::Back,
                "forward" => Key::Forward,
                "home" => Key::Home,
                "reload" => Key::Reload,
                "enter" => Key::Enter,
                "tab" => Key::Tab,
                "escape" => Key::Escape,
                "backspace" => Key::Backspace,
                "delete" => Key::Delete,
                "space" => Key::Space,
                "arrowUp" => Key::ArrowUp,
                "arrowDown" => Key::ArrowDown,
                "arrowLeft" => Key::ArrowLeft,
                "arrowRight" => Key::ArrowRight,
                "pageUp" => Key::PageUp,
                "pageDown" => Key::PageDown,
                other => {
                    return Err(ToolError::invalid_input(format!(
                        "unknown button `{other}`"
                    )));
                }
            })
        }
        "sendKeys" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct KeysArgs {
                text: String,
            }
            let args: KeysArgs = parse(tool, arguments)?;
            if args.text.chars().count() > 2000 {
                return Err(ToolError::invalid_input(
                    "`text` is limited to 2000 characters; use inputText for long text",
                ));
            }
            Action::SendKeys { text: args.text }
        }
        "launchApp" | "terminateApp" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields, rename_all = "camelCase")]
            struct AppArgs {
                app_id: String,
            }
            let args: AppArgs = parse(tool, arguments)?;
            let app = call
                .ctx
                .backend
                .apps()
                .into_iter()
                .find(|app| app.id == args.app_id)
                .ok_or_else(|| {
                    ToolError::not_found(format!(
                        "no app `{}` is configured; see listApps",
                        args.app_id
                    ))
                })?;
            if tool == "launchApp" {
                Action::LaunchApp(app)
            } else {
                Action::TerminateApp(app)
            }
        }
        "openLink" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct LinkArgs {
                url: String,
            }
            let args: LinkArgs = parse(tool, arguments)?;
            Action::OpenUrl(args.url)
        }
        "rotate" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct RotateArgs {
                orientation: String,
            }
            let args: RotateArgs = parse(tool, arguments)?;
            Action::Rotate(match args.orientation.as_str() {
                "portrait" => Orientation::Portrait,
                "landscape" => Orientation::Landscape,
                other => {
                    return Err(ToolError::invalid_input(format!(
                        "unknown orientation `{other}`"
                    )));
                }
            })
        }
        "highlight" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct HighlightArgs {
                #[serde(default)]
                targets: Vec<TargetArgs>,
                color: Option<String>,
                #[serde(default)]
                clear: bool,
            }
            let args: HighlightArgs = parse(tool, arguments)?;
            if args.clear {
                Action::ClearHighlights
            } else {
                if args.targets.is_empty() || args.targets.len() > 20 {
                    return Err(ToolError::invalid_input(
                        "give 1 to 20 `targets`, or `clear: true`",
                    ));
                }
                let targets = args
                    .targets
                    .into_iter()
                    .map(TargetArgs::into_target)
                    .collect::<Result<Vec<_>, _>>()?;
                Action::Highlight {
                    targets,
                    color: args.color.unwrap_or_else(|| "red".to_owned()),
                }
            }
        }
        other => {
            return Err(ToolError::internal(format!(
                "`{other}` is not a device action"
            )));
        }
    };
    act(&call, tool, platforms, action, false).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScreenshotArgs {
    width: Option<u32>,
    quality: Option<u8>,
}

pub(crate) async fn screenshot(
    call: Call<'_>,
    platforms: &[Platform],
) -> Result<Output, ToolError> {
    let args: ScreenshotArgs = parse("screenshot", call.arguments.clone())?;
    if args
        .width
        .is_some_and(|width| !(64..=4096).contains(&width))
        || args
            .quality
            .is_some_and(|quality| !(1..=100).contains(&quality))
    {
        return Err(ToolError::invalid_input(
            "`width` must be 64..4096 and `quality` 1..100",
        ));
    }
    let device = session_device(&call, "screenshot", platforms)?;
    let shot = bounded(device.screenshot(args.width, args.quality.unwrap_or(70))).await?;
    Ok(Output::Rich {
        text: format!("screenshot {}x{} JPEG", shot.width, shot.height),
        image: Some(shot.jpeg),
        structured: None,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClipboardArgs {
    operation: String,
    text: Option<String>,
}

pub(crate) async fn clipboard(call: Call<'_>, platforms: &[Platform]) -> Result<Output, ToolError> {
    let args: ClipboardArgs = parse("clipboard", call.arguments.clone())?;
    let action = match (args.operation.as_str(), args.text) {
        ("read", None) => Action::ClipboardRead,
        ("write", Some(text)) => Action::ClipboardWrite(text),
        ("write", None) => return Err(ToolError::invalid_input("`write` needs `text`")),
        ("copy", None) => Action::ClipboardCopy,
        ("paste", None) => {
            return act(&call, "clipboard", platforms, Action::ClipboardPaste, false).await;
        }
        ("read" | "copy" | "paste", Some(_)) => {
            return Err(ToolError::invalid_input("`text` goes with `write` only"));
        }
        (other, _) => {
            return Err(ToolError::invalid_input(format!(
                "unknown operation `{other}`"
            )));
        }
    };
    let device = session_device(&call, "clipboard", platforms)?;
    let outcome = bounded(device.act(action, Duration::ZERO, ObserveOptions::default())).await?;
    Ok(Output::Json(
        json!({ "text": outcome.detail.unwrap_or_default() }),
    ))
}
