//! The core tools: discovery (`setToolEnabled`, `discovery`), the device list and the daemon's
//! internals.

use std::collections::BTreeSet;

use paddock_store::{ChoiceScope, Choices};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::catalog::{Hints, OperationDef, ProcessOption, ToolDef};
use crate::error::{ToolError, ToolErrorCode};
use crate::session::SessionKey;
use crate::tools::args::{NoArgs, Platform, wire_enum};
use crate::tools::results::{
    AndroidDetails, DeviceList, DiscoveryAnswer, DiscoveryReset, DiscoveryStatus, EnabledAfter,
    Layers, ListedDevice, Scope, ToolChoices, ToolStatus, schema_of,
};
use crate::tools::{Call, Output, Tool};

/// The scope a write targets: `sessionUuid` (which must be a session this daemon has seen),
/// else the caller's connection profile.
fn target_scope(
    call: &Call<'_>,
    session_uuid: Option<&str>,
) -> Result<(ChoiceScope, Option<SessionKey>), ToolError> {
    match session_uuid {
        Some(text) => {
            let key = SessionKey::parse(text)?;
            if !call.registry.store.session_known(key.as_str()) {
                return Err(ToolError::not_found(format!(
                    "session `{key}` is unknown to this daemon; use a session id that has made a request, or omit `sessionUuid` to change your connection profile"
                )));
            }
            Ok((ChoiceScope::Session(key.as_str().to_owned()), Some(key)))
        }
        None => Ok((
            ChoiceScope::Profile(call.ctx.profile.clone()),
            call.session.clone(),
        )),
    }
}

fn store_error(error: impl std::fmt::Display) -> ToolError {
    ToolError::new(ToolErrorCode::Unavailable, error.to_string())
}

/// The configurable tools listed after a write, read back from the database (on a blocking
/// thread).
async fn enabled_after_write(
    call: &Call<'_>,
    scope: &ChoiceScope,
    session: Option<&SessionKey>,
) -> Result<Vec<String>, ToolError> {
    let registry = call.registry;
    let disk = {
        let scope = scope.clone();
        registry
            .store
            .blocking(move |store| store.read_choices_from_disk(&scope))
            .await
            .map_err(store_error)?
    };
    let (profile, session_choices) = match scope {
        ChoiceScope::Profile(_) => (disk, registry.session_choices(session)),
        ChoiceScope::Session(_) => (registry.profile_choices(call.ctx), disk),
    };
    Ok(registry
        .resolve_all(call.ctx, &profile, &session_choices)
        .into_iter()
        .filter(|(tool, enabled, _)| *enabled && !tool.is_always_on())
        .map(|(tool, _, _)| tool.name.to_owned())
        .collect())
}

/// Tool names a caller asked to list or omit, sorted out.
pub(super) struct ToolNames {
    /// The configurable tools, with the state asked for.
    pub changes: Choices,
    /// The always-on tools, which have no state to change.
    pub skipped: Vec<String>,
}

/// Sorts out `names` to be set to `enabled`; any name that is not a tool this caller can see
/// makes the whole batch fail, with the unknown names listed (``"`a`, `b`"``).
pub(super) fn tool_names(
    call: &Call<'_>,
    names: &[String],
    enabled: bool,
) -> Result<ToolNames, String> {
    let mut changes = Choices::new();
    let mut skipped = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        match call.registry.tool(name) {
            Some(tool) if call.registry.visible(&tool.def, call.ctx) => {
                if tool.def.is_always_on() {
                    skipped.push(name.clone());
                } else {
                    changes.insert(name.clone(), enabled);
                }
            }
            _ => unknown.push(format!("`{name}`")),
        }
    }
    if unknown.is_empty() {
        Ok(ToolNames { changes, skipped })
    } else {
        Err(unknown.join(", "))
    }
}

