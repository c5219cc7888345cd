//! Web session data: console and network logs, response bodies, device settings (locale,
//! timezone, geolocation, media, offline), page script, and saved storage states (logins that
//! survive a session). All but the storage list act on the session's web device.

use paddock_devices::web::WebDevice;
use paddock_devices::web::data::{
    Body, ColorScheme, ConsoleLevel, ConsoleQuery, DeviceSettings, Geolocation, NetworkQuery,
    ReducedMotion,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::catalog::{Hints, OperationDef, ToolDef};
use crate::error::{ToolError, ToolErrorCode};
use crate::tools::args::{NoArgs, wire_enum};
use crate::tools::device::{WEB, bounded, session_device};
use crate::tools::{Call, Output, Tool};

/// Each body `networkLog {body: true}` includes, at most.
const LOG_BODY_CAP: usize = 4 * 1024;
/// All bodies of one `networkLog` answer, at most.
const LOG_BODIES_TOTAL: usize = 64 * 1024;
/// One `networkBody` answer, at most.
const NETWORK_BODY_CAP: usize = 1024 * 1024;
/// An `evaluate` result, at most (as JSON text).
const EVALUATE_RESULT_CAP: usize = 64 * 1024;
/// The longest expression `evaluate` takes.
const MAX_EXPRESSION: usize = 100 * 1024;

/// The session's web device, for a tool that only web devices have.
fn with_web<'a>(
    call: &Call<'_>,
    device: &'a std::sync::Arc<dyn paddock_devices::Device>,
) -> Result<&'a WebDevice, ToolError> {
    device.as_web().ok_or_else(|| {
        ToolError::new(
            ToolErrorCode::UnsupportedPlatform,
            format!("`{}` supports web devices only", call.tool.name),
        )
    })
}

