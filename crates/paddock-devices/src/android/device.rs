//! An Android device over adb: the screen from `uiautomator dump`, actions as `input`, `am`
//! and `pm` shell commands, screenshots from `screencap -p`.
//!
//! Coordinates: observations are in dp (density-independent pixels, `px * 160 / dpi`), the
//! Android counterpart of the web's CSS pixels; shell commands take physical pixels, so every
//! action converts back with [`hierarchy::center_px`].

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tracing::debug;

use super::adb::{Adb, AdbError, shell_quote};
use super::hierarchy::{self, Display, Hierarchy, RefTable};
use super::image;
use super::input::{self, Keycode};
use crate::device::{
    Action, ActionOutcome, BoxFuture, Device, DeviceError, Element, ImeAction, Observation,
    ObserveOptions, Orientation, Platform, Screenshot, SqlQuery, SwipeDirection, TapKind, Target,
};
use crate::profile::Profile;

/// The profile every Android device reports: a real screen has no emulation profile.
pub const ANDROID_PROFILE: Profile = Profile {
    name: "android",
    width: 0,
    height: 0,
    device_scale_factor: 1.0,
    mobile: true,
    touch: true,
    user_agent: "",
};

/// `uiautomator dump` fails now and then with a null root node while the screen changes
/// (mobile-mcp retries the same way); this many attempts before giving up.
const DUMP_ATTEMPTS: u32 = 5;

/// A long press holds the finger this long (`input swipe x y x y 600`).
const LONG_PRESS_MS: u32 = 600;
const SWIPE_MS: u32 = 300;
const DRAG_MS: u32 = 1000;

/// The ADBKeyboard IME (`com.android.adbkeyboard`): `input text` types only printable ASCII,
/// so other text goes through its documented broadcast when it is installed.
const ADB_KEYBOARD: &str = "com.android.adbkeyboard";
const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";

/// What a device said about itself when it joined the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AndroidFacts {
    pub serial: String,
    pub model: String,
    pub api_level: u32,
    /// Physical pixels, portrait.
    pub screen_px: [u32; 2],
    pub density_dpi: u32,
    /// The AVD name of an emulator (empty for a phone).
    pub avd_name: String,
}

/// What the last observation saw, for resolving refs and text in the next action.
#[derive(Default)]
struct Seen {
    refs: RefTable,
    elements: Vec<Element>,
    hierarchy: Option<Hierarchy>,
    rotation: u32,
    /// The last dump, with SurfaceFlinger's page-flip count read just before it.
    cached: Option<Cached>,
}

/// A dump that can answer the next observation while the screen has not been redrawn.
struct Cached {
    flips: u64,
    hierarchy: Hierarchy,
    hash: u64,
}

pub struct AndroidDevice {
    facts: AndroidFacts,
    adb: Adb,
    seen: tokio::sync::Mutex<Seen>,
    /// Packages this session launched, force-stopped at reset.
    launched: Mutex<BTreeSet<String>>,
    alive: AtomicBool,
    died: watch::Sender<bool>,
    /// Whether the reset force-stops the apps the session launched.
    stop_launched_apps: bool,
}

impl std::fmt::Debug for AndroidDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AndroidDevice")
            .field("serial", &self.facts.serial)
            .finish_non_exhaustive()
    }
}

fn adb_error(serial: &str, error: AdbError) -> DeviceError {
    match error {
        AdbError::NoServer { .. } => DeviceError::Unavailable(error.to_string()),
        error if error.is_device_gone() => {
            DeviceError::Lost(format!("Android device `{serial}` is gone: {error}"))
        }
        error => DeviceError::Failed(error.to_string()),
    }
}

/// The first line of `text`, trimmed.
fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_owned()
}

