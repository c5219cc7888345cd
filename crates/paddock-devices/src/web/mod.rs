//! The web platform: each device is its own headless Chromium process (so a crash or kill
//! takes down one device only) with a fresh browser context (no cookies or storage shared
//! between sessions) and mobile emulation from its [`Profile`].

pub mod cdp;
pub mod data;
mod files;
mod frames;
mod input;
mod pdf;
mod tabs;

pub use files::{
    DEFAULT_DOWNLOAD_LIMIT_BYTES, DOWNLOAD_LIMIT_ENV, DownloadInfo, DownloadState,
    MAX_UPLOAD_FILES, UPLOAD_LIMIT_BYTES, UploadPathError, check_upload_paths, mime_type_of,
};
pub use pdf::MAX_PDF_BYTES;
pub use tabs::{MAX_TABS, TabSummary};

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use paddock_process::{ChildSpec, InheritedFd, ManagedChild};
use serde_json::{Value, json};
use tracing::{debug, warn};

use crate::device::{
    Action, ActionOutcome, BoxFuture, Device, DeviceError, Element, Observation, ObserveOptions,
    Orientation, Platform, Screenshot, Target,
};
use crate::profile::Profile;
use cdp::{BROWSER_COMMANDS_FD, BROWSER_MESSAGES_FD, Cdp, CdpError};

pub(crate) const PAGE_JS: &str = include_str!("page.js");
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const BLANK: &str = "about:blank";

/// How to launch Chromium.
#[derive(Debug, Clone)]
pub struct ChromiumConfig {
    pub executable: PathBuf,
    pub launch_timeout: Duration,
    /// Extra command-line flags.
    pub extra_args: Vec<String>,
}

impl Default for ChromiumConfig {
    fn default() -> Self {
        Self {
            executable: PathBuf::from("/usr/bin/chromium"),
            launch_timeout: Duration::from_secs(30),
            extra_args: Vec::new(),
        }
    }
}

/// Mutable per-device state.
#[derive(Debug)]
struct PageState {
    context_id: String,
    target_id: String,
    session_id: String,
    orientation: Orientation,
    /// Refs handed out so far; a new document continues from here so refs never repeat.
    ref_base: u64,
    clipboard: String,
    app: Option<String>,
    /// Every tab, the active one (`target_id`, `session_id`) included.
    tabs: Vec<tabs::Tab>,
    files: files::FilesState,
}

/// One web device.
pub struct WebDevice {
    id: String,
    profile: Profile,
    cdp: Cdp,
    child: Mutex<Option<ManagedChild>>,
    pid: Option<u32>,
    _user_data: tempfile::TempDir,
    files: files::FilesConfig,
    state: tokio::sync::Mutex<PageState>,
    /// The tabs whose main frame is loading.
    loading: Arc<LoadingTabs>,
    /// Things that happened since the last observation, such as an answered alert.
    notices: Arc<Mutex<Vec<String>>>,
    alive: Arc<AtomicBool>,
    died: tokio::sync::watch::Receiver<bool>,
    /// The cross-origin frames of every tab.
    frames: Arc<frames::Frames>,
    /// Logs, settings and visited origins of the current session (see [`data`]).
    data: Arc<data::DataState>,
}

impl std::fmt::Debug for WebDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebDevice")
            .field("id", &self.id)
            .field("profile", &self.profile.name)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

fn lost(error: &CdpError) -> DeviceError {
    DeviceError::Lost(error.to_string())
}

fn cdp_error(error: CdpError) -> DeviceError {
    if error.is_closed() {
        lost(&error)
    } else {
        DeviceError::Failed(error.to_string())
    }
}