wire_enum! {
    /// A console severity.
    Level => ConsoleLevel { Debug, Info, Warn, Error }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ConsoleLogArgs {
    /// Only entries at least this severe (`error` includes uncaught exceptions).
    level: Option<Level>,
    /// A `next` mark from an earlier answer: only later entries.
    since: Option<u64>,
}

#[derive(Debug)]
pub(crate) struct ConsoleLog;

impl Tool for ConsoleLog {
    type Args = ConsoleLogArgs;

    const DEF: ToolDef = ToolDef::new(
        "consoleLog",
        "Read the console log",
        "Console messages, uncaught exceptions and browser errors (such as failed loads) of this session's pages, oldest first: `{entries: [{seq, level, source, text, location, time}], next, dropped}`. Pass `next` as `since` to get only later entries; `dropped` counts entries after your mark that the 1000-entry buffer no longer holds.",
        Hints::READ,
    )
    .on_device(WEB);

    async fn run(call: Call<'_>, args: ConsoleLogArgs) -> Result<Output, ToolError> {
        let device = session_device(&call)?;
        let web = with_web(&call, &device)?;
        let page = web.console_log(ConsoleQuery {
            level: args.level.map(Into::into),
            since: args.since,
        });
        let entries: Vec<Value> = page
            .entries
            .iter()
            .map(|entry| {
                json!({
                    "seq": entry.seq,
                    "level": entry.level.as_str(),
                    "source": entry.source,
                    "text": entry.text,
                    "location": entry.location,
                    "time": entry.time,
                })
            })
            .collect();
        Ok(Output::Json(
            json!({ "entries": entries, "next": page.next, "dropped": page.dropped }),
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct NetworkLogArgs {
    /// Only requests whose URL contains this text.
    url_contains: Option<String>,
    /// Only requests that failed or answered 4xx/5xx.
    #[serde(default)]
    failed_only: bool,
    /// A `next` mark from an earlier answer: only requests started later.
    since: Option<u64>,
    /// Add each response body (text only, 4 KiB each, 64 KiB in all).
    #[serde(default)]
    body: bool,
}

#[derive(Debug)]
pub(crate) struct NetworkLog;

impl Tool for NetworkLog {
    type Args = NetworkLogArgs;

    const DEF: ToolDef = ToolDef::new(
        "networkLog",
        "Read the network log",
        "Requests of this session's pages, oldest first: `{entries: [{seq, requestId, method, url, type, status, mimeType, failed, durationMs}], next, dropped}`. `failedOnly` keeps failures and 4xx/5xx answers; `urlContains` filters by URL; pass `next` as `since` for only later requests. `body: true` adds each text body (4 KiB each, 64 KiB in all); networkBody reads one whole.",
        Hints::READ,
    )
    .on_device(WEB);

    async fn run(call: Call<'_>, args: NetworkLogArgs) -> Result<Output, ToolError> {
        let device = session_device(&call)?;
        let web = with_web(&call, &device)?;
        let page = web.network_log(&NetworkQuery {
            url_contains: args.url_contains,
            failed_only: args.failed_only,
            since: args.since,
        });
        let mut budget = LOG_BODIES_TOTAL;
        let mut entries = Vec::with_capacity(page.entries.len());
        for entry in &page.entries {
            let mut value = json!({
                "seq": entry.seq,
                "requestId": entry.request_id,
                "method": entry.method,
                "url": entry.url,
                "type": entry.resource_type,
                "status": entry.status,
                "mimeType": entry.mime_type,
                "failed": entry.failed,
                "durationMs": entry.duration_ms,
            });
            if args.body && entry.failed.is_none() {
                value["body"] = if budget == 0 {
                    json!({ "omitted": "the 64 KiB budget for bodies is spent; use networkBody" })
                } else {
                    match bounded(web.network_body(&entry.request_id, LOG_BODY_CAP.min(budget)))
                        .await
                    {
                        Ok(Body::Text {
                            text,
                            total,
                            truncated,
                        }) => {
                            budget = budget.saturating_sub(text.len());
                            json!({ "text": text, "bytes": total, "truncated": truncated })
                        }
                        Ok(Body::Binary { bytes }) => json!({ "binary": true, "bytes": bytes }),
                        Err(_) => json!({ "unavailable": true }),
                    }
                };
            }
            entries.push(value);
        }
        Ok(Output::Json(
            json!({ "entries": entries, "next": page.next, "dropped": page.dropped }),
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct NetworkBodyArgs {
    /// A `requestId` from networkLog.
    request_id: String,
}

#[derive(Debug)]
pub(crate) struct NetworkBody;

impl Tool for NetworkBody {
    type Args = NetworkBodyArgs;

    const DEF: ToolDef = ToolDef::new(
        "networkBody",
        "Read a response body",
        "One response body of a request networkLog listed (by its `requestId`), as text up to 1 MiB (`truncated` says when it was cut); a binary body is reported by size only.",
        Hints::READ,
    )
    .omitted_by_default()
    .on_device(WEB);

    async fn run(call: Call<'_>, args: NetworkBodyArgs) -> Result<Output, ToolError> {
        if args.request_id.is_empty() || args.request_id.len() > 256 {
            return Err(ToolError::invalid_input(
                "`requestId` must be an id networkLog listed",
            ));
        }
        let device = session_device(&call)?;
        let web = with_web(&call, &device)?;
        let body = bounded(web.network_body(&args.request_id, NETWORK_BODY_CAP)).await?;
        Ok(Output::Json(match body {
            Body::Text {
                text,
                total,
                truncated,
            } => {
                json!({ "requestId": args.request_id, "text": text, "bytes": total, "truncated": truncated })
            }
            Body::Binary { bytes } => {
                json!({ "requestId": args.request_id, "binary": true, "bytes": bytes })
            }
        }))
    }
}

wire_enum! {
    /// The operations of `configureDevice`.
    ConfigureOperation { Get, Set }
}

const CONFIGURE_OPERATIONS: &[OperationDef] = &[
    OperationDef {
        name: "get",
        read_only: true,
        commerce: false,
    },
    OperationDef {
        name: "set",
        read_only: false,
        commerce: false,
    },
];

wire_enum! {
    /// `prefers-color-scheme`.
    Scheme => ColorScheme { Light, Dark, NoPreference }
}

wire_enum! {
    /// `prefers-reduced-motion`.
    Motion => ReducedMotion { Reduce, NoPreference }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GeolocationArgs {
    /// Degrees, -90 to 90.
    latitude: f64,
    /// Degrees, -180 to 180.
    longitude: f64,
    /// Metres (default 10).
    accuracy: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ConfigureDeviceArgs {
    operation: ConfigureOperation,
    /// With `set`: a BCP 47 locale such as `de-DE` (navigator.language, Intl, Accept-Language).
    locale: Option<String>,
    /// With `set`: an IANA timezone such as `Asia/Tokyo`.
    timezone: Option<String>,
    /// With `set`: the position the page's geolocation reports (permission is granted).
    geolocation: Option<GeolocationArgs>,
    /// With `set`.
    color_scheme: Option<Scheme>,
    /// With `set`.
    reduced_motion: Option<Motion>,
    /// With `set`: `true` cuts the page off the network.
    offline: Option<bool>,
}

fn settings_json(settings: &DeviceSettings) -> Value {
    let scheme = settings.color_scheme.map(|scheme| match scheme {
        ColorScheme::Light => "light",
        ColorScheme::Dark => "dark",
        ColorScheme::NoPreference => "noPreference",
    });
    let motion = settings.reduced_motion.map(|motion| match motion {
        ReducedMotion::Reduce => "reduce",
        ReducedMotion::NoPreference => "noPreference",
    });
    let mut value = json!({
        "locale": settings.locale,
        "timezone": settings.timezone,
        "geolocation": settings.geolocation.map(|geo| json!({
            "latitude": geo.latitude, "longitude": geo.longitude, "accuracy": geo.accuracy,
        })),
        "colorScheme": scheme,
        "reducedMotion": motion,
        "offline": settings.offline,
    });
    if let Value::Object(map) = &mut value {
        map.retain(|_, field| !field.is_null());
    }
    json!({ "settings": value, "defaults": settings.is_empty() })
}

#[derive(Debug)]
pub(crate) struct ConfigureDevice;

impl Tool for ConfigureDevice {
    type Args = ConfigureDeviceArgs;

    const DEF: ToolDef = ToolDef::new(
        "configureDevice",
        "Device settings",
        "The web device's settings for this session: `get` returns those changed (`defaults: true` when none); `set` changes the given ones — `locale`, `timezone`, `geolocation {latitude, longitude, accuracy?}`, `colorScheme` (light, dark, noPreference), `reducedMotion` (reduce, noPreference), `offline` — on every tab, now and for pages opened later. Reload a page to see a new locale in its content. All are reset at releaseDevice.",
        Hints::IDEMPOTENT_CHANGE,
    )
    .operations(CONFIGURE_OPERATIONS)
    .on_device(WEB);

    async fn run(call: Call<'_>, args: ConfigureDeviceArgs) -> Result<Output, ToolError> {
        let change = DeviceSettings {
            locale: args.locale,
            timezone: args.timezone,
            geolocation: args.geolocation.map(|geo| Geolocation {
                latitude: geo.latitude,
                longitude: geo.longitude,
                accuracy: geo.accuracy,
            }),
            color_scheme: args.color_scheme.map(Into::into),
            reduced_motion: args.reduced_motion.map(Into::into),
            offline: args.offline,
        };
        let device = session_device(&call)?;
        let web = with_web(&call, &device)?;
        match args.operation {
            ConfigureOperation::Get if !change.is_empty() => Err(ToolError::invalid_input(
                "`get` takes no settings; use `set` to change them",
            )),
            ConfigureOperation::Get => Ok(Output::Json(settings_json(&web.settings()))),
            ConfigureOperation::Set if change.is_empty() => Err(ToolError::invalid_input(
                "`set` needs at least one of `locale`, `timezone`, `geolocation`, `colorScheme`, `reducedMotion`, `offline`",
            )),
            ConfigureOperation::Set => {
                let settings = bounded(web.configure(&change)).await?;
                Ok(Output::Json(settings_json(&settings)))
            }
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvaluateArgs {
    /// JavaScript to run in the page; a promise is awaited. Its value is returned as JSON.
    expression: String,
}

#[derive(Debug)]
pub(crate) struct Evaluate;

impl Tool for Evaluate {
    type Args = EvaluateArgs;

    const DEF: ToolDef = ToolDef::new(
        "evaluate",
        "Run page JavaScript",
        "Runs `expression` in the current page (a promise is awaited) and returns `{value}`, its JSON value; over 64 KiB it is cut to `{truncated: true, bytes, preview}`. A thrown exception is `[upstream_error]` with its message. It can change the page.",
        Hints::ACT,
    )
    .omitted_by_default()
    .on_device(WEB);

    async fn run(call: Call<'_>, args: EvaluateArgs) -> Result<Output, ToolError> {
        if args.expression.trim().is_empty() || args.expression.len() > MAX_EXPRESSION {
            return Err(ToolError::invalid_input(format!(
                "`expression` must be 1 to {MAX_EXPRESSION} bytes of JavaScript"
            )));
        }
        let device = session_device(&call)?;
        let web = with_web(&call, &device)?;
        let value = bounded(web.evaluate(&args.expression)).await?;
        let text = value.to_string();
        if text.len() <= EVALUATE_RESULT_CAP {
            return Ok(Output::Json(json!({ "value": value })));
        }
        let (preview, _) = paddock_devices::web::data::cap_text(&text, EVALUATE_RESULT_CAP);
        Ok(Output::Json(json!({
            "truncated": true,
            "bytes": text.len(),
            "preview": preview,
            "note": "the result is over 64 KiB as JSON; `preview` is its start — return less (a slice, a count) to see all of it",
        })))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StorageNameArgs {
    /// `[A-Za-z0-9._-]`, 1 to 64 characters, not starting with a dot.
    name: String,
}

#[derive(Debug)]
pub(crate) struct SaveStorage;

impl Tool for SaveStorage {
    type Args = StorageNameArgs;

    const DEF: ToolDef = ToolDef::new(
        "saveStorage",
        "Save the session's storage",
        "Saves this session's cookies and the localStorage of the origins it visited that a page still shows (others are listed under `notSaved`; IndexedDB is not saved) as `name`, for your connection only, replacing one of the same name; start a later session with it through `getWeb {storage: name}` (it survives a daemon restart).",
        Hints::IDEMPOTENT_CHANGE,
    )
    .on_device(WEB);

    async fn run(call: Call<'_>, args: StorageNameArgs) -> Result<Output, ToolError> {
        crate::web_storage::check_name(&args.name)?;
        let device = session_device(&call)?;
        let web = with_web(&call, &device)?;
        let store = call.registry.web_storage()?.clone();
        let captured = bounded(web.storage_state()).await?;
        let profile = call.ctx.profile.clone();
        let state = captured.state;
        let summary = tokio::task::spawn_blocking(move || store.save(&profile, &args.name, &state))
            .await
            .map_err(|_| ToolError::internal("saving the storage stopped"))??;
        let mut answer = json!({ "saved": summary });
        if !captured.unreadable_origins.is_empty() {
            answer["notSaved"] = json!({
                "origins": captured.unreadable_origins,
                "why": "no page of these origins is open, so their localStorage could not be read; open one and save again",
            });
        }
        Ok(Output::Json(answer))
    }
}

#[derive(Debug)]
pub(crate) struct ListStorage;

impl Tool for ListStorage {
    type Args = NoArgs;

    const DEF: ToolDef = ToolDef::new(
        "listStorage",
        "List saved storage",
        "The storage states saved with saveStorage for your connection: name, when saved, how many cookies and which origins' localStorage (never the values).",
        Hints::READ,
    );

    async fn run(call: Call<'_>, NoArgs {}: NoArgs) -> Result<Output, ToolError> {
        let store = call.registry.web_storage()?.clone();
        let profile = call.ctx.profile.clone();
        let list = tokio::task::spawn_blocking(move || store.list(&profile))
            .await
            .map_err(|_| ToolError::internal("listing the storage stopped"))??;
        Ok(Output::Json(json!({ "storage": list })))
    }
}

#[derive(Debug)]
pub(crate) struct DeleteStorage;

impl Tool for DeleteStorage {
    type Args = StorageNameArgs;

    const DEF: ToolDef = ToolDef::new(
        "deleteStorage",
        "Delete saved storage",
        "Deletes the storage state saved as `name` for your connection.",
        Hints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
    );

    async fn run(call: Call<'_>, args: StorageNameArgs) -> Result<Output, ToolError> {
        let store = call.registry.web_storage()?.clone();
        let profile = call.ctx.profile.clone();
        let name = args.name.clone();
        tokio::task::spawn_blocking(move || store.delete(&profile, &name))
            .await
            .map_err(|_| ToolError::internal("deleting the storage stopped"))??;
        Ok(Output::Json(json!({ "deleted": args.name })))
    }
}