impl AndroidDevice {
    /// Asks the device `serial` for its model, API level and screen.
    pub async fn probe(adb: &Adb, serial: &str) -> Result<AndroidFacts, DeviceError> {
        let shell = |command: &'static str| async move {
            adb.shell(serial, command)
                .await
                .map(|output| output.stdout_text())
                .map_err(|error| adb_error(serial, error))
        };
        let booted = shell("getprop sys.boot_completed").await?;
        if first_line(&booted) != "1" {
            return Err(DeviceError::Unavailable(format!(
                "Android device `{serial}` is still booting"
            )));
        }
        let (model, api, size, density, avd) = tokio::try_join!(
            shell("getprop ro.product.model"),
            shell("getprop ro.build.version.sdk"),
            shell("wm size"),
            shell("wm density"),
            shell("getprop ro.boot.qemu.avd_name"),
        )?;
        let screen_px = parse_wm_size(&size).ok_or_else(|| {
            DeviceError::Failed(format!(
                "`wm size` on `{serial}` answered `{}`",
                first_line(&size)
            ))
        })?;
        let density_dpi = parse_wm_density(&density).ok_or_else(|| {
            DeviceError::Failed(format!(
                "`wm density` on `{serial}` answered `{}`",
                first_line(&density)
            ))
        })?;
        Ok(AndroidFacts {
            serial: serial.to_owned(),
            model: first_line(&model),
            api_level: first_line(&api).parse().unwrap_or(0),
            screen_px,
            density_dpi,
            avd_name: first_line(&avd),
        })
    }

    pub fn new(adb: Adb, facts: AndroidFacts, stop_launched_apps: bool) -> Arc<Self> {
        Arc::new(Self {
            facts,
            adb,
            seen: tokio::sync::Mutex::new(Seen::default()),
            launched: Mutex::new(BTreeSet::new()),
            alive: AtomicBool::new(true),
            died: watch::Sender::new(false),
            stop_launched_apps,
        })
    }

    pub fn facts(&self) -> &AndroidFacts {
        &self.facts
    }

    /// The pool saw the device leave adb (unplugged, offline, emulator gone).
    pub fn mark_lost(&self) {
        self.alive.store(false, Ordering::SeqCst);
        self.died.send_replace(true);
    }

    fn serial(&self) -> &str {
        &self.facts.serial
    }

    fn fail(&self, error: AdbError) -> DeviceError {
        let error = adb_error(self.serial(), error);
        if error.is_lost() {
            self.mark_lost();
        }
        error
    }

    /// Runs a shell command; a non-zero exit is an error carrying its output.
    async fn run(&self, command: &str) -> Result<String, DeviceError> {
        debug!(serial = %self.serial(), %command, "adb shell");
        let output = self
            .adb
            .shell(self.serial(), command)
            .await
            .map_err(|error| self.fail(error))?;
        if output.exit != 0 {
            let said = if output.stderr.is_empty() {
                output.stdout_text()
            } else {
                output.stderr_text()
            };
            return Err(DeviceError::Failed(format!(
                "`{}` failed on the device (exit {}): {}",
                command
                    .split_whitespace()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" "),
                output.exit,
                first_line(&said)
            )));
        }
        Ok(output.stdout_text())
    }

    /// The screen in its natural orientation (what the hierarchy functions take).
    fn natural_display(&self) -> Display {
        let [width_px, height_px] = self.facts.screen_px;
        Display {
            width_px,
            height_px,
            density_dpi: self.facts.density_dpi,
        }
    }

    /// The screen as `rotation` turns it.
    fn display(&self, rotation: u32) -> Display {
        self.natural_display().rotated(rotation)
    }

    /// The screen's hierarchy and its fingerprint, retrying the null-root failures of
    /// `uiautomator dump`.
    async fn dump(&self) -> Result<(Hierarchy, u64), DeviceError> {
        let mut last = String::new();
        for _ in 0..DUMP_ATTEMPTS {
            let bytes = self
                .adb
                .exec(self.serial(), "uiautomator dump /dev/tty")
                .await
                .map_err(|error| self.fail(error))?;
            let text = String::from_utf8_lossy(&bytes);
            let Some(start) = text.find("<?xml") else {
                last = first_line(&text);
                continue;
            };
            let end = text
                .rfind("</hierarchy>")
                .map(|end| end + "</hierarchy>".len());
            let Some(end) = end else {
                last = "a truncated hierarchy".to_owned();
                continue;
            };
            let document = &text[start..end];
            match hierarchy::parse(document) {
                Ok(parsed) => return Ok((parsed, hierarchy::screen_hash(document))),
                Err(error) => last = error.to_string(),
            }
        }
        Err(DeviceError::Failed(format!(
            "`uiautomator dump` gave no hierarchy after {DUMP_ATTEMPTS} attempts ({last})"
        )))
    }

    /// SurfaceFlinger's page-flip count (`service call SurfaceFlinger 1013`, a debug
    /// transaction of Android's compositor): it grows with every frame shown, so an unchanged
    /// count means an unchanged screen. `None` when the device does not answer it.
    async fn page_flips(&self) -> Option<u64> {
        let output = self
            .adb
            .shell(self.serial(), "service call SurfaceFlinger 1013")
            .await
            .ok()?;
        if output.exit != 0 {
            return None;
        }
        parse_page_flips(&output.stdout_text())
    }

    /// The screen now: the cached dump when the screen has not been redrawn since it was
    /// taken (and `reuse` allows it), else a fresh dump, which becomes the cache.
    async fn screen(&self, reuse: bool) -> Result<(Hierarchy, u64), DeviceError> {
        let flips = self.page_flips().await;
        if reuse && let Some(flips) = flips {
            let seen = self.seen.lock().await;
            if let Some(cached) = seen.cached.as_ref().filter(|cached| cached.flips == flips) {
                return Ok((cached.hierarchy.clone(), cached.hash));
            }
        }
        let (hierarchy, hash) = self.dump().await?;
        let mut seen = self.seen.lock().await;
        seen.cached = flips.map(|flips| Cached {
            flips,
            hierarchy: hierarchy.clone(),
            hash,
        });
        Ok((hierarchy, hash))
    }

    /// The focused window's package and activity from `dumpsys window`.
    async fn focus(&self) -> Result<Option<(String, String)>, DeviceError> {
        // Android 11 prints the focus lines in the `displays` section (and in the whole dump),
        // no longer under `windows`.
        let text = self.run("dumpsys window displays").await?;
        Ok(parse_focus(&text))
    }

    async fn observe_inner(&self, options: ObserveOptions) -> Result<Observation, DeviceError> {
        let ((hierarchy, _), focus) = tokio::try_join!(self.screen(true), self.focus())?;
        let natural = self.natural_display();
        let display = natural.rotated(hierarchy.rotation);
        let mut seen = self.seen.lock().await;
        let elements = hierarchy::elements(&hierarchy, &natural, &mut seen.refs);
        let scale = display.scale();
        let scroll_hints = hierarchy::scroll_containers(&hierarchy, &natural)
            .iter()
            .map(|container| scroll_notice(container, &elements))
            .collect();
        let orientation = if hierarchy.rotation % 2 == 1 {
            Orientation::Landscape
        } else {
            Orientation::Portrait
        };
        let (app, activity) = match focus {
            Some((package, activity)) => (Some(package), activity),
            None => (hierarchy.package.clone(), String::new()),
        };
        let url = match (&app, activity.is_empty()) {
            (Some(package), false) => format!("{package}/{activity}"),
            (Some(package), true) => package.clone(),
            (None, _) => String::new(),
        };
        let focused = elements
            .iter()
            .find(|element| element.states.iter().any(|state| state == "focused"))
            .map(|element| element.reference.clone());
        seen.elements = elements.clone();
        seen.rotation = hierarchy.rotation;
        seen.hierarchy = Some(hierarchy);
        drop(seen);
        let screenshot = match options.screenshot_width {
            Some(width) => Some(
                self.screenshot_inner(Some(width), options.screenshot_quality)
                    .await?,
            ),
            None => None,
        };
        Ok(Observation {
            device: self.facts.serial.clone(),
            platform: Platform::Android,
            profile: ANDROID_PROFILE.name.to_owned(),
            orientation,
            viewport: [
                (f64::from(display.width_px) / scale).round() as u32,
                (f64::from(display.height_px) / scale).round() as u32,
            ],
            device_scale_factor: scale,
            app,
            url,
            title: self.facts.model.clone(),
            focused,
            modal: None,
            elements,
            scroll: [0, 0],
            content: [0, 0],
            elements_above: 0,
            elements_below: 0,
            screenshot,
            settled: None,
            notices: Vec::new(),
            scroll_hints,
            tabs: None,
        })
    }

    async fn screenshot_inner(
        &self,
        width: Option<u32>,
        quality: u8,
    ) -> Result<Screenshot, DeviceError> {
        let png = self
            .adb
            .exec(self.serial(), "screencap -p")
            .await
            .map_err(|error| self.fail(error))?;
        let display = self.display(self.seen.lock().await.rotation);
        let scale = display.scale();
        // `width` is in dp like everything else the caller sees; the image is at most that
        // many pixels wide, never wider than the screen.
        let wanted = width.unwrap_or(u32::MAX);
        tokio::task::spawn_blocking(move || image::png_to_jpeg(&png, wanted, quality, scale))
            .await
            .map_err(|error| DeviceError::Failed(format!("screenshot encoding: {error}")))?
    }

    /// The centre of `target` in physical pixels, from the last observation.
    async fn point_px(&self, target: &Target) -> Result<(i64, i64), DeviceError> {
        let seen = self.seen.lock().await;
        let display = self.display(seen.rotation);
        match target {
            Target::Point(point) => {
                let scale = display.scale();
                let width = f64::from(display.width_px) / scale;
                let height = f64::from(display.height_px) / scale;
                if !(0.0..width).contains(&point.x) || !(0.0..height).contains(&point.y) {
                    return Err(DeviceError::InvalidInput(format!(
                        "point ({}, {}) is outside the {}x{} screen",
                        point.x,
                        point.y,
                        width.round(),
                        height.round()
                    )));
                }
                Ok((
                    (point.x * scale).round() as i64,
                    (point.y * scale).round() as i64,
                ))
            }
            other => {
                let element = crate::matching::find(&seen.elements, other, |resource, wanted| {
                    hierarchy::id_matches(resource, wanted)
                })?;
                Ok(hierarchy::center_px(element.bounds, &display))
            }
        }
    }

    /// Makes sure there is an observation to resolve targets against.
    async fn ensure_seen(&self) -> Result<(), DeviceError> {
        if self.seen.lock().await.hierarchy.is_none() {
            self.observe_inner(ObserveOptions::default()).await?;
        }
        Ok(())
    }

    async fn tap_px(&self, (x, y): (i64, i64), kind: TapKind) -> Result<(), DeviceError> {
        let command = match kind {
            TapKind::Tap => format!("input tap {x} {y}"),
            TapKind::DoubleTap => format!("input tap {x} {y}; input tap {x} {y}"),
            TapKind::LongPress => format!("input swipe {x} {y} {x} {y} {LONG_PRESS_MS}"),
            TapKind::Hover => {
                return Err(DeviceError::Unsupported(
                    "`hover` is for web devices; Android has no pointer to hover with".into(),
                ));
            }
        };
        self.run(&command).await.map(drop)
    }

    /// Focuses the field `target` (or keeps the current focus) before typing.
    async fn focus_field(&self, target: Option<&Target>) -> Result<Option<Element>, DeviceError> {
        match target {
            Some(target) => {
                let point = self.point_px(target).await?;
                let element = {
                    let seen = self.seen.lock().await;
                    crate::matching::find(&seen.elements, target, hierarchy::id_matches)
                        .ok()
                        .cloned()
                };
                self.tap_px(point, TapKind::Tap).await?;
                Ok(element)
            }
            None => {
                let seen = self.seen.lock().await;
                Ok(seen
                    .elements
                    .iter()
                    .find(|element| element.states.iter().any(|state| state == "focused"))
                    .cloned())
            }
        }
    }

    async fn has_adb_keyboard(&self) -> Result<bool, DeviceError> {
        let packages = self
            .run(&format!("pm list packages {ADB_KEYBOARD}"))
            .await?;
        Ok(packages
            .lines()
            .any(|line| line.trim() == format!("package:{ADB_KEYBOARD}")))
    }

    async fn type_text(&self, text: &str) -> Result<(), DeviceError> {
        if let Some(command) = input::input_text_command(text) {
            return self.run(&command).await.map(drop);
        }
        if !self.has_adb_keyboard().await? {
            return Err(DeviceError::Unsupported(format!(
                "`input text` types printable ASCII only, and this text has other characters; install ADBKeyboard (`{ADB_KEYBOARD}`) on the device to type any Unicode text"
            )));
        }
        self.run(&format!("ime set {ADB_KEYBOARD_IME}")).await?;
        self.run(&input::adb_keyboard_broadcast(text))
            .await
            .map(drop)
    }

    async fn swipe(
        &self,
        direction: SwipeDirection,
        within: Option<&Target>,
        until_visible: Option<&str>,
        max_swipes: u32,
    ) -> Result<Option<String>, DeviceError> {
        let area = {
            let seen = self.seen.lock().await;
            let display = self.display(seen.rotation);
            let bounds = match within {
                Some(target) => {
                    crate::matching::find(&seen.elements, target, hierarchy::id_matches)?.bounds
                }
                None => {
                    let scale = display.scale();
                    [
                        0,
                        0,
                        (f64::from(display.width_px) / scale) as i64,
                        (f64::from(display.height_px) / scale) as i64,
                    ]
                }
            };
            (bounds, display)
        };
        let (bounds, display) = area;
        let [x1, y1, x2, y2] = input::swipe_line(bounds, direction, &display);
        let command = format!("input swipe {x1} {y1} {x2} {y2} {SWIPE_MS}");
        let Some(wanted) = until_visible else {
            self.run(&command).await?;
            return Ok(None);
        };
        let total = u64::from(max_swipes);
        for swipe in 0..=max_swipes {
            let observation = self.observe_inner(ObserveOptions::default()).await?;
            if crate::matching::visible_text(&observation.elements, wanted) {
                return Ok(Some(format!(
                    "`{wanted}` is visible after {swipe} swipe(s)"
                )));
            }
            if swipe == max_swipes {
                break;
            }
            self.run(&command).await?;
            crate::progress::report(
                u64::from(swipe) + 1,
                Some(total),
                format!("swipe {} of at most {max_swipes}", swipe + 1),
            );
        }
        Err(DeviceError::NotFound(format!(
            "`{wanted}` did not appear after {max_swipes} swipes {}",
            input::direction_name(direction)
        )))
    }

    async fn act_inner(&self, action: Action) -> Result<Option<String>, DeviceError> {
        match action {
            Action::Tap { target, kind } => {
                let point = self.point_px(&target).await?;
                self.tap_px(point, kind).await?;
                Ok(None)
            }
            Action::Swipe {
                direction,
                within,
                until_visible,
                max_swipes,
            } => {
                self.swipe(
                    direction,
                    within.as_ref(),
                    until_visible.as_deref(),
                    max_swipes,
                )
                .await
            }
            Action::Drag { from, to } => {
                let (x1, y1) = self.point_px(&from).await?;
                let (x2, y2) = self.point_px(&to).await?;
                self.run(&format!("input draganddrop {x1} {y1} {x2} {y2} {DRAG_MS}"))
                    .await?;
                Ok(None)
            }
            Action::InputText { target, text } => {
                self.focus_field(target.as_ref()).await?;
                self.type_text(&text).await?;
                Ok(None)
            }
            Action::SendKeys { text } => {
                self.type_text(&text).await?;
                Ok(None)
            }
            Action::ClearText { target } => {
                let field = self.focus_field(target.as_ref()).await?;
                let length = field
                    .as_ref()
                    .and_then(|field| field.value.as_ref())
                    .map_or(0, |value| value.chars().count());
                // The end of the field, then one delete per character it holds.
                self.run(&input::clear_command(length)).await?;
                Ok(None)
            }
            Action::Press(key) => {
                let code = input::keycode(key).ok_or_else(|| {
                    DeviceError::Unsupported(format!(
                        "{key:?} has no Android key; use back, home, enter or a direction"
                    ))
                })?;
                self.run(&format!("input keyevent {}", code.0)).await?;
                Ok(None)
            }
            Action::Ime(action) => {
                let code = match action {
                    ImeAction::Next => Keycode::TAB,
                    ImeAction::Previous => {
                        return Err(DeviceError::Unsupported(
                            "Android has no `previous` IME key; tap the previous field".into(),
                        ));
                    }
                    ImeAction::Done | ImeAction::Go | ImeAction::Search | ImeAction::Send => {
                        Keycode::ENTER
                    }
                };
                self.run(&format!("input keyevent {}", code.0)).await?;
                Ok(None)
            }
            Action::OpenUrl(url) => {
                input::check_url(&url)?;
                self.run(&format!(
                    "am start -a android.intent.action.VIEW -d {}",
                    shell_quote(&url)
                ))
                .await?;
                Ok(None)
            }
            Action::LaunchApp(app) => {
                let package = input::check_package(&app.id)?;
                self.run(&format!(
                    "monkey -p {package} -c android.intent.category.LAUNCHER 1"
                ))
                .await?;
                if let Ok(mut launched) = self.launched.lock() {
                    launched.insert(package.to_owned());
                }
                Ok(None)
            }
            Action::TerminateApp(app) => {
                let package = input::check_package(&app.id)?;
                self.run(&format!("am force-stop {package}")).await?;
                Ok(None)
            }
            Action::Rotate(orientation) => {
                let rotation = match orientation {
                    Orientation::Portrait => 0,
                    Orientation::Landscape => 1,
                };
                self.run(&format!(
                    "settings put system accelerometer_rotation 0; settings put system user_rotation {rotation}"
                ))
                .await?;
                Ok(None)
            }
            // The system clipboard: copy and paste are key events the focused app handles
            // (KEYCODE_COPY, KEYCODE_PASTE). Reading or setting it from a shell is not
            // possible on Android 11 (no shell command; apps in the background may not read it).
            Action::ClipboardCopy => {
                self.run(&format!("input keyevent {}", Keycode::COPY.0)).await?;
                Ok(Some(
                    "copied the selection to the clipboard (Android does not let a shell read it back)"
                        .to_owned(),
                ))
            }
            Action::ClipboardPaste => {
                self.run(&format!("input keyevent {}", Keycode::PASTE.0)).await?;
                Ok(None)
            }
            Action::ClipboardRead | Action::ClipboardWrite(_) => Err(DeviceError::Unsupported(
                "Android 11 has no shell command to read or set the clipboard; on Android `clipboard` offers `copy` and `paste` (key events to the focused app), and `inputText` types text directly".into(),
            )),
            Action::Highlight { .. } | Action::ClearHighlights => Err(DeviceError::Unsupported(
                "highlights draw on web pages only".into(),
            )),
        }
    }

    /// Waits until two dumps in a row show the same screen, at most `bound`. The first dump
    /// goes alone; each later one is preceded by a page-flip read, so the dump that confirms
    /// the screen is still becomes the cache the next observation answers from.
    async fn settle(&self, bound: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + bound;
        let Ok((_, mut last)) = self.dump().await else {
            return false;
        };
        while tokio::time::Instant::now() < deadline {
            let Ok((_, hash)) = self.screen(false).await else {
                return false;
            };
            if hash == last {
                return true;
            }
            last = hash;
        }
        false
    }
}

