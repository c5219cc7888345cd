//! The platform-neutral device model: observations, actions and errors.

use std::fmt;
use std::time::Duration;

use crate::profile::{AppConfig, Profile};

/// A boxed, sendable future: `futures-util`'s alias, the one every crate of the workspace uses.
pub use futures_util::future::BoxFuture;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    Web,
    Android,
    Ios,
}

impl Platform {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Web => "web",
            Self::Android => "android",
            Self::Ios => "ios",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "web" => Some(Self::Web),
            "android" => Some(Self::Android),
            "ios" => Some(Self::Ios),
            _ => None,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orientation {
    Portrait,
    Landscape,
}

/// A point in CSS pixels of the viewport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// What an action aims at.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A ref from an observation (`e12`).
    Ref(String),
    /// Visible text or accessible name.
    Text(String),
    /// An element id attribute.
    Id(String),
    /// Viewport coordinates.
    Point(Point),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapKind {
    Tap,
    DoubleTap,
    LongPress,
    /// The pointer moves onto the target without pressing (desktop web profiles; on touch
    /// profiles a tap is also a hover).
    Hover,
}

/// The direction the finger moves: `Up` reveals content below, as on a phone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwipeDirection {
    Up,
    Down,
    Left,
    Right,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImeAction {
    Done,
    Go,
    Search,
    Send,
    Next,
    Previous,
}

/// A named key or button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Back,
    Forward,
    Home,
    Reload,
    Enter,
    Tab,
    Escape,
    Backspace,
    Delete,
    Space,
    ArrowUp,
    ArrowDown,
    ArrowLeft,
    ArrowRight,
    PageUp,
    PageDown,
    /// Android only: the recent-apps button.
    AppSwitch,
    /// Android only.
    VolumeUp,
    /// Android only.
    VolumeDown,
    /// Android only: the power button (turns the screen off or on).
    Power,
}

/// Something to do on a device.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Tap {
        target: Target,
        kind: TapKind,
    },
    Swipe {
        direction: SwipeDirection,
        within: Option<Target>,
        until_visible: Option<String>,
        max_swipes: u32,
    },
    Drag {
        from: Target,
        to: Target,
    },
    InputText {
        target: Option<Target>,
        text: String,
    },
    ClearText {
        target: Option<Target>,
    },
    SendKeys {
        text: String,
    },
    Press(Key),
    Ime(ImeAction),
    OpenUrl(String),
    LaunchApp(AppConfig),
    TerminateApp(AppConfig),
    Rotate(Orientation),
    ClipboardRead,
    ClipboardWrite(String),
    ClipboardCopy,
    ClipboardPaste,
    Highlight {
        targets: Vec<Target>,
        color: String,
    },
    ClearHighlights,
}

/// How to observe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObserveOptions {
    /// Every element of the document, not only those on screen.
    pub full: bool,
    /// A JPEG screenshot scaled to at most this width in CSS pixels.
    pub screenshot_width: Option<u32>,
    pub screenshot_quality: u8,
}

impl Default for ObserveOptions {
    fn default() -> Self {
        Self {
            full: false,
            screenshot_width: None,
            screenshot_quality: 70,
        }
    }
}

/// One element of an observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    pub reference: String,
    pub role: String,
    pub name: String,
    pub value: Option<String>,
    pub states: Vec<String>,
    pub level: Option<u32>,
    pub id: Option<String>,
    /// x, y, width, height in CSS pixels of the viewport.
    pub bounds: [i64; 4],
    pub offscreen: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Screenshot {
    pub jpeg: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

/// What is on the screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub device: String,
    pub platform: Platform,
    pub profile: String,
    pub orientation: Orientation,
    pub viewport: [u32; 2],
    pub device_scale_factor: f64,
    pub app: Option<String>,
    pub url: String,
    pub title: String,
    pub focused: Option<String>,
    pub modal: Option<String>,
    pub elements: Vec<Element>,
    /// Scroll position and content size in CSS pixels.
    pub scroll: [i64; 2],
    pub content: [i64; 2],
    pub elements_above: u32,
    pub elements_below: u32,
    pub screenshot: Option<Screenshot>,
    /// For observations after an action: whether the UI settled within the bound.
    pub settled: Option<bool>,
    /// What happened since the last observation that the screen does not show (an alert that
    /// was answered).
    pub notices: Vec<String>,
    /// Lines that say what scrolls and how (Android's scrollable containers), each starting
    /// `scroll:`.
    pub scroll_hints: Vec<String>,
    /// The web device's tabs, when it has more than one.
    pub tabs: Option<TabsInfo>,
}