impl WebDevice {
    /// Launches Chromium and prepares a page with `profile`'s emulation.
    pub async fn launch(
        id: String,
        config: &ChromiumConfig,
        profile: Profile,
    ) -> Result<Arc<Self>, DeviceError> {
        let user_data = tempfile::Builder::new()
            .prefix("paddock-chromium-")
            .tempdir()
            .map_err(|error| {
                DeviceError::Failed(format!("could not create a profile directory: {error}"))
            })?;
        let mut args: Vec<std::ffi::OsString> = [
            "--headless",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--disable-dev-shm-usage",
            "--disable-features=Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions",
            "--disable-background-timer-throttling",
            "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows",
            "--metrics-recording-only",
            "--mute-audio",
            "--hide-scrollbars",
            "--password-store=basic",
            "--use-mock-keychain",
            // CDP over descriptors 3 and 4, never a port: a DevTools port on loopback has no
            // authentication, and any local user could drive the browser through it.
            "--remote-debugging-pipe",
        ]
        .iter()
        .map(Into::into)
        .collect();
        // Chromium refuses to start as root with its sandbox on; as any other user the sandbox
        // stays on (README, "Security", says why to run the daemon as one).
        if rustix::process::geteuid().is_root() {
            args.push("--no-sandbox".into());
        }
        args.push(format!("--user-data-dir={}", user_data.path().display()).into());
        args.extend(config.extra_args.iter().map(Into::into));
        args.push(BLANK.into());
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
            ("HOME".into(), user_data.path().into()),
            ("TMPDIR".into(), user_data.path().into()),
        ];
        if let Some(path) = std::env::var_os("PATH") {
            env.push(("PATH".into(), path));
        }
        let (cdp, browser_ends) =
            Cdp::over_pipes().map_err(|error| DeviceError::Unavailable(error.to_string()))?;
        let spec = ChildSpec {
            program: config.executable.clone(),
            args,
            env,
            inherit_fds: vec![
                InheritedFd {
                    fd: browser_ends.commands,
                    child_fd: BROWSER_COMMANDS_FD,
                },
                InheritedFd {
                    fd: browser_ends.messages,
                    child_fd: BROWSER_MESSAGES_FD,
                },
            ],
            ..ChildSpec::default()
        };
        let child = ManagedChild::spawn(spec, None).map_err(|error| {
            if error.is_not_found() {
                DeviceError::Unavailable(format!(
                    "Chromium was not found at `{}`; install it (apt-get install chromium) or set `--chromium`",
                    config.executable.display()
                ))
            } else {
                DeviceError::Unavailable(format!("{error}"))
            }
        })?;
        // The first answer on the pipe says the browser is up.
        if let Err(error) = cdp
            .call(None, "Browser.getVersion", json!({}), config.launch_timeout)
            .await
        {
            // Let a browser that is exiting finish, so its last words are in the tail.
            let _ = tokio::time::timeout(Duration::from_secs(2), child.exited()).await;
            return Err(DeviceError::Unavailable(format!(
                "Chromium did not start ({error}); the end of its stderr: {}",
                child
                    .stderr_tail()
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(" | ")
            )));
        }
        let pid = Some(child.pid());
        let alive = Arc::new(AtomicBool::new(true));
        let (died_tx, died) = tokio::sync::watch::channel(false);
        {
            let exited = child.exited();
            let alive = alive.clone();
            let cdp = cdp.clone();
            let id = id.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = exited => {}
                    _ = cdp.closed() => {}
                }
                alive.store(false, Ordering::SeqCst);
                debug!(device = %id, "web device died");
                let _ = died_tx.send(true);
            });
        }
        let frames = Arc::new(frames::Frames::default());
        frames.watch(&cdp);
        let data = data::DataState::new();
        data::spawn_watch(&cdp, data.clone());
        let (context_id, target_id, session_id) =
            open_page(&cdp, &profile, Orientation::Portrait, &data).await?;
        let loading = Arc::new(LoadingTabs::default());
        let notices = Arc::new(Mutex::new(Vec::new()));
        spawn_event_watch(
            &cdp,
            session_id.clone(),
            target_id.clone(),
            loading.clone(),
            notices.clone(),
        );
        let device = Arc::new(Self {
            id,
            profile,
            cdp,
            child: Mutex::new(Some(child)),
            pid,
            files: files::FilesConfig::new(user_data.path()),
            _user_data: user_data,
            state: tokio::sync::Mutex::new(PageState {
                tabs: tabs::initial(&target_id, &session_id),
                context_id: context_id.clone(),
                target_id,
                session_id,
                orientation: Orientation::Portrait,
                ref_base: 1,
                clipboard: String::new(),
                app: None,
                files: files::FilesState::default(),
            }),
            loading,
            notices,
            alive,
            died,
            frames,
            data,
        });
        tabs::watch(&device).await?;
        files::watch(&device);
        device.reset_files(&context_id).await?;
        Ok(device)
    }

    async fn session(&self) -> String {
        self.state.lock().await.session_id.clone()
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, DeviceError> {
        let session = self.session().await;
        self.cdp
            .call(Some(&session), method, params, CALL_TIMEOUT)
            .await
            .map_err(cdp_error)
    }

    /// Evaluates `expression` (which may use `window.__paddock`) and returns its JSON value,
    /// injecting the helper first when the document does not have it yet.
    async fn eval(&self, expression: &str, await_promise: bool) -> Result<Value, DeviceError> {
        let session = self.session().await;
        self.eval_on(&session, expression, await_promise).await
    }

    /// [`eval`](Self::eval) in the document of `session` (a tab's, or a frame's).
    async fn eval_on(
        &self,
        session: &str,
        expression: &str,
        await_promise: bool,
    ) -> Result<Value, DeviceError> {
        let wrapped = format!(
            "(() => {{ if (!window.__paddock) {{ {PAGE_JS} }} return ({expression}); }})()"
        );
        let result = self
            .cdp
            .call(
                Some(session),
                "Runtime.evaluate",
                json!({ "expression": wrapped, "returnByValue": true, "awaitPromise": await_promise }),
                CALL_TIMEOUT,
            )
            .await
            .map_err(cdp_error)?;
        if let Some(exception) = result.get("exceptionDetails") {
            let text = exception
                .pointer("/exception/description")
                .or_else(|| exception.get("text"))
                .and_then(Value::as_str)
                .unwrap_or("script error");
            return Err(DeviceError::Failed(format!("page script failed: {text}")));
        }
        Ok(result
            .pointer("/result/value")
            .cloned()
            .unwrap_or(Value::Null))
    }

    /// Waits until navigation has finished and the DOM has been quiet for a moment, at most
    /// `bound`. Returns whether it settled.
    async fn settle(&self, bound: Duration) -> bool {
        self.settle_since(bound, tokio::time::Instant::now()).await
    }

    /// [`settle`](Self::settle) after an action that started at `since`: a route change
    /// (history or hash) since then must have rendered before the page counts as settled.
    async fn settle_since(&self, bound: Duration, since: tokio::time::Instant) -> bool {
        let deadline = tokio::time::Instant::now() + bound;
        // Give a just-dispatched input a moment to start a navigation.
        tokio::time::sleep(Duration::from_millis(30)).await;
        loop {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return false;
            }
            let session = self.session().await;
            if self.loading.is_loading(&session) {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            let remaining = deadline - now;
            let millis = remaining.as_millis().min(10_000);
            match self
                .eval(
                    &format!(
                        "window.__paddock.settle(80, {millis}, {})",
                        since.elapsed().as_millis() + 5
                    ),
                    true,
                )
                .await
            {
                Ok(Value::Bool(true)) if !self.loading.is_loading(&session) => return true,
                Ok(Value::Bool(true)) => continue,
                Ok(_) => return false,
                // The document went away mid-wait (a navigation): try again on the new one.
                Err(DeviceError::Failed(_)) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(_) => return false,
            }
        }
    }

    async fn observe_inner(&self, options: ObserveOptions) -> Result<Observation, DeviceError> {
        let (ref_base, orientation, app) = {
            let state = self.state.lock().await;
            (state.ref_base, state.orientation, state.app.clone())
        };
        let expression = format!(
            "window.__paddock.observe({{ full: {}, refBase: {ref_base} }})",
            options.full
        );
        let raw = self.observe_document(&expression, options.full).await?;
        // After the walk, not alongside it: both run on the renderer's main thread, so
        // together they took as long (measured with `paddock-bench devices`).
        let screenshot = match options.screenshot_width {
            Some(width) => Some(
                self.screenshot_inner(Some(width), options.screenshot_quality)
                    .await?,
            ),
            None => None,
        };
        let next_ref = raw
            .get("nextRef")
            .and_then(Value::as_u64)
            .unwrap_or(ref_base);
        {
            let mut state = self.state.lock().await;
            state.ref_base = state.ref_base.max(next_ref);
        }
        let pair = |key: &str| -> [i64; 2] {
            let array = raw.get(key).and_then(Value::as_array);
            let at = |index: usize| {
                array
                    .and_then(|array| array.get(index))
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0) as i64
            };
            [at(0), at(1)]
        };
        let viewport = pair("viewport");
        let elements = raw
            .get("elements")
            .and_then(Value::as_array)
            .map(|elements| elements.iter().map(parse_element).collect())
            .unwrap_or_default();
        let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(Observation {
            device: self.id.clone(),
            platform: Platform::Web,
            profile: self.profile.name.to_owned(),
            orientation,
            viewport: [viewport[0].max(0) as u32, viewport[1].max(0) as u32],
            device_scale_factor: raw.get("dpr").and_then(Value::as_f64).unwrap_or(1.0),
            app,
            url: text("url").unwrap_or_default(),
            title: text("title").unwrap_or_default(),
            focused: text("focused"),
            modal: text("modal"),
            elements,
            scroll: pair("scroll"),
            content: pair("content"),
            elements_above: raw
                .pointer("/offscreenCount/above")
                .and_then(Value::as_u64)
                .unwrap_or(0) as u32,
            elements_below: raw
                .pointer("/offscreenCount/below")
                .and_then(Value::as_u64)
                .unwrap_or(0) as u32,
            screenshot,
            settled: None,
            notices: self
                .notices
                .lock()
                .map(|mut notices| std::mem::take(&mut *notices))
                .unwrap_or_default(),
            scroll_hints: Vec::new(),
            tabs: self.tabs_info().await,
        })
    }

    async fn screenshot_inner(
        &self,
        width: Option<u32>,
        quality: u8,
    ) -> Result<Screenshot, DeviceError> {
        let (viewport_width, viewport_height, dpr) = self.viewport().await?;
        let (viewport_width, viewport_height, dpr) = (
            viewport_width.max(1.0),
            viewport_height.max(1.0),
            dpr.max(0.1),
        );
        // By default the image is in CSS pixels, as the page lays itself out: Chromium then
        // renders the clip once at scale 1 instead of at the device scale factor and
        // downscaling, which is most of a screenshot's cost. A wider `width` (up to the device
        // pixels) asks for the sharper image.
        let target_width = width
            .map_or(viewport_width, f64::from)
            .min(viewport_width * dpr);
        // Chromium renders the clip at `scale` times the device pixel ratio, so the ratio is
        // divided out: the image is `target_width` pixels wide.
        let scale = (target_width / (viewport_width * dpr)).max(0.01);
        let result = self
            .call(
                "Page.captureScreenshot",
                json!({
                    "format": "jpeg",
                    "quality": quality.clamp(1, 100),
                    "clip": { "x": 0, "y": 0, "width": viewport_width, "height": viewport_height, "scale": scale },
                    "optimizeForSpeed": true,
                }),
            )
            .await?;
        let data = result
            .get("data")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let jpeg = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|error| DeviceError::Failed(format!("screenshot was not base64: {error}")))?;
        Ok(Screenshot {
            jpeg,
            width: (viewport_width * dpr * scale).round() as u32,
            height: (viewport_height * dpr * scale).round() as u32,
        })
    }

    /// The viewport's CSS width and height and the device pixel ratio, read without the page
    /// helper (nothing else from the page is needed).
    pub(super) async fn viewport(&self) -> Result<(f64, f64, f64), DeviceError> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": "[innerWidth, innerHeight, devicePixelRatio]", "returnByValue": true }),
            )
            .await?;
        let number = |pointer: &str| result.pointer(pointer).and_then(Value::as_f64);
        Ok((
            number("/result/value/0").unwrap_or(0.0),
            number("/result/value/1").unwrap_or(0.0),
            number("/result/value/2").unwrap_or(1.0),
        ))
    }

    /// Resolves a target to a point to act on, with typed errors for what is not actionable.
    async fn point_of(&self, target: &Target) -> Result<(f64, f64, Value), DeviceError> {
        let query = match target {
            Target::Point(point) => {
                let (width, height, _) = self.viewport().await?;
                if !(0.0..width).contains(&point.x) || !(0.0..height).contains(&point.y) {
                    return Err(DeviceError::InvalidInput(format!(
                        "point ({}, {}) is outside the {width}x{height} screen",
                        point.x, point.y
                    )));
                }
                return Ok((point.x, point.y, Value::Null));
            }
            Target::Ref(reference) => json!({ "ref": reference }),
            Target::Text(text) => json!({ "text": text }),
            Target::Id(id) => json!({ "id": id }),
        };
        let found = self.locate(&query).await?;
        if found.get("found") != Some(&Value::Bool(true)) {
            return Err(DeviceError::NotFound(match target {
                Target::Ref(reference) => format!(
                    "ref `{reference}` is not on this page (refs live as long as their element); observe again for current refs"
                ),
                Target::Text(text) => {
                    let near: Vec<String> = found
                        .get("near")
                        .and_then(Value::as_array)
                        .map(|near| {
                            near.iter()
                                .map(|other| {
                                    let field = |key: &str| {
                                        other.get(key).and_then(Value::as_str).unwrap_or_default()
                                    };
                                    format!(
                                        "{} {} \"{}\"",
                                        field("ref"),
                                        field("role"),
                                        field("name")
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    if near.is_empty() {
                        format!(
                            "no visible element shows exactly `{text}`; observe to see what is on screen"
                        )
                    } else {
                        format!(
                            "no element shows exactly `{text}` (matching is exact, ignoring case and spacing); closest: {}. Tap one by its ref",
                            near.join(", ")
                        )
                    }
                }
                Target::Id(id) => format!("no element with id `{id}`"),
                Target::Point(_) => "no element".to_owned(),
            }));
        }
        if found.get("visible") != Some(&Value::Bool(true)) {
            return Err(DeviceError::InvalidInput(format!(
                "{} is hidden and cannot be acted on",
                describe(target)
            )));
        }
        if let Some(side) = found.get("offscreen").and_then(Value::as_str) {
            let direction = match side {
                "below" => "up",
                "above" => "down",
                "right" => "left",
                _ => "right",
            };
            return Err(DeviceError::InvalidInput(format!(
                "{} is off screen ({side}); swipe {direction} first, or use swipeOn with `untilVisible`",
                describe(target)
            )));
        }
        let x = found
            .pointer("/center/0")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let y = found
            .pointer("/center/1")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        Ok((x, y, found))
    }

    async fn navigate(&self, url: &str) -> Result<(), DeviceError> {
        let result = self.call("Page.navigate", json!({ "url": url })).await?;
        if let Some(error) = result.get("errorText").and_then(Value::as_str) {
            return Err(DeviceError::Failed(format!(
                "could not open `{url}`: {error}"
            )));
        }
        Ok(())
    }

    async fn act_inner(&self, action: Action) -> Result<Option<String>, DeviceError> {
        input::perform(self, action).await
    }
}

fn describe(target: &Target) -> String {
    match target {
        Target::Ref(reference) => format!("element `{reference}`"),
        Target::Text(text) => format!("element with text `{text}`"),
        Target::Id(id) => format!("element `#{id}`"),
        Target::Point(point) => format!("point ({}, {})", point.x, point.y),
    }
}

fn parse_element(raw: &Value) -> Element {
    let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_owned);
    let bounds = raw.get("bounds").and_then(Value::as_array);
    let at = |index: usize| {
        bounds
            .and_then(|bounds| bounds.get(index))
            .and_then(Value::as_f64)
            .unwrap_or(0.0) as i64
    };
    Element {
        reference: text("ref").unwrap_or_default(),
        role: text("role").unwrap_or_default(),
        name: text("name").unwrap_or_default(),
        value: text("value"),
        states: raw
            .get("states")
            .and_then(Value::as_array)
            .map(|states| {
                states
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        level: raw
            .get("level")
            .and_then(Value::as_u64)
            .map(|level| level as u32),
        id: text("id"),
        bounds: [at(0), at(1), at(2), at(3)],
        offscreen: raw.get("offscreen") == Some(&Value::Bool(true)),
    }
}

/// The page sessions (tabs) whose main frame is loading: a tab loading in the background does
/// not hold up the settling of the active one.
#[derive(Debug, Default)]
struct LoadingTabs(Mutex<std::collections::HashSet<String>>);

impl LoadingTabs {
    fn set(&self, session: &str, loading: bool) {
        let mut tabs = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        if loading {
            tabs.insert(session.to_owned());
        } else {
            tabs.remove(session);
        }
    }

    fn is_loading(&self, session: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .contains(session)
    }

    fn clear(&self) {
        self.0
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clear();
    }
}

/// Tracks whether the tab's main frame is loading, from Page events, and answers JavaScript dialogs
/// (which would otherwise block every script on the page) while noting them for the next
/// observation.
fn spawn_event_watch(
    cdp: &Cdp,
    session_id: String,
    target_id: String,
    loading: Arc<LoadingTabs>,
    notices: Arc<Mutex<Vec<String>>>,
) {
    let mut events = cdp.events();
    let cdp = cdp.clone();
    tokio::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            };
            if event.session_id.as_deref() != Some(session_id.as_str()) {
                continue;
            }
            // The main frame of a page target has the target's id.
            let main_frame =
                event.params.get("frameId").and_then(Value::as_str) == Some(target_id.as_str());
            match event.method.as_str() {
                "Page.frameStartedLoading" | "Page.frameRequestedNavigation" if main_frame => {
                    loading.set(&session_id, true);
                }
                // Not at `Page.loadEventFired`: a page that navigates from its load handler
                // (a reload, a scripted redirect) has started the next load before that
                // event arrives; the frame's loading state ends with `frameStoppedLoading`.
                "Page.frameStoppedLoading" if main_frame => loading.set(&session_id, false),
                "Page.javascriptDialogOpening" => {
                    let kind = event
                        .params
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("dialog")
                        .to_owned();
                    let message = event
                        .params
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    if let Ok(mut notices) = notices.lock() {
                        notices.push(format!("{kind} \"{message}\" was accepted"));
                    }
                    let cdp = cdp.clone();
                    let session = session_id.clone();
                    tokio::spawn(async move {
                        let _ = cdp
                            .call(
                                Some(&session),
                                "Page.handleJavaScriptDialog",
                                json!({ "accept": true }),
                                CALL_TIMEOUT,
                            )
                            .await;
                    });
                }
                _ => {}
            }
        }
    });
}

/// Creates a browser context with one page and applies `profile`'s emulation.
async fn open_page(
    cdp: &Cdp,
    profile: &Profile,
    orientation: Orientation,
    data: &data::DataState,
) -> Result<(String, String, String), DeviceError> {
    let context = cdp
        .call(
            None,
            "Target.createBrowserContext",
            json!({ "disposeOnDetach": false }),
            CALL_TIMEOUT,
        )
        .await
        .map_err(cdp_error)?;
    let context_id = context
        .get("browserContextId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let target = cdp
        .call(
            None,
            "Target.createTarget",
            json!({ "url": BLANK, "browserContextId": context_id }),
            CALL_TIMEOUT,
        )
        .await
        .map_err(cdp_error)?;
    let target_id = target
        .get("targetId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let session_id = attach_page(cdp, &target_id, profile, orientation, data).await?;
    Ok((context_id, target_id, session_id))
}

/// Attaches to the page target `target_id` with a flattened session and readies it
/// ([`prepare_session`]); answers the session's id. Every tab is attached this way.
async fn attach_page(
    cdp: &Cdp,
    target_id: &str,
    profile: &Profile,
    orientation: Orientation,
    data: &data::DataState,
) -> Result<String, DeviceError> {
    let attached = cdp
        .call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
            CALL_TIMEOUT,
        )
        .await
        .map_err(cdp_error)?;
    let session_id = attached
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    prepare_session(cdp, &session_id, profile, orientation, data).await?;
    Ok(session_id)
}

/// Readies a page target's CDP session: page events, the in-page helper on every document,
/// and `profile`'s emulation. Every tab of a device goes through here.
async fn prepare_session(
    cdp: &Cdp,
    session_id: &str,
    profile: &Profile,
    orientation: Orientation,
    data: &data::DataState,
) -> Result<(), DeviceError> {
    let session = Some(session_id);
    cdp.call(session, "Page.enable", json!({}), CALL_TIMEOUT)
        .await
        .map_err(cdp_error)?;
    cdp.call(
        session,
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": PAGE_JS }),
        CALL_TIMEOUT,
    )
    .await
    .map_err(cdp_error)?;
    // A page's file chooser is answered by `uploadFile`, never shown.
    cdp.call(
        session,
        "Page.setInterceptFileChooserDialog",
        json!({ "enabled": true }),
        CALL_TIMEOUT,
    )
    .await
    .map_err(cdp_error)?;
    apply_emulation(cdp, session_id, profile, orientation).await?;
    frames::auto_attach(cdp, session_id).await?;
    data::prepare_session(cdp, session_id, profile, data).await
}

async fn apply_emulation(
    cdp: &Cdp,
    session_id: &str,
    profile: &Profile,
    orientation: Orientation,
) -> Result<(), DeviceError> {
    let session = Some(session_id);
    let (width, height, angle, kind) = match orientation {
        Orientation::Portrait => (profile.width, profile.height, 0, "portraitPrimary"),
        Orientation::Landscape => (profile.height, profile.width, 90, "landscapePrimary"),
    };
    cdp.call(
        session,
        "Emulation.setDeviceMetricsOverride",
        json!({
            "width": width,
            "height": height,
            "deviceScaleFactor": profile.device_scale_factor,
            "mobile": profile.mobile,
            "screenWidth": width,
            "screenHeight": height,
            "screenOrientation": { "type": kind, "angle": angle },
        }),
        CALL_TIMEOUT,
    )
    .await
    .map_err(cdp_error)?;
    cdp.call(
        session,
        "Emulation.setUserAgentOverride",
        json!({ "userAgent": profile.user_agent }),
        CALL_TIMEOUT,
    )
    .await
    .map_err(cdp_error)?;
    cdp.call(
        session,
        "Emulation.setTouchEmulationEnabled",
        json!({ "enabled": profile.touch, "maxTouchPoints": if profile.touch { 5 } else { 1 } }),
        CALL_TIMEOUT,
    )
    .await
    .map_err(cdp_error)?;
    Ok(())
}

impl Device for WebDevice {
    fn id(&self) -> &str {
        &self.id
    }

    fn platform(&self) -> Platform {
        Platform::Web
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn observe(&self, options: ObserveOptions) -> BoxFuture<'_, Result<Observation, DeviceError>> {
        Box::pin(self.observe_inner(options))
    }

    fn act(
        &self,
        action: Action,
        settle: Duration,
        observe: ObserveOptions,
    ) -> BoxFuture<'_, Result<ActionOutcome, DeviceError>> {
        Box::pin(async move {
            if !self.is_alive() {
                return Err(DeviceError::Lost("its browser exited".into()));
            }
            let started = tokio::time::Instant::now();
            let detail = self.act_inner(action).await?;
            let settled = settle.is_zero() || self.settle_since(settle, started).await;
            let mut observation = self.observe_inner(observe).await?;
            observation.settled = Some(settled);
            Ok(ActionOutcome {
                detail,
                observation,
            })
        })
    }

    fn screenshot(
        &self,
        width: Option<u32>,
        quality: u8,
    ) -> BoxFuture<'_, Result<Screenshot, DeviceError>> {
        Box::pin(self.screenshot_inner(width, quality))
    }

    fn reset(&self) -> BoxFuture<'_, Result<(), DeviceError>> {
        Box::pin(async move {
            let (old_context, old_target) = {
                let mut state = self.state.lock().await;
                // Forgotten first, so their closing is not taken for a page closing a tab.
                state.tabs.clear();
                (state.context_id.clone(), state.target_id.clone())
            };
            let _ = self
                .cdp
                .call(
                    None,
                    "Target.closeTarget",
                    json!({ "targetId": old_target }),
                    CALL_TIMEOUT,
                )
                .await;
            let _ = self
                .cdp
                .call(
                    None,
                    "Target.disposeBrowserContext",
                    json!({ "browserContextId": old_context }),
                    CALL_TIMEOUT,
                )
                .await;
            // Logs, settings and seeds belong to the session that ends here.
            self.data.clear();
            let (context_id, target_id, session_id) =
                open_page(&self.cdp, &self.profile, Orientation::Portrait, &self.data).await?;
            spawn_event_watch(
                &self.cdp,
                session_id.clone(),
                target_id.clone(),
                self.loading.clone(),
                self.notices.clone(),
            );
            if let Ok(mut notices) = self.notices.lock() {
                notices.clear();
            }
            self.frames.clear();
            self.loading.clear();
            self.reset_files(&context_id).await?;
            let mut state = self.state.lock().await;
            state.tabs = tabs::initial(&target_id, &session_id);
            state.context_id = context_id;
            state.target_id = target_id;
            state.session_id = session_id;
            state.orientation = Orientation::Portrait;
            state.clipboard.clear();
            state.app = None;
            Ok(())
        })
    }

    fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    fn died(&self) -> BoxFuture<'static, ()> {
        let mut died = self.died.clone();
        Box::pin(async move {
            let _ = died.wait_for(|dead| *dead).await;
        })
    }

    fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn as_web(&self) -> Option<&WebDevice> {
        Some(self)
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let child = self.child.lock().ok().and_then(|mut child| child.take());
            if let Some(child) = child {
                let _ = self
                    .cdp
                    .call(None, "Browser.close", json!({}), Duration::from_secs(2))
                    .await;
                if child.terminate(Duration::from_secs(3)).await.is_none() {
                    warn!(device = %self.id, "Chromium did not report an exit status");
                }
            }
            self.alive.store(false, Ordering::SeqCst);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_browser_that_exits_at_once_is_unavailable_without_waiting_for_the_timeout() {
        let config = ChromiumConfig {
            executable: "/bin/false".into(),
            launch_timeout: Duration::from_secs(600),
            extra_args: Vec::new(),
        };
        let launched = tokio::time::timeout(
            Duration::from_secs(60),
            WebDevice::launch(
                "web-test".into(),
                &config,
                crate::profile::profile("pixel7").unwrap(),
            ),
        )
        .await
        .expect("no end-of-file on the pipe when the browser exited");
        let error = launched.unwrap_err();
        assert!(matches!(error, DeviceError::Unavailable(_)), "{error:?}");
        assert!(error.to_string().contains("closed its pipe"), "{error}");
    }
}