impl Device for AndroidDevice {
    fn id(&self) -> &str {
        &self.facts.serial
    }

    fn platform(&self) -> Platform {
        Platform::Android
    }

    fn profile(&self) -> &Profile {
        &ANDROID_PROFILE
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
            if needs_screen(&action) {
                self.ensure_seen().await?;
            }
            let detail = self.act_inner(action).await?;
            let settled = self.settle(settle).await;
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
            let launched: Vec<String> = self
                .launched
                .lock()
                .map(|mut launched| std::mem::take(&mut *launched).into_iter().collect())
                .unwrap_or_default();
            if self.stop_launched_apps {
                for package in launched {
                    self.run(&format!("am force-stop {package}")).await?;
                }
            }
            self.run(&format!("input keyevent {}", Keycode::HOME.0))
                .await?;
            *self.seen.lock().await = Seen::default();
            Ok(())
        })
    }

    fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    fn died(&self) -> BoxFuture<'static, ()> {
        let mut died = self.died.subscribe();
        Box::pin(async move {
            let _ = died.wait_for(|died| *died).await;
        })
    }

    fn pid(&self) -> Option<u32> {
        None
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        // A phone is not ours to switch off; the pool only stops using it.
        Box::pin(async {})
    }

    fn install_app(&self, bytes: Vec<u8>) -> BoxFuture<'_, Result<String, DeviceError>> {
        Box::pin(async move {
            let mut name = [0u8; 8];
            getrandom::fill(&mut name)
                .map_err(|error| DeviceError::Failed(format!("OS random source: {error}")))?;
            let hex: String = name.iter().map(|byte| format!("{byte:02x}")).collect();
            let remote = format!("/data/local/tmp/paddock-{hex}.apk");
            self.adb
                .push(self.serial(), &bytes, &remote, 0o644)
                .await
                .map_err(|error| self.fail(error))?;
            let installed = self
                .adb
                .shell(self.serial(), &format!("pm install -r {remote}"))
                .await
                .map_err(|error| self.fail(error));
            // The copy goes whatever the verdict.
            let _ = self.run(&format!("rm -f {remote}")).await;
            let output = installed?;
            let said = format!("{}{}", output.stdout_text(), output.stderr_text());
            let verdict = said
                .lines()
                .map(str::trim)
                .find(|line| line.starts_with("Success") || line.starts_with("Failure"))
                .unwrap_or_else(|| said.trim())
                .to_owned();
            if output.exit != 0 || !verdict.starts_with("Success") {
                return Err(DeviceError::Failed(format!(
                    "the installer refused the APK: {verdict}"
                )));
            }
            Ok(verdict)
        })
    }

    fn sql_query(&self, query: SqlQuery) -> BoxFuture<'_, Result<String, DeviceError>> {
        Box::pin(async move {
            let package = input::check_package(&query.package)?;
            let database_ok = !query.database.is_empty()
                && !query.database.starts_with('.')
                && query.database.chars().all(|character| {
                    character.is_ascii_alphanumeric() || "._-".contains(character)
                });
            if !database_ok {
                return Err(DeviceError::InvalidInput(format!(
                    "`{}` is not a database file name (letters, digits, `.`, `_`, `-`)",
                    query.database
                )));
            }
            let mode = if query.write { "" } else { "-readonly " };
            let command = format!(
                "run-as {package} sqlite3 {mode}databases/{} {}",
                query.database,
                shell_quote(&query.sql)
            );
            let output = self
                .adb
                .shell(self.serial(), &command)
                .await
                .map_err(|error| self.fail(error))?;
            let said = format!("{}{}", output.stderr_text(), output.stdout_text());
            if said.contains("not debuggable") {
                return Err(DeviceError::InvalidInput(format!(
                    "`{package}` is not debuggable, so its databases cannot be read (`run-as` refuses it); sqlQuery works on debug builds"
                )));
            }
            if said.contains("unknown package") {
                return Err(DeviceError::NotFound(format!(
                    "`{package}` is not installed on the device"
                )));
            }
            if output.exit != 0 {
                return Err(DeviceError::Failed(format!(
                    "sqlite3 failed (exit {}): {}",
                    output.exit,
                    first_line(&said)
                )));
            }
            Ok(output.stdout_text())
        })
    }
}