/// How many tabs a web device has and which one is in front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TabsInfo {
    pub count: usize,
    /// 1-based, as `tabs` numbers them.
    pub active: usize,
}

impl Observation {
    /// Pixels of content below the viewport.
    pub fn more_below(&self) -> i64 {
        (self.content[1] - self.scroll[1] - i64::from(self.viewport[1])).max(0)
    }

    pub fn more_above(&self) -> i64 {
        self.scroll[1].max(0)
    }

    pub fn more_right(&self) -> i64 {
        (self.content[0] - self.scroll[0] - i64::from(self.viewport[0])).max(0)
    }
}

/// The result of an action.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionOutcome {
    /// Extra facts, such as the clipboard text or swipes taken.
    pub detail: Option<String>,
    pub observation: Observation,
}

/// Why a device operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidInput(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("the device is gone ({0}); acquire a new one with getWeb")]
    Lost(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Failed(String),
}

impl DeviceError {
    pub fn is_lost(&self) -> bool {
        matches!(self, Self::Lost(_))
    }
}

/// A query of an app's SQLite database (Android `sqlQuery`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlQuery {
    pub package: String,
    /// A file name in the app's `databases/` directory.
    pub database: String,
    pub sql: String,
    /// Opens the database writable; read-only otherwise.
    pub write: bool,
}

/// A device an agent drives.
pub trait Device: Send + Sync {
    fn id(&self) -> &str;
    fn platform(&self) -> Platform;
    fn profile(&self) -> &Profile;
    /// Observes the screen.
    fn observe(&self, options: ObserveOptions) -> BoxFuture<'_, Result<Observation, DeviceError>>;
    /// Acts, waits for the UI to settle (at most `settle`), and observes.
    fn act(
        &self,
        action: Action,
        settle: Duration,
        observe: ObserveOptions,
    ) -> BoxFuture<'_, Result<ActionOutcome, DeviceError>>;
    fn screenshot(
        &self,
        width: Option<u32>,
        quality: u8,
    ) -> BoxFuture<'_, Result<Screenshot, DeviceError>>;
    /// Returns the device to a clean state: no cookies, storage, history or open pages.
    fn reset(&self) -> BoxFuture<'_, Result<(), DeviceError>>;
    /// False once the device cannot be used any more.
    fn is_alive(&self) -> bool;
    /// Resolves when the device dies.
    fn died(&self) -> BoxFuture<'static, ()>;
    fn pid(&self) -> Option<u32>;
    fn shutdown(&self) -> BoxFuture<'_, ()>;
    /// The web device behind this one, for the web-only tools (tabs, files, storage, logs,
    /// settings, PDF, page script); `None` on every other platform.
    fn as_web(&self) -> Option<&crate::web::WebDevice> {
        None
    }
    /// Installs the app package `bytes` (an Android APK); answers the installer's verdict.
    fn install_app(&self, bytes: Vec<u8>) -> BoxFuture<'_, Result<String, DeviceError>> {
        drop(bytes);
        Box::pin(async {
            Err(DeviceError::Unsupported(
                "installing apps is for Android devices".into(),
            ))
        })
    }
    /// Runs `query` against an app's database; answers its rows as text.
    fn sql_query(&self, query: SqlQuery) -> BoxFuture<'_, Result<String, DeviceError>> {
        drop(query);
        Box::pin(async {
            Err(DeviceError::Unsupported(
                "app databases are for Android devices".into(),
            ))
        })
    }
}
