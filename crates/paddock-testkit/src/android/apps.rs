//! The scripted apps: what each activity shows, as the accessibility tree a real app of that
//! shape exposes on a 1080×2340 display at density 440 (2.75 px per dp). Windows start with
//! the wrappers every Android 11 activity has (DecorView `FrameLayout`, `LinearLayout`,
//! content `FrameLayout`, AppCompat's `action_bar_root`); the status and navigation bars are
//! other windows and so are never in a dump.

use super::ui::{Action, Field, Node, Paint, Rect};

/// Display pixels per dp at density 440.
const DENSITY: f64 = 2.75;

/// `dp` in pixels, rounded as Android rounds dimension pixel sizes.
pub(crate) fn dp(value: i32) -> i32 {
    (f64::from(value) * DENSITY).round() as i32
}

/// The status bar's height (24 dp).
pub(crate) const STATUS_BAR: i32 = 66;
/// The three-button navigation bar's thickness (48 dp).
pub(crate) const NAV_BAR: i32 = 132;
/// The physical panel, in its natural (portrait) orientation.
pub(crate) const PANEL_WIDTH: i32 = 1080;
pub(crate) const PANEL_HEIGHT: i32 = 2340;
/// The height of one row of the notes list.
pub(crate) const NOTE_ROW: i32 = 210;

pub(crate) const LAUNCHER: &str = "com.android.launcher3";
pub(crate) const SETTINGS: &str = "com.android.settings";
pub(crate) const NOTES: &str = "com.example.notes";
pub(crate) const BROWSER: &str = "org.chromium.webview_shell";
pub(crate) const ADB_KEYBOARD: &str = "com.android.adbkeyboard";
pub(crate) const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";
pub(crate) const LATIN_IME: &str = "com.android.inputmethod.latin/.LatinIME";

/// The logical display: its size in the current rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Display {
    pub(crate) width: i32,
    pub(crate) height: i32,
    /// `Surface.ROTATION_*`: 0 portrait, 1 landscape (90°), 2 upside down, 3 seascape.
    pub(crate) rotation: u8,
}

impl Display {
    pub(crate) fn rotated(rotation: u8) -> Self {
        if rotation % 2 == 1 {
            Self {
                width: PANEL_HEIGHT,
                height: PANEL_WIDTH,
                rotation,
            }
        } else {
            Self {
                width: PANEL_WIDTH,
                height: PANEL_HEIGHT,
                rotation,
            }
        }
    }

    pub(crate) fn bounds(&self) -> Rect {
        Rect::new(0, 0, self.width, self.height)
    }

    pub(crate) fn status_bar(&self) -> Rect {
        Rect::new(0, 0, self.width, STATUS_BAR)
    }

    /// Phones keep the navigation bar at the bottom in portrait, on the right at 90° and on the
    /// left at 270°.
    pub(crate) fn nav_bar(&self) -> Rect {
        match self.rotation {
            1 => Rect::new(self.width - NAV_BAR, 0, self.width, self.height),
            3 => Rect::new(0, 0, NAV_BAR, self.height),
            _ => Rect::new(0, self.height - NAV_BAR, self.width, self.height),
        }
    }

    /// Where an app's content goes: the display less both bars.
    pub(crate) fn app_area(&self) -> Rect {
        match self.rotation {
            1 => Rect::new(0, STATUS_BAR, self.width - NAV_BAR, self.height),
            3 => Rect::new(NAV_BAR, STATUS_BAR, self.width, self.height),
            _ => Rect::new(0, STATUS_BAR, self.width, self.height - NAV_BAR),
        }
    }
}

/// An editable text with a cursor (a char index).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TextField {
    pub(crate) text: String,
    pub(crate) cursor: usize,
}

