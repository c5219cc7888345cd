//! The tool handlers. Each parses its arguments into a typed struct (unknown fields and wrong
//! types are `[invalid_input]`) and returns structured JSON.

use std::collections::BTreeSet;

use paddock_store::{ChoiceScope, Choices};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::catalog::ToolDef;
use crate::error::{ToolError, ToolErrorCode};
use crate::server::Call;
use crate::session::SessionKey;

/// What a handler returns.
pub(crate) enum Output {
    /// Structured JSON, mirrored as text.
    Json(Value),
    /// Text for a model, an optional JPEG, and optional structured data.
    Rich {
        text: String,
        image: Option<Vec<u8>>,
        structured: Option<Value>,
    },
}

pub(crate) async fn dispatch(tool: &ToolDef, call: Call<'_>) -> Result<Output, ToolError> {
    use crate::handlers_devices as devices;
    use paddock_devices::Platform;
    let json = |result: Result<Value, ToolError>| result.map(Output::Json);
    match tool.name {
        "setToolEnabled" => json(set_tool_enabled(call)),
        "listDevices" => json(list_devices(call)),
        "discovery" => json(discovery(call)),
        "daemonInfo" => json(daemon_info(call)),
        "getWeb" => devices::acquire(call, tool.name, Platform::Web).await,
        "getAndroid" => devices::acquire(call, tool.name, Platform::Android).await,
        "getApple" => devices::acquire(call, tool.name, Platform::Ios).await,
        "provisionDevice" => devices::provision(call).await,
        "releaseDevice" => devices::release(call).await,
        "listApps" => devices::list_apps(call),
        "observe" => devices::observe(call, tool.platforms).await,
        "screenshot" => devices::screenshot(call, tool.platforms).await,
        "clipboard" => devices::clipboard(call, tool.platforms).await,
        "tapOn" | "swipeOn" | "dragAndDrop" | "inputText" | "clearText" | "imeAction"
        | "pressButton" | "sendKeys" | "launchApp" | "terminateApp" | "openLink" | "rotate"
        | "highlight" => devices::device_action(call, tool.name, tool.platforms).await,
        other => Err(ToolError::internal(format!("no handler for `{other}`"))),
    }
}

