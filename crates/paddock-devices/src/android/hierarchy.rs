//! Reading Android's `uiautomator dump`: the XML of the accessibility tree that
//! `AccessibilityNodeInfoDumper` writes, parsed into [`Hierarchy`] and mapped onto Paddock's
//! platform-neutral [`Element`]s with refs that stay stable while the screen changes.
//!
//! # The format
//! One line, `<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>`, then
//! `<hierarchy rotation="R">` holding nested `<node>` elements in tree (document) order. Each
//! node carries `index`, `text`, `resource-id`, `class`, `package`, `content-desc`, ten flags
//! (`checkable`, `checked`, `clickable`, `enabled`, `focusable`, `focused`, `scrollable`,
//! `long-clickable`, `password`, `selected`) and `bounds="[x1,y1][x2,y2]"`: the node's visible
//! part in device pixels of the current rotation. Only nodes visible to the user are dumped, so
//! a list's off-screen rows are never there. Android 12 and later may add `hint`; Android 11
//! does not, and there an empty text field reports its hint as its `text`. `NAF`, `index` and
//! other attributes are ignored. [`parse`] also accepts the noise that `uiautomator dump
//! /dev/tty` prints around the document (`UI hierchary dumped to: /dev/tty`), and names the
//! two failures it prints instead of a document (no window to dump; the screen never idle).
//!
//! # Mapping rules ([`elements`])
//! **Roles** come from the widget class's simple name (after the last `.`), matched by suffix so
//! that AndroidX, Material and app subclasses map like their platform base:
//! `…Button`, `ImageButton`, `FloatingActionButton`, `Chip` → `button`; `EditText`,
//! `TextInputEditText`, `AutoCompleteTextView` → `textbox` (`SearchView$SearchAutoComplete` →
//! `searchbox`); `CheckBox`, and `CheckedTextView` when checkable → `checkbox`; `Switch`,
//! `SwitchCompat`, `SwitchMaterial`, `ToggleButton` → `switch`; `RadioButton` → `radio`;
//! `ImageView` → `img` (as on the web); `TextView` → `text`; `RecyclerView`, `ListView`, `GridView` → `list`;
//! `ScrollView`, `HorizontalScrollView`, `NestedScrollView`, `ViewPager` → `scrollview`;
//! `SeekBar`, `Slider`, `RatingBar` → `slider`; `ProgressBar` → `progressbar`; `Spinner` →
//! `combobox`; `TabLayout$TabView`, `ActionBar$Tab` → `tab`; `WebView` → `webview`. A clickable
//! `text` or `img` is a `button`; a checkable button (the password field's eye) stays a
//! `button` with a `checked` or `unchecked` state. Anything else (layouts, `android.view.View`,
//! custom views) is *generic*: a scrollable one is a `scrollview`, a clickable one a `button` (a
//! `checkbox` when it is itself checkable), a non-clickable one with text or a description is
//! `text`, and the rest are layout wrappers and dropped.
//!
//! **Names** are the node's `text`, else its `content-desc`, with whitespace collapsed and cut at
//! 120 characters. A `Switch` appends its on/off label (`ON`, `OFF`) to its text; that is its
//! state, so it is taken off the name.
//!
//! **Clickable elements speak for their content.** A clickable element without a name of its
//! own (a list row, a card, a Compose button) is named by the texts of its non-interactive
//! descendants, joined with `, ` in reading order, and those descendants are then not listed
//! again: `button "Ada Lovelace, Notes on the engine"`, not a button and two texts. This holds
//! for every clickable element, named or not: its plain descendants are its content. Interactive
//! descendants (clickable, scrollable, text fields, sliders, spinners) keep their own entries.
//! When such a row holds exactly one non-clickable checkable widget — the `Switch` of a settings
//! row, which Android makes the row toggle — the row takes the widget's role and state and the
//! widget is not listed: `switch "Wi‑Fi, Home" [checked]`. A clickable layout that contains a
//! scrollable container, a text field or a web view is a backdrop, not a control: it is treated
//! as a plain layout. A clickable element with no name and no content (an unlabelled icon) is
//! listed without a name so that it can still be tapped by ref; one with no name whose content is
//! listed on its own is dropped.
//!
//! **Images:** an `ImageView` with a `content-desc` is an `img` (a `button` when clickable);
//! one without is decoration and dropped unless clickable, when it is an unnamed `button`.
//!
//! **Text fields:** `value` is the field's text; `name` is its `content-desc`, else its `hint`
//! (Android 12+). An Android 11 dump cannot tell a field's hint from typed text — an empty field
//! reports the hint as `text` — so where no description or hint exists the text is used as the
//! name; and whenever the text equals the name, the field is taken to show its hint and gets no
//! value. So an empty `Email` field reads `textbox "Email"`, and the same field after typing
//! `textbox "alice@example.com"` on Android 11 (there is nothing else to call it) and `textbox
//! "Email" ="alice@example.com"` where the dump has a description or hint. A field's identity
//! for refs never includes its text, so typing keeps its ref.
//!
//! **Passwords** (`password="true"`) get the state `password`, and their text is never exposed:
//! a value is masked as one `•` per character, at most 12, as the web device does. Android
//! itself reports a password's content as bullets, with the last typed character briefly in the
//! clear; a password text is used as the field's name (its hint, on Android 11) only when it
//! holds no bullet and more than one character, which Android's masking never shows.
//!
//! **Labels beside controls.** Forms and settings rows often put a `TextView` next to an
//! unlabelled switch, checkbox, radio button, field, slider or spinner. Such a control without
//! a name takes the last text listed before it inside its parent (with the texts before that
//! one in the same group of the parent, such as a title and its summary), and those texts are
//! then not listed on their own: `switch "Data Saver" [unchecked]` rather than a text and a
//! nameless switch. A named control whose name repeats the text just before it (a slider
//! described as its label) drops that text.
//!
//! **Other controls:** a spinner's value is its selected item (the text of its descendants); a
//! slider's or progress bar's name is its `content-desc` and its text, if any, its value.
//! Lists and scroll views are listed when scrollable or named (their refs are what a swipe is
//! aimed within); a web view always is. Content inside a `WebView` follows the same rules (it
//! is `android.view.View`, `android.widget.TextView`, `EditText`, `Button` nodes); a text that
//! repeats the name of the element it sits in (as Chrome reports a heading and its text) is
//! listed once.
//!
//! **States**, in this order: `disabled` (`enabled="false"`), `checked` or `unchecked` (every
//! checkable element and every toggle widget), `selected`, `focused`, `scrollable`, `password`,
//! and `long-clickable` only for an element that can be long-pressed but not tapped. Being
//! tappable is implied by the role and not repeated; long-pressability of tappable elements
//! is not listed because nearly every row has it and it does not say what a long press does.
//!
//! **Ids:** `id` is the full `resource-id` (`com.example:id/username`); [`id_matches`] accepts
//! it and its short name (`username`).
//!
//! **Bounds** are converted from device pixels to density-independent pixels (dp: pixels ×
//! 160 / dpi, rounded half up) as `[x, y, width, height]`, after clipping to the display; an
//! element entirely off the display, or with no area once its edges are rounded to dp (a sliver
//! thinner than a dp), is dropped (its descendants are still considered). Elements are listed in
//! reading order, which is the dump's tree order; `offscreen` is always false because dumps
//! hold only what is on screen. [`center_px`] turns an element's bounds back into the device
//! pixel a tap goes to.
//!
//! **Refs** (`e1`, `e2`, …) come from a [`RefTable`] that the device keeps across
//! observations; see there for what counts as the same element.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use crate::device::Element;

/// Names are cut here, values a little later; both as the web device does.
const NAME_MAX_CHARS: usize = 120;
const VALUE_MAX_CHARS: usize = 200;
/// A masked password shows at most this many bullets, whatever its length.
const PASSWORD_MASK_MAX: usize = 12;
const BULLET: char = '•';
/// At most this many XML nodes (elements and texts) are read from one dump: a real screen has a
/// few thousand, and the cap bounds the memory that garbage input can take.
const XML_NODES_LIMIT: u32 = 1_000_000;
/// Values quoted in error messages are cut here: a bad attribute may be arbitrarily long.
const ERROR_VALUE_MAX_CHARS: usize = 60;

/// The screen the dump came from, in its natural orientation, as `wm size` and `wm density`
/// report it. Functions that take a [`Hierarchy`] turn it by the dump's rotation themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Display {
    pub width_px: u32,
    pub height_px: u32,
    /// Dots per inch; a dp is `density_dpi / 160` pixels. Zero counts as 160.
    pub density_dpi: u32,
}

impl Display {
    /// Device pixels per dp.
    pub fn scale(&self) -> f64 {
        f64::from(self.dpi()) / 160.0
    }

    /// The display as the dump sees it: width and height swap for rotations 1 and 3.
    pub fn rotated(&self, rotation: u32) -> Self {
        if rotation % 2 == 1 {
            Self {
                width_px: self.height_px,
                height_px: self.width_px,
                density_dpi: self.density_dpi,
            }
        } else {
            *self
        }
    }

    fn dpi(&self) -> u32 {
        if self.density_dpi == 0 {
            160
        } else {
            self.density_dpi
        }
    }
}

/// A parsed dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// Every node in tree (document) order: a node's descendants follow it.
    pub nodes: Vec<Node>,
    /// The display's rotation when dumped, in quarter turns (`Surface.ROTATION_0` to `_270`).
    pub rotation: u32,
    /// The foreground app: the package of the first top-level node that is not the system UI.
    pub package: Option<String>,
}

/// One `<node>` of a dump, its attributes as they were (unescaped, not trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub class: String,
    pub text: String,
    pub content_desc: String,
    pub resource_id: String,
    pub package: String,
    /// `x1, y1, x2, y2` in device pixels of the current rotation.
    pub bounds_px: [i64; 4],
    pub checkable: bool,
    pub checked: bool,
    pub clickable: bool,
    pub long_clickable: bool,
    pub enabled: bool,
    pub focusable: bool,
    pub focused: bool,
    pub scrollable: bool,
    pub selected: bool,
    pub password: bool,
    /// Nesting depth; top-level nodes have 0.
    pub depth: u32,
    /// Index of the parent in [`Hierarchy::nodes`].
    pub parent: Option<usize>,
    /// `None` when the dump has no `hint` attribute (Android 11), `Some("")` when it has one and
    /// the node no hint.
    pub hint: Option<String>,
}

/// Why a dump could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HierarchyError {
    #[error("the uiautomator dump is empty; dump the screen again")]
    Empty,
    #[error(
        "uiautomator found no window to dump (it reported a `null root node`); the screen is \
         probably changing, so dump it again"
    )]
    NoWindow,
    #[error(
        "uiautomator gave up waiting for the screen to be idle (`could not get idle state`); an \
         animation that never stops prevents dumps, so stop it or take a screenshot instead"
    )]
    NotIdle,
    #[error("the uiautomator dump ends early ({detail}); dump the screen again")]
    Truncated { detail: String },
    #[error("the uiautomator dump is not well-formed XML: {detail}")]
    Xml { detail: String },
    #[error("the uiautomator dump has more than {limit} XML nodes; it is not a screen")]
    TooLarge { limit: u32 },
    #[error(
        "the document's root element is `{found}`, not `hierarchy`; expected the output of \
         `uiautomator dump`"
    )]
    NotAHierarchy { found: String },
    #[error("the hierarchy's rotation is `{value}`; expected 0, 1, 2 or 3")]
    Rotation { value: String },
    #[error("node {node} (`{class}`) has no `bounds`; uiautomator writes `[x1,y1][x2,y2]`")]
    MissingBounds { node: usize, class: String },
    #[error(
        "node {node} (`{class}`) has bounds `{value}`; uiautomator writes `[x1,y1][x2,y2]` with \
         integers"
    )]
    Bounds {
        node: usize,
        class: String,
        value: String,
    },
    #[error("node {node} (`{class}`) has `{attribute}=\"{value}\"`; expected `true` or `false`")]
    Flag {
        node: usize,
        class: String,
        attribute: &'static str,
        value: String,
    },
}