impl TextField {
    pub(crate) fn with_text(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            cursor: text.chars().count(),
        }
    }

    fn byte_index(&self, chars: usize) -> usize {
        self.text
            .char_indices()
            .nth(chars)
            .map_or(self.text.len(), |(index, _)| index)
    }

    pub(crate) fn insert(&mut self, text: &str) {
        let at = self.byte_index(self.cursor);
        self.text.insert_str(at, text);
        self.cursor += text.chars().count();
    }

    pub(crate) fn delete_back(&mut self) {
        if self.cursor == 0 {
            return;
        }
        let start = self.byte_index(self.cursor - 1);
        let end = self.byte_index(self.cursor);
        self.text.replace_range(start..end, "");
        self.cursor -= 1;
    }

    pub(crate) fn delete_forward(&mut self) {
        if self.cursor >= self.text.chars().count() {
            return;
        }
        let start = self.byte_index(self.cursor);
        let end = self.byte_index(self.cursor + 1);
        self.text.replace_range(start..end, "");
    }

    pub(crate) fn move_to(&mut self, cursor: usize) {
        self.cursor = cursor.min(self.text.chars().count());
    }

    pub(crate) fn len(&self) -> usize {
        self.text.chars().count()
    }

    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
    }
}

/// The notes app's sign-in screen.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Login {
    pub(crate) username: TextField,
    pub(crate) password: TextField,
    pub(crate) remember: bool,
    /// "Enter a username and password" shows after a sign-in with an empty field.
    pub(crate) error: bool,
    pub(crate) focus: Option<Field>,
}

/// The notes app's list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct NoteList {
    /// How far the list is scrolled, in pixels.
    pub(crate) scroll: i32,
    pub(crate) dark_mode: bool,
    /// Notes marked by a long press (by position in the list).
    pub(crate) selected: Vec<usize>,
}

/// The WebView browser's one screen.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Browser {
    pub(crate) url: TextField,
    pub(crate) loaded: String,
    pub(crate) focused: bool,
}

/// What an activity shows, with its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Screen {
    Launcher,
    Settings { scroll: i32 },
    Login(Login),
    List(NoteList),
    Browser(Browser),
}

impl Screen {
    /// The name [`super::FakeAndroid::screen`] reports.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Launcher => "launcher",
            Self::Settings { .. } => "settings",
            Self::Login(_) => "notes-login",
            Self::List(_) => "notes-list",
            Self::Browser(_) => "browser",
        }
    }

    pub(crate) fn package(&self) -> &'static str {
        match self {
            Self::Launcher => LAUNCHER,
            Self::Settings { .. } => SETTINGS,
            Self::Login(_) | Self::List(_) => NOTES,
            Self::Browser(_) => BROWSER,
        }
    }

    /// The activity's class relative to its package, as `ComponentName.flattenToShortString`
    /// writes it.
    pub(crate) fn short_class(&self) -> &'static str {
        match self {
            Self::Launcher => ".Launcher",
            Self::Settings { .. } => ".Settings",
            Self::Login(_) => ".LoginActivity",
            Self::List(_) => ".ListActivity",
            Self::Browser(_) => ".WebViewBrowserActivity",
        }
    }

    /// Launcher3 on a phone keeps portrait whatever the rotation setting says.
    pub(crate) fn follows_rotation(&self) -> bool {
        !matches!(self, Self::Launcher)
    }

    /// The activity a component names (`com.example.notes/.LoginActivity` or the full class).
    pub(crate) fn for_component(package: &str, class: &str) -> Option<Screen> {
        let short = class.strip_prefix(package).unwrap_or(class);
        Some(match (package, short) {
            (LAUNCHER, ".Launcher") => Self::Launcher,
            (SETTINGS, ".Settings") => Self::Settings { scroll: 0 },
            (NOTES, ".LoginActivity") => Self::Login(Login::default()),
            (NOTES, ".ListActivity") => Self::List(NoteList::default()),
            (BROWSER, ".WebViewBrowserActivity") => Self::Browser(Browser::default()),
            _ => return None,
        })
    }
}

/// What the notes app keeps beyond one activity (its database and preferences).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotesData {
    pub(crate) titles: Vec<String>,
    /// The username kept by "Remember me".
    pub(crate) remembered: Option<String>,
}

impl Default for NotesData {
    fn default() -> Self {
        Self {
            titles: (1..=40).map(|n| format!("Note {n}")).collect(),
            remembered: None,
        }
    }
}