pub(crate) fn parse<T: DeserializeOwned>(
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(arguments)).map_err(|error| {
        ToolError::invalid_input(format!("invalid arguments for `{tool}`: {error}"))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SetToolEnabledArgs {
    tool_name: Option<String>,
    tool_names: Option<Vec<String>>,
    enabled: Option<bool>,
    session_uuid: Option<String>,
}

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

fn scope_json(scope: &ChoiceScope) -> Value {
    match scope {
        ChoiceScope::Profile(key) => json!({ "kind": "profile", "id": key }),
        ChoiceScope::Session(key) => json!({ "kind": "session", "id": key }),
    }
}

/// The configurable tools listed after a write, read back from the database.
fn enabled_after_write(
    call: &Call<'_>,
    scope: &ChoiceScope,
    session: Option<&SessionKey>,
) -> Result<Vec<String>, ToolError> {
    let registry = call.registry;
    let disk = registry
        .store
        .read_choices_from_disk(scope)
        .map_err(|error| ToolError::new(ToolErrorCode::Unavailable, error.to_string()))?;
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

fn set_tool_enabled(call: Call<'_>) -> Result<Value, ToolError> {
    let args: SetToolEnabledArgs = parse("setToolEnabled", call.arguments.clone())?;
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
        (None, None, _) => return Err(ToolError::invalid_input("pass `toolName` or `toolNames`")),
    };
    // Validate the whole batch before anything is written.
    let mut unknown = Vec::new();
    let mut skipped = BTreeSet::new();
    let mut changes = Choices::new();
    for name in &names {
        match call.registry.tool(name) {
            Some(tool) if call.registry.visible(tool, call.ctx) => {
                if tool.is_always_on() {
                    skipped.insert(name.clone());
                } else {
                    changes.insert(name.clone(), enabled);
                }
            }
            _ => unknown.push(format!("`{name}`")),
        }
    }
    if !unknown.is_empty() {
        return Err(ToolError::invalid_input(format!(
            "unknown tool name(s): {}; nothing was changed",
            unknown.join(", ")
        )));
    }
    let (scope, session) = target_scope(&call, args.session_uuid.as_deref())?;
    if !changes.is_empty() {
        call.registry
            .store
            .write_choices(&scope, &changes)
            .map_err(|error| ToolError::new(ToolErrorCode::Unavailable, error.to_string()))?;
        call.registry.discovery_changed();
    }
    let mut answer = json!({
        "scope": scope_json(&scope),
        "changed": changes.keys().collect::<Vec<_>>(),
        "skipped": skipped,
    });
    match enabled_after_write(&call, &scope, session.as_ref()) {
        Ok(enabled_tools) => answer["enabledTools"] = json!(enabled_tools),
        Err(error) => answer["enabledToolsError"] = json!(error.to_string()),
    }
    Ok(answer)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDevicesArgs {
    platform: Option<Platform>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Platform {
    Web,
    Android,
    Ios,
}

impl From<Platform> for paddock_devices::Platform {
    fn from(platform: Platform) -> Self {
        match platform {
            Platform::Web => Self::Web,
            Platform::Android => Self::Android,
            Platform::Ios => Self::Ios,
        }
    }
}

fn list_devices(call: Call<'_>) -> Result<Value, ToolError> {
    let args: ListDevicesArgs = parse("listDevices", call.arguments)?;
    let platform = args.platform.map(Into::into);
    let devices: Vec<Value> = call
        .ctx
        .backend
        .list_devices(platform)
        .into_iter()
        .map(|device| {
            json!({
                "id": device.id,
                "platform": device.platform.as_str(),
                "profile": device.profile,
                "state": device.state.as_str(),
                "session": device.session,
            })
        })
        .collect();
    Ok(json!({ "devices": devices }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DiscoveryArgs {
    operation: String,
    session_uuid: Option<String>,
}

fn discovery(call: Call<'_>) -> Result<Value, ToolError> {
    let args: DiscoveryArgs = parse("discovery", call.arguments.clone())?;
    match args.operation.as_str() {
        "status" => {
            if args.session_uuid.is_some() {
                return Err(ToolError::invalid_input(
                    "`sessionUuid` applies to `reset` only",
                ));
            }
            Ok(discovery_status(&call))
        }
        "reset" => {
            let (scope, session) = target_scope(&call, args.session_uuid.as_deref())?;
            let removed =
                call.registry.store.clear_choices(&scope).map_err(|error| {
                    ToolError::new(ToolErrorCode::Unavailable, error.to_string())
                })?;
            call.registry.discovery_changed();
            let mut answer = json!({ "scope": scope_json(&scope), "removed": removed });
            match enabled_after_write(&call, &scope, session.as_ref()) {
                Ok(enabled_tools) => answer["enabledTools"] = json!(enabled_tools),
                Err(error) => answer["enabledToolsError"] = json!(error.to_string()),
            }
            Ok(answer)
        }
        other => Err(ToolError::invalid_input(format!(
            "unknown operation `{other}`"
        ))),
    }
}

fn discovery_status(call: &Call<'_>) -> Value {
    let registry = call.registry;
    let profile = registry.profile_choices(call.ctx);
    let session = registry.session_choices(call.session.as_ref());
    let resolved = registry.resolve_all(call.ctx, &profile, &session);
    let tools: Vec<Value> = resolved
        .iter()
        .map(|(tool, enabled, layer)| {
            json!({
                "name": tool.name,
                "listed": enabled,
                "alwaysOn": tool.is_always_on(),
                "decidedBy": layer.as_str(),
            })
        })
        .collect();
    json!({
        "policy": call.ctx.policy.name(),
        "profile": call.ctx.profile,
        "session": call.session.as_ref().map(SessionKey::as_str),
        "tools": tools,
        "layers": {
            "environment": registry.startup.env(),
            "commandLine": registry.startup.cli(),
            "profile": profile,
            "session": session,
        },
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

fn daemon_info(call: Call<'_>) -> Result<Value, ToolError> {
    let NoArgs {} = parse("daemonInfo", call.arguments)?;
    let mut info = (call.registry.info)();
    if let Value::Object(map) = &mut info {
        map.insert("policy".into(), json!(call.ctx.policy.name()));
        map.insert("debug".into(), json!(call.registry.process_options.debug));
        map.insert(
            "liveConnections".into(),
            json!(call.registry.live_connections()),
        );
    }
    Ok(info)
}