impl HierarchyError {
    /// Whether dumping again may well succeed: the screen was changing or the dump was cut off.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Empty | Self::NoWindow | Self::Truncated { .. })
    }
}

/// Parses the output of `uiautomator dump`. Never panics; every input that is not a dump gives
/// an error that says what was wrong.
pub fn parse(xml: &str) -> Result<Hierarchy, HierarchyError> {
    if xml.trim().is_empty() {
        return Err(HierarchyError::Empty);
    }
    let document = document_text(xml);
    if !document.contains("<hierarchy") {
        // uiautomator prints these instead of a document and still exits 0.
        if xml.contains("null root node") {
            return Err(HierarchyError::NoWindow);
        }
        if xml.contains("could not get idle state") {
            return Err(HierarchyError::NotIdle);
        }
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: XML_NODES_LIMIT,
        ..Default::default()
    };
    let tree = roxmltree::Document::parse_with_options(document, options).map_err(xml_error)?;
    let root = tree.root_element();
    if root.tag_name().name() != "hierarchy" || root.tag_name().namespace().is_some() {
        return Err(HierarchyError::NotAHierarchy {
            found: shorten(root.tag_name().name()),
        });
    }
    let rotation = match root.attribute("rotation") {
        None => 0,
        Some(value) => value
            .parse::<u32>()
            .ok()
            .filter(|rotation| *rotation < 4)
            .ok_or_else(|| HierarchyError::Rotation {
                value: shorten(value),
            })?,
    };

    // An explicit stack, not recursion: a hostile document may nest without end.
    let mut nodes = Vec::new();
    let mut stack: Vec<(roxmltree::Node<'_, '_>, Option<usize>, u32)> = Vec::new();
    push_children(&mut stack, root, None, 0);
    while let Some((element, parent, depth)) = stack.pop() {
        let index = nodes.len();
        nodes.push(read_node(element, index, parent, depth)?);
        push_children(&mut stack, element, Some(index), depth.saturating_add(1));
    }
    let package = foreground_package(&nodes);
    Ok(Hierarchy {
        nodes,
        rotation,
        package,
    })
}

/// A cheap fingerprint of a dump's document, for reusing the parse of an unchanged screen. It
/// ignores the noise around the document, and is only meaningful within one process.
pub fn screen_hash(xml: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    document_text(xml).hash(&mut hasher);
    hasher.finish()
}

/// Whether `wanted` names `resource_id`: the full id (`com.example:id/username`) or its short
/// name (`username`). Ids without a package part (Compose test tags) match only in full.
pub fn id_matches(resource_id: &str, wanted: &str) -> bool {
    if wanted.is_empty() || resource_id.is_empty() {
        return false;
    }
    if resource_id == wanted {
        return true;
    }
    resource_id
        .split_once(":id/")
        .is_some_and(|(_, short)| short == wanted)
}

/// The device pixel at the centre of an element's bounds (`[x, y, width, height]` in dp, as
/// [`elements`] gives them): `(2x + width) × dpi / 320`, rounded half up, and likewise for y.
/// Within half a dp plus half a pixel of the true centre of the node's pixel bounds.
pub fn center_px(bounds_dp: [i64; 4], display: &Display) -> (i64, i64) {
    let dpi = i128::from(display.dpi());
    let [x, y, width, height] = bounds_dp.map(i128::from);
    let along =
        |start: i128, length: i128| clamp_i64(div_round_half_up((2 * start + length) * dpi, 320));
    (along(x, width), along(y, height))
}

/// The elements of a screen, in reading order, with refs from `refs`. See the module
/// documentation for the rules.
pub fn elements(hierarchy: &Hierarchy, display: &Display, refs: &mut RefTable) -> Vec<Element> {
    let display = display.rotated(hierarchy.rotation);
    let drafts = Mapper::new(hierarchy, display).run();
    let identities = drafts.iter().map(|draft| draft.identity.clone()).collect();
    let references = refs.assign(identities);
    drafts
        .into_iter()
        .zip(references)
        .map(|(draft, reference)| Element {
            reference,
            ..draft.element
        })
        .collect()
}

/// A scrollable container on screen, for the device's `scroll:` hints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrollContainer {
    /// Index in [`Hierarchy::nodes`].
    pub node: usize,
    /// In dp, exactly the bounds of the container's element, so its ref can be found.
    pub bounds: [i64; 4],
    pub axis: ScrollAxis,
    /// The first and last text (or description) on screen inside the container.
    pub first_visible: Option<String>,
    pub last_visible: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrollAxis {
    Vertical,
    Horizontal,
}

/// Every scrollable node on the display, outermost first. The axis is horizontal for
/// horizontal scroll views, view pagers and tab strips, and for containers whose visible
/// children sit side by side; vertical otherwise.
pub fn scroll_containers(hierarchy: &Hierarchy, display: &Display) -> Vec<ScrollContainer> {
    let display = display.rotated(hierarchy.rotation);
    let nodes = &hierarchy.nodes;
    let ends = subtree_ends(nodes);
    let mut out = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        if !node.scrollable {
            continue;
        }
        let Some(bounds) = visible_dp(node.bounds_px, &display) else {
            continue;
        };
        let inside = |other: &Node| {
            let [x1, y1, x2, y2] = node.bounds_px;
            let [a1, b1, a2, b2] = other.bounds_px;
            a1 < x2 && a2 > x1 && b1 < y2 && b2 > y1
        };
        let mut first_visible = None;
        let mut last_visible = None;
        let end = ends.get(index).copied().unwrap_or(index + 1);
        for descendant in nodes.get(index + 1..end).unwrap_or_default() {
            if !inside(descendant) || visible_dp(descendant.bounds_px, &display).is_none() {
                continue;
            }
            let label = clean(
                own_label(descendant, classify(&descendant.class)),
                NAME_MAX_CHARS,
            );
            if label.is_empty() {
                continue;
            }
            if first_visible.is_none() {
                first_visible = Some(label.clone());
            }
            last_visible = Some(label);
        }
        out.push(ScrollContainer {
            node: index,
            bounds,
            axis: scroll_axis(nodes, index, end, &display),
            first_visible,
            last_visible,
        });
    }
    out
}

/// Whether one list of label parts is a run of consecutive parts of the other, and shorter.
fn continues(parts: &[&str], other: &[&str]) -> bool {
    let (short, long) = if parts.len() < other.len() {
        (parts, other)
    } else {
        (other, parts)
    };
    !short.is_empty()
        && short.len() < long.len()
        && long.windows(short.len()).any(|run| run == short)
}

/// Assigns refs (`e1`, `e2`, …) to elements across observations of one device.
///
/// An element keeps its ref while it keeps its identity: its resource-id, class and label (the
/// name it is listed with; for a text field, its description and hint but never its text), or,
/// for an element with neither id nor label, its class and pixel bounds. Several elements with
/// the same identity on one screen (every row's `delete` button) are told apart by their order
/// on it. An element of the previous screen whose label loses or gains parts keeps its ref too:
/// a row half scrolled out shows only some of its texts, so a new label whose `, `-separated
/// parts are a run of an old one's (or the reverse), with the same class and resource-id,
/// continues that element. A new identity gets the next number; numbers are never reused. So a
/// list row keeps its ref when scrolling moves it, and a row scrolled in gets a new one. At most
/// `capacity` identities are remembered; beyond that the ones seen longest ago are forgotten
/// (and would get a new number if they came back).
#[derive(Debug)]
pub struct RefTable {
    known: HashMap<Identity, Known>,
    next: u64,
    generation: u64,
    capacity: usize,
}

#[derive(Debug, Clone, Copy)]
struct Known {
    number: u64,
    seen: u64,
}

/// What makes an element the same element on a later screen.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Identity {
    class: String,
    resource_id: String,
    label: String,
    /// Only for elements with neither resource-id nor label.
    bounds_px: Option<[i64; 4]>,
    /// Among elements of the same identity on one screen, this one's position.
    occurrence: u32,
}

impl Default for RefTable {
    fn default() -> Self {
        Self::new()
    }
}

impl RefTable {
    /// How many identities [`RefTable::new`] remembers.
    pub const DEFAULT_CAPACITY: usize = 4096;

