//! Actions on the session's device: taps, swipes, text, keys, apps, links, rotation, the
//! clipboard and highlights. Each answers once the UI settles with the screen or, when shorter,
//! the changes since the caller's last observation (the clipboard's `read`, `write` and `copy`
//! answer with the clipboard's text instead).

use std::time::Duration;

use paddock_devices::{Action, AppConfig, ObserveOptions};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::catalog::{Hints, OperationDef, ToolDef};
use crate::error::ToolError;
use crate::tools::args::{Bounded, FieldArgs, NoArgs, TargetArgs, TargetObject, wire_enum};
use crate::tools::device::{WEB, WEB_AND_ANDROID, act, bounded, session_device};
use crate::tools::results::{AppList, ListedApp, schema_of};
use crate::tools::{Call, Output, Tool};

const DEFAULT_MAX_SWIPES: u32 = 10;
/// Longer text goes through `inputText`: one key event pair per character is slow.
const MAX_SEND_KEYS_CHARS: usize = 2000;
const MAX_HIGHLIGHTS: usize = 20;
const DEFAULT_HIGHLIGHT_COLOR: &str = "red";

wire_enum! {
    /// How `tapOn` touches its target.
    TapAction => paddock_devices::TapKind { Tap, DoubleTap, LongPress, Hover }
}

