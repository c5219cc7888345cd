//! What a web session produces and keeps besides its screen: console and network logs (bounded
//! ring buffers fed from CDP events), device settings applied through CDP emulation (locale,
//! timezone, geolocation, media features, offline), page script, and the storage state
//! (cookies and localStorage) that `saveStorage` keeps and `getWeb {storage}` restores.
//!
//! Everything here is per device and cleared by [`DataState::clear`] at reset, so the next
//! session starts as clean as a fresh device. Nothing a page stores (cookie or storage values,
//! console text, bodies) is ever written to the log.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::cdp::Cdp;
use super::{CALL_TIMEOUT, WebDevice, cdp_error};
use crate::device::DeviceError;
use crate::profile::Profile;

/// Console entries a device keeps; older ones are dropped (and counted).
pub const CONSOLE_CAPACITY: usize = 1000;
/// Requests a device keeps.
pub const NETWORK_CAPACITY: usize = 1000;
/// The longest text of one console entry, in bytes.
pub const MAX_CONSOLE_TEXT: usize = 2048;
/// Response bodies Chromium keeps per page session, in all and per request.
const NETWORK_BODY_BUFFER: u64 = 32 * 1024 * 1024;
const NETWORK_RESOURCE_BUFFER: u64 = 4 * 1024 * 1024;
/// The longest URL kept for a request or a console source.
const MAX_URL: usize = 2048;
/// The binding a localStorage seeding script calls once it has run, so it is removed.
const SEEDED_BINDING: &str = "__paddockStorageSeeded";

/// A console message, an uncaught exception or a browser log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsoleEntry {
    pub seq: u64,
    /// `debug`, `info`, `warn` or `error`.
    pub level: ConsoleLevel,
    /// `console`, `exception`, or the browser log's source (`network`, `javascript`, …).
    pub source: String,
    /// The message, at most [`MAX_CONSOLE_TEXT`] bytes (cut at a character boundary).
    pub text: String,
    /// `url:line` where the message came from, when known.
    pub location: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub time: f64,
}

/// Console severity, in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConsoleLevel {
    Debug,
    Info,
    Warn,
    Error,
}

impl ConsoleLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        }
    }

    /// From a `Runtime.consoleAPICalled` type or a `Log.entryAdded` level.
    fn from_cdp(kind: &str) -> Self {
        match kind {
            "debug" | "verbose" => Self::Debug,
            "warning" | "warn" => Self::Warn,
            "error" | "assert" => Self::Error,
            _ => Self::Info,
        }
    }
}

/// One request, from `Network.requestWillBeSent` to its end.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkEntry {
    pub seq: u64,
    /// CDP's request id: what `networkBody` takes.
    pub request_id: String,
    pub method: String,
    pub url: String,
    /// `Document`, `Fetch`, `Script`, …
    pub resource_type: Option<String>,
    pub status: Option<u16>,
    pub mime_type: Option<String>,
    /// Why it failed (`net::ERR_CONNECTION_REFUSED`, …).
    pub failed: Option<String>,
    /// From sending to finishing or failing, in milliseconds.
    pub duration_ms: Option<f64>,
    /// CDP's monotonic timestamp of sending, in seconds.
    started: f64,
}

impl NetworkEntry {
    /// Failed at the network level, or answered with a 4xx or 5xx status.
    pub fn is_failure(&self) -> bool {
        self.failed.is_some() || self.status.is_some_and(|status| status >= 400)
    }
}

/// A bounded buffer of entries with sequence numbers; the oldest go first.
#[derive(Debug)]
struct Ring<T> {
    entries: VecDeque<T>,
    capacity: usize,
    /// The sequence number of the last entry pushed (0: none yet).
    last_seq: u64,
}

impl<T> Ring<T> {
    fn new(capacity: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            capacity,
            last_seq: 0,
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.last_seq += 1;
        self.last_seq
    }

    fn push(&mut self, entry: T) {
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
        }
        self.entries.push_back(entry);
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.last_seq = 0;
    }
}

/// How many entries after `since` the ring no longer holds: sequence numbers are dense, so
/// they are those between the mark and the oldest entry kept.
fn dropped_after(since: u64, oldest_kept: Option<u64>, last_seq: u64) -> u64 {
    let first_missing = since + 1;
    match oldest_kept {
        Some(oldest) => oldest.saturating_sub(first_missing),
        None => last_seq.saturating_sub(since),
    }
}

/// A page of log entries.
#[derive(Debug, Clone)]
pub struct LogPage<T> {
    pub entries: Vec<T>,
    /// The mark to pass as `since` for only later entries.
    pub next: u64,
    /// Entries after the caller's mark that the ring dropped before this read.
    pub dropped: u64,
}

