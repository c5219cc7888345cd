//! Acquisition: getting a device for a session (with the `enableTools` declaration of spec 003),
//! provisioning new ones, and releasing them.

use std::sync::Arc;

use paddock_devices::{Action, Device, ObserveOptions, Platform};
use paddock_store::{ChoiceScope, Choices};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::backend::DeviceRequest;
use crate::catalog::{Hints, ToolDef};
use crate::error::ToolError;
use crate::render::observation_text;
use crate::session::SessionKey;
use crate::tools::args::{self, NoArgs, Profile};
use crate::tools::core::{ToolNames, tool_names};
use crate::tools::device::{SETTLE, bounded, require_session};
use crate::tools::results::{
    Acquired, BootedDevice, Declared, DeviceRef, Provisioned, Released, WarmDevice, WarmDeviceRef,
    schema_of,
};
use crate::tools::{Call, Output, Tool};

/// The tools to declare for a new session; flattened into each acquisition tool's arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnableToolsArgs {
    /// Tools to list for the new session (exact names), declared in the same call. An unknown
    /// name rejects the call before any device work.
    #[serde(default)]
    enable_tools: Vec<String>,
}

/// Validates `enableTools` before any device work: unknown names reject the call, always-on
/// names are skipped.
fn check_enable_tools(call: &Call<'_>, names: &[String]) -> Result<ToolNames, ToolError> {
    tool_names(call, names, true).map_err(|unknown| {
        ToolError::invalid_input(format!(
            "unknown tool name(s) in `enableTools`: {unknown}; no device was acquired"
        ))
    })
}