/// How an action's answer reads, for the descriptions of the action tools.
macro_rules! answers {
    () => {
        " Answers once the UI settles with the screen, or, when shorter, the changes since your last observation (the header line only if it changed): `+` new, `-` gone, `~` changed elements, each as its observe line; a move alone is no change, and unchanged ones keep their refs."
    };
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TapOnArgs {
    #[serde(flatten)]
    target: TargetArgs,
    /// Default `tap`; `hover` (web) moves the pointer onto the target without pressing.
    action: Option<TapAction>,
}

#[derive(Debug)]
pub(crate) struct TapOn;

impl Tool for TapOn {
    type Args = TapOnArgs;

    const DEF: ToolDef = ToolDef::new(
        "tapOn",
        "Tap an element",
        "Taps an element by `ref`, `text`, `id`, or at `x`,`y`; `action` may be `doubleTap`, `longPress` or (web) `hover`, which moves the pointer onto the target without a click, to reveal what shows on `:hover`; on touch profiles a tap is also a hover. Answers once the UI settles (`settled`) with the screen, or, when shorter, the changes since your last observation (the header line only if it changed): `+` new, `-` gone, `~` changed elements; a move alone is no change, and unchanged ones keep their refs.",
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: TapOnArgs) -> Result<Output, ToolError> {
        let action = Action::Tap {
            target: args.target.into_target()?,
            kind: args.action.unwrap_or(TapAction::Tap).into(),
        };
        act(&call, action).await
    }
}

wire_enum! {
    /// The finger's direction for `swipeOn`.
    Direction => paddock_devices::SwipeDirection { Up, Down, Left, Right }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SwipeOnArgs {
    /// The finger's direction: `up` reveals content below.
    direction: Direction,
    #[serde(flatten)]
    within: FieldArgs,
    /// Keep swiping until an element with this text is on screen.
    until_visible: Option<String>,
    /// With `untilVisible`: give up after this many swipes (default 10).
    max_swipes: Option<Bounded<1, 50>>,
}

#[derive(Debug)]
pub(crate) struct SwipeOn;

impl Tool for SwipeOn {
    type Args = SwipeOnArgs;

    const DEF: ToolDef = ToolDef::new(
        "swipeOn",
        "Swipe or scroll",
        "Swipes the screen, or within the element given by `ref`, `id` or `label`, in `direction` (the finger's direction: `up` scrolls content up to reveal what is below). With `untilVisible`, keeps swiping until that text is on screen (at most `maxSwipes`).",
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: SwipeOnArgs) -> Result<Output, ToolError> {
        let action = Action::Swipe {
            direction: args.direction.into(),
            within: args.within.into_target()?,
            until_visible: args.until_visible,
            max_swipes: args.max_swipes.map_or(DEFAULT_MAX_SWIPES, Bounded::get),
        };
        act(&call, action).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DragAndDropArgs {
    /// Where the drag starts.
    from: TargetObject,
    /// Where it ends.
    to: TargetObject,
}

#[derive(Debug)]
pub(crate) struct DragAndDrop;

impl Tool for DragAndDrop {
    type Args = DragAndDropArgs;

    const DEF: ToolDef = ToolDef::new(
        "dragAndDrop",
        "Drag and drop",
        concat!(
            "Drags from one target to another; each is `{ref}`, `{text}`, `{id}` or `{x, y}`.",
            answers!()
        ),
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: DragAndDropArgs) -> Result<Output, ToolError> {
        let action = Action::Drag {
            from: args.from.into_target()?,
            to: args.to.into_target()?,
        };
        act(&call, action).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InputTextArgs {
    /// The text to type.
    text: String,
    #[serde(flatten)]
    field: FieldArgs,
}

#[derive(Debug)]
pub(crate) struct InputText;

impl Tool for InputText {
    type Args = InputTextArgs;

    const DEF: ToolDef = ToolDef::new(
        "inputText",
        "Type text",
        concat!(
            "Types `text` into the text field given by `ref`, `id` or `label` (it is tapped first), or into the focused field.",
            answers!()
        ),
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: InputTextArgs) -> Result<Output, ToolError> {
        let action = Action::InputText {
            target: args.field.into_target()?,
            text: args.text,
        };
        act(&call, action).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClearTextArgs {
    #[serde(flatten)]
    field: FieldArgs,
}

#[derive(Debug)]
pub(crate) struct ClearText;

impl Tool for ClearText {
    type Args = ClearTextArgs;

    const DEF: ToolDef = ToolDef::new(
        "clearText",
        "Clear a text field",
        concat!(
            "Clears the text field given by `ref`, `id` or `label`, or the focused one.",
            answers!()
        ),
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: ClearTextArgs) -> Result<Output, ToolError> {
        let action = Action::ClearText {
            target: args.field.into_target()?,
        };
        act(&call, action).await
    }
}

wire_enum! {
    /// The on-screen keyboard's action key.
    KeyboardAction => paddock_devices::ImeAction { Done, Go, Search, Send, Next, Previous }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImeActionArgs {
    action: KeyboardAction,
}

#[derive(Debug)]
pub(crate) struct ImeAction;

impl Tool for ImeAction {
    type Args = ImeActionArgs;

    const DEF: ToolDef = ToolDef::new(
        "imeAction",
        "Keyboard action",
        concat!(
            "Performs the on-screen keyboard's action key: `done`, `go`, `search` and `send` submit (Enter); `next` and `previous` move focus.",
            answers!()
        ),
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: ImeActionArgs) -> Result<Output, ToolError> {
        act(&call, Action::Ime(args.action.into())).await
    }
}

wire_enum! {
    /// A device button or key for `pressButton`.
    Button => paddock_devices::Key {
        Back, Forward, Home, Reload, Enter, Tab, Escape, Backspace, Delete, Space,
        ArrowUp, ArrowDown, ArrowLeft, ArrowRight, PageUp, PageDown,
        AppSwitch, VolumeUp, VolumeDown, Power,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PressButtonArgs {
    button: Button,
}

#[derive(Debug)]
pub(crate) struct PressButton;

impl Tool for PressButton {
    type Args = PressButtonArgs;

    const DEF: ToolDef = ToolDef::new(
        "pressButton",
        "Press a button or key",
        "Presses a device button (`back`, `forward`, `home`, `reload`) or key (`enter`, `tab`, `escape`, `backspace`, `delete`, `space`, arrows, `pageUp`, `pageDown`); on Android also `appSwitch`, `volumeUp`, `volumeDown` and `power` (`reload` is web only).",
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: PressButtonArgs) -> Result<Output, ToolError> {
        act(&call, Action::Press(args.button.into())).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendKeysArgs {
    /// The characters to press.
    text: String,
}

#[derive(Debug)]
pub(crate) struct SendKeys;

impl Tool for SendKeys {
    type Args = SendKeysArgs;

    const DEF: ToolDef = ToolDef::new(
        "sendKeys",
        "Type key by key",
        concat!(
            "Types `text` as individual key presses (keydown/keyup per character) into the focused element, for pages that listen to keys rather than input.",
            answers!()
        ),
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: SendKeysArgs) -> Result<Output, ToolError> {
        if args.text.chars().count() > MAX_SEND_KEYS_CHARS {
            return Err(ToolError::invalid_input(format!(
                "`text` is limited to {MAX_SEND_KEYS_CHARS} characters; use inputText for long text"
            )));
        }
        act(&call, Action::SendKeys { text: args.text }).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct AppArgs {
    /// The app's id: a configured app (see listApps) on the web, a package name
    /// (`com.example.app`) on Android.
    app_id: String,
}

/// The app called `id`: on Android an installed package name, elsewhere a configured app.
fn configured_app(call: &Call<'_>, id: &str) -> Result<AppConfig, ToolError> {
    if session_device(call)?.platform() == paddock_devices::Platform::Android {
        return Ok(AppConfig {
            id: id.to_owned(),
            name: id.to_owned(),
            url: String::new(),
        });
    }
    call.ctx
        .backend
        .apps()
        .into_iter()
        .find(|app| app.id == id)
        .ok_or_else(|| ToolError::not_found(format!("no app `{id}` is configured; see listApps")))
}

#[derive(Debug)]
pub(crate) struct LaunchApp;

impl Tool for LaunchApp {
    type Args = AppArgs;

    const DEF: ToolDef = ToolDef::new(
        "launchApp",
        "Open an app",
        "Opens an app on the session's device: a configured app (see listApps) on the web, an installed package (`com.example.app`, started by its launcher activity) on Android.",
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: AppArgs) -> Result<Output, ToolError> {
        let app = configured_app(&call, &args.app_id)?;
        act(&call, Action::LaunchApp(app)).await
    }
}

#[derive(Debug)]
pub(crate) struct TerminateApp;

impl Tool for TerminateApp {
    type Args = AppArgs;

    const DEF: ToolDef = ToolDef::new(
        "terminateApp",
        "Close an app",
        "Closes the app (web: the device shows a blank page; Android: the package is force-stopped).",
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: AppArgs) -> Result<Output, ToolError> {
        let app = configured_app(&call, &args.app_id)?;
        act(&call, Action::TerminateApp(app)).await
    }
}

#[derive(Debug)]
pub(crate) struct ListApps;

impl Tool for ListApps {
    type Args = NoArgs;

    const DEF: ToolDef = ToolDef::new(
        "listApps",
        "List apps",
        "Lists the apps configured for this daemon: id, name and URL.",
        Hints::READ,
    );

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<AppList>()
    }

    async fn run(call: Call<'_>, NoArgs {}: NoArgs) -> Result<Output, ToolError> {
        let apps = call
            .ctx
            .backend
            .apps()
            .into_iter()
            .map(|app| ListedApp {
                id: app.id,
                name: app.name,
                url: app.url,
            })
            .collect();
        Output::structured(&AppList { apps })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpenLinkArgs {
    /// An http or https URL.
    url: String,
}

#[derive(Debug)]
pub(crate) struct OpenLink;

impl Tool for OpenLink {
    type Args = OpenLinkArgs;

    const DEF: ToolDef = ToolDef::new(
        "openLink",
        "Open a link",
        concat!(
            "Opens an http or https URL on the session's device; `file:`, `chrome:`, `javascript:`, `data:` and other schemes are refused.",
            answers!()
        ),
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: OpenLinkArgs) -> Result<Output, ToolError> {
        act(&call, Action::OpenUrl(args.url)).await
    }
}

wire_enum! {
    /// A screen orientation.
    Orientation => paddock_devices::Orientation { Portrait, Landscape }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RotateArgs {
    orientation: Orientation,
}

#[derive(Debug)]
pub(crate) struct Rotate;

impl Tool for Rotate {
    type Args = RotateArgs;

    const DEF: ToolDef = ToolDef::new(
        "rotate",
        "Rotate the screen",
        "Sets the screen orientation.",
        Hints::ACT,
    )
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: RotateArgs) -> Result<Output, ToolError> {
        act(&call, Action::Rotate(args.orientation.into())).await
    }
}

wire_enum! {
    /// The operations of `clipboard`, as in [`CLIPBOARD_OPERATIONS`].
    ClipboardOperation { Read, Write, Copy, Paste }
}

const CLIPBOARD_OPERATIONS: &[OperationDef] = &[
    OperationDef {
        name: "read",
        read_only: true,
        commerce: false,
    },
    OperationDef {
        name: "write",
        read_only: false,
        commerce: false,
    },
    OperationDef {
        name: "copy",
        read_only: false,
        commerce: false,
    },
    OperationDef {
        name: "paste",
        read_only: false,
        commerce: false,
    },
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClipboardArgs {
    operation: ClipboardOperation,
    /// With `write`: the text.
    text: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Clipboard;

impl Tool for Clipboard {
    type Args = ClipboardArgs;

    const DEF: ToolDef = ToolDef::new(
        "clipboard",
        "Clipboard",
        "The device's clipboard: `read` returns it, `write` sets it to `text`, `copy` copies the current selection, `paste` types it into the focused field. On Android only `copy` and `paste` (Android 11 lets no shell read or set the clipboard).",
        Hints::ACT,
    )
    .omitted_by_default()
    .operations(CLIPBOARD_OPERATIONS)
    .on_device(WEB_AND_ANDROID);

    async fn run(call: Call<'_>, args: ClipboardArgs) -> Result<Output, ToolError> {
        let action = match (args.operation, args.text) {
            (ClipboardOperation::Read, None) => Action::ClipboardRead,
            (ClipboardOperation::Write, Some(text)) => Action::ClipboardWrite(text),
            (ClipboardOperation::Write, None) => {
                return Err(ToolError::invalid_input("`write` needs `text`"));
            }
            (ClipboardOperation::Copy, None) => Action::ClipboardCopy,
            (ClipboardOperation::Paste, None) => return act(&call, Action::ClipboardPaste).await,
            (
                ClipboardOperation::Read | ClipboardOperation::Copy | ClipboardOperation::Paste,
                Some(_),
            ) => {
                return Err(ToolError::invalid_input("`text` goes with `write` only"));
            }
        };
        let device = session_device(&call)?;
        let outcome =
            bounded(device.act(action, Duration::ZERO, ObserveOptions::default())).await?;
        Ok(Output::Json(
            json!({ "text": outcome.detail.unwrap_or_default() }),
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HighlightArgs {
    #[serde(default)]
    #[schemars(length(max = MAX_HIGHLIGHTS))]
    targets: Vec<TargetObject>,
    /// CSS color name or #hex (default red).
    color: Option<String>,
    #[serde(default)]
    clear: bool,
}

#[derive(Debug)]
pub(crate) struct Highlight;

impl Tool for Highlight {
    type Args = HighlightArgs;

    const DEF: ToolDef = ToolDef::new(
        "highlight",
        "Highlight elements",
        "Draws a box over each target (`{ref}`, `{text}`, `{id}` or `{x, y}`) so a person watching can see what the agent means; `clear: true` removes all boxes. Boxes never appear in observe.",
        Hints::ACT,
    )
    .omitted_by_default()
    .on_device(WEB);

    async fn run(call: Call<'_>, args: HighlightArgs) -> Result<Output, ToolError> {
        if args.clear {
            return act(&call, Action::ClearHighlights).await;
        }
        if args.targets.is_empty() || args.targets.len() > MAX_HIGHLIGHTS {
            return Err(ToolError::invalid_input(format!(
                "give 1 to {MAX_HIGHLIGHTS} `targets`, or `clear: true`"
            )));
        }
        let targets = args
            .targets
            .into_iter()
            .map(TargetObject::into_target)
            .collect::<Result<Vec<_>, _>>()?;
        let color = args
            .color
            .unwrap_or_else(|| DEFAULT_HIGHLIGHT_COLOR.to_owned());
        act(&call, Action::Highlight { targets, color }).await
    }
}