/// Which console entries to read.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsoleQuery {
    /// Only entries at least this severe.
    pub level: Option<ConsoleLevel>,
    /// Only entries after this mark.
    pub since: Option<u64>,
}

/// Which requests to read.
#[derive(Debug, Clone, Default)]
pub struct NetworkQuery {
    pub url_contains: Option<String>,
    pub failed_only: bool,
    pub since: Option<u64>,
}

/// A response body as CDP gives it.
#[derive(Debug, Clone)]
pub enum Body {
    /// Text, cut to the cap; `total` is its whole length in bytes.
    Text {
        text: String,
        total: usize,
        truncated: bool,
    },
    /// Binary (CDP sent it base64-encoded); only its decoded size.
    Binary { bytes: usize },
}

/// Cuts `text` to at most `cap` bytes at a character boundary.
pub fn cap_text(text: &str, cap: usize) -> (&str, bool) {
    if text.len() <= cap {
        return (text, false);
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// `url:line` (1-based) of a CDP call frame or exception details.
fn location_of(at: &Value) -> String {
    format!(
        "{}:{}",
        capped(at.get("url").and_then(Value::as_str).unwrap_or(""), MAX_URL),
        at.get("lineNumber")
            .and_then(Value::as_u64)
            .map_or(0, |line| line + 1)
    )
}

fn capped(text: &str, cap: usize) -> String {
    match cap_text(text, cap) {
        (text, false) => text.to_owned(),
        (text, true) => format!("{text}…"),
    }
}

/// The device settings a session may change; `None` is the profile's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceSettings {
    pub locale: Option<String>,
    pub timezone: Option<String>,
    pub geolocation: Option<Geolocation>,
    pub color_scheme: Option<ColorScheme>,
    pub reduced_motion: Option<ReducedMotion>,
    pub offline: Option<bool>,
}

impl DeviceSettings {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// These settings with every field `change` sets replaced.
    pub fn merged(&self, change: &DeviceSettings) -> DeviceSettings {
        DeviceSettings {
            locale: change.locale.clone().or_else(|| self.locale.clone()),
            timezone: change.timezone.clone().or_else(|| self.timezone.clone()),
            geolocation: change.geolocation.or(self.geolocation),
            color_scheme: change.color_scheme.or(self.color_scheme),
            reduced_motion: change.reduced_motion.or(self.reduced_motion),
            offline: change.offline.or(self.offline),
        }
    }

    /// Checks what CDP would not: coordinate ranges and the locale's shape (a timezone is
    /// checked by Chromium when applied).
    pub fn validate(&self) -> Result<(), DeviceError> {
        if let Some(locale) = &self.locale
            && !is_locale(locale)
        {
            return Err(DeviceError::InvalidInput(format!(
                "`{locale}` is not a locale; give a BCP 47 tag such as `de-DE` or `fr`"
            )));
        }
        if let Some(timezone) = &self.timezone
            && (timezone.is_empty()
                || timezone.len() > 64
                || !timezone
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/_+-".contains(c)))
        {
            return Err(DeviceError::InvalidInput(format!(
                "`{timezone}` is not an IANA timezone id such as `Europe/Berlin`"
            )));
        }
        if let Some(geolocation) = &self.geolocation {
            geolocation.validate()?;
        }
        Ok(())
    }
}

/// A BCP 47-shaped tag: 2–3 letters, then subtags of 2–8 letters or digits.
fn is_locale(locale: &str) -> bool {
    let mut parts = locale.split(['-', '_']);
    let Some(language) = parts.next() else {
        return false;
    };
    (2..=3).contains(&language.len())
        && language.chars().all(|c| c.is_ascii_alphabetic())
        && parts.all(|part| {
            (2..=8).contains(&part.len()) && part.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

/// An emulated position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geolocation {
    pub latitude: f64,
    pub longitude: f64,
    /// Metres; default 10.
    pub accuracy: Option<f64>,
}

impl Geolocation {
    fn validate(&self) -> Result<(), DeviceError> {
        if !(-90.0..=90.0).contains(&self.latitude) {
            return Err(DeviceError::InvalidInput(format!(
                "latitude `{}` is outside -90..=90",
                self.latitude
            )));
        }
        if !(-180.0..=180.0).contains(&self.longitude) {
            return Err(DeviceError::InvalidInput(format!(
                "longitude `{}` is outside -180..=180",
                self.longitude
            )));
        }
        if let Some(accuracy) = self.accuracy
            && !(accuracy.is_finite() && accuracy >= 0.0)
        {
            return Err(DeviceError::InvalidInput(format!(
                "accuracy `{accuracy}` must be a non-negative number of metres"
            )));
        }
        Ok(())
    }
}

/// `prefers-color-scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorScheme {
    Light,
    Dark,
    NoPreference,
}

/// `prefers-reduced-motion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReducedMotion {
    Reduce,
    NoPreference,
}

/// Cookies and localStorage of a session, as CDP gives and takes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageState {
    /// `Network.Cookie` objects, as `Storage.getCookies` returns them.
    pub cookies: Vec<Value>,
    /// localStorage items by origin.
    pub local_storage: BTreeMap<String, Vec<(String, String)>>,
}

/// A session's storage as captured, with the visited origins whose localStorage could not be
/// read (no page of that origin is open any more).
#[derive(Debug, Clone, Default)]
pub struct CapturedStorage {
    pub state: StorageState,
    pub unreadable_origins: Vec<String>,
}

/// Per-device logs, settings and visited origins.
#[derive(Debug)]
pub(super) struct DataState {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    console: Ring<ConsoleEntry>,
    network: Ring<NetworkEntry>,
    settings: DeviceSettings,
    /// The page sessions (tabs) of the current browser context.
    sessions: HashSet<String>,
    /// Origins the session's frames navigated to, for `saveStorage`.
    origins: BTreeSet<String>,
    /// Seeding scripts still installed: origin → (session, script identifier).
    seeds: HashMap<String, (String, String)>,
    /// Seeds to install on every new page session of this context.
    pending_seeds: BTreeMap<String, Vec<(String, String)>>,
}

impl DataState {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                console: Ring::new(CONSOLE_CAPACITY),
                network: Ring::new(NETWORK_CAPACITY),
                settings: DeviceSettings::default(),
                sessions: HashSet::new(),
                origins: BTreeSet::new(),
                seeds: HashMap::new(),
                pending_seeds: BTreeMap::new(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Forgets everything: logs, settings, sessions, origins and seeds (at reset).
    pub(super) fn clear(&self) {
        let mut inner = self.lock();
        inner.console.clear();
        inner.network.clear();
        inner.settings = DeviceSettings::default();
        inner.sessions.clear();
        inner.origins.clear();
        inner.seeds.clear();
        inner.pending_seeds.clear();
    }

    fn has_session(&self, session: &str) -> bool {
        self.lock().sessions.contains(session)
    }

    fn push_console(&self, make: impl FnOnce(u64) -> ConsoleEntry) {
        let mut inner = self.lock();
        let seq = inner.console.next_seq();
        let entry = make(seq);
        inner.console.push(entry);
    }

    fn console_page(&self, query: ConsoleQuery) -> LogPage<ConsoleEntry> {
        let inner = self.lock();
        let since = query.since.unwrap_or(0);
        let entries = inner
            .console
            .entries
            .iter()
            .filter(|entry| entry.seq > since)
            .filter(|entry| query.level.is_none_or(|level| entry.level >= level))
            .cloned()
            .collect();
        LogPage {
            entries,
            next: inner.console.last_seq,
            dropped: dropped_after(
                since,
                inner.console.entries.front().map(|entry| entry.seq),
                inner.console.last_seq,
            ),
        }
    }

    fn network_page(&self, query: &NetworkQuery) -> LogPage<NetworkEntry> {
        let inner = self.lock();
        let since = query.since.unwrap_or(0);
        let entries = inner
            .network
            .entries
            .iter()
            .filter(|entry| entry.seq > since)
            .filter(|entry| !query.failed_only || entry.is_failure())
            .filter(|entry| {
                query
                    .url_contains
                    .as_deref()
                    .is_none_or(|part| entry.url.contains(part))
            })
            .cloned()
            .collect();
        LogPage {
            entries,
            next: inner.network.last_seq,
            dropped: dropped_after(
                since,
                inner.network.entries.front().map(|entry| entry.seq),
                inner.network.last_seq,
            ),
        }
    }

    fn update_request(&self, request_id: &str, update: impl FnOnce(&mut NetworkEntry)) {
        let mut inner = self.lock();
        if let Some(entry) = inner
            .network
            .entries
            .iter_mut()
            .rev()
            .find(|entry| entry.request_id == request_id)
        {
            update(entry);
        }
    }

    /// Feeds one CDP event of a known page session into the buffers.
    fn record(&self, method: &str, params: &Value) {
        let text = |pointer: &str| params.pointer(pointer).and_then(Value::as_str);
        match method {
            "Runtime.consoleAPICalled" => {
                let kind = text("/type").unwrap_or("log");
                let message = params
                    .get("args")
                    .and_then(Value::as_array)
                    .map(|args| {
                        args.iter()
                            .map(remote_object_text)
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                let location = params.pointer("/stackTrace/callFrames/0").map(location_of);
                let time = params
                    .get("timestamp")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                self.push_console(|seq| ConsoleEntry {
                    seq,
                    level: ConsoleLevel::from_cdp(kind),
                    source: "console".to_owned(),
                    text: capped(&message, MAX_CONSOLE_TEXT),
                    location,
                    time,
                });
            }
            "Runtime.exceptionThrown" => {
                let details = params.get("exceptionDetails");
                let message = details
                    .and_then(|details| details.pointer("/exception/description"))
                    .or_else(|| details.and_then(|details| details.get("text")))
                    .and_then(Value::as_str)
                    .unwrap_or("uncaught exception");
                let location = details.map(location_of);
                let time = params
                    .get("timestamp")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                self.push_console(|seq| ConsoleEntry {
                    seq,
                    level: ConsoleLevel::Error,
                    source: "exception".to_owned(),
                    text: capped(message, MAX_CONSOLE_TEXT),
                    location,
                    time,
                });
            }
            "Log.entryAdded" => {
                let entry = params.get("entry").cloned().unwrap_or(Value::Null);
                let get = |key: &str| entry.get(key).and_then(Value::as_str);
                let location = get("url").map(|url| {
                    let line = entry
                        .get("lineNumber")
                        .and_then(Value::as_u64)
                        .map_or(0, |line| line + 1);
                    format!("{}:{line}", capped(url, MAX_URL))
                });
                let time = entry
                    .get("timestamp")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                self.push_console(|seq| ConsoleEntry {
                    seq,
                    level: ConsoleLevel::from_cdp(get("level").unwrap_or("info")),
                    source: get("source").unwrap_or("browser").to_owned(),
                    text: capped(get("text").unwrap_or_default(), MAX_CONSOLE_TEXT),
                    location,
                    time,
                });
            }
            "Network.requestWillBeSent" => {
                let Some(request_id) = text("/requestId") else {
                    return;
                };
                // A redirect reuses the request id: the hop before ends with its status.
                if let Some(status) = params
                    .pointer("/redirectResponse/status")
                    .and_then(Value::as_u64)
                {
                    self.update_request(request_id, |entry| {
                        entry.status = u16::try_from(status).ok();
                    });
                }
                let mut inner = self.lock();
                let seq = inner.network.next_seq();
                inner.network.push(NetworkEntry {
                    seq,
                    request_id: request_id.to_owned(),
                    method: text("/request/method").unwrap_or("GET").to_owned(),
                    url: capped(text("/request/url").unwrap_or_default(), MAX_URL),
                    resource_type: text("/type").map(str::to_owned),
                    status: None,
                    mime_type: None,
                    failed: None,
                    duration_ms: None,
                    started: params
                        .get("timestamp")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0),
                });
            }
            "Network.responseReceived" => {
                let Some(request_id) = text("/requestId") else {
                    return;
                };
                let status = params
                    .pointer("/response/status")
                    .and_then(Value::as_u64)
                    .and_then(|status| u16::try_from(status).ok());
                let mime = text("/response/mimeType").map(str::to_owned);
                let kind = text("/type").map(str::to_owned);
                let at = params.get("timestamp").and_then(Value::as_f64);
                self.update_request(request_id, |entry| {
                    // Until the body has loaded, the time to the answer.
                    if let Some(at) = at {
                        entry.duration_ms = Some(((at - entry.started) * 1000.0).max(0.0).round());
                    }
                    entry.status = status;
                    entry.mime_type = mime;
                    if kind.is_some() {
                        entry.resource_type = kind;
                    }
                });
            }
            "Network.loadingFinished" | "Network.loadingFailed" => {
                let Some(request_id) = text("/requestId") else {
                    return;
                };
                let at = params.get("timestamp").and_then(Value::as_f64);
                let failed = (method == "Network.loadingFailed").then(|| {
                    if params.get("canceled") == Some(&Value::Bool(true)) {
                        "canceled".to_owned()
                    } else {
                        text("/errorText").unwrap_or("failed").to_owned()
                    }
                });
                self.update_request(request_id, |entry| {
                    if let Some(at) = at {
                        entry.duration_ms = Some(((at - entry.started) * 1000.0).max(0.0).round());
                    }
                    if failed.is_some() {
                        entry.failed = failed;
                    }
                });
            }
            "Page.frameNavigated" => {
                if let Some(origin) = text("/frame/securityOrigin")
                    && (origin.starts_with("http://") || origin.starts_with("https://"))
                {
                    self.lock().origins.insert(origin.to_owned());
                }
            }
            _ => {}
        }
    }
}

/// A console argument as text: a primitive's value, else the object's description.
fn remote_object_text(object: &Value) -> String {
    match object.get("value") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => object
            .get("description")
            .or_else(|| object.get("unserializableValue"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                object
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("undefined")
                    .to_owned()
            }),
        Some(other) => other.to_string(),
    }
}

/// Feeds the device's log buffers from the events of its page sessions, and removes a
/// localStorage seeding script once it has run. One task per device, for its whole life.
pub(super) fn spawn_watch(cdp: &Cdp, data: Arc<DataState>) {
    let mut events = cdp.events();
    let cdp = cdp.clone();
    tokio::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            };
            let Some(session) = event.session_id.as_deref() else {
                continue;
            };
            if !data.has_session(session) {
                continue;
            }
            if event.method == "Runtime.bindingCalled" {
                if event.params.get("name").and_then(Value::as_str) == Some(SEEDED_BINDING) {
                    let origin = event
                        .params
                        .get("payload")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let seed = data.lock().seeds.remove(origin);
                    if let Some((session, identifier)) = seed {
                        let _ = cdp
                            .call(
                                Some(&session),
                                "Page.removeScriptToEvaluateOnNewDocument",
                                json!({ "identifier": identifier }),
                                CALL_TIMEOUT,
                            )
                            .await;
                    }
                }
                continue;
            }
            data.record(&event.method, &event.params);
        }
    });
}

