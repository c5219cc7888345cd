//! The device tools: acquisition, observation and actions. Each declares its platforms.

use paddock_devices::Platform;
use serde_json::{Value, json};

use crate::catalog::{DiscoveryClass, Hints, OperationDef, ToolDef, object};

const WEB: &[Platform] = &[Platform::Web];

const ACT: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};

const READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

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

fn string(description: &str) -> Value {
    json!({ "type": "string", "description": description })
}

fn enable_tools() -> Value {
    json!({
        "type": "array",
        "items": { "type": "string" },
        "description": "Tools to list for the new session (exact names), declared in the same call. An unknown name rejects the call before any device work."
    })
}

fn target_properties() -> Vec<(&'static str, Value)> {
    vec![
        ("ref", string("Element ref from observe, such as `e12`.")),
        (
            "text",
            string(
                "Visible text or accessible name; exact match first, then case-insensitive substring.",
            ),
        ),
        ("id", string("The element's id attribute.")),
        (
            "x",
            json!({ "type": "number", "description": "Screen x in CSS pixels (with `y`)." }),
        ),
        (
            "y",
            json!({ "type": "number", "description": "Screen y in CSS pixels (with `x`)." }),
        ),
    ]
}

fn target_object(description: &str) -> Value {
    let mut schema = object(&target_properties(), &[]);
    schema["description"] = json!(description);
    schema
}

/// Properties that pick a text field: `ref`, `id` or `label`.
fn field_properties() -> Vec<(&'static str, Value)> {
    vec![
        ("ref", string("Ref of the text field from observe.")),
        ("id", string("The text field's id attribute.")),
        (
            "label",
            string("The text field's label, placeholder or accessible name."),
        ),
    ]
}

fn device_tool(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    input_schema: Value,
    hints: Hints,
) -> ToolDef {
    ToolDef {
        name,
        title,
        description,
        input_schema,
        hints,
        discovery: DiscoveryClass::Configurable {
            default_enabled: true,
        },
        requires: None,
        plan_only: false,
        operations: &[],
        commerce: false,
        platforms: WEB,
    }
}