/// The list's viewport on `display`.
pub(crate) fn notes_viewport(display: &Display) -> Rect {
    let area = display.app_area();
    Rect::new(area.left, area.top + dp(56), area.right, area.bottom)
}

/// The furthest the notes list scrolls.
pub(crate) fn notes_max_scroll(display: &Display, notes: usize) -> i32 {
    let content = i32::try_from(notes).unwrap_or(i32::MAX / NOTE_ROW) * NOTE_ROW;
    (content - notes_viewport(display).height()).max(0)
}

/// The rows of the Settings home page.
const SETTINGS_ROWS: [(&str, &str); 15] = [
    (
        "Network & internet",
        "Wi‑Fi, mobile, data usage, and hotspot",
    ),
    ("Connected devices", "Bluetooth, pairing"),
    ("Apps & notifications", "Recent apps, default apps"),
    ("Battery", "100%"),
    ("Display", "Styles, wallpapers, screen timeout, font size"),
    ("Sound", "Volume, vibration, Do Not Disturb"),
    ("Storage", "24% used - 48.6 GB free"),
    ("Privacy", "Permissions, account activity, personal data"),
    ("Location", "On - 3 apps have access to location"),
    ("Security", "Screen lock, fingerprint"),
    ("Accounts", "No accounts added"),
    (
        "Accessibility",
        "Screen readers, display, interaction controls",
    ),
    (
        "Digital Wellbeing & parental controls",
        "Screen time, app timers, bedtime schedules",
    ),
    ("System", "Languages, gestures, time, backup"),
    ("About phone", "Pixel 4a"),
];
const SETTINGS_ROW: i32 = 198;

pub(crate) fn settings_viewport(display: &Display) -> Rect {
    let area = display.app_area();
    Rect::new(area.left, area.top + dp(80), area.right, area.bottom)
}

pub(crate) fn settings_max_scroll(display: &Display) -> i32 {
    let rows = i32::try_from(SETTINGS_ROWS.len()).unwrap_or(0);
    (rows * SETTINGS_ROW - settings_viewport(display).height()).max(0)
}

/// The wrappers of an AppCompat activity window around `content` (which fills the app area).
fn app_window(display: &Display, package: &str, content: Node) -> Node {
    let area = display.app_area();
    let full = display.bounds();
    Node::new("android.widget.FrameLayout", full)
        .children([
            Node::new("android.widget.LinearLayout", full).children([Node::new(
                "android.widget.FrameLayout",
                area,
            )
            .children([Node::new("android.widget.LinearLayout", area)
                .id(format!("{package}:id/action_bar_root"))
                .children([Node::new("android.widget.FrameLayout", area)
                    .id("android:id/content")
                    .children([content])])])]),
        ])
        .in_package(package)
}

fn edit_text(bounds: Rect, id: String, field: &TextField, hint: &str, focused: bool) -> Node {
    // An empty EditText reports its hint as its text.
    let text = if field.text.is_empty() {
        hint.to_owned()
    } else {
        field.text.clone()
    };
    Node::new("android.widget.EditText", bounds)
        .id(id)
        .text(text)
        .clickable()
        .long_clickable()
        .focused(focused)
        .paint(Paint::Widget)
}

/// The tree of `screen`'s window.
pub(crate) fn tree(screen: &Screen, display: &Display, notes: &NotesData) -> Node {
    match screen {
        Screen::Launcher => launcher(&Display::rotated(0)),
        Screen::Settings { scroll } => settings(display, *scroll),
        Screen::Login(login) => sign_in(display, login),
        Screen::List(list) => note_list(display, list, notes),
        Screen::Browser(browser) => browser_screen(display, browser),
    }
}