/// `enabledTools` after a write (or why it could not be read back).
async fn enabled_after(
    call: &Call<'_>,
    scope: &ChoiceScope,
    session: Option<&SessionKey>,
) -> EnabledAfter {
    match enabled_after_write(call, scope, session).await {
        Ok(enabled_tools) => EnabledAfter {
            enabled_tools: Some(enabled_tools),
            enabled_tools_error: None,
        },
        Err(error) => EnabledAfter {
            enabled_tools: None,
            enabled_tools_error: Some(error.to_string()),
        },
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SetToolEnabledArgs {
    /// One tool's exact name.
    tool_name: Option<String>,
    /// Several tools' exact names, applied all-or-nothing.
    #[schemars(length(min = 1))]
    tool_names: Option<Vec<String>>,
    /// true lists the tools, false omits them. Required with `toolName`; defaults to true with
    /// `toolNames`.
    enabled: Option<bool>,
    /// Routing session to scope the choice to (a session id this daemon has seen).
    session_uuid: Option<String>,
}

#[derive(Debug)]
pub(crate) struct SetToolEnabled;

impl Tool for SetToolEnabled {
    type Args = SetToolEnabledArgs;

    const DEF: ToolDef = ToolDef::new(
        "setToolEnabled",
        "Choose which tools are listed",
        "Selects which tools appear in tools/list, by exact case-sensitive name. \
            Pass `toolName` with `enabled`, or `toolNames` to enable (or, with `enabled: false`, \
            omit) a whole task's toolset at once; a batch is all-or-nothing and an unknown name \
            rejects it before anything is written. Always-on names are accepted as no-ops and \
            listed in `skipped`. `sessionUuid` scopes the choice to that routing session; \
            without it the choice applies to your connection profile. Choices persist across \
            daemon restarts. An omitted tool can still be called by name. The answer lists \
            `enabledTools`, the configurable tools selected for discovery after the call.",
        Hints::IDEMPOTENT_CHANGE,
    )
    .always_on()
    .routing_session();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<ToolChoices>()
    }

    async fn run(call: Call<'_>, args: SetToolEnabledArgs) -> Result<Output, ToolError> {
        let (names, enabled) = match (args.tool_name, args.tool_names, args.enabled) {
            (Some(name), None, Some(enabled)) => (vec![name], enabled),
            (Some(_), None, None) => {
                return Err(ToolError::invalid_input(
                    "`toolName` needs `enabled` (true or false)",
                ));
            }
            (None, Some(names), enabled) if !names.is_empty() => (names, enabled.unwrap_or(true)),
            (None, Some(_), _) => {
                return Err(ToolError::invalid_input("`toolNames` must not be empty"));
            }
            (Some(_), Some(_), _) => {
                return Err(ToolError::invalid_input(
                    "pass `toolName` or `toolNames`, not both",
                ));
            }
            (None, None, _) => {
                return Err(ToolError::invalid_input("pass `toolName` or `toolNames`"));
            }
        };
        // Validate the whole batch before anything is written.
        let ToolNames { changes, skipped } =
            tool_names(&call, &names, enabled).map_err(|unknown| {
                ToolError::invalid_input(format!(
                    "unknown tool name(s): {unknown}; nothing was changed"
                ))
            })?;
        let skipped: BTreeSet<String> = skipped.into_iter().collect();
        let (scope, session) = target_scope(&call, args.session_uuid.as_deref())?;
        if !changes.is_empty() {
            let (scope, changes) = (scope.clone(), changes.clone());
            call.registry
                .store
                .blocking(move |store| store.write_choices(&scope, &changes))
                .await
                .map_err(store_error)?;
            call.registry.discovery_changed();
        }
        Output::structured(&ToolChoices {
            scope: Scope::from(&scope),
            changed: changes.keys().cloned().collect(),
            skipped: skipped.into_iter().collect(),
            after: enabled_after(&call, &scope, session.as_ref()).await,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListDevicesArgs {
    /// Only devices of this platform.
    platform: Option<Platform>,
}

#[derive(Debug)]
pub(crate) struct ListDevices;

impl Tool for ListDevices {
    type Args = ListDevicesArgs;

    const DEF: ToolDef = ToolDef::new(
        "listDevices",
        "List devices",
        "Lists the devices in this daemon's pool: id, platform, profile, state and \
            the session each is bound to. Empty while no device platform is configured.",
        Hints::READ,
    );

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<DeviceList>()
    }

    async fn run(call: Call<'_>, args: ListDevicesArgs) -> Result<Output, ToolError> {
        let devices = call
            .ctx
            .backend
            .list_devices(args.platform.map(Into::into))
            .into_iter()
            .map(|device| ListedDevice {
                id: device.id,
                platform: device.platform.as_str().to_owned(),
                profile: device.profile,
                state: device.state.as_str().to_owned(),
                session: device.session,
                android: device.android.map(|facts| AndroidDetails {
                    serial: facts.serial,
                    model: facts.model,
                    api_level: facts.api_level,
                    screen_width_px: facts.screen_px[0],
                    screen_height_px: facts.screen_px[1],
                    density_dpi: facts.density_dpi,
                    avd_name: (!facts.avd_name.is_empty()).then_some(facts.avd_name),
                }),
            })
            .collect();
        Output::structured(&DeviceList { devices })
    }
}

wire_enum! {
    /// The operations of `discovery`, as in [`DISCOVERY_OPERATIONS`].
    DiscoveryOperation { Status, Reset }
}

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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct DiscoveryArgs {
    operation: DiscoveryOperation,
    /// With `reset`: the routing session whose choices to remove.
    session_uuid: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Discovery;

impl Tool for Discovery {
    type Args = DiscoveryArgs;

    const DEF: ToolDef = ToolDef::new(
        "discovery",
        "Inspect or reset tool discovery",
        "Tool discovery for the calling session. `status` reports each layer that \
            decides what tools/list shows (built-in defaults, environment, command line, your \
            connection profile's and your session's saved choices) and the resulting listed \
            and omitted tools. `reset` removes the saved choices of your connection profile, \
            or of `sessionUuid` when given, so the startup defaults apply again.",
        Hints::IDEMPOTENT_CHANGE,
    )
    .operations(DISCOVERY_OPERATIONS)
    .routing_session();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<DiscoveryAnswer>()
    }

    async fn run(call: Call<'_>, args: DiscoveryArgs) -> Result<Output, ToolError> {
        match args.operation {
            DiscoveryOperation::Status => {
                if args.session_uuid.is_some() {
                    return Err(ToolError::invalid_input(
                        "`sessionUuid` applies to `reset` only",
                    ));
                }
                Output::structured(&DiscoveryAnswer::Status(discovery_status(&call)))
            }
            DiscoveryOperation::Reset => {
                let (scope, session) = target_scope(&call, args.session_uuid.as_deref())?;
                let removed = {
                    let scope = scope.clone();
                    call.registry
                        .store
                        .blocking(move |store| store.clear_choices(&scope))
                        .await
                        .map_err(store_error)?
                };
                call.registry.discovery_changed();
                Output::structured(&DiscoveryAnswer::Reset(DiscoveryReset {
                    scope: Scope::from(&scope),
                    removed,
                    after: enabled_after(&call, &scope, session.as_ref()).await,
                }))
            }
        }
    }
}

fn discovery_status(call: &Call<'_>) -> DiscoveryStatus {
    let registry = call.registry;
    let profile = registry.profile_choices(call.ctx);
    let session = registry.session_choices(call.session.as_ref());
    let tools = registry
        .resolve_all(call.ctx, &profile, &session)
        .iter()
        .map(|(tool, enabled, layer)| ToolStatus {
            name: tool.name.to_owned(),
            listed: *enabled,
            always_on: tool.is_always_on(),
            decided_by: layer.as_str().to_owned(),
        })
        .collect();
    DiscoveryStatus {
        policy: call.ctx.policy.name().to_owned(),
        profile: call.ctx.profile.clone(),
        session: call.session.as_ref().map(|key| key.as_str().to_owned()),
        tools,
        layers: Layers {
            environment: registry.startup.env().clone(),
            command_line: registry.startup.cli().clone(),
            profile,
            session,
        },
    }
}

#[derive(Debug)]
pub(crate) struct DaemonInfo;

impl Tool for DaemonInfo {
    type Args = NoArgs;

    const DEF: ToolDef = ToolDef::new(
        "daemonInfo",
        "Daemon internals",
        "Reports the daemon's internals for troubleshooting: pid, version, uptime, \
            state directory, policy profile, process options and live MCP connections. Needs \
            the daemon to run with --debug.",
        Hints::READ,
    )
    .requires(ProcessOption::Debug);

    async fn run(call: Call<'_>, NoArgs {}: NoArgs) -> Result<Output, ToolError> {
        let mut info = (call.registry.info)();
        if let Value::Object(map) = &mut info {
            map.insert("policy".into(), json!(call.ctx.policy.name()));
            map.insert("debug".into(), json!(call.registry.process_options.debug));
            map.insert(
                "liveConnections".into(),
                json!(call.registry.live_connections()),
            );
        }
        Ok(Output::Json(info))
    }
}