    pub fn new() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// A table that remembers at most `capacity` identities (at least one), except that the
    /// elements of the latest screen are always remembered.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            known: HashMap::new(),
            next: 1,
            generation: 0,
            capacity: capacity.max(1),
        }
    }

    /// How many identities are remembered.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// Forgets every identity and starts again at `e1`, as for a new session.
    pub fn clear(&mut self) {
        self.known.clear();
        self.next = 1;
    }

    fn assign(&mut self, identities: Vec<Identity>) -> Vec<String> {
        self.generation += 1;
        let generation = self.generation;
        let mut occurrences: HashMap<Identity, u32> = HashMap::new();
        let identities: Vec<Identity> = identities
            .into_iter()
            .map(|mut identity| {
                let occurrence = occurrences.entry(identity.clone()).or_insert(0);
                identity.occurrence = *occurrence;
                *occurrence += 1;
                identity
            })
            .collect();
        // Known identities first, so that a continuation below cannot take a ref that an
        // element of this screen holds outright. A continued element is remembered under both
        // its old and its new identity, so one number may be known twice: each number still
        // goes to one element per screen.
        let mut used: HashSet<u64> = HashSet::new();
        let mut numbers: Vec<Option<u64>> = identities
            .iter()
            .map(|identity| {
                let known = self.known.get_mut(identity)?;
                known.seen = generation;
                used.insert(known.number).then_some(known.number)
            })
            .collect();
        for (identity, number) in identities.iter().zip(numbers.iter_mut()) {
            if number.is_none() {
                *number = self.continuation(identity, &used);
                if let Some(number) = number {
                    used.insert(*number);
                }
            }
        }
        let mut references = Vec::with_capacity(identities.len());
        for (identity, number) in identities.into_iter().zip(numbers) {
            let number = number.unwrap_or_else(|| {
                let number = self.next;
                self.next += 1;
                number
            });
            self.known.insert(
                identity,
                Known {
                    number,
                    seen: generation,
                },
            );
            references.push(format!("e{number}"));
        }
        self.evict();
        references
    }

    /// The ref of an element of the previous screen that this one continues: same class and
    /// resource-id, and a label whose `, `-separated parts are a run of the other's. A list row
    /// that scrolls partly out loses the texts that left the screen (and one scrolling in gains
    /// them), yet it is the same row. The lowest such ref not yet taken on this screen wins.
    fn continuation(&self, identity: &Identity, used: &HashSet<u64>) -> Option<u64> {
        if identity.label.is_empty() || identity.bounds_px.is_some() {
            return None;
        }
        let previous = self.generation - 1;
        let parts: Vec<&str> = identity.label.split(", ").collect();
        self.known
            .iter()
            .filter(|(other, known)| {
                known.seen == previous
                    && !used.contains(&known.number)
                    && other.class == identity.class
                    && other.resource_id == identity.resource_id
                    && other.bounds_px.is_none()
                    && !other.label.is_empty()
                    && continues(&parts, &other.label.split(", ").collect::<Vec<_>>())
            })
            .map(|(_, known)| known.number)
            .min()
    }

    /// Forgets the identities seen longest ago until at most `capacity` remain, never those of
    /// the latest screen.
    fn evict(&mut self) {
        let excess = self.known.len().saturating_sub(self.capacity);
        if excess == 0 {
            return;
        }
        let mut stale: Vec<(u64, u64)> = self
            .known
            .values()
            .filter(|known| known.seen != self.generation)
            .map(|known| (known.seen, known.number))
            .collect();
        if stale.is_empty() {
            return;
        }
        stale.sort_unstable();
        let cutoff = stale[excess.min(stale.len()) - 1];
        self.known
            .retain(|_, known| (known.seen, known.number) > cutoff);
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing.

/// The XML document inside `uiautomator dump`'s output: from its declaration (or root) to the
/// end of its root, without what the tool prints around it.
fn document_text(xml: &str) -> &str {
    let start = xml
        .find("<?xml")
        .or_else(|| xml.find("<hierarchy"))
        .unwrap_or(0);
    let rest = &xml[start..];
    const CLOSE: &str = "</hierarchy>";
    match rest.rfind(CLOSE) {
        Some(end) => &rest[..end + CLOSE.len()],
        None => rest.trim_end(),
    }
}

fn xml_error(error: roxmltree::Error) -> HierarchyError {
    match error {
        roxmltree::Error::UnexpectedEndOfStream
        | roxmltree::Error::UnclosedRootNode
        | roxmltree::Error::NoRootNode => HierarchyError::Truncated {
            detail: error.to_string(),
        },
        roxmltree::Error::NodesLimitReached => HierarchyError::TooLarge {
            limit: XML_NODES_LIMIT,
        },
        other => HierarchyError::Xml {
            detail: other.to_string(),
        },
    }
}

fn push_children<'a, 'input>(
    stack: &mut Vec<(roxmltree::Node<'a, 'input>, Option<usize>, u32)>,
    parent: roxmltree::Node<'a, 'input>,
    index: Option<usize>,
    depth: u32,
) {
    let before = stack.len();
    stack.extend(
        parent
            .children()
            .filter(|child| child.is_element() && child.tag_name().name() == "node")
            .map(|child| (child, index, depth)),
    );
    // The stack pops from the end: reversed, the first child comes out first.
    stack[before..].reverse();
}

fn read_node(
    element: roxmltree::Node<'_, '_>,
    index: usize,
    parent: Option<usize>,
    depth: u32,
) -> Result<Node, HierarchyError> {
    let string = |name: &str| element.attribute(name).unwrap_or_default().to_owned();
    let class = string("class");
    let flag = |attribute: &'static str, default: bool| match element.attribute(attribute) {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(HierarchyError::Flag {
            node: index,
            class: shorten(&class),
            attribute,
            value: shorten(other),
        }),
    };
    let bounds_px = match element.attribute("bounds") {
        None => {
            return Err(HierarchyError::MissingBounds {
                node: index,
                class: shorten(&class),
            });
        }
        Some(value) => parse_bounds(value).ok_or_else(|| HierarchyError::Bounds {
            node: index,
            class: shorten(&class),
            value: shorten(value),
        })?,
    };
    Ok(Node {
        text: string("text"),
        content_desc: string("content-desc"),
        resource_id: string("resource-id"),
        package: string("package"),
        bounds_px,
        checkable: flag("checkable", false)?,
        checked: flag("checked", false)?,
        clickable: flag("clickable", false)?,
        long_clickable: flag("long-clickable", false)?,
        enabled: flag("enabled", true)?,
        focusable: flag("focusable", false)?,
        focused: flag("focused", false)?,
        scrollable: flag("scrollable", false)?,
        selected: flag("selected", false)?,
        password: flag("password", false)?,
        depth,
        parent,
        hint: element.attribute("hint").map(str::to_owned),
        class,
    })
}

/// `[x1,y1][x2,y2]`, as `Rect.toShortString` writes it.
fn parse_bounds(value: &str) -> Option<[i64; 4]> {
    let inner = value.strip_prefix('[')?.strip_suffix(']')?;
    let (first, second) = inner.split_once("][")?;
    let pair = |text: &str| -> Option<(i64, i64)> {
        let (a, b) = text.split_once(',')?;
        Some((integer(a)?, integer(b)?))
    };
    let (x1, y1) = pair(first)?;
    let (x2, y2) = pair(second)?;
    Some([x1, y1, x2, y2])
}

/// An optionally negative decimal integer, nothing else (no `+`, no spaces).
fn integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn foreground_package(nodes: &[Node]) -> Option<String> {
    let top_level = || nodes.iter().filter(|node| node.parent.is_none());
    top_level()
        .find(|node| !node.package.is_empty() && node.package != "com.android.systemui")
        .or_else(|| top_level().find(|node| !node.package.is_empty()))
        .or_else(|| nodes.iter().find(|node| !node.package.is_empty()))
        .map(|node| node.package.clone())
}

// ---------------------------------------------------------------------------------------------
// Mapping.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Button,
    Textbox,
    Searchbox,
    Checkbox,
    CheckedText,
    Switch,
    Radio,
    Image,
    Text,
    List,
    ScrollView,
    Slider,
    ProgressBar,
    Combobox,
    Tab,
    WebView,
    Generic,
}

/// Simple-name suffixes in the order they are tried: the longer, more specific names first
/// (`AutoCompleteTextView` before `TextView`, `RadioButton` before `Button`).
const CLASS_SUFFIXES: &[(&str, Kind)] = &[
    ("SearchAutoComplete", Kind::Searchbox),
    ("AutoCompleteTextView", Kind::Textbox),
    ("EditText", Kind::Textbox),
    ("CheckedTextView", Kind::CheckedText),
    ("CheckBox", Kind::Checkbox),
    ("CompoundButton", Kind::Checkbox),
    ("RadioButton", Kind::Radio),
    ("ToggleButton", Kind::Switch),
    ("SwitchCompat", Kind::Switch),
    ("SwitchMaterial", Kind::Switch),
    ("Switch", Kind::Switch),
    ("Button", Kind::Button),
    ("Chip", Kind::Button),
    ("ImageView", Kind::Image),
    ("TextView", Kind::Text),
    ("TextClock", Kind::Text),
    ("Chronometer", Kind::Text),
    ("RecyclerView", Kind::List),
    ("ListView", Kind::List),
    ("GridView", Kind::List),
    ("ScrollView", Kind::ScrollView),
    ("ViewPager", Kind::ScrollView),
    ("ViewPager2", Kind::ScrollView),
    ("SeekBar", Kind::Slider),
    ("RatingBar", Kind::Slider),
    ("Slider", Kind::Slider),
    ("ProgressBar", Kind::ProgressBar),
    ("ProgressIndicator", Kind::ProgressBar),
    ("Spinner", Kind::Combobox),
    ("$Tab", Kind::Tab),
    ("TabView", Kind::Tab),
    ("WebView", Kind::WebView),
];

fn classify(class: &str) -> Kind {
    let simple = class.rsplit('.').next().unwrap_or(class);
    CLASS_SUFFIXES
        .iter()
        .find(|(suffix, _)| simple.ends_with(suffix))
        .map_or(Kind::Generic, |(_, kind)| *kind)
}

impl Kind {
    fn is_toggle(self) -> bool {
        matches!(self, Self::Checkbox | Self::Switch | Self::Radio)
    }

    fn toggle_role(self) -> &'static str {
        match self {
            Self::Switch => "switch",
            Self::Radio => "radio",
            _ => "checkbox",
        }
    }

    fn is_container(self) -> bool {
        matches!(self, Self::List | Self::ScrollView | Self::WebView)
    }
}

/// An element before it has a ref.
struct Draft {
    /// The node it was made from.
    node: usize,
    element: Element,
    identity: Identity,
}

struct Mapper<'a> {
    nodes: &'a [Node],
    display: Display,
    kinds: Vec<Kind>,
    /// Exclusive end of each node's subtree in `nodes`.
    ends: Vec<usize>,
    /// Whether a node has its own entry regardless of the clickable element around it.
    independent: Vec<bool>,
    /// Whether a node's subtree below it has anything that speaks: a label or an independent
    /// node.
    has_content: Vec<bool>,
    /// Whether a node's subtree below it holds a scrollable node, a text field or a web view,
    /// which make a clickable layout a backdrop rather than a control.
    has_backdrop_content: Vec<bool>,
    /// Nodes whose content a clickable element has taken.
    consumed: Vec<bool>,
    /// For each node, the draft of the nearest listed element it is inside (itself included).
    enclosing: Vec<Option<usize>>,
    drafts: Vec<Draft>,
}

impl<'a> Mapper<'a> {
    fn new(hierarchy: &'a Hierarchy, display: Display) -> Self {
        let nodes = hierarchy.nodes.as_slice();
        let kinds: Vec<Kind> = nodes.iter().map(|node| classify(&node.class)).collect();
        let independent: Vec<bool> = nodes
            .iter()
            .zip(&kinds)
            .map(|(node, kind)| {
                node.clickable
                    || node.long_clickable
                    || node.scrollable
                    || kind.is_container()
                    || matches!(
                        kind,
                        Kind::Textbox | Kind::Searchbox | Kind::Slider | Kind::Combobox
                    )
            })
            .collect();
        let count = nodes.len();
        let mut has_content = vec![false; count];
        let mut has_backdrop_content = vec![false; count];
        // Children follow their parents, so one backward pass carries facts up the tree.
        for index in (0..count).rev() {
            let node = &nodes[index];
            let Some(parent) = node.parent.filter(|parent| *parent < index) else {
                continue;
            };
            let speaks = independent[index]
                || !own_label(node, kinds[index]).trim().is_empty()
                || has_content[index];
            let backdrop = node.scrollable
                || matches!(
                    kinds[index],
                    Kind::Textbox | Kind::Searchbox | Kind::WebView
                )
                || has_backdrop_content[index];
            has_content[parent] |= speaks;
            has_backdrop_content[parent] |= backdrop;
        }
        Self {
            nodes,
            display,
            kinds,
            ends: subtree_ends(nodes),
            independent,
            has_content,
            has_backdrop_content,
            consumed: vec![false; count],
            enclosing: vec![None; count],
            drafts: Vec::new(),
        }
    }

    fn run(mut self) -> Vec<Draft> {
        for index in 0..self.nodes.len() {
            self.enclosing[index] = self.nodes[index]
                .parent
                .filter(|parent| *parent < index)
                .and_then(|parent| self.enclosing[parent]);
            if self.consumed[index] {
                continue;
            }
            if let Some(draft) = self.describe(index) {
                self.enclosing[index] = Some(self.drafts.len());
                self.drafts.push(draft);
            }
        }
        self.drafts
    }