fn launcher(display: &Display) -> Node {
    let full = display.bounds();
    let id = |name: &str| format!("{LAUNCHER}:id/{name}");
    let workspace = Rect::new(0, STATUS_BAR, full.right, dp(707));
    let hotseat = Rect::new(0, dp(707), full.right, full.bottom - NAV_BAR);
    let cell = |column: i32, row: Rect| {
        let width = (full.right - 2 * dp(8)) / 5;
        let left = dp(8) + column * width;
        Rect::new(left, row.top + dp(8), left + width, row.bottom - dp(8))
    };
    let icon_row = Rect::new(0, workspace.bottom - dp(110), full.right, workspace.bottom);
    let icon = |label: &str, bounds: Rect, launches: &'static str| {
        Node::new("android.widget.TextView", bounds)
            .text(label)
            .desc(label)
            .clickable()
            .long_clickable()
            .action(Action::Launch(launches))
            .paint(Paint::Widget)
    };
    let hotseat_row = Rect::new(0, hotseat.top, full.right, hotseat.top + dp(96));
    Node::new("android.widget.FrameLayout", full)
        .children([
            Node::new("android.widget.LinearLayout", full).children([Node::new(
                "android.widget.FrameLayout",
                full,
            )
            .id("android:id/content")
            .children([Node::new("android.view.ViewGroup", full)
                .id(id("launcher"))
                .children([Node::new("android.view.ViewGroup", full)
                    .id(id("drag_layer"))
                    .paint(Paint::Solid([0x1b, 0x3a, 0x5c]))
                    .children([
                        Node::new("android.widget.ScrollView", workspace)
                            .id(id("workspace"))
                            .children([Node::new("android.view.ViewGroup", workspace).children([
                                Node::new("android.view.ViewGroup", workspace).children([
                                    icon("Notes", cell(0, icon_row), NOTES),
                                    icon("Settings", cell(1, icon_row), SETTINGS),
                                ]),
                            ])]),
                        Node::new("android.view.ViewGroup", hotseat)
                            .id(id("hotseat"))
                            .children([Node::new("android.view.ViewGroup", hotseat)
                                .children([icon("Browser", cell(2, hotseat_row), BROWSER)])]),
                    ])])])]),
        ])
        .in_package(LAUNCHER)
}

fn toolbar(area: Rect, package: &str, title: &str, extra: Vec<Node>) -> Node {
    let bar = Rect::new(area.left, area.top, area.right, area.top + dp(56));
    let title = Node::new(
        "android.widget.TextView",
        Rect::new(
            bar.left + dp(16),
            bar.top + dp(15),
            bar.left + dp(16) + dp(20) * i32::try_from(title.len()).unwrap_or(8) / 2 + dp(20),
            bar.bottom - dp(15),
        ),
    )
    .text(title)
    .paint(Paint::Widget);
    let mut children = vec![title];
    children.extend(extra);
    Node::new("android.view.ViewGroup", bar)
        .id(format!("{package}:id/toolbar"))
        .paint(Paint::Solid([0x62, 0x00, 0xee]))
        .children(children)
}

fn sign_in(display: &Display, login: &Login) -> Node {
    let area = display.app_area();
    let id = |name: &str| format!("{NOTES}:id/{name}");
    let row = |n: i32| {
        let top = area.top + dp(56) + dp(24) + n * (dp(48) + dp(12));
        Rect::new(area.left + dp(20), top, area.right - dp(20), top + dp(48))
    };
    let mut form = vec![
        edit_text(
            row(0),
            id("username"),
            &login.username,
            "Username",
            login.focus == Some(Field::Username),
        )
        .action(Action::Field(Field::Username)),
        {
            // PasswordTransformationMethod shows one dot per character.
            let dots = TextField::with_text(&"•".repeat(login.password.len()));
            edit_text(
                row(1),
                id("password"),
                &dots,
                "Password",
                login.focus == Some(Field::Password),
            )
            .password()
            .action(Action::Field(Field::Password))
        },
        Node::new("android.widget.CheckBox", row(2))
            .id(id("remember"))
            .text("Remember me")
            .checkable(login.remember)
            .clickable()
            .action(Action::RememberMe)
            .paint(Paint::Widget),
        Node::new("android.widget.Button", row(3))
            .id(id("sign_in"))
            .text("Sign in")
            .clickable()
            .action(Action::SignIn)
            .paint(Paint::Widget),
    ];
    if login.error {
        let top = row(4).top;
        form.push(
            Node::new(
                "android.widget.TextView",
                Rect::new(area.left + dp(20), top, area.right - dp(20), top + dp(22)),
            )
            .id(id("error"))
            .text("Enter a username and password")
            .paint(Paint::Widget),
        );
    }
    let content = Node::new("android.widget.LinearLayout", area)
        .id(id("login"))
        .paint(Paint::Solid([0xff, 0xff, 0xff]))
        .children([
            toolbar(area, NOTES, "Notes", Vec::new()),
            Node::new(
                "android.widget.LinearLayout",
                Rect::new(area.left, area.top + dp(56), area.right, area.bottom),
            )
            .id(id("form"))
            .children(form),
        ]);
    app_window(display, NOTES, content)
}