/// Declares capabilities for a freshly minted session and reports the resulting sets the way
/// tools/list will resolve them.
async fn declare(
    call: &Call<'_>,
    session: &SessionKey,
    changes: &Choices,
    skipped: Vec<String>,
    report_gated: bool,
) -> Declared {
    let mut answer = Declared {
        skipped: (!skipped.is_empty()).then_some(skipped),
        ..Declared::default()
    };
    if !changes.is_empty() {
        let scope = ChoiceScope::Session(session.as_str().to_owned());
        let written = {
            let changes = changes.clone();
            call.registry
                .store
                .blocking(move |store| store.write_choices(&scope, &changes))
                .await
        };
        if let Err(error) = written {
            answer.enable_tools_error = Some(format!(
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
            enabled.push(tool.name.to_owned());
        } else {
            gated.push(tool.name.to_owned());
        }
    }
    answer.enabled_tools = enabled;
    answer.gated_tools = report_gated.then_some(gated);
    answer
}

/// A fresh session id: an RFC 9562 version 4 UUID (122 random bits, the version nibble `4`,
/// the variant bits `10`).
fn new_session_id() -> Result<SessionKey, ToolError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| ToolError::internal(format!("OS random source: {error}")))?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
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

/// Binds a device of `platform` to the caller's session, minting a session id when the request
/// had none.
async fn bind(
    call: &Call<'_>,
    request: DeviceRequest<'_>,
) -> Result<(SessionKey, Arc<dyn Device>, bool), ToolError> {
    let session = match &call.session {
        Some(session) => session.clone(),
        None => new_session_id()?,
    };
    call.registry.record_session(&session);
    let (device, new) = bounded(call.ctx.backend.acquire(session.as_str(), request)).await?;
    Ok((session, device, new))
}

fn device_ref(device: &dyn Device) -> DeviceRef {
    DeviceRef {
        id: device.id().to_owned(),
        platform: device.platform().as_str().to_owned(),
        profile: device.profile().name.to_owned(),
    }
}

/// What the three acquisition tools ask for.
struct Acquisition {
    platform: Platform,
    profile: Option<Profile>,
    avd: Option<String>,
    app: Option<String>,
    enable_tools: Vec<String>,
    /// A saved storage state to start the session with (web only).
    storage: Option<String>,
}

async fn acquire(call: Call<'_>, request: Acquisition) -> Result<Output, ToolError> {
    let ToolNames { changes, skipped } = check_enable_tools(&call, &request.enable_tools)?;
    let app = match &request.app {
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
    // An unknown or unreadable storage name fails before any device work.
    let storage = match &request.storage {
        Some(name) => {
            crate::web_storage::check_name(name)?;
            let store = call.registry.web_storage()?.clone();
            let profile = call.ctx.profile.clone();
            let name = name.clone();
            Some(
                tokio::task::spawn_blocking(move || store.load(&profile, &name))
                    .await
                    .map_err(|_| ToolError::internal("reading the saved storage stopped"))??,
            )
        }
        None => None,
    };
    let (session, device, new) = bind(
        &call,
        DeviceRequest {
            platform: request.platform,
            profile: request.profile.map(Profile::name),
            avd: request.avd.as_deref(),
        },
    )
    .await?;
    if let Some(state) = &storage {
        let web = device.as_web().ok_or_else(|| {
            ToolError::new(
                crate::error::ToolErrorCode::UnsupportedPlatform,
                "`storage` is for web devices only",
            )
        })?;
        bounded(web.restore_storage(state)).await?;
    }
    let observation = match app {
        Some(app) => {
            let outcome =
                bounded(device.act(Action::LaunchApp(app), SETTLE, ObserveOptions::default()))
                    .await?;
            Some(observation_text(&outcome.observation))
        }
        None => None,
    };
    Output::structured(&Acquired {
        session_uuid: session.as_str().to_owned(),
        device: device_ref(device.as_ref()),
        newly_acquired: new,
        observation,
        declared: declare(&call, &session, &changes, skipped, true).await,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetWebArgs {
    /// Emulation profile; default from the daemon's configuration.
    profile: Option<Profile>,
    /// Id of a configured app to open (see listApps).
    app: Option<String>,
    /// A storage state saved with saveStorage: the session starts with its cookies and
    /// localStorage.
    storage: Option<String>,
    #[serde(flatten)]
    enable: EnableToolsArgs,
}

#[derive(Debug)]
pub(crate) struct GetWeb;

impl Tool for GetWeb {
    type Args = GetWebArgs;

    const DEF: ToolDef = ToolDef::new(
        "getWeb",
        "Acquire a web device",
        "Acquires a ready web device (headless Chromium with mobile emulation) for this session and returns its `sessionUuid`; send it as the `x-paddock-session-id` header or the `__mcpSessionId` argument with every device tool (a session that already has an id keeps it). Optionally starts with a `storage` state saved by saveStorage, opens a configured `app`, and declares `enableTools` in the same call; the answer lists `enabledTools` and `gatedTools`. A session holds one device; calling again returns it.",
        Hints::IDEMPOTENT_CHANGE,
    )
    .always_on()
    .routing_session();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<Acquired>()
    }

    async fn run(call: Call<'_>, args: GetWebArgs) -> Result<Output, ToolError> {
        let request = Acquisition {
            platform: Platform::Web,
            profile: args.profile,
            avd: None,
            app: args.app,
            enable_tools: args.enable.enable_tools,
            storage: args.storage,
        };
        acquire(call, request).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GetAndroidArgs {
    /// An emulator's AVD name: binds that running emulator (or boots it when the Android
    /// emulator is installed). Without it, any free Android device.
    avd_name: Option<String>,
    #[serde(flatten)]
    enable: EnableToolsArgs,
}

#[derive(Debug)]
pub(crate) struct GetAndroid;

impl Tool for GetAndroid {
    type Args = GetAndroidArgs;

    const DEF: ToolDef = ToolDef::new(
        "getAndroid",
        "Acquire an Android device",
        "Acquires an Android phone or emulator that the adb server lists (any free one, or the emulator of `avdName`) for this session and returns its `sessionUuid`, sent with every device tool as for getWeb. Observations are in dp; refs, text and ids work as on the web. Declares `enableTools` in the same call.",
        Hints::IDEMPOTENT_CHANGE,
    )
    .always_on()
    .routing_session();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<Acquired>()
    }

    async fn run(call: Call<'_>, args: GetAndroidArgs) -> Result<Output, ToolError> {
        let request = Acquisition {
            platform: Platform::Android,
            profile: None,
            avd: args.avd_name,
            app: None,
            enable_tools: args.enable.enable_tools,
            storage: None,
        };
        acquire(call, request).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GetAppleArgs {
    /// Simulator name.
    #[expect(
        dead_code,
        reason = "part of the contract; no iOS backend picks by name yet"
    )]
    device_name: Option<String>,
    #[serde(flatten)]
    enable: EnableToolsArgs,
}

#[derive(Debug)]
pub(crate) struct GetApple;

impl Tool for GetApple {
    type Args = GetAppleArgs;

    const DEF: ToolDef = ToolDef::new(
        "getApple",
        "Acquire an iOS simulator",
        "Acquires an iOS simulator for this session. iOS simulators are not available in this Paddock release; the call answers `[not_found]` and suggests getWeb.",
        Hints::IDEMPOTENT_CHANGE,
    )
    .always_on()
    .routing_session();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<Acquired>()
    }

    async fn run(call: Call<'_>, args: GetAppleArgs) -> Result<Output, ToolError> {
        let request = Acquisition {
            platform: Platform::Ios,
            profile: None,
            avd: None,
            app: None,
            enable_tools: args.enable.enable_tools,
            storage: None,
        };
        acquire(call, request).await
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProvisionDeviceArgs {
    platform: args::Platform,
    profile: Option<Profile>,
    /// Start it now and bind it to this session.
    boot: bool,
    #[serde(flatten)]
    enable: EnableToolsArgs,
}

#[derive(Debug)]
pub(crate) struct ProvisionDevice;

impl Tool for ProvisionDevice {
    type Args = ProvisionDeviceArgs;

    const DEF: ToolDef = ToolDef::new(
        "provisionDevice",
        "Provision a new device",
        "Creates a new device beyond the warm pool. With `boot: true` it starts now and is bound to this session (returns `sessionUuid` and, with `enableTools`, `enabledTools`); with `boot: false` it is added to the pool warm, and no session is minted, so `enableTools` needs `boot: true`.",
        Hints::ACT,
    )
    .commerce()
    .routing_session();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<Provisioned>()
    }

    async fn run(call: Call<'_>, args: ProvisionDeviceArgs) -> Result<Output, ToolError> {
        let platform = Platform::from(args.platform);
        let enable_tools = args.enable.enable_tools;
        if !args.boot && !enable_tools.is_empty() {
            return Err(ToolError::invalid_input(
                "`enableTools` needs `boot: true`: a provision without boot mints no session to declare tools for",
            ));
        }
        let ToolNames { changes, skipped } = check_enable_tools(&call, &enable_tools)?;
        let device_id = bounded(
            call.ctx
                .backend
                .provision(platform, args.profile.map(Profile::name)),
        )
        .await?;
        if !args.boot {
            return Output::structured(&Provisioned::Warm(WarmDevice {
                device: WarmDeviceRef {
                    id: device_id,
                    platform: platform.as_str().to_owned(),
                    state: "warm".to_owned(),
                },
            }));
        }
        let (session, device, _) = bind(
            &call,
            DeviceRequest {
                platform,
                profile: args.profile.map(Profile::name),
                avd: None,
            },
        )
        .await?;
        Output::structured(&Provisioned::Booted(BootedDevice {
            session_uuid: session.as_str().to_owned(),
            device: device_ref(device.as_ref()),
            declared: declare(&call, &session, &changes, skipped, false).await,
        }))
    }
}

#[derive(Debug)]
pub(crate) struct ReleaseDevice;

impl Tool for ReleaseDevice {
    type Args = NoArgs;

    const DEF: ToolDef = ToolDef::new(
        "releaseDevice",
        "Release the session's device",
        "Ends this session's hold on its device. The device is reset (no cookies, storage or history remain) and returned to the pool.",
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
    )
    .routing_session();

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<Released>()
    }

    async fn run(call: Call<'_>, NoArgs {}: NoArgs) -> Result<Output, ToolError> {
        let session = require_session(&call)?;
        match call
            .ctx
            .backend
            .release(session.as_str(), "released by releaseDevice")
            .await
        {
            Some(device) => Output::structured(&Released {
                released: device,
                session_uuid: session.as_str().to_owned(),
            }),
            None => Err(ToolError::not_found("no device is bound to this session")),
        }
    }
}