/// Whether `action` resolves targets against the screen (so an observation must exist first).
fn needs_screen(action: &Action) -> bool {
    let element = |target: &Target| !matches!(target, Target::Point(_));
    match action {
        Action::Tap { target, .. } => element(target),
        Action::Swipe { within, .. } => within.as_ref().is_some_and(element),
        Action::Drag { from, to } => element(from) || element(to),
        Action::InputText { .. } | Action::ClearText { .. } => true,
        _ => false,
    }
}

/// The `scroll:` line of a scrollable container: which element scrolls, which way, and what
/// is at its edges now.
fn scroll_notice(container: &hierarchy::ScrollContainer, elements: &[Element]) -> String {
    let name = elements
        .iter()
        .find(|element| element.bounds == container.bounds)
        .map(|element| format!("{} {}", element.reference, element.role))
        .unwrap_or_else(|| {
            let [x, y, width, height] = container.bounds;
            format!("the area @{x},{y} {width}x{height}")
        });
    let (axis, more) = match container.axis {
        hierarchy::ScrollAxis::Vertical => (
            "vertically",
            "swipe up for what is below, down for what is above",
        ),
        hierarchy::ScrollAxis::Horizontal => ("horizontally", "swipe left or right"),
    };
    let mut line = format!("scroll: {name} scrolls {axis} ({more}");
    if let (Some(first), Some(last)) = (&container.first_visible, &container.last_visible) {
        line.push_str(&format!("; showing \"{first}\" to \"{last}\""));
    }
    line.push(')');
    line
}