/// Readies a page session for logs and the device's settings (called from
/// `prepare_session`, after the profile's emulation).
pub(super) async fn prepare_session(
    cdp: &Cdp,
    session_id: &str,
    profile: &Profile,
    data: &DataState,
) -> Result<(), DeviceError> {
    data.lock().sessions.insert(session_id.to_owned());
    let session = Some(session_id);
    for (method, params) in [
        ("Runtime.enable", json!({})),
        ("Log.enable", json!({})),
        // Chromium keeps response bodies for `Network.getResponseBody` within these bounds,
        // so a page that downloads a lot cannot grow the browser without limit.
        (
            "Network.enable",
            json!({
                "maxTotalBufferSize": NETWORK_BODY_BUFFER,
                "maxResourceBufferSize": NETWORK_RESOURCE_BUFFER,
            }),
        ),
    ] {
        cdp.call(session, method, params, CALL_TIMEOUT)
            .await
            .map_err(cdp_error)?;
    }
    let (settings, seeds) = {
        let inner = data.lock();
        (inner.settings.clone(), inner.pending_seeds.clone())
    };
    if !settings.is_empty() {
        apply_settings(cdp, session_id, profile, &settings).await?;
    }
    for (origin, items) in &seeds {
        install_seed(cdp, session_id, data, origin, items).await?;
    }
    Ok(())
}