    /// The element for one node, if it is listed, marking the content it takes as consumed.
    fn describe(&mut self, index: usize) -> Option<Draft> {
        let node = &self.nodes[index];
        let kind = self.kinds[index];
        let bounds = visible_dp(node.bounds_px, &self.display)?;
        let label = clean(own_label(node, kind), NAME_MAX_CHARS);
        let tappable = node.clickable || node.long_clickable;
        let mut role: &str;
        let mut name = label.clone();
        let mut value = None;
        let mut checked = (node.checkable || kind.is_toggle()).then_some(node.checked);
        let mut identity_label = None;

        match kind {
            Kind::Textbox | Kind::Searchbox => {
                role = if kind == Kind::Searchbox {
                    "searchbox"
                } else {
                    "textbox"
                };
                let field = text_field(node);
                name = field.name;
                value = field.value;
                identity_label = Some(field.identity_label);
            }
            Kind::List | Kind::ScrollView | Kind::WebView => {
                if !(node.scrollable || !label.is_empty() || kind == Kind::WebView) {
                    return None;
                }
                role = match kind {
                    Kind::List => "list",
                    Kind::WebView => "webview",
                    _ => "scrollview",
                };
                name = clean(non_empty_or(&node.content_desc, &node.text), NAME_MAX_CHARS);
            }
            Kind::Slider | Kind::ProgressBar => {
                role = if kind == Kind::Slider {
                    "slider"
                } else {
                    "progressbar"
                };
                name = clean(&node.content_desc, NAME_MAX_CHARS);
                let text = clean(&node.text, VALUE_MAX_CHARS);
                value = (!text.is_empty() && !node.password).then_some(text);
            }
            Kind::Combobox => {
                role = "combobox";
                name = clean(&node.content_desc, NAME_MAX_CHARS);
                let selected = match self.content_label(index, VALUE_MAX_CHARS) {
                    inner if inner.is_empty() && !node.password => {
                        clean(&node.text, VALUE_MAX_CHARS)
                    }
                    inner => inner,
                };
                value = (!selected.is_empty()).then_some(selected);
                self.consume(index);
            }
            Kind::Image if !tappable => {
                if label.is_empty() {
                    return None;
                }
                role = "img";
            }
            Kind::Text | Kind::CheckedText if !tappable && !node.checkable => {
                if label.is_empty() {
                    return None;
                }
                // Chrome reports a heading and, inside it, its text: list that text once.
                let outer = self.enclosing[index].and_then(|outer| self.drafts.get(outer));
                if outer.is_some_and(|outer| outer.element.name == label) {
                    return None;
                }
                role = "text";
            }
            Kind::Generic if node.scrollable => {
                role = "scrollview";
                name = clean(&node.content_desc, NAME_MAX_CHARS);
            }
            Kind::Generic if !tappable || self.has_backdrop_content[index] => {
                if label.is_empty() {
                    return None;
                }
                role = if tappable { "button" } else { "text" };
            }
            _ => {
                // Something to tap or toggle: a button, a tab, a toggle widget, a clickable text,
                // image or layout. It speaks for its plain content.
                role = match kind {
                    Kind::Tab => "tab",
                    Kind::Button => "button",
                    Kind::Checkbox | Kind::Switch | Kind::Radio => kind.toggle_role(),
                    _ if node.checkable => "checkbox",
                    _ => "button",
                };
                let adopted = if checked.is_none() {
                    self.sole_toggle(index)
                } else {
                    None
                };
                if let Some(toggle) = adopted {
                    let toggle_node = &self.nodes[toggle];
                    role = self.kinds[toggle].toggle_role();
                    checked = Some(toggle_node.checked);
                }
                if name.is_empty() {
                    name = self.content_label(index, NAME_MAX_CHARS);
                }
                if name.is_empty() && self.has_content[index] && kind == Kind::Generic {
                    // Its content is listed on its own and names nothing here.
                    return None;
                }
                if !tappable && matches!(kind, Kind::Button | Kind::Tab) && name.is_empty() {
                    return None;
                }
                self.consume(index);
            }
        }

        let labelled_by_neighbours = matches!(
            role,
            "textbox" | "searchbox" | "checkbox" | "switch" | "radio" | "slider" | "combobox"
        );
        if labelled_by_neighbours && let Some(label) = self.take_label_before(index, &name) {
            name = label;
        }

        let mut states = Vec::new();
        if !node.enabled {
            states.push("disabled".to_owned());
        }
        if let Some(checked) = checked {
            states.push(if checked { "checked" } else { "unchecked" }.to_owned());
        }
        if node.selected {
            states.push("selected".to_owned());
        }
        if node.focused {
            states.push("focused".to_owned());
        }
        if node.scrollable {
            states.push("scrollable".to_owned());
        }
        if node.password {
            states.push("password".to_owned());
        }
        if node.long_clickable && !node.clickable {
            states.push("long-clickable".to_owned());
        }

        let identity_label = identity_label.unwrap_or_else(|| name.clone());
        let identity = Identity {
            class: node.class.clone(),
            resource_id: node.resource_id.clone(),
            bounds_px: (node.resource_id.is_empty() && identity_label.is_empty())
                .then_some(node.bounds_px),
            label: identity_label,
            occurrence: 0,
        };
        Some(Draft {
            node: index,
            element: Element {
                reference: String::new(),
                role: role.to_owned(),
                name,
                value,
                states,
                level: None,
                id: (!node.resource_id.is_empty()).then(|| node.resource_id.clone()),
                bounds,
                offscreen: false,
            },
            identity,
        })
    }

    /// The texts that label a control, taken from the entries just before it (see "Labels
    /// beside controls" in the module documentation). The group of a text is the child of the
    /// control's parent that holds it.
    fn take_label_before(&mut self, index: usize, name: &str) -> Option<String> {
        let parent = self.nodes[index].parent.filter(|parent| *parent < index)?;
        let within = |node: usize| node > parent && node < index && node < self.ends[parent];
        let last = self.drafts.last()?;
        if last.element.role != "text" || !within(last.node) {
            return None;
        }
        if !name.is_empty() {
            if last.element.name == name {
                self.drafts.pop();
            }
            return None;
        }
        // The parent's child that holds the last text.
        let mut group = last.node;
        for _ in 0..self.nodes.len() {
            match self.nodes[group].parent {
                Some(up) if up != parent && up < group => group = up,
                _ => break,
            }
        }
        let group_end = self.ends[group];
        let mut start = self.drafts.len();
        while start > 0 {
            let draft = &self.drafts[start - 1];
            if draft.element.role == "text"
                && within(draft.node)
                && draft.node >= group
                && draft.node < group_end
            {
                start -= 1;
            } else {
                break;
            }
        }
        let names: Vec<String> = self
            .drafts
            .drain(start..)
            .map(|draft| draft.element.name)
            .collect();
        Some(clean(&names.join(", "), NAME_MAX_CHARS))
    }

    /// The labels of a node's plain descendants, joined in reading order, skipping interactive
    /// subtrees (which are listed themselves) and a label that repeats the one before it.
    fn content_label(&self, index: usize, max_chars: usize) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut length = 0;
        let mut descendant = index + 1;
        let end = self.ends[index];
        while descendant < end && length <= max_chars {
            if self.independent[descendant] {
                descendant = self.ends[descendant];
                continue;
            }
            let node = &self.nodes[descendant];
            let label = clean(own_label(node, self.kinds[descendant]), max_chars);
            if !label.is_empty() && parts.last() != Some(&label) {
                length += label.chars().count() + 2;
                parts.push(label);
            }
            descendant += 1;
        }
        clean(&parts.join(", "), max_chars)
    }

    /// The one non-interactive toggle widget in a node's content, if there is exactly one.
    fn sole_toggle(&self, index: usize) -> Option<usize> {
        let mut found = None;
        let mut descendant = index + 1;
        while descendant < self.ends[index] {
            if self.independent[descendant] {
                descendant = self.ends[descendant];
                continue;
            }
            let kind = self.kinds[descendant];
            if kind.is_toggle() || self.nodes[descendant].checkable {
                if found.is_some() {
                    return None;
                }
                found = Some(descendant);
            }
            descendant += 1;
        }
        found
    }

    /// Marks a node's plain content as spoken for; interactive descendants keep their entries.
    fn consume(&mut self, index: usize) {
        let mut descendant = index + 1;
        while descendant < self.ends[index] {
            if self.independent[descendant] {
                descendant = self.ends[descendant];
                continue;
            }
            self.consumed[descendant] = true;
            descendant += 1;
        }
    }
}

struct TextField {
    name: String,
    value: Option<String>,
    identity_label: String,
}

/// A text field's name and value; see the module documentation for why they are chosen so.
fn text_field(node: &Node) -> TextField {
    let description = clean(&node.content_desc, NAME_MAX_CHARS);
    let hint = node
        .hint
        .as_deref()
        .map(|hint| clean(hint, NAME_MAX_CHARS))
        .unwrap_or_default();
    let text = clean(&node.text, VALUE_MAX_CHARS);
    // Android shows a password as bullets with at most the last character in the clear, so a
    // password text of two or more characters without a bullet is the field's hint.
    let text_may_be_hint =
        !node.password || (!node.text.contains(BULLET) && node.text.chars().count() > 1);
    let name = if !description.is_empty() {
        description.clone()
    } else if !hint.is_empty() {
        hint.clone()
    } else if node.hint.is_none() && text_may_be_hint {
        clean(&node.text, NAME_MAX_CHARS)
    } else {
        String::new()
    };
    let value = if text.is_empty() || (text_may_be_hint && text == name) {
        None
    } else if node.password {
        Some(
            BULLET
                .to_string()
                .repeat(node.text.chars().count().min(PASSWORD_MASK_MAX)),
        )
    } else {
        Some(text)
    };
    TextField {
        name,
        value,
        identity_label: format!("{description}\u{1f}{hint}"),
    }
}

/// A node's own label: its text, else its description. A password's text never counts, and a
/// switch's on/off label is its state, not its name.
fn own_label(node: &Node, kind: Kind) -> &str {
    if node.password {
        return &node.content_desc;
    }
    let text = if kind == Kind::Switch {
        without_switch_state(&node.text, node.checked)
    } else {
        node.text.as_str()
    };
    non_empty_or(text, &node.content_desc)
}

/// `android.widget.Switch` appends `ON` or `OFF` to its text; `ToggleButton`'s text is just
/// that.
fn without_switch_state(text: &str, checked: bool) -> &str {
    let state = if checked { "ON" } else { "OFF" };
    let trimmed = text.trim_end();
    match trimmed.strip_suffix(state) {
        Some("") => "",
        Some(rest) if rest.ends_with(char::is_whitespace) => rest.trim_end(),
        _ => text,
    }
}

fn non_empty_or<'s>(first: &'s str, second: &'s str) -> &'s str {
    if first.trim().is_empty() {
        second
    } else {
        first
    }
}

/// Whitespace collapsed to single spaces, cut at `max_chars` with an ellipsis.
fn clean(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    let mut count = 0;
    for word in text.split_whitespace() {
        if count > 0 {
            out.push(' ');
            count += 1;
        }
        out.push_str(word);
        count += word.chars().count();
        if count > max_chars {
            break;
        }
    }
    if count > max_chars {
        let cut: String = out.chars().take(max_chars.saturating_sub(1)).collect();
        return format!("{}…", cut.trim_end());
    }
    out
}