fn note_list(display: &Display, list: &NoteList, notes: &NotesData) -> Node {
    let area = display.app_area();
    let id = |name: &str| format!("{NOTES}:id/{name}");
    let viewport = notes_viewport(display);
    let bar_top = area.top;
    let switch = Node::new(
        "android.widget.Switch",
        Rect::new(
            area.right - dp(160),
            bar_top + dp(8),
            area.right - dp(16),
            bar_top + dp(48),
        ),
    )
    .id(id("dark_mode"))
    .text("Dark mode")
    .checkable(list.dark_mode)
    .clickable()
    .action(Action::DarkMode)
    .paint(Paint::Widget);
    // RecyclerView attaches only the rows that intersect its viewport; the first attached row
    // is child 0.
    let rows: Vec<Node> = notes
        .titles
        .iter()
        .enumerate()
        .filter_map(|(position, title)| {
            let offset = i32::try_from(position).ok()? * NOTE_ROW;
            let top = viewport.top + offset - list.scroll;
            let bounds = Rect::new(viewport.left, top, viewport.right, top + NOTE_ROW);
            let visible = bounds.intersect(&viewport);
            (!visible.is_empty()).then(|| {
                Node::new("android.widget.TextView", visible)
                    .id(id("title"))
                    .text(title.clone())
                    .clickable()
                    .long_clickable()
                    .selected(list.selected.contains(&position))
                    .action(Action::Note(position))
                    .paint(Paint::Widget)
            })
        })
        .collect();
    let background = if list.dark_mode {
        [0x12, 0x12, 0x12]
    } else {
        [0xfa, 0xfa, 0xfa]
    };
    let fab = Rect::new(
        area.right - dp(16) - dp(56),
        area.bottom - dp(16) - dp(56),
        area.right - dp(16),
        area.bottom - dp(16),
    );
    let content = Node::new("android.view.ViewGroup", area)
        .id(id("coordinator"))
        .paint(Paint::Solid(background))
        .children([
            toolbar(area, NOTES, "My notes", vec![switch]),
            Node::new("androidx.recyclerview.widget.RecyclerView", viewport)
                .id(id("notes"))
                .focusable()
                .scrollable()
                .children(rows),
            Node::new("android.widget.ImageButton", fab)
                .id(id("add"))
                .desc("Add note")
                .clickable()
                .action(Action::AddNote)
                .paint(Paint::Solid([0x03, 0xda, 0xc5])),
        ]);
    app_window(display, NOTES, content)
}