/// Applies `settings` to one page session.
async fn apply_settings(
    cdp: &Cdp,
    session_id: &str,
    profile: &Profile,
    settings: &DeviceSettings,
) -> Result<(), DeviceError> {
    let session = Some(session_id);
    let call = |method: &'static str, params: Value| async move {
        cdp.call(session, method, params, CALL_TIMEOUT)
            .await
            .map_err(cdp_error)
    };
    if let Some(locale) = &settings.locale {
        call("Emulation.setLocaleOverride", json!({ "locale": locale })).await?;
        call(
            "Emulation.setUserAgentOverride",
            json!({
                "userAgent": profile.user_agent,
                "acceptLanguage": locale,
            }),
        )
        .await?;
    }
    if let Some(timezone) = &settings.timezone {
        cdp.call(
            session,
            "Emulation.setTimezoneOverride",
            json!({ "timezoneId": timezone }),
            CALL_TIMEOUT,
        )
        .await
        .map_err(|error| {
            if error.is_closed() {
                cdp_error(error)
            } else {
                DeviceError::InvalidInput(format!(
                    "Chromium does not know the timezone `{timezone}`; give an IANA id such as `Europe/Berlin`"
                ))
            }
        })?;
    }
    if let Some(geolocation) = &settings.geolocation {
        let info = call("Target.getTargetInfo", json!({})).await?;
        let context = info
            .pointer("/targetInfo/browserContextId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        cdp.call(
            None,
            "Browser.grantPermissions",
            json!({ "permissions": ["geolocation"], "browserContextId": context }),
            CALL_TIMEOUT,
        )
        .await
        .map_err(cdp_error)?;
        call(
            "Emulation.setGeolocationOverride",
            json!({
                "latitude": geolocation.latitude,
                "longitude": geolocation.longitude,
                "accuracy": geolocation.accuracy.unwrap_or(10.0),
            }),
        )
        .await?;
    }
    let mut features = Vec::new();
    if let Some(scheme) = settings.color_scheme {
        let value = match scheme {
            ColorScheme::Light => "light",
            ColorScheme::Dark => "dark",
            ColorScheme::NoPreference => "no-preference",
        };
        features.push(json!({ "name": "prefers-color-scheme", "value": value }));
    }
    if let Some(motion) = settings.reduced_motion {
        let value = match motion {
            ReducedMotion::Reduce => "reduce",
            ReducedMotion::NoPreference => "no-preference",
        };
        features.push(json!({ "name": "prefers-reduced-motion", "value": value }));
    }
    if !features.is_empty() {
        call(
            "Emulation.setEmulatedMedia",
            json!({ "features": features }),
        )
        .await?;
    }
    if let Some(offline) = settings.offline {
        call(
            "Network.emulateNetworkConditions",
            json!({
                "offline": offline,
                "latency": 0,
                "downloadThroughput": -1,
                "uploadThroughput": -1,
            }),
        )
        .await?;
    }
    Ok(())
}