fn shorten(value: &str) -> String {
    if value.chars().count() <= ERROR_VALUE_MAX_CHARS {
        return value.to_owned();
    }
    let cut: String = value.chars().take(ERROR_VALUE_MAX_CHARS - 1).collect();
    format!("{cut}…")
}

/// For each node, the exclusive end of its subtree: the next node no deeper than it. Any
/// depths give valid ranges (`index < end <= len`).
fn subtree_ends(nodes: &[Node]) -> Vec<usize> {
    let mut ends = vec![nodes.len(); nodes.len()];
    let mut open: Vec<usize> = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        while let Some(&top) = open.last() {
            if nodes[top].depth < node.depth {
                break;
            }
            ends[top] = index;
            open.pop();
        }
        open.push(index);
    }
    ends
}

fn scroll_axis(nodes: &[Node], index: usize, end: usize, display: &Display) -> ScrollAxis {
    let class = nodes.get(index).map_or("", |node| node.class.as_str());
    let simple = class.rsplit('.').next().unwrap_or(class);
    if simple.contains("Horizontal") || simple.contains("ViewPager") || simple == "TabLayout" {
        return ScrollAxis::Horizontal;
    }
    let children: Vec<&Node> = nodes
        .get(index + 1..end)
        .unwrap_or_default()
        .iter()
        .filter(|child| child.parent == Some(index))
        .filter(|child| visible_dp(child.bounds_px, display).is_some())
        .collect();
    let side_by_side = children.len() >= 2
        && children
            .windows(2)
            .all(|pair| pair[1].bounds_px[0] >= pair[0].bounds_px[2]);
    if side_by_side {
        ScrollAxis::Horizontal
    } else {
        ScrollAxis::Vertical
    }
}

/// Pixel bounds clipped to the display and converted to dp `[x, y, width, height]` (each edge
/// rounded on its own, so that neighbours still touch), or `None` when less than a dp of them
/// is on the display.
fn visible_dp(bounds_px: [i64; 4], display: &Display) -> Option<[i64; 4]> {
    let [x1, y1, x2, y2] = bounds_px;
    let width = i64::from(display.width_px);
    let height = i64::from(display.height_px);
    let (x1, y1, x2, y2) = (x1.max(0), y1.max(0), x2.min(width), y2.min(height));
    if x2 <= x1 || y2 <= y1 {
        return None;
    }
    let dpi = i128::from(display.dpi());
    let dp = |px: i64| div_round_half_up(i128::from(px) * 160, dpi);
    let (left, top, right, bottom) = (dp(x1), dp(y1), dp(x2), dp(y2));
    // A sliver thinner than a dp rounds to nothing: it can be neither seen nor aimed at.
    if right <= left || bottom <= top {
        return None;
    }
    Some([
        clamp_i64(left),
        clamp_i64(top),
        clamp_i64(right - left),
        clamp_i64(bottom - top),
    ])
}

/// `numerator / denominator` rounded half up (towards positive infinity), for a positive
/// denominator.
fn div_round_half_up(numerator: i128, denominator: i128) -> i128 {
    (2 * numerator + denominator).div_euclid(2 * denominator)
}