/// The count in `Result: Parcel(0001e240    '@...')`: SurfaceFlinger's debug transactions
/// write their answer with no status word, so the first word is the count. An error reply
/// (`Parcel(Error: 0xffffffb6 …)`) is `None`.
pub fn parse_page_flips(text: &str) -> Option<u64> {
    let inside = text.split_once("Parcel(")?.1;
    let word = inside.split_whitespace().next()?.trim_end_matches(')');
    u64::from_str_radix(word, 16).ok()
}

/// `Physical size: 1080x2340` (and an `Override size:` line that wins when present).
pub fn parse_wm_size(text: &str) -> Option<[u32; 2]> {
    let mut size = None;
    for line in text.lines() {
        let value = line
            .strip_prefix("Physical size:")
            .or_else(|| line.strip_prefix("Override size:"));
        if let Some(value) = value {
            let (width, height) = value.trim().split_once('x')?;
            size = Some([width.trim().parse().ok()?, height.trim().parse().ok()?]);
        }
    }
    size
}

/// `Physical density: 440` (an `Override density:` line wins).
pub fn parse_wm_density(text: &str) -> Option<u32> {
    let mut density = None;
    for line in text.lines() {
        let value = line
            .strip_prefix("Physical density:")
            .or_else(|| line.strip_prefix("Override density:"));
        if let Some(value) = value {
            density = Some(value.trim().parse().ok()?);
        }
    }
    density
}