/// Installs a script that fills `origin`'s localStorage before the first page of that origin
/// runs its own scripts, then reports (through a binding) that it ran, so it is removed and a
/// later reload does not overwrite what the page changed.
async fn install_seed(
    cdp: &Cdp,
    session_id: &str,
    data: &DataState,
    origin: &str,
    items: &[(String, String)],
) -> Result<(), DeviceError> {
    let session = Some(session_id);
    cdp.call(
        session,
        "Runtime.addBinding",
        json!({ "name": SEEDED_BINDING }),
        CALL_TIMEOUT,
    )
    .await
    .map_err(cdp_error)?;
    let items: Vec<Value> = items
        .iter()
        .map(|(key, value)| json!([key, value]))
        .collect();
    let source = format!(
        "(() => {{ const origin = {origin}; if (location.origin !== origin) return; \
         try {{ for (const [k, v] of {items}) localStorage.setItem(k, v); }} catch (e) {{}} \
         const done = window.{SEEDED_BINDING}; try {{ delete window.{SEEDED_BINDING}; }} catch (e) {{}} \
         if (typeof done === 'function') done(origin); }})()",
        origin = Value::String(origin.to_owned()),
        items = Value::Array(items),
    );
    let installed = cdp
        .call(
            session,
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": source }),
            CALL_TIMEOUT,
        )
        .await
        .map_err(cdp_error)?;
    let identifier = installed
        .get("identifier")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    data.lock()
        .seeds
        .insert(origin.to_owned(), (session_id.to_owned(), identifier));
    Ok(())
}