fn acquisition(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    input_schema: Value,
) -> ToolDef {
    ToolDef {
        name,
        title,
        description,
        input_schema,
        hints: Hints {
            read_only: false,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        discovery: DiscoveryClass::AlwaysOn,
        requires: None,
        plan_only: false,
        operations: &[],
        commerce: false,
        platforms: &[],
    }
}

pub(crate) fn device_tools() -> Vec<ToolDef> {
    let mut tap = target_properties();
    tap.push(("action", json!({ "type": "string", "enum": ["tap", "doubleTap", "longPress"], "description": "Default `tap`." })));
    let mut input = field_properties();
    input.insert(0, ("text", string("The text to type.")));
    let mut swipe = field_properties();
    swipe.insert(0, ("direction", json!({ "type": "string", "enum": ["up", "down", "left", "right"], "description": "The finger's direction: `up` reveals content below." })));
    swipe.push((
        "untilVisible",
        string("Keep swiping until an element with this text is on screen."),
    ));
    swipe.push(("maxSwipes", json!({ "type": "integer", "minimum": 1, "maximum": 50, "description": "With `untilVisible`: give up after this many swipes (default 10)." })));
    vec![
        acquisition(
            "getWeb",
            "Acquire a web device",
            "Acquires a ready web device (headless Chromium with mobile emulation) for this session and returns its `sessionUuid`; send it as the `x-paddock-session-id` header or the `__mcpSessionId` argument with every device tool (a session that already has an id keeps it). Optionally opens a configured `app` and declares `enableTools` in the same call; the answer lists `enabledTools` and `gatedTools`. A session holds one device; calling again returns it.",
            object(
                &[
                    (
                        "profile",
                        json!({ "type": "string", "enum": ["pixel7", "iphone15", "desktop"], "description": "Emulation profile; default from the daemon's configuration." }),
                    ),
                    (
                        "app",
                        string("Id of a configured app to open (see listApps)."),
                    ),
                    ("enableTools", enable_tools()),
                ],
                &[],
            ),
        ),
        acquisition(
            "getAndroid",
            "Acquire an Android device",
            "Acquires an Android device or emulator for this session. Android devices are not available in this Paddock release; the call answers `[not_found]` and suggests getWeb.",
            object(
                &[
                    ("avdName", string("Emulator (AVD) name.")),
                    ("enableTools", enable_tools()),
                ],
                &[],
            ),
        ),
        acquisition(
            "getApple",
            "Acquire an iOS simulator",
            "Acquires an iOS simulator for this session. iOS simulators are not available in this Paddock release; the call answers `[not_found]` and suggests getWeb.",
            object(
                &[
                    ("deviceName", string("Simulator name.")),
                    ("enableTools", enable_tools()),
                ],
                &[],
            ),
        ),
        ToolDef {
            name: "provisionDevice",
            title: "Provision a new device",
            description: "Creates a new device beyond the warm pool. With `boot: true` it starts now and is bound to this session (returns `sessionUuid` and, with `enableTools`, `enabledTools`); with `boot: false` it is added to the pool warm, and no session is minted, so `enableTools` needs `boot: true`.",
            input_schema: object(
                &[
                    (
                        "platform",
                        json!({ "type": "string", "enum": ["web", "android", "ios"] }),
                    ),
                    (
                        "profile",
                        json!({ "type": "string", "enum": ["pixel7", "iphone15", "desktop"] }),
                    ),
                    (
                        "boot",
                        json!({ "type": "boolean", "description": "Start it now and bind it to this session." }),
                    ),
                    ("enableTools", enable_tools()),
                ],
                &["platform", "boot"],
            ),
            hints: Hints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: false,
            },
            discovery: DiscoveryClass::Configurable {
                default_enabled: true,
            },
            requires: None,
            plan_only: false,
            operations: &[],
            commerce: true,
            platforms: &[],
        },
        ToolDef {
            name: "releaseDevice",
            title: "Release the session's device",
            description: "Ends this session's hold on its device. The device is reset (no cookies, storage or history remain) and returned to the pool.",
            input_schema: object(&[], &[]),
            hints: Hints {
                read_only: false,
                destructive: true,
                idempotent: true,
                open_world: false,
            },
            discovery: DiscoveryClass::Configurable {
                default_enabled: true,
            },
            requires: None,
            plan_only: false,
            operations: &[],
            commerce: false,
            platforms: &[],
        },
        device_tool(
            "observe",
            "Observe the screen",
            "Lists what is on screen for the session's device: each element's ref (stable while the element lives), role, name or text, value, non-default states and bounds (x,y width x height in CSS pixels), the focused element, the open modal dialog, screen size, app and URL, and how much content lies off screen. `full: true` lists the whole document. `screenshot: true` adds a downscaled JPEG. `format: json` returns structured data instead of text.",
            object(
                &[
                    (
                        "full",
                        json!({ "type": "boolean", "description": "List every element, not only those on screen." }),
                    ),
                    (
                        "screenshot",
                        json!({ "type": "boolean", "description": "Add a JPEG screenshot." }),
                    ),
                    (
                        "screenshotWidth",
                        json!({ "type": "integer", "minimum": 64, "maximum": 2048, "description": "Screenshot width in pixels (default 360)." }),
                    ),
                    (
                        "format",
                        json!({ "type": "string", "enum": ["text", "json"], "description": "Default `text`." }),
                    ),
                ],
                &[],
            ),
            READ,
        ),
        device_tool(
            "tapOn",
            "Tap an element",
            "Taps an element by `ref`, `text`, `id`, or at `x`,`y`; `action` may be `doubleTap` or `longPress`. Returns a fresh observation once the UI settles, with `settled`.",
            object(&tap, &[]),
            ACT,
        ),
        device_tool(
            "swipeOn",
            "Swipe or scroll",
            "Swipes the screen, or within the element given by `ref`, `id` or `label`, in `direction` (the finger's direction: `up` scrolls content up to reveal what is below). With `untilVisible`, keeps swiping until that text is on screen (at most `maxSwipes`).",
            object(&swipe, &["direction"]),
            ACT,
        ),
        device_tool(
            "dragAndDrop",
            "Drag and drop",
            "Drags from one target to another; each is `{ref}`, `{text}`, `{id}` or `{x, y}`.",
            object(
                &[
                    ("from", target_object("Where the drag starts.")),
                    ("to", target_object("Where it ends.")),
                ],
                &["from", "to"],
            ),
            ACT,
        ),
        device_tool(
            "inputText",
            "Type text",
            "Types `text` into the text field given by `ref`, `id` or `label` (it is tapped first), or into the focused field.",
            object(&input, &["text"]),
            ACT,
        ),
        device_tool(
            "clearText",
            "Clear a text field",
            "Clears the text field given by `ref`, `id` or `label`, or the focused one.",
            object(&field_properties(), &[]),
            ACT,
        ),
        device_tool(
            "imeAction",
            "Keyboard action",
            "Performs the on-screen keyboard's action key: `done`, `go`, `search` and `send` submit (Enter); `next` and `previous` move focus.",
            object(
                &[(
                    "action",
                    json!({ "type": "string", "enum": ["done", "go", "search", "send", "next", "previous"] }),
                )],
                &["action"],
            ),
            ACT,
        ),
        device_tool(
            "pressButton",
            "Press a button or key",
            "Presses a device button (`back`, `forward`, `home`, `reload`) or key (`enter`, `tab`, `escape`, `backspace`, `delete`, `space`, arrows, `pageUp`, `pageDown`).",
            object(
                &[(
                    "button",
                    json!({ "type": "string", "enum": ["back", "forward", "home", "reload", "enter", "tab", "escape", "backspace", "delete", "space", "arrowUp", "arrowDown", "arrowLeft", "arrowRight", "pageUp", "pageDown"] }),
                )],
                &["button"],
            ),
            ACT,
        ),
        device_tool(
            "sendKeys",
            "Type key by key",
            "Types `text` as individual key presses (keydown/keyup per character) into the focused element, for pages that listen to keys rather than input.",
            object(&[("text", string("The characters to press."))], &["text"]),
            ACT,
        ),
        device_tool(
            "launchApp",
            "Open an app",
            "Opens a configured app (see listApps) on the session's device.",
            object(&[("appId", string("The app's id."))], &["appId"]),
            ACT,
        ),
        device_tool(
            "terminateApp",
            "Close an app",
            "Closes the running app (the device shows a blank screen).",
            object(&[("appId", string("The app's id."))], &["appId"]),
            ACT,
        ),
        ToolDef {
            name: "listApps",
            title: "List apps",
            description: "Lists the apps configured for this daemon: id, name and URL.",
            input_schema: object(&[], &[]),
            hints: READ,
            discovery: DiscoveryClass::Configurable {
                default_enabled: true,
            },
            requires: None,
            plan_only: false,
            operations: &[],
            commerce: false,
            platforms: &[],
        },
        device_tool(
            "openLink",
            "Open a link",
            "Opens an http or https URL on the session's device; `file:`, `chrome:`, `javascript:`, `data:` and other schemes are refused.",
            object(&[("url", string("An http or https URL."))], &["url"]),
            ACT,
        ),
        device_tool(
            "rotate",
            "Rotate the screen",
            "Sets the screen orientation.",
            object(
                &[(
                    "orientation",
                    json!({ "type": "string", "enum": ["portrait", "landscape"] }),
                )],
                &["orientation"],
            ),
            ACT,
        ),
        device_tool(
            "screenshot",
            "Take a screenshot",
            "Returns a JPEG of the screen.",
            object(
                &[
                    (
                        "width",
                        json!({ "type": "integer", "minimum": 64, "maximum": 4096, "description": "Image width in pixels (default: the screen's CSS width)." }),
                    ),
                    (
                        "quality",
                        json!({ "type": "integer", "minimum": 1, "maximum": 100, "description": "JPEG quality (default 70)." }),
                    ),
                ],
                &[],
            ),
            READ,
        ),
        ToolDef {
            name: "clipboard",
            title: "Clipboard",
            description: "The device's clipboard: `read` returns it, `write` sets it to `text`, `copy` copies the current selection, `paste` types it into the focused field.",
            input_schema: object(
                &[
                    (
                        "operation",
                        json!({ "type": "string", "enum": ["read", "write", "copy", "paste"] }),
                    ),
                    ("text", string("With `write`: the text.")),
                ],
                &["operation"],
            ),
            hints: ACT,
            discovery: DiscoveryClass::Configurable {
                default_enabled: false,
            },
            requires: None,
            plan_only: false,
            operations: CLIPBOARD_OPERATIONS,
            commerce: false,
            platforms: WEB,
        },
        ToolDef {
            name: "highlight",
            title: "Highlight elements",
            description: "Draws a box over each target (`{ref}`, `{text}`, `{id}` or `{x, y}`) so a person watching can see what the agent means; `clear: true` removes all boxes. Boxes never appear in observe.",
            input_schema: object(
                &[
                    (
                        "targets",
                        json!({ "type": "array", "items": target_object("An element or point."), "maxItems": 20 }),
                    ),
                    ("color", string("CSS color name or #hex (default red).")),
                    ("clear", json!({ "type": "boolean" })),
                ],
                &[],
            ),
            hints: ACT,
            discovery: DiscoveryClass::Configurable {
                default_enabled: false,
            },
            requires: None,
            plan_only: false,
            operations: &[],
            commerce: false,
            platforms: WEB,
        },
    ]
}