fn settings(display: &Display, scroll: i32) -> Node {
    let area = display.app_area();
    let id = |name: &str| format!("{SETTINGS}:id/{name}");
    let viewport = settings_viewport(display);
    let search = Node::new(
        "android.widget.TextView",
        Rect::new(
            area.left + dp(16),
            area.top + dp(12),
            area.right - dp(16),
            area.top + dp(68),
        ),
    )
    .id(id("search_action_bar_title"))
    .text("Search settings")
    .clickable()
    .paint(Paint::Widget);
    let rows: Vec<Node> = SETTINGS_ROWS
        .iter()
        .enumerate()
        .filter_map(|(position, (title, summary))| {
            let top = viewport.top + i32::try_from(position).ok()? * SETTINGS_ROW - scroll;
            let bounds = Rect::new(viewport.left, top, viewport.right, top + SETTINGS_ROW);
            let visible = bounds.intersect(&viewport);
            let text_left = bounds.left + dp(72);
            let title_box = Rect::new(text_left, top + dp(14), bounds.right - dp(16), top + dp(38))
                .intersect(&viewport);
            let summary_box =
                Rect::new(text_left, top + dp(38), bounds.right - dp(16), top + dp(58))
                    .intersect(&viewport);
            (!visible.is_empty()).then(|| {
                Node::new("android.widget.LinearLayout", visible)
                    .clickable()
                    .action(Action::SettingsRow)
                    .children([
                        Node::new("android.widget.RelativeLayout", visible).children([
                            Node::new("android.widget.TextView", title_box)
                                .id("android:id/title")
                                .text(*title)
                                .paint(Paint::Widget),
                            Node::new("android.widget.TextView", summary_box)
                                .id("android:id/summary")
                                .text(*summary)
                                .paint(Paint::Widget),
                        ]),
                    ])
            })
        })
        .collect();
    let content = Node::new("android.widget.LinearLayout", area)
        .id(id("settings_homepage_container"))
        .paint(Paint::Solid([0xff, 0xff, 0xff]))
        .children([
            Node::new(
                "android.widget.FrameLayout",
                Rect::new(area.left, area.top, area.right, viewport.top),
            )
            .id(id("search_bar"))
            .children([search]),
            Node::new("androidx.recyclerview.widget.RecyclerView", viewport)
                .id(id("recycler_view"))
                .focusable()
                .scrollable()
                .children(rows),
        ]);
    app_window(display, SETTINGS, content)
}

fn browser_screen(display: &Display, browser: &Browser) -> Node {
    let area = display.app_area();
    let bar = Rect::new(area.left, area.top, area.right, area.top + dp(56));
    let page = Rect::new(area.left, bar.bottom, area.right, area.bottom);
    let url_box = Rect::new(
        bar.left + dp(8),
        bar.top + dp(4),
        bar.right - dp(8),
        bar.bottom - dp(4),
    );
    let content = Node::new("android.widget.LinearLayout", area).children([
        Node::new("android.widget.LinearLayout", bar)
            .paint(Paint::Solid([0xee, 0xee, 0xee]))
            .children([edit_text(
                url_box,
                format!("{BROWSER}:id/url_field"),
                &browser.url,
                "",
                browser.focused,
            )
            .action(Action::Field(Field::Url))]),
        Node::new("android.webkit.WebView", page)
            .focusable()
            .paint(Paint::Solid([0xff, 0xff, 0xff]))
            .children([Node::new("android.view.View", page.inset(dp(16), dp(16)))
                .text(browser.loaded.clone())
                .paint(Paint::Widget)]),
    ]);
    app_window(display, BROWSER, content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::android::ui::hierarchy_xml;

    #[test]
    fn the_sign_in_screen_has_the_wrappers_and_the_form() {
        let display = Display::rotated(0);
        let root = tree(
            &Screen::Login(Login::default()),
            &display,
            &NotesData::default(),
        );
        let xml = hierarchy_xml(&root, 0, display.width, display.height);
        assert!(xml.contains("resource-id=\"android:id/content\""));
        assert!(xml.contains(
            "text=\"Username\" resource-id=\"com.example.notes:id/username\" class=\"android.widget.EditText\""
        ));
        assert!(xml.contains("bounds=\"[0,66][1080,2208]\""));
    }

    #[test]
    fn only_rows_inside_the_list_are_attached() {
        let display = Display::rotated(0);
        let list = NoteList::default();
        let root = tree(&Screen::List(list), &display, &NotesData::default());
        let titles: Vec<&str> = root
            .walk()
            .into_iter()
            .filter(|node| node.resource_id.ends_with("id/title"))
            .map(|node| node.text.as_str())
            .collect();
        assert_eq!(titles.first(), Some(&"Note 1"));
        assert_eq!(titles.len(), 10);
        assert_eq!(notes_max_scroll(&display, 40), 40 * NOTE_ROW - (2208 - 220));
    }

    #[test]
    fn text_fields_edit_at_the_cursor() {
        let mut field = TextField::with_text("héllo");
        field.move_to(1);
        field.insert("é");
        field.delete_forward();
        field.delete_back();
        assert_eq!(field.text, "hllo");
        assert_eq!(field.cursor, 1);
    }
}