impl WebDevice {
    /// Console entries as `query` asks.
    pub fn console_log(&self, query: ConsoleQuery) -> LogPage<ConsoleEntry> {
        self.data.console_page(query)
    }

    /// Requests as `query` asks.
    pub fn network_log(&self, query: &NetworkQuery) -> LogPage<NetworkEntry> {
        self.data.network_page(query)
    }

    /// One response body (of a request `networkLog` listed), cut to `cap` bytes.
    pub async fn network_body(&self, request_id: &str, cap: usize) -> Result<Body, DeviceError> {
        let result = self
            .call("Network.getResponseBody", json!({ "requestId": request_id }))
            .await
            .map_err(|error| match error {
                DeviceError::Failed(_) => DeviceError::NotFound(format!(
                    "no body for request `{request_id}`: it is unknown, has no body (a failed request or a redirect), or its body is no longer kept; see networkLog"
                )),
                other => other,
            })?;
        let body = result.get("body").and_then(Value::as_str).unwrap_or("");
        if result.get("base64Encoded") == Some(&Value::Bool(true)) {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(body)
                .map_or(body.len() / 4 * 3, |bytes| bytes.len());
            return Ok(Body::Binary { bytes });
        }
        let (text, truncated) = cap_text(body, cap);
        Ok(Body::Text {
            text: text.to_owned(),
            total: body.len(),
            truncated,
        })
    }

    /// The settings changed in this session (all `None`: the profile's defaults).
    pub fn settings(&self) -> DeviceSettings {
        self.data.lock().settings.clone()
    }

    /// Changes the fields `change` sets, on every tab now and every later one, until reset.
    pub async fn configure(&self, change: &DeviceSettings) -> Result<DeviceSettings, DeviceError> {
        change.validate()?;
        if let Some(timezone) = &change.timezone {
            self.check_timezone(timezone).await?;
        }
        let merged = self.data.lock().settings.merged(change);
        let sessions: Vec<String> = self.data.lock().sessions.iter().cloned().collect();
        for session in &sessions {
            apply_settings(&self.cdp, session, &self.profile, change).await?;
        }
        self.data.lock().settings = merged.clone();
        Ok(merged)
    }

    /// Applies the session's settings to `session` again, after the profile's emulation was
    /// (rotation sets the profile's user agent, which drops the locale's Accept-Language).
    pub(super) async fn reapply_settings(&self, session: &str) -> Result<(), DeviceError> {
        let settings = self.settings();
        if settings.is_empty() {
            return Ok(());
        }
        apply_settings(&self.cdp, session, &self.profile, &settings).await
    }