/// The package and activity of `mCurrentFocus=Window{… u0 PACKAGE/ACTIVITY}` (the focused
/// window), or of `mFocusedApp=ActivityRecord{… u0 PACKAGE/ACTIVITY t12}` when no window has
/// focus.
pub fn parse_focus(text: &str) -> Option<(String, String)> {
    let component = |line: &str| -> Option<(String, String)> {
        let inner = line.split_once('{')?.1.trim_end_matches('}');
        let word = inner
            .split_whitespace()
            .find(|word| word.contains('/') && !word.starts_with('#'))?;
        let (package, activity) = word.trim_end_matches('}').split_once('/')?;
        let activity = activity
            .strip_prefix(package)
            .map(|rest| rest.to_owned())
            .unwrap_or_else(|| activity.to_owned());
        Some((package.to_owned(), activity))
    };
    let mut focused_app = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("mCurrentFocus=") {
            if let Some(found) = component(rest) {
                return Some(found);
            }
        } else if let Some(rest) = line.strip_prefix("mFocusedApp=") {
            focused_app = focused_app.or_else(|| component(rest));
        }
    }
    focused_app
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_flip_counts_parse() {
        assert_eq!(
            parse_page_flips("Result: Parcel(0001e240    '@...')\n"),
            Some(123_456)
        );
        assert_eq!(
            parse_page_flips("Result: Parcel(Error: 0xffffffb6 \"Not a data message\")"),
            None
        );
        assert_eq!(parse_page_flips("service: not found"), None);
    }

    #[test]
    fn wm_answers_parse() {
        assert_eq!(
            parse_wm_size("Physical size: 1080x2340\n"),
            Some([1080, 2340])
        );
        assert_eq!(
            parse_wm_size("Physical size: 1080x2340\nOverride size: 720x1560\n"),
            Some([720, 1560])
        );
        assert_eq!(parse_wm_size("nope"), None);
        assert_eq!(parse_wm_density("Physical density: 440\n"), Some(440));
        assert_eq!(parse_wm_density("Physical density: x\n"), None);
    }

    #[test]
    fn focus_comes_from_the_current_window_then_the_focused_app() {
        let dump = "  mCurrentFocus=Window{a1b2c3 u0 com.example.notes/com.example.notes.LoginActivity}\n  mFocusedApp=ActivityRecord{d4e5 u0 com.example.notes/.LoginActivity t12}\n";
        assert_eq!(
            parse_focus(dump),
            Some(("com.example.notes".into(), ".LoginActivity".into()))
        );
        let no_window = "  mCurrentFocus=null\n  mFocusedApp=ActivityRecord{d4e5 u0 com.android.launcher3/.Launcher t1}\n";
        assert_eq!(
            parse_focus(no_window),
            Some(("com.android.launcher3".into(), ".Launcher".into()))
        );
        assert_eq!(parse_focus("nothing here"), None);
    }
}