fn clamp_i64(value: i128) -> i64 {
    i64::try_from(value).unwrap_or(if value < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const SIGN_IN: &str = include_str!("../../tests/fixtures/uiautomator/sign_in.xml");
    const INBOX: &str = include_str!("../../tests/fixtures/uiautomator/inbox.xml");
    const INBOX_SCROLLED: &str =
        include_str!("../../tests/fixtures/uiautomator/inbox_scrolled.xml");
    const SETTINGS: &str = include_str!("../../tests/fixtures/uiautomator/settings.xml");
    const WEBVIEW: &str = include_str!("../../tests/fixtures/uiautomator/webview.xml");
    const ESCAPES: &str = include_str!("../../tests/fixtures/uiautomator/escapes.xml");
    const FIXTURES: [&str; 6] = [SIGN_IN, INBOX, INBOX_SCROLLED, SETTINGS, WEBVIEW, ESCAPES];

    /// A Pixel-class phone: 1080 × 2340 px at 440 dpi, 2.75 px per dp.
    const PHONE: Display = Display {
        width_px: 1080,
        height_px: 2340,
        density_dpi: 440,
    };

    /// One line per element, as the text observation renders it.
    fn lines(elements: &[Element]) -> Vec<String> {
        elements
            .iter()
            .map(|element| {
                let mut line = format!("{} {}", element.reference, element.role);
                if !element.name.is_empty() {
                    line.push_str(&format!(" \"{}\"", element.name));
                }
                if let Some(value) = &element.value {
                    line.push_str(&format!(" ={value:?}"));
                }
                if !element.states.is_empty() {
                    line.push_str(&format!(" [{}]", element.states.join(",")));
                }
                let [x, y, width, height] = element.bounds;
                line.push_str(&format!(" @{x},{y} {width}x{height}"));
                line
            })
            .collect()
    }

    /// The elements of a dump on [`PHONE`], with fresh refs.
    fn map(xml: &str) -> Vec<Element> {
        elements(&parse(xml).unwrap(), &PHONE, &mut RefTable::new())
    }

    fn observe(xml: &str) -> Vec<String> {
        lines(&map(xml))
    }

    fn find<'e>(elements: &'e [Element], name: &str) -> &'e Element {
        elements
            .iter()
            .find(|element| element.name == name)
            .unwrap_or_else(|| panic!("no element named {name:?} in {:#?}", lines(elements)))
    }

    /// One `<node …>` opening tag as uiautomator writes it, for dumps built in tests. `flags`
    /// holds the true flags (`clickable`, `scrollable`, `selected`) and `id=…`, `desc=…`.
    fn open_tag(class: &str, text: &str, bounds: [i64; 4], flags: &str) -> String {
        let words: Vec<&str> = flags.split(' ').collect();
        let flag = |name: &str| words.contains(&name);
        let value = |key: &str| {
            words
                .iter()
                .find_map(|word| word.strip_prefix(key))
                .unwrap_or_default()
        };
        let class = if class.contains('.') {
            class.to_owned()
        } else {
            format!("android.widget.{class}")
        };
        let [x1, y1, x2, y2] = bounds;
        format!(
            "<node index=\"0\" text=\"{text}\" resource-id=\"{}\" class=\"{class}\" \
             package=\"com.example\" content-desc=\"{}\" checkable=\"false\" checked=\"false\" \
             clickable=\"{}\" enabled=\"true\" focusable=\"{}\" focused=\"false\" \
             scrollable=\"{}\" long-clickable=\"false\" password=\"false\" selected=\"{}\" \
             bounds=\"[{x1},{y1}][{x2},{y2}]\"",
            value("id="),
            value("desc="),
            flag("clickable"),
            flag("clickable") || flag("scrollable"),
            flag("scrollable"),
            flag("selected"),
        )
    }

    /// A node without children.
    fn leaf(class: &str, text: &str, bounds: [i64; 4], flags: &str) -> String {
        open_tag(class, text, bounds, flags) + " />"
    }

    /// A node with children.
    fn holder(class: &str, bounds: [i64; 4], flags: &str, children: &[String]) -> String {
        format!(
            "{}>{}</node>",
            open_tag(class, "", bounds, flags),
            children.concat()
        )
    }

    /// A whole dump of top-level nodes, portrait.
    fn dump(nodes: &[String]) -> String {
        format!(
            "{HEADER}<hierarchy rotation=\"0\">{}</hierarchy>",
            nodes.concat()
        )
    }

    const HEADER: &str = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>";

    #[test]
    fn a_sign_in_screen_reads_as_its_controls() {
        assert_eq!(
            observe(SIGN_IN),
            [
                "e1 button \"Navigate up\" @0,24 56x56",
                "e2 text \"Sign in\" @72,39 153x26",
                "e3 scrollview [scrollable] @0,80 393x722",
                "e4 img \"Example Shop\" @156,96 80x80",
                "e5 text \"Welcome back\" @16,192 361x32",
                "e6 textbox \"Email\" @16,248 361x56",
                "e7 textbox \"Password\" [password] @16,328 361x56",
                "e8 button \"Show password\" [unchecked] @321,332 48x48",
                "e9 checkbox \"Remember me\" [unchecked] @16,400 202x48",
                "e10 button \"Sign in\" [disabled] @16,464 361x48",
                "e11 button \"Forgot password?\" @109,528 175x24",
            ]
        );
        let hierarchy = parse(SIGN_IN).unwrap();
        assert_eq!(hierarchy.rotation, 0);
        assert_eq!(hierarchy.package.as_deref(), Some("com.example.shop"));
        let elements = elements(&hierarchy, &PHONE, &mut RefTable::new());
        assert_eq!(
            find(&elements, "Email").id.as_deref(),
            Some("com.example.shop:id/email")
        );
        // The divider (an ImageView without a description) and every layout are gone.
        assert!(
            elements
                .iter()
                .all(|element| element.id.as_deref() != Some("com.example.shop:id/divider"))
        );
    }

    #[test]
    fn typing_fills_values_keeps_refs_and_never_shows_a_password() {
        let mut refs = RefTable::new();
        let before = elements(&parse(SIGN_IN).unwrap(), &PHONE, &mut refs);
        let typed = SIGN_IN
            .replace("text=\"Email\"", "text=\"alice@example.com\"")
            .replace("text=\"Password\"", "text=\"•••••••••••••••h\"");
        let after = elements(&parse(&typed).unwrap(), &PHONE, &mut refs);
        let by_id = |elements: &[Element], id: &str| {
            elements
                .iter()
                .find(|element| element.id.as_deref() == Some(id))
                .cloned()
                .unwrap()
        };
        let email = by_id(&after, "com.example.shop:id/email");
        let password = by_id(&after, "com.example.shop:id/password");
        // Android 11 has no hint to tell the text from: it is all the field is called.
        assert_eq!(email.name, "alice@example.com");
        assert_eq!(email.value, None);
        assert_eq!(password.name, "");
        assert_eq!(password.value.as_deref(), Some("••••••••••••"));
        assert_eq!(password.states, ["password"]);
        assert!(after.iter().all(|element| !element.name.contains("•h")));
        for id in ["com.example.shop:id/email", "com.example.shop:id/password"] {
            assert_eq!(by_id(&before, id).reference, by_id(&after, id).reference);
        }

        // With Android 12's `hint` attribute, the name stays and the text is the value.
        let with_hints = typed
            .replace(
                "text=\"alice@example.com\"",
                "text=\"alice@example.com\" hint=\"Email\"",
            )
            .replace(
                "text=\"•••••••••••••••h\"",
                "text=\"•••••••••••••••h\" hint=\"Password\"",
            );
        let hinted = elements(&parse(&with_hints).unwrap(), &PHONE, &mut refs);
        let email = by_id(&hinted, "com.example.shop:id/email");
        assert_eq!(
            (email.name.as_str(), email.value.as_deref()),
            ("Email", Some("alice@example.com"))
        );
        let password = by_id(&hinted, "com.example.shop:id/password");
        assert_eq!(
            (password.name.as_str(), password.value.as_deref()),
            ("Password", Some("••••••••••••"))
        );
        // An empty field on Android 12 reports its hint as its text: no value.
        let empty = SIGN_IN.replace("text=\"Email\"", "text=\"Email\" hint=\"Email\"");
        let email = by_id(
            &elements(&parse(&empty).unwrap(), &PHONE, &mut refs),
            "com.example.shop:id/email",
        );
        assert_eq!((email.name.as_str(), email.value), ("Email", None));
    }

    #[test]
    fn a_password_field_never_names_itself_by_what_was_typed() {
        let field = |text: &str, hint: Option<&str>| {
            let node = Node {
                class: "android.widget.EditText".to_owned(),
                text: text.to_owned(),
                content_desc: String::new(),
                resource_id: String::new(),
                package: String::new(),
                bounds_px: [0, 0, 100, 100],
                checkable: false,
                checked: false,
                clickable: true,
                long_clickable: false,
                enabled: true,
                focusable: true,
                focused: false,
                scrollable: false,
                selected: false,
                password: true,
                depth: 0,
                parent: None,
                hint: hint.map(str::to_owned),
            };
            let field = text_field(&node);
            (field.name, field.value)
        };
        // The hint of an empty field (Android 11 reports it as text).
        assert_eq!(field("Password", None), ("Password".to_owned(), None));
        // The first character typed shows in the clear for a moment.
        assert_eq!(field("s", None), (String::new(), Some("•".to_owned())));
        assert_eq!(
            field("••••x", None),
            (String::new(), Some("•••••".to_owned()))
        );
        assert_eq!(
            field("secret", Some("")),
            (String::new(), Some("••••••".to_owned()))
        );
        assert_eq!(field("", None), (String::new(), None));
    }

    #[test]
    fn list_rows_are_named_by_their_texts_which_are_not_listed_again() {
        assert_eq!(
            observe(INBOX),
            [
                "e1 text \"Inbox\" @72,39 153x26",
                "e2 list [scrollable] @0,80 393x722",
                "e3 button \"Ada Lovelace, Notes on the engine\" @0,80 393x73",
                "e4 button \"Grace Hopper, Compiler meeting moved\" @0,153 393x72",
                "e5 button \"Alan Turing, Re: computable numbers\" @0,225 393x73",
                "e6 button \"Edsger Dijkstra, Go To considered\" @0,298 393x73",
                "e7 button \"Barbara Liskov, Substitution, again\" @0,371 393x73",
                "e8 button \"Donald Knuth, Volume 4B errata\" @0,444 393x72",
                "e9 button \"Frances Allen, Optimisation review\" @0,516 393x73",
                "e10 button \"Ken Thompson, Plan 9 invite\" @0,589 393x73",
                "e11 button \"Radia Perlman, Spanning tree poem\" @0,662 393x73",
                "e12 button \"John Backus, Fortran at 70\" @0,735 393x67",
                "e13 button \"Compose\" @312,721 65x65",
            ]
        );
    }

    #[test]
    fn refs_are_stable_across_the_same_screen_and_scrolling() {
        let mut refs = RefTable::new();
        let first = elements(&parse(INBOX).unwrap(), &PHONE, &mut refs);
        let again = elements(&parse(INBOX).unwrap(), &PHONE, &mut refs);
        assert_eq!(first, again);

        let scrolled = elements(&parse(INBOX_SCROLLED).unwrap(), &PHONE, &mut refs);
        assert_eq!(
            lines(&scrolled),
            [
                "e1 text \"Inbox\" @72,39 153x26",
                "e2 list [scrollable] @0,80 393x722",
                // Alan Turing's name scrolled out of view; the row is still e5.
                "e5 button \"Re: computable numbers\" @0,80 393x36",
                "e6 button \"Edsger Dijkstra, Go To considered\" @0,116 393x73",
                "e7 button \"Barbara Liskov, Substitution, again\" @0,189 393x73",
                "e8 button \"Donald Knuth, Volume 4B errata\" @0,262 393x73",
                "e9 button \"Frances Allen, Optimisation review\" @0,335 393x72",
                "e10 button \"Ken Thompson, Plan 9 invite\" @0,407 393x73",
                "e11 button \"Radia Perlman, Spanning tree poem\" @0,480 393x73",
                "e12 button \"John Backus, Fortran at 70\" @0,553 393x72",
                "e14 button \"Margaret Hamilton, Apollo guidance notes\" @0,625 393x73",
                "e15 button \"Dennis Ritchie, C, the second edition\" @0,698 393x73",
                "e16 button \"Sophie Wilson\" @0,771 393x31",
                "e13 button \"Compose\" @312,721 65x65",
            ]
        );
        // Scrolling back finds the rows that left with the refs they had.
        let back = elements(&parse(INBOX).unwrap(), &PHONE, &mut refs);
        assert_eq!(back, first);
    }

    #[test]
    fn a_row_that_shows_more_of_itself_keeps_its_ref() {
        let screen = |texts: &[&str], second_row: &str| {
            let texts: Vec<String> = texts
                .iter()
                .zip([0, 100])
                .map(|(text, y)| leaf("TextView", text, [0, y, 1080, y + 100], ""))
                .collect();
            dump(&[
                holder(
                    "LinearLayout",
                    [0, 0, 1080, 200],
                    "clickable id=com.example:id/row",
                    &texts,
                ),
                leaf(
                    "LinearLayout",
                    second_row,
                    [0, 200, 1080, 400],
                    "clickable id=com.example:id/row",
                ),
            ])
        };
        let mut refs = RefTable::new();
        let mut observe = |xml: String| -> Vec<String> {
            lines(&elements(&parse(&xml).unwrap(), &PHONE, &mut refs))
        };
        assert_eq!(
            observe(screen(&["Sophie Wilson"], "Other")),
            [
                "e1 button \"Sophie Wilson\" @0,0 393x73",
                "e2 button \"Other\" @0,73 393x72"
            ]
        );
        assert_eq!(
            observe(screen(&["Sophie Wilson", "ARM at 40"], "Other")),
            [
                "e1 button \"Sophie Wilson, ARM at 40\" @0,0 393x73",
                "e2 button \"Other\" @0,73 393x72"
            ]
        );
        // A row that matches a ref outright keeps it; the row that merely continues it does not.
        assert_eq!(
            observe(screen(&["ARM at 40"], "Sophie Wilson")),
            [
                "e3 button \"ARM at 40\" @0,0 393x73",
                "e1 button \"Sophie Wilson\" @0,73 393x72"
            ]
        );
        assert!(!continues(&["a"], &["a"]));
        assert!(continues(&["b", "c"], &["a", "b", "c"]));
        assert!(continues(&["a", "b", "c"], &["a", "b"]));
        assert!(!continues(&["a", "c"], &["a", "b", "c"]));
        assert!(!continues(&[], &["a"]));
    }

    #[test]
    fn elements_with_the_same_identity_are_told_apart_by_order() {
        let delete = |y: i64| {
            leaf(
                "Button",
                "Delete",
                [0, y, 200, y + 100],
                "clickable id=com.example:id/delete",
            )
        };
        let xml = dump(&[delete(0), delete(100)]);
        let references: Vec<String> = map(&xml).into_iter().map(|e| e.reference).collect();
        assert_eq!(references, ["e1", "e2"]);
    }

    #[test]
    fn the_ref_table_forgets_the_oldest_identities_beyond_its_capacity() {
        let screen = |names: &[&str]| {
            let nodes: Vec<String> = names
                .iter()
                .zip((0..).step_by(100))
                .map(|(name, y)| leaf("TextView", name, [0, y, 500, y + 100], ""))
                .collect();
            dump(&nodes)
        };
        let mut refs = RefTable::with_capacity(3);
        let observe = |refs: &mut RefTable, names: &[&str]| -> Vec<String> {
            elements(&parse(&screen(names)).unwrap(), &PHONE, refs)
                .into_iter()
                .map(|element| element.reference)
                .collect()
        };
        assert_eq!(observe(&mut refs, &["a", "b"]), ["e1", "e2"]);
        assert_eq!(observe(&mut refs, &["c", "d"]), ["e3", "e4"]);
        assert_eq!(refs.len(), 3);
        // `b` was kept over `a` (same age, later number); `a` comes back as new.
        assert_eq!(observe(&mut refs, &["b"]), ["e2"]);
        assert_eq!(observe(&mut refs, &["a"]), ["e5"]);
        // A screen larger than the capacity is remembered whole.
        assert_eq!(
            observe(&mut refs, &["v", "w", "x", "y"]),
            ["e6", "e7", "e8", "e9"]
        );
        assert_eq!(refs.len(), 4);
        refs.clear();
        assert!(refs.is_empty());
        assert_eq!(observe(&mut refs, &["v"]), ["e1"]);
    }

    #[test]
    fn settings_rows_take_the_role_and_state_of_their_switch() {
        assert_eq!(
            observe(SETTINGS),
            [
                "e1 button \"Navigate up\" @0,24 56x56",
                "e2 text \"Network & internet\" @72,39 153x26",
                "e3 list [scrollable] @0,80 393x722",
                "e4 switch \"Wi‑Fi, Home\" [checked] @0,80 393x78",
                "e5 button \"Mobile network, Example Mobile\" @0,158 393x78",
                "e6 switch \"Airplane mode\" [unchecked] @0,236 393x57",
                "e7 button \"Hotspot & tethering, Off\" [disabled] @0,293 393x78",
                "e8 switch \"Data Saver\" [unchecked] @329,387 48x34",
                "e9 slider \"Screen brightness\" [scrollable] @16,489 361x33",
            ]
        );
    }

    #[test]
    fn web_content_follows_the_same_rules() {
        assert_eq!(
            observe(WEBVIEW),
            [
                "e1 button \"Navigate up\" @0,24 56x56",
                "e2 text \"Checkout\" @72,39 153x26",
                "e3 webview \"Checkout – Example Shop\" [scrollable] @0,80 393x722",
                "e4 text \"Checkout\" @16,96 361x32",
                "e5 text \"Enter your card details.\" @16,136 361x24",
                "e6 img \"Visa\" @16,168 48x32",
                "e7 textbox \"Card number\" @16,208 361x48",
                "e8 checkbox \"Save this card\" [checked] @16,264 202x40",
                "e9 button \"Pay $12.00\" @16,320 361x48",
                "e10 text \"By paying you accept the\" @16,384 137x24",
                "e11 button \"terms of service\" @153,384 145x24",
            ]
        );
        let elements = elements(&parse(WEBVIEW).unwrap(), &PHONE, &mut RefTable::new());
        assert_eq!(
            find(&elements, "Card number").id.as_deref(),
            Some("card-number")
        );
    }

    #[test]
    fn escaped_text_is_unescaped_and_whitespace_collapsed() {
        let hierarchy = parse(ESCAPES).unwrap();
        let texts: Vec<&str> = hierarchy
            .nodes
            .iter()
            .filter(|node| node.resource_id == "com.example.chat:id/message")
            .map(|node| node.text.as_str())
            .collect();
        assert_eq!(
            texts,
            [
                "She said \"see you at 5 <ish>\"\nand left",
                "Party tonight 🎉 — café at 8",
                "你好, ┬─┬ 'quoted'",
                "Cake 🍰",
            ]
        );
        assert_eq!(
            observe(ESCAPES),
            [
                "e1 button \"Navigate up\" @0,24 56x56",
                "e2 text \"Tom & Jerry\" @72,39 153x26",
                "e3 list [scrollable] @0,80 393x722",
                "e4 text \"She said \"see you at 5 <ish>\" and left\" @16,96 361x48",
                "e5 text \"Party tonight 🎉 — café at 8\" @16,152 361x24",
                "e6 text \"你好, ┬─┬ 'quoted'\" @16,184 361x24",
                "e7 text \"Cake 🍰\" @16,216 361x24",
                "e8 button \"Send \"now\"\" @329,753 48x48",
            ]
        );
    }

    #[test]
    fn names_are_cut_at_120_characters() {
        let long = "word ".repeat(60);
        assert_eq!(clean(&long, 120).chars().count(), 120);
        assert!(clean(&long, 120).ends_with("word…") || clean(&long, 120).ends_with('…'));
        assert_eq!(clean("  a \n\t b  ", 120), "a b");
        assert_eq!(clean(&"x".repeat(300), 10), format!("{}…", "x".repeat(9)));
    }

    /// A generated screen of 200 rows of five nodes each, plus the list: 1,001 nodes.
    fn big_dump() -> String {
        let rows: Vec<String> = (0..200_i64)
            .map(|row| {
                let (x, y) = ((row / 20) * 108, (row % 20) * 117);
                let bounds = [x, y, x + 108, y + 117];
                let texts = [
                    leaf("TextView", &format!("Item {row}"), bounds, ""),
                    leaf("TextView", &format!("Detail &amp; more {row}"), bounds, ""),
                ];
                let children = [
                    leaf("ImageView", "", bounds, ""),
                    holder("LinearLayout", bounds, "", &texts),
                ];
                holder(
                    "LinearLayout",
                    bounds,
                    "clickable id=com.example:id/row",
                    &children,
                )
            })
            .collect();
        let list = "androidx.recyclerview.widget.RecyclerView";
        dump(&[holder(
            list,
            [0, 0, 1080, 2340],
            "scrollable id=com.example:id/list",
            &rows,
        )])
    }

    #[test]
    fn a_thousand_node_screen_maps_every_row_once() {
        let xml = big_dump();
        let hierarchy = parse(&xml).unwrap();
        assert_eq!(hierarchy.nodes.len(), 1_001);
        assert_eq!(hierarchy.nodes[5].depth, 3);
        assert_eq!(hierarchy.nodes[5].parent, Some(3));
        let mut refs = RefTable::new();
        let elements = elements(&hierarchy, &PHONE, &mut refs);
        assert_eq!(elements.len(), 201);
        assert_eq!(elements[1].name, "Item 0, Detail & more 0");
        assert_eq!(elements[200].name, "Item 199, Detail & more 199");
        let unique: std::collections::HashSet<&str> =
            elements.iter().map(|e| e.reference.as_str()).collect();
        assert_eq!(unique.len(), 201);
        assert_eq!(refs.len(), 201);
    }

    #[test]
    fn malformed_dumps_are_typed_errors() {
        assert_eq!(parse(""), Err(HierarchyError::Empty));
        assert_eq!(parse(" \n"), Err(HierarchyError::Empty));
        assert_eq!(
            parse("ERROR: null root node returned by UiTestAutomationBridge.\n"),
            Err(HierarchyError::NoWindow)
        );
        assert_eq!(
            parse("ERROR: could not get idle state.\n"),
            Err(HierarchyError::NotIdle)
        );
        assert!(matches!(
            parse(&format!("{HEADER}<screen rotation=\"0\"></screen>")),
            Err(HierarchyError::NotAHierarchy { found }) if found == "screen"
        ));
        assert!(matches!(
            parse("not xml at all"),
            Err(HierarchyError::Xml { .. } | HierarchyError::Truncated { .. })
        ));
        assert!(matches!(
            parse(&format!(
                "{HEADER}<!DOCTYPE hierarchy [<!ENTITY a \"b\">]><hierarchy rotation=\"0\">&a;</hierarchy>"
            )),
            Err(HierarchyError::Xml { .. })
        ));
        assert_eq!(
            parse(&SIGN_IN.replace("rotation=\"0\"", "rotation=\"4\"")),
            Err(HierarchyError::Rotation {
                value: "4".to_owned()
            })
        );

        let bad_bounds =
            SIGN_IN.replacen("bounds=\"[0,0][1080,2340]\"", "bounds=\"[a,b][c,d]\"", 1);
        let error = parse(&bad_bounds).unwrap_err();
        assert_eq!(
            error,
            HierarchyError::Bounds {
                node: 0,
                class: "android.widget.FrameLayout".to_owned(),
                value: "[a,b][c,d]".to_owned(),
            }
        );
        assert_eq!(
            error.to_string(),
            "node 0 (`android.widget.FrameLayout`) has bounds `[a,b][c,d]`; uiautomator writes \
             `[x1,y1][x2,y2]` with integers"
        );
        assert!(!error.is_transient());
        for bounds in [
            "[0,0][1,]",
            "[0,0]",
            "0,0,1,1",
            "[0,0][1,1]x",
            "[+1,0][2,2]",
            "[ 1,0][2,2]",
            "[99999999999999999999,0][1,1]",
        ] {
            let xml = SIGN_IN.replacen("[0,0][1080,2340]", bounds, 1);
            assert!(
                matches!(parse(&xml), Err(HierarchyError::Bounds { .. })),
                "{bounds}"
            );
        }
        assert_eq!(
            parse(&SIGN_IN.replacen(" bounds=\"[0,0][1080,2340]\"", "", 1)),
            Err(HierarchyError::MissingBounds {
                node: 0,
                class: "android.widget.FrameLayout".to_owned()
            })
        );
        assert!(matches!(
            parse(&SIGN_IN.replacen("clickable=\"false\"", "clickable=\"yes\"", 1)),
            Err(HierarchyError::Flag { node: 0, attribute: "clickable", value, .. }) if value == "yes"
        ));
    }

    #[test]
    fn every_truncation_of_a_dump_is_an_error_worth_retrying() {
        let end = SIGN_IN.trim_end().len();
        for cut in 1..end {
            if !SIGN_IN.is_char_boundary(cut) {
                continue;
            }
            let error = parse(&SIGN_IN[..cut]).unwrap_err();
            assert!(
                error.is_transient() || matches!(error, HierarchyError::Xml { .. }),
                "cut at {cut}: {error:?}"
            );
        }
        assert!(parse(&SIGN_IN[..end]).is_ok());
    }

    #[test]
    fn the_noise_around_a_dump_to_the_terminal_is_ignored() {
        let noisy = format!("{}UI hierchary dumped to: /dev/tty\n", SIGN_IN.trim_end());
        assert_eq!(parse(&noisy), parse(SIGN_IN));
        assert_eq!(screen_hash(&noisy), screen_hash(SIGN_IN));
        assert_ne!(screen_hash(SIGN_IN), screen_hash(SETTINGS));
        assert_ne!(
            screen_hash(SIGN_IN),
            screen_hash(&SIGN_IN.replace("Welcome back", "Welcome"))
        );
    }

    #[test]
    fn an_empty_hierarchy_has_no_elements() {
        let hierarchy = parse(&format!("{HEADER}<hierarchy rotation=\"1\" />")).unwrap();
        assert_eq!(hierarchy.rotation, 1);
        assert!(hierarchy.nodes.is_empty());
        assert_eq!(hierarchy.package, None);
        assert!(elements(&hierarchy, &PHONE, &mut RefTable::new()).is_empty());
    }

    #[test]
    fn a_landscape_dump_is_read_against_the_turned_display() {
        let portrait = dump(&[leaf("Button", "Play", [2000, 100, 2300, 400], "clickable")]);
        let landscape = portrait.replace("rotation=\"0\"", "rotation=\"1\"");
        assert_eq!(observe(&landscape), ["e1 button \"Play\" @727,36 109x109"]);
        // The same node against the untouched portrait display would be off screen.
        assert!(observe(&portrait).is_empty());
    }

    #[test]
    fn elements_without_area_or_off_the_display_are_dropped() {
        let xml = dump(&[
            leaf("Button", "Flat", [10, 10, 10, 50], "clickable"),
            leaf("Button", "Sliver", [10, 10, 11, 50], "clickable"),
            leaf("Button", "Below", [0, 2340, 100, 2400], "clickable"),
            leaf("Button", "Left", [-100, 0, 0, 100], "clickable"),
            leaf("Button", "Edge", [-50, 0, 50, 100], "clickable"),
        ]);
        assert_eq!(observe(&xml), ["e1 button \"Edge\" @0,0 18x36"]);
    }

    #[test]
    fn ids_match_in_full_or_by_short_name() {
        assert!(id_matches("com.example:id/username", "username"));
        assert!(id_matches(
            "com.example:id/username",
            "com.example:id/username"
        ));
        assert!(id_matches("android:id/title", "title"));
        assert!(id_matches("card-number", "card-number"));
        assert!(!id_matches("com.example:id/username", "user"));
        assert!(!id_matches("com.example:id/username", "id/username"));
        assert!(!id_matches("com.example:id/username", ""));
        assert!(!id_matches("", ""));
    }

    #[test]
    fn scroll_containers_name_their_first_and_last_visible_texts() {
        let hierarchy = parse(INBOX).unwrap();
        let containers = scroll_containers(&hierarchy, &PHONE);
        assert_eq!(containers.len(), 1);
        let list = &containers[0];
        assert_eq!(
            hierarchy.nodes[list.node].resource_id,
            "com.example.mail:id/conversations"
        );
        assert_eq!(list.bounds, [0, 80, 393, 722]);
        assert_eq!(list.axis, ScrollAxis::Vertical);
        assert_eq!(list.first_visible.as_deref(), Some("Ada Lovelace"));
        assert_eq!(list.last_visible.as_deref(), Some("Fortran at 70"));
        // The bounds are those of the list's element, so the device can find its ref.
        let elements = elements(&hierarchy, &PHONE, &mut RefTable::new());
        assert!(
            elements
                .iter()
                .any(|element| element.role == "list" && element.bounds == list.bounds)
        );

        let settings = scroll_containers(&parse(SETTINGS).unwrap(), &PHONE);
        assert_eq!(settings.len(), 2, "the list and the brightness slider");

        let items = [
            leaf("TextView", "One", [0, 0, 600, 400], "clickable"),
            leaf("TextView", "Two", [600, 0, 1080, 400], "clickable"),
        ];
        let carousel = dump(&[holder(
            "androidx.recyclerview.widget.RecyclerView",
            [0, 0, 1080, 400],
            "scrollable",
            &items,
        )]);
        let containers = scroll_containers(&parse(&carousel).unwrap(), &PHONE);
        assert_eq!(containers[0].axis, ScrollAxis::Horizontal);
        assert_eq!(containers[0].last_visible.as_deref(), Some("Two"));
    }

    #[test]
    fn roles_follow_the_widget_class() {
        let cases = [
            ("android.widget.Button", Kind::Button),
            (
                "com.google.android.material.button.MaterialButton",
                Kind::Button,
            ),
            (
                "com.google.android.material.floatingactionbutton.FloatingActionButton",
                Kind::Button,
            ),
            ("android.widget.ImageButton", Kind::Button),
            (
                "com.google.android.material.textfield.TextInputEditText",
                Kind::Textbox,
            ),
            ("android.widget.AutoCompleteTextView", Kind::Textbox),
            (
                "android.widget.SearchView$SearchAutoComplete",
                Kind::Searchbox,
            ),
            ("android.widget.CheckedTextView", Kind::CheckedText),
            ("androidx.appcompat.widget.SwitchCompat", Kind::Switch),
            (
                "com.google.android.material.switchmaterial.SwitchMaterial",
                Kind::Switch,
            ),
            ("android.widget.ToggleButton", Kind::Switch),
            ("android.widget.RadioButton", Kind::Radio),
            ("androidx.appcompat.widget.AppCompatImageView", Kind::Image),
            (
                "com.google.android.material.textview.MaterialTextView",
                Kind::Text,
            ),
            ("android.widget.GridView", Kind::List),
            ("androidx.core.widget.NestedScrollView", Kind::ScrollView),
            ("android.widget.HorizontalScrollView", Kind::ScrollView),
            ("androidx.viewpager2.widget.ViewPager2", Kind::ScrollView),
            ("com.google.android.material.slider.Slider", Kind::Slider),
            ("android.widget.ProgressBar", Kind::ProgressBar),
            ("androidx.appcompat.widget.AppCompatSpinner", Kind::Combobox),
            (
                "com.google.android.material.tabs.TabLayout$TabView",
                Kind::Tab,
            ),
            ("android.app.ActionBar$Tab", Kind::Tab),
            ("android.webkit.WebView", Kind::WebView),
            ("android.widget.ImageSwitcher", Kind::Generic),
            ("android.widget.LinearLayout", Kind::Generic),
            ("android.view.View", Kind::Generic),
            ("", Kind::Generic),
        ];
        for (class, kind) in cases {
            assert_eq!(classify(class), kind, "{class}");
        }
    }

    #[test]
    fn switches_lose_their_state_label() {
        assert_eq!(without_switch_state("ON", true), "");
        assert_eq!(without_switch_state("OFF", false), "");
        assert_eq!(without_switch_state("Bluetooth ON", true), "Bluetooth");
        assert_eq!(without_switch_state("Bluetooth ON", false), "Bluetooth ON");
        assert_eq!(without_switch_state("MOON", true), "MOON");
    }

    #[test]
    fn tabs_spinners_and_unlabelled_icons() {
        let tab = |text: &str, x: i64, flags: &str| {
            let label = leaf("TextView", text, [x + 100, 40, x + 440, 110], "");
            holder(
                "com.google.android.material.tabs.TabLayout$TabView",
                [x, 0, x + 540, 150],
                flags,
                &[label],
            )
        };
        let country = leaf(
            "TextView",
            "Norway",
            [40, 200, 1040, 350],
            "id=android:id/text1",
        );
        let xml = dump(&[
            tab("Chats", 0, "clickable selected"),
            tab("Calls", 540, "clickable"),
            holder(
                "Spinner",
                [0, 200, 1080, 350],
                "clickable id=com.example:id/country",
                &[country],
            ),
            leaf(
                "ImageView",
                "",
                [900, 400, 1050, 550],
                "clickable id=com.example:id/close",
            ),
        ]);
        let elements = map(&xml);
        assert_eq!(
            lines(&elements),
            [
                "e1 tab \"Chats\" [selected] @0,0 196x55",
                "e2 tab \"Calls\" @196,0 197x55",
                "e3 combobox =\"Norway\" @0,73 393x54",
                "e4 button @327,145 55x55",
            ]
        );
        assert_eq!(elements[3].id.as_deref(), Some("com.example:id/close"));
    }

    #[test]
    fn unlabelled_controls_take_the_text_beside_them() {
        let row = |y: i64, children: &[String]| {
            holder("LinearLayout", [0, y, 1080, y + 200], "", children)
        };
        let text = |text: &str, y: i64| leaf("TextView", text, [0, y, 800, y + 80], "");
        let xml = dump(&[
            row(
                0,
                &[
                    text("Email", 0),
                    leaf("EditText", "", [0, 80, 1080, 200], "clickable"),
                ],
            ),
            row(
                200,
                &[
                    holder(
                        "LinearLayout",
                        [0, 200, 800, 400],
                        "",
                        &[text("Backup", 200), text("Daily at 2:00", 280)],
                    ),
                    leaf("CheckBox", "", [900, 240, 1040, 360], "clickable"),
                ],
            ),
            row(
                400,
                &[
                    text("Volume", 400),
                    leaf("SeekBar", "", [0, 480, 1080, 600], "desc=Volume"),
                ],
            ),
            row(
                600,
                &[
                    text("Unrelated", 600),
                    leaf("Button", "", [900, 600, 1040, 700], "clickable"),
                ],
            ),
        ]);
        assert_eq!(
            observe(&xml),
            [
                "e1 textbox \"Email\" @0,29 393x44",
                "e2 checkbox \"Backup, Daily at 2:00\" [unchecked] @327,87 51x44",
                "e3 slider \"Volume\" @0,175 393x43",
                "e4 text \"Unrelated\" @0,218 291x29",
                "e5 button @327,218 51x37",
            ]
        );
    }

    #[test]
    fn a_clickable_backdrop_does_not_swallow_the_screen() {
        let title = holder(
            "LinearLayout",
            [0, 0, 1080, 300],
            "",
            &[leaf("TextView", "Title", [0, 0, 1080, 300], "")],
        );
        let search = leaf("EditText", "Search", [0, 300, 1080, 500], "clickable");
        let xml = dump(&[holder(
            "FrameLayout",
            [0, 0, 1080, 2340],
            "clickable",
            &[title, search],
        )]);
        assert_eq!(
            observe(&xml),
            [
                "e1 text \"Title\" @0,0 393x109",
                "e2 textbox \"Search\" @0,109 393x73"
            ]
        );
    }

    #[test]
    fn a_zero_density_counts_as_mdpi() {
        let display = Display {
            width_px: 1080,
            height_px: 2340,
            density_dpi: 0,
        };
        assert_eq!(display.scale(), 1.0);
        assert_eq!(center_px([10, 20, 30, 40], &display), (25, 40));
        let elements = elements(&parse(SIGN_IN).unwrap(), &display, &mut RefTable::new());
        assert_eq!(find(&elements, "Welcome back").bounds, [44, 528, 992, 88]);
    }

    #[test]
    fn centres_round_half_up() {
        // 2.75 px per dp: the centre of [16, 464, 361, 48] is (196.5 dp, 488 dp).
        assert_eq!(center_px([16, 464, 361, 48], &PHONE), (540, 1342));
        assert_eq!(div_round_half_up(5, 2), 3);
        assert_eq!(div_round_half_up(-5, 2), -2);
        assert_eq!(div_round_half_up(7, 3), 2);
        assert_eq!(
            center_px([i64::MAX, i64::MIN, i64::MAX, 0], &PHONE),
            (i64::MAX, i64::MIN)
        );
    }

    /// Mutations that a byte-level fuzzer would make to a valid dump.
    fn mutated(xml: &str, edits: &[(usize, u8, char)]) -> String {
        let mut chars: Vec<char> = xml.chars().collect();
        for &(at, operation, with) in edits {
            if chars.is_empty() {
                chars.push(with);
                continue;
            }
            let at = at % chars.len();
            match operation % 3 {
                0 => chars[at] = with,
                1 => {
                    chars.remove(at);
                }
                _ => chars.insert(at, with),
            }
        }
        chars.into_iter().collect()
    }

    proptest! {
        #[test]
        fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,400}") {
            if let Ok(hierarchy) = parse(&text) {
                let _ = elements(&hierarchy, &PHONE, &mut RefTable::new());
            }
        }

        #[test]
        fn parse_never_panics_on_xml_like_text(text in "[<>/=\"' a-z\\[\\],0-9-&#;?!]{0,300}") {
            let _ = parse(&text);
            let _ = parse(&format!("{HEADER}<hierarchy rotation=\"0\">{text}</hierarchy>"));
        }

        #[test]
        fn mutated_dumps_parse_or_fail_without_panicking(
            fixture in 0..FIXTURES.len(),
            edits in proptest::collection::vec(
                (
                    any::<usize>(),
                    any::<u8>(),
                    prop::sample::select(vec![
                        '<', '>', '/', '"', '=', '[', ']', ',', '-', '&', ';', '#', '1', '9', 'a',
                        ' ', '•', '\n',
                    ]),
                ),
                1..6,
            ),
        ) {
            let xml = mutated(FIXTURES[fixture], &edits);
            if let Ok(hierarchy) = parse(&xml) {
                let display = PHONE.rotated(hierarchy.rotation);
                let elements = elements(&hierarchy, &PHONE, &mut RefTable::new());
                for element in &elements {
                    let [x, y, width, height] = element.bounds;
                    prop_assert!(width > 0 && height > 0);
                    prop_assert!(x >= 0 && y >= 0);
                    let (cx, cy) = center_px(element.bounds, &PHONE);
                    prop_assert!(cx >= 0 && cx <= i64::from(display.width_px));
                    prop_assert!(cy >= 0 && cy <= i64::from(display.height_px));
                }
                let _ = scroll_containers(&hierarchy, &PHONE);
            }
        }

        #[test]
        fn elements_never_panic_on_inconsistent_trees(
            shape in proptest::collection::vec(
                (0_u32..6, proptest::option::of(0_usize..40), any::<bool>(), any::<bool>()),
                0..40,
            ),
        ) {
            let template = parse(SETTINGS).unwrap().nodes;
            let nodes = shape
                .iter()
                .enumerate()
                .map(|(index, (depth, parent, clickable, scrollable))| Node {
                    depth: *depth,
                    parent: *parent,
                    clickable: *clickable,
                    scrollable: *scrollable,
                    ..template[index % template.len()].clone()
                })
                .collect();
            let hierarchy = Hierarchy { nodes, rotation: 0, package: None };
            let _ = elements(&hierarchy, &PHONE, &mut RefTable::new());
            let _ = scroll_containers(&hierarchy, &PHONE);
        }

        /// Converting pixel bounds to dp and taking the centre back to pixels lands within half
        /// a dp and half a pixel of the true centre, and inside the node.
        #[test]
        fn the_centre_survives_the_round_trip(
            x1 in 0_i64..3000,
            y1 in 0_i64..3000,
            width in 1_i64..2000,
            height in 1_i64..2000,
            density in prop::sample::select(
                vec![120_u32, 160, 213, 240, 320, 400, 420, 440, 480, 560, 640],
            ),
        ) {
            let display = Display { width_px: 6000, height_px: 6000, density_dpi: density };
            let scale = display.scale();
            let Some(bounds) = visible_dp([x1, y1, x1 + width, y1 + height], &display) else {
                // Only a sliver thinner than a dp may vanish.
                prop_assert!(width as f64 <= scale + 1.0 || height as f64 <= scale + 1.0);
                return Ok(());
            };
            let (cx, cy) = center_px(bounds, &display);
            let tolerance = scale / 2.0 + 0.5;
            let true_x = x1 as f64 + width as f64 / 2.0;
            let true_y = y1 as f64 + height as f64 / 2.0;
            prop_assert!((cx as f64 - true_x).abs() <= tolerance + 1e-9, "{cx} vs {true_x}");
            prop_assert!((cy as f64 - true_y).abs() <= tolerance + 1e-9, "{cy} vs {true_y}");
            if width as f64 > 2.0 * tolerance + 1.0 {
                prop_assert!(cx >= x1 && cx < x1 + width);
            }
            if height as f64 > 2.0 * tolerance + 1.0 {
                prop_assert!(cy >= y1 && cy < y1 + height);
            }
        }
    }
}