    /// Refuses a timezone the browser's ICU does not know: Chromium's
    /// `Emulation.setTimezoneOverride` accepts any id and falls back to UTC.
    async fn check_timezone(&self, timezone: &str) -> Result<(), DeviceError> {
        let expression = format!(
            "(() => {{ try {{ new Intl.DateTimeFormat('en', {{ timeZone: {} }}); return true; }} catch (e) {{ return false; }} }})()",
            Value::String(timezone.to_owned())
        );
        let result = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await?;
        if result.pointer("/result/value") == Some(&Value::Bool(true)) {
            Ok(())
        } else {
            Err(DeviceError::InvalidInput(format!(
                "Chromium does not know the timezone `{timezone}`; give an IANA id such as `Europe/Berlin`"
            )))
        }
    }

    /// Runs `expression` in the page (awaiting a promise) and returns its JSON value.
    pub async fn evaluate(&self, expression: &str) -> Result<Value, DeviceError> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": expression,
                    "returnByValue": true,
                    "awaitPromise": true,
                    "userGesture": true,
                }),
            )
            .await?;
        if let Some(exception) = result.get("exceptionDetails") {
            let text = exception
                .pointer("/exception/description")
                .or_else(|| exception.pointer("/exception/value"))
                .or_else(|| exception.get("text"))
                .map(|value| match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_else(|| "script error".to_owned());
            return Err(DeviceError::Failed(format!(
                "the expression threw: {}",
                capped(&text, MAX_CONSOLE_TEXT)
            )));
        }
        let remote = result.get("result").cloned().unwrap_or(Value::Null);
        Ok(match remote.get("value") {
            Some(value) => value.clone(),
            None => match remote.get("unserializableValue").and_then(Value::as_str) {
                Some(text) => Value::String(text.to_owned()),
                None => Value::Null,
            },
        })
    }

    /// The session's cookies and the localStorage of the origins it visited that are still
    /// readable (an origin with no live frame is skipped; see the README).
    pub async fn storage_state(&self) -> Result<CapturedStorage, DeviceError> {
        let context = self.state.lock().await.context_id.clone();
        let cookies = self
            .cdp
            .call(
                None,
                "Storage.getCookies",
                json!({ "browserContextId": context }),
                CALL_TIMEOUT,
            )
            .await
            .map_err(cdp_error)?
            .get("cookies")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let origins: Vec<String> = self.data.lock().origins.iter().cloned().collect();
        let mut local_storage = BTreeMap::new();
        let mut unreadable_origins = Vec::new();
        for origin in origins {
            let Ok(items) = self
                .call(
                    "DOMStorage.getDOMStorageItems",
                    json!({ "storageId": { "securityOrigin": origin, "isLocalStorage": true } }),
                )
                .await
            else {
                unreadable_origins.push(origin);
                continue;
            };
            let items: Vec<(String, String)> = items
                .get("entries")
                .and_then(Value::as_array)
                .map(|entries| {
                    entries
                        .iter()
                        .filter_map(|pair| {
                            Some((
                                pair.get(0)?.as_str()?.to_owned(),
                                pair.get(1)?.as_str()?.to_owned(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !items.is_empty() {
                local_storage.insert(origin, items);
            }
        }
        Ok(CapturedStorage {
            state: StorageState {
                cookies,
                local_storage,
            },
            unreadable_origins,
        })
    }

    /// Starts this session with `state`: cookies at once, localStorage seeded before each
    /// origin's first page runs its scripts.
    pub async fn restore_storage(&self, state: &StorageState) -> Result<(), DeviceError> {
        let (context, session) = {
            let page = self.state.lock().await;
            (page.context_id.clone(), page.session_id.clone())
        };
        if !state.cookies.is_empty() {
            let cookies: Vec<Value> = state.cookies.iter().map(settable_cookie).collect();
            self.cdp
                .call(
                    None,
                    "Storage.setCookies",
                    json!({ "cookies": cookies, "browserContextId": context }),
                    CALL_TIMEOUT,
                )
                .await
                .map_err(|error| {
                    if error.is_closed() {
                        cdp_error(error)
                    } else {
                        // CDP's message may quote a cookie; say only what failed.
                        DeviceError::InvalidInput(
                            "Chromium refused the saved cookies; save the storage again".into(),
                        )
                    }
                })?;
        }
        self.data
            .lock()
            .pending_seeds
            .extend(state.local_storage.clone());
        for (origin, items) in &state.local_storage {
            install_seed(&self.cdp, &session, &self.data, origin, items).await?;
        }
        Ok(())
    }
}

/// A `Network.Cookie` as `Network.CookieParam`: the fields `setCookies` takes.
fn settable_cookie(cookie: &Value) -> Value {
    let mut param = serde_json::Map::new();
    for key in [
        "name",
        "value",
        "domain",
        "path",
        "secure",
        "httpOnly",
        "sameSite",
        "priority",
        "sameParty",
        "sourceScheme",
        "sourcePort",
        "partitionKey",
    ] {
        if let Some(value) = cookie.get(key) {
            param.insert(key.to_owned(), value.clone());
        }
    }
    // A session cookie has `expires: -1` and `session: true`; only a persistent one keeps it.
    if cookie.get("session") != Some(&Value::Bool(true))
        && let Some(expires) = cookie.get("expires")
    {
        param.insert("expires".to_owned(), expires.clone());
    }
    Value::Object(param)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_ring_keeps_the_newest_and_counts_what_it_dropped() {
        let data = DataState::new();
        for index in 0..(CONSOLE_CAPACITY + 5) {
            data.record(
                "Runtime.consoleAPICalled",
                &json!({ "type": if index % 2 == 0 { "log" } else { "error" },
                         "args": [{ "type": "string", "value": format!("m{index}") }] }),
            );
        }
        let page = data.console_page(ConsoleQuery::default());
        assert_eq!(page.entries.len(), CONSOLE_CAPACITY);
        assert_eq!(page.next, (CONSOLE_CAPACITY + 5) as u64);
        assert_eq!(page.dropped, 5);
        assert_eq!(page.entries[0].text, "m5");
        let later = data.console_page(ConsoleQuery {
            level: Some(ConsoleLevel::Error),
            since: Some(page.next - 4),
        });
        assert_eq!(later.dropped, 0);
        assert!(
            later
                .entries
                .iter()
                .all(|entry| entry.level == ConsoleLevel::Error)
        );
        assert_eq!(later.entries.len(), 2);
    }

    #[test]
    fn console_text_is_capped_at_a_character_boundary() {
        let data = DataState::new();
        let long = "é".repeat(MAX_CONSOLE_TEXT);
        data.record(
            "Runtime.consoleAPICalled",
            &json!({ "type": "warning", "args": [{ "type": "string", "value": long }] }),
        );
        let entry = &data.console_page(ConsoleQuery::default()).entries[0];
        assert!(entry.text.len() <= MAX_CONSOLE_TEXT + '…'.len_utf8());
        assert!(entry.text.ends_with('…'));
        assert_eq!(entry.level, ConsoleLevel::Warn);
    }

    #[test]
    fn requests_follow_their_events_and_failures_filter() {
        let data = DataState::new();
        data.record(
            "Network.requestWillBeSent",
            &json!({ "requestId": "1", "type": "Fetch", "timestamp": 1.0,
                     "request": { "method": "GET", "url": "http://a/missing" } }),
        );
        data.record(
            "Network.responseReceived",
            &json!({ "requestId": "1", "response": { "status": 404, "mimeType": "text/html" } }),
        );
        data.record(
            "Network.loadingFinished",
            &json!({ "requestId": "1", "timestamp": 1.25 }),
        );
        data.record(
            "Network.requestWillBeSent",
            &json!({ "requestId": "2", "timestamp": 2.0,
                     "request": { "method": "POST", "url": "http://b/ok" } }),
        );
        data.record(
            "Network.responseReceived",
            &json!({ "requestId": "2", "response": { "status": 200 } }),
        );
        let all = data.network_page(&NetworkQuery::default());
        assert_eq!(all.entries.len(), 2);
        assert_eq!(all.entries[0].duration_ms, Some(250.0));
        let failed = data.network_page(&NetworkQuery {
            failed_only: true,
            ..NetworkQuery::default()
        });
        assert_eq!(failed.entries.len(), 1);
        assert_eq!(failed.entries[0].status, Some(404));
        let by_url = data.network_page(&NetworkQuery {
            url_contains: Some("b/ok".into()),
            ..NetworkQuery::default()
        });
        assert_eq!(by_url.entries[0].method, "POST");
    }

    #[test]
    fn settings_are_validated() {
        let bad = |settings: DeviceSettings| settings.validate().is_err();
        assert!(bad(DeviceSettings {
            locale: Some("not a locale".into()),
            ..DeviceSettings::default()
        }));
        assert!(bad(DeviceSettings {
            geolocation: Some(Geolocation {
                latitude: 91.0,
                longitude: 0.0,
                accuracy: None
            }),
            ..DeviceSettings::default()
        }));
        assert!(bad(DeviceSettings {
            geolocation: Some(Geolocation {
                latitude: 0.0,
                longitude: f64::NAN,
                accuracy: None
            }),
            ..DeviceSettings::default()
        }));
        assert!(
            DeviceSettings {
                locale: Some("de-DE".into()),
                timezone: Some("Asia/Tokyo".into()),
                ..DeviceSettings::default()
            }
            .validate()
            .is_ok()
        );
    }

    #[test]
    fn session_cookies_lose_their_expiry() {
        let cookie = json!({ "name": "n", "value": "v", "domain": "d", "path": "/",
                             "expires": -1, "session": true, "size": 2 });
        let param = settable_cookie(&cookie);
        assert!(param.get("expires").is_none());
        assert!(param.get("size").is_none());
        assert_eq!(param["value"], "v");
    }
}
