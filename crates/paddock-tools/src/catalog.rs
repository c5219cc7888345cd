//! The tool catalog: every tool Paddock registers, with its schema, hints, discovery class and
//! policy classification. This is the contract clients see; `tests/snapshots` pins it.

use paddock_devices::Platform;
use serde_json::{Map, Value, json};

/// How a tool takes part in discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryClass {
    /// Always listed (subject to policy); `setToolEnabled` treats it as a no-op.
    AlwaysOn,
    /// Listed or omitted by the discovery layers; `default_enabled` is the built-in default.
    Configurable { default_enabled: bool },
}

/// A process option a tool needs; without it the tool is never listed or callable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessOption {
    /// `paddock daemon start --debug`.
    Debug,
}

impl ProcessOption {
    pub fn flag(self) -> &'static str {
        match self {
            Self::Debug => "--debug",
        }
    }
}

/// One operation of a bundle tool.
#[derive(Debug, Clone, Copy)]
pub struct OperationDef {
    pub name: &'static str,
    /// Reads only; allowed under the `readonly` profile.
    pub read_only: bool,
    /// Creates or destroys devices (or costs money); denied under `no-commerce`.
    pub commerce: bool,
}

/// Behaviour hints published as MCP tool annotations.
#[derive(Debug, Clone, Copy)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// One tool.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    pub hints: Hints,
    pub discovery: DiscoveryClass,
    pub requires: Option<ProcessOption>,
    /// Plan-only tools are never shown in public discovery.
    pub plan_only: bool,
    /// For a bundle tool: its operations, selected by the `operation` argument.
    pub operations: &'static [OperationDef],
    /// Creates or destroys devices; excluded from `no-commerce` and `readonly`.
    pub commerce: bool,
    /// For a tool that acts on the session's device: the platforms it supports. A call on a
    /// device of another platform is an `[unsupported_platform]` error.
    pub platforms: &'static [Platform],
}

impl ToolDef {
    pub fn is_bundle(&self) -> bool {
        !self.operations.is_empty()
    }

    pub fn is_always_on(&self) -> bool {
        self.discovery == DiscoveryClass::AlwaysOn
    }

    pub fn operation(&self, name: &str) -> Option<&OperationDef> {
        self.operations
            .iter()
            .find(|operation| operation.name == name)
    }
}

const READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

const DISCOVERY_OPERATIONS: &[OperationDef] = &[
    OperationDef {
        name: "status",
        read_only: true,
        commerce: false,
    },
    OperationDef {
        name: "reset",
        read_only: false,
        commerce: false,
    },
];

/// Every tool Paddock registers, in listing order.
pub fn builtin() -> Vec<ToolDef> {
    let mut tools = core_tools();
    tools.extend(crate::catalog_devices::device_tools());
    tools
}

/// Builds an object schema from `(name, schema)` pairs and the required names.
pub(crate) fn object(properties: &[(&str, Value)], required: &[&str]) -> Value {
    let properties: Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| ((*name).to_owned(), schema.clone()))
        .collect();
    let mut schema =
        json!({ "type": "object", "properties": properties, "additionalProperties": false });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn core_tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "setToolEnabled",
            title: "Choose which tools are listed",
            description: "Selects which tools appear in tools/list, by exact case-sensitive name. \
                Pass `toolName` with `enabled`, or `toolNames` to enable (or, with `enabled: false`, \
                omit) a whole task's toolset at once; a batch is all-or-nothing and an unknown name \
                rejects it before anything is written. Always-on names are accepted as no-ops and \
                listed in `skipped`. `sessionUuid` scopes the choice to that routing session; \
                without it the choice applies to your connection profile. Choices persist across \
                daemon restarts. An omitted tool can still be called by name. The answer lists \
                `enabledTools`, the configurable tools selected for discovery after the call.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "toolName": { "type": "string", "description": "One tool's exact name." },
                    "toolNames": {
                        "type": "array",
                        "items": { "type": "string" },
                        "minItems": 1,
                        "description": "Several tools' exact names, applied all-or-nothing."
                    },
                    "enabled": {
                        "type": "boolean",
                        "description": "true lists the tools, false omits them. Required with `toolName`; defaults to true with `toolNames`."
                    },
                    "sessionUuid": {
                        "type": "string",
                        "description": "Routing session to scope the choice to (a session id this daemon has seen)."
                    }
                },
                "additionalProperties": false
            }),
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
        },
        ToolDef {
            name: "listDevices",
            title: "List devices",
            description: "Lists the devices in this daemon's pool: id, platform, profile, state and \
                the session each is bound to. Empty while no device platform is configured.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "platform": {
                        "type": "string",
                        "enum": ["web", "android", "ios"],
                        "description": "Only devices of this platform."
                    }
                },
                "additionalProperties": false
            }),
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
        ToolDef {
            name: "discovery",
            title: "Inspect or reset tool discovery",
            description: "Tool discovery for the calling session. `status` reports each layer that \
                decides what tools/list shows (built-in defaults, environment, command line, your \
                connection profile's and your session's saved choices) and the resulting listed \
                and omitted tools. `reset` removes the saved choices of your connection profile, \
                or of `sessionUuid` when given, so the startup defaults apply again.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "operation": { "type": "string", "enum": ["status", "reset"] },
                    "sessionUuid": {
                        "type": "string",
                        "description": "With `reset`: the routing session whose choices to remove."
                    }
                },
                "required": ["operation"],
                "additionalProperties": false
            }),
            hints: Hints {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
            discovery: DiscoveryClass::Configurable {
                default_enabled: true,
            },
            requires: None,
            plan_only: false,
            operations: DISCOVERY_OPERATIONS,
            commerce: false,
            platforms: &[],
        },
        ToolDef {
            name: "daemonInfo",
            title: "Daemon internals",
            description: "Reports the daemon's internals for troubleshooting: pid, version, uptime, \
                state directory, policy profile, process options and live MCP connections. Needs \
                the daemon to run with --debug.",
            input_schema: json!({
                "type": "object",
                "properties": {},
                "additionalProperties": false
            }),
            hints: READ,
            discovery: DiscoveryClass::Configurable {
                default_enabled: true,
            },
            requires: Some(ProcessOption::Debug),
            plan_only: false,
            operations: &[],
            commerce: false,
            platforms: &[],
        },
    ]
}
