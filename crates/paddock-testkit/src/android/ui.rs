//! The accessibility tree of the window in front, and the two ways it leaves the device: the XML
//! that Android 11's `uiautomator dump` writes (`AccessibilityNodeInfoDumper` through the
//! platform's KXmlSerializer: one line, `<node … />` for leaves, attributes in a fixed order,
//! `NAF="true"` on clickable nodes nobody can name), and hit testing for `input tap`.

use std::fmt::Write as _;

/// A rectangle in display pixels, `[left,top][right,bottom]` like `Rect.toShortString()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl Rect {
    pub const fn new(left: i32, top: i32, right: i32, bottom: i32) -> Self {
        Self {
            left,
            top,
            right,
            bottom,
        }
    }

    pub fn width(&self) -> i32 {
        self.right - self.left
    }

    pub fn height(&self) -> i32 {
        self.bottom - self.top
    }

    pub fn is_empty(&self) -> bool {
        self.right <= self.left || self.bottom <= self.top
    }

    /// True when the point lies inside (left and top edges included, as in `Rect.contains`).
    pub fn contains(&self, x: i32, y: i32) -> bool {
        x >= self.left && x < self.right && y >= self.top && y < self.bottom
    }

    pub fn intersect(&self, other: &Rect) -> Rect {
        Rect::new(
            self.left.max(other.left),
            self.top.max(other.top),
            self.right.min(other.right),
            self.bottom.min(other.bottom),
        )
    }

    pub fn center(&self) -> (i32, i32) {
        (self.left + self.width() / 2, self.top + self.height() / 2)
    }

    /// A rectangle inset by `dx` and `dy` on each side.
    pub fn inset(&self, dx: i32, dy: i32) -> Rect {
        Rect::new(
            self.left + dx,
            self.top + dy,
            self.right - dx,
            self.bottom - dy,
        )
    }
}

impl std::fmt::Display for Rect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{},{}][{},{}]",
            self.left, self.top, self.right, self.bottom
        )
    }
}

/// What touching a node does; the app model interprets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// A launcher icon.
    Launch(&'static str),
    /// An editable field, by the app's name for it.
    Field(Field),
    RememberMe,
    SignIn,
    DarkMode,
    AddNote,
    /// The note shown at this position of the list.
    Note(usize),
    /// A row of the Settings list (does nothing).
    SettingsRow,
}

/// The editable fields of the model apps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Username,
    Password,
    Url,
}

/// A paint hint for `screencap`: how a node is filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Paint {
    /// Containers: nothing of their own.
    #[default]
    None,
    /// A solid colour (backgrounds, bars).
    Solid([u8; 3]),
    /// A widget: a colour derived from its text and state, with its text as glyph marks.
    Widget,
}

/// One `AccessibilityNodeInfo` as the dumper sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    pub class: String,
    pub package: String,
    pub text: String,
    pub resource_id: String,
    pub content_desc: String,
    pub checkable: bool,
    pub checked: bool,
    pub clickable: bool,
    pub enabled: bool,
    pub focusable: bool,
    pub focused: bool,
    pub scrollable: bool,
    pub long_clickable: bool,
    pub password: bool,
    pub selected: bool,
    pub bounds: Rect,
    /// The position among the parent's children, counting children the dump leaves out.
    pub index: usize,
    pub children: Vec<Node>,
    pub(crate) action: Option<Action>,
    pub(crate) paint: Paint,
}

impl Node {
    pub(crate) fn new(class: &str, bounds: Rect) -> Self {
        Self {
            class: class.to_owned(),
            enabled: true,
            bounds,
            ..Self::default()
        }
    }

    pub(crate) fn text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    pub(crate) fn id(mut self, resource_id: impl Into<String>) -> Self {
        self.resource_id = resource_id.into();
        self
    }

    pub(crate) fn desc(mut self, content_desc: impl Into<String>) -> Self {
        self.content_desc = content_desc.into();
        self
    }

    /// Clickable and focusable, as a button is.
    pub(crate) fn clickable(mut self) -> Self {
        self.clickable = true;
        self.focusable = true;
        self
    }

    pub(crate) fn long_clickable(mut self) -> Self {
        self.long_clickable = true;
        self
    }

    pub(crate) fn focusable(mut self) -> Self {
        self.focusable = true;
        self
    }

    pub(crate) fn focused(mut self, focused: bool) -> Self {
        self.focused = focused;
        self
    }

    pub(crate) fn checkable(mut self, checked: bool) -> Self {
        self.checkable = true;
        self.checked = checked;
        self
    }

    pub(crate) fn scrollable(mut self) -> Self {
        self.scrollable = true;
        self
    }

    pub(crate) fn password(mut self) -> Self {
        self.password = true;
        self
    }

    pub(crate) fn selected(mut self, selected: bool) -> Self {
        self.selected = selected;
        self
    }

    pub(crate) fn action(mut self, action: Action) -> Self {
        self.action = Some(action);
        self
    }

    pub(crate) fn paint(mut self, paint: Paint) -> Self {
        self.paint = paint;
        self
    }

    /// Adds children, numbering them in order.
    pub(crate) fn children(mut self, children: impl IntoIterator<Item = Node>) -> Self {
        for child in children {
            let index = self.children.len();
            self.children.push(Node { index, ..child });
        }
        self
    }

    /// Sets `package` on this node and every descendant: a window belongs to one app.
    pub(crate) fn in_package(mut self, package: &str) -> Self {
        fn set(node: &mut Node, package: &str) {
            node.package = package.to_owned();
            for child in &mut node.children {
                set(child, package);
            }
        }
        set(&mut self, package);
        self
    }

    /// Every node, parents before children.
    #[cfg(test)]
    pub fn walk(&self) -> Vec<&Node> {
        let mut nodes = vec![self];
        let mut index = 0;
        while index < nodes.len() {
            let node = nodes[index];
            // Children go right after their parent, in order, so the walk is pre-order.
            let position = index + 1;
            for (offset, child) in node.children.iter().enumerate() {
                nodes.insert(position + offset, child);
            }
            index += 1;
        }
        nodes
    }

    /// The deepest node under the point that takes touches (clickable or focusable), as the
    /// view system dispatches a tap to the innermost interested view.
    pub(crate) fn hit(&self, x: i32, y: i32) -> Option<&Node> {
        if !self.bounds.contains(x, y) {
            return None;
        }
        // Later siblings draw on top of earlier ones, so they are asked first.
        for child in self.children.iter().rev() {
            if let Some(hit) = child.hit(x, y) {
                return Some(hit);
            }
        }
        (self.clickable || self.focusable || self.long_clickable).then_some(self)
    }

    /// The innermost scrollable node under the point.
    pub(crate) fn scrollable_at(&self, x: i32, y: i32) -> Option<&Node> {
        if !self.bounds.contains(x, y) {
            return None;
        }
        for child in self.children.iter().rev() {
            if let Some(hit) = child.scrollable_at(x, y) {
                return Some(hit);
            }
        }
        self.scrollable.then_some(self)
    }
}

/// The classes whose clickable-but-nameless nodes the dumper does not flag as NAF.
const NAF_EXCLUDED_CLASSES: [&str; 4] = [
    "android.widget.GridView",
    "android.widget.GridLayout",
    "android.widget.ListView",
    "android.widget.TableLayout",
];

fn naf(node: &Node) -> bool {
    if NAF_EXCLUDED_CLASSES
        .iter()
        .any(|class| node.class.ends_with(class))
    {
        return false;
    }
    let nameless =
        node.clickable && node.enabled && node.content_desc.is_empty() && node.text.is_empty();
    nameless && !descendant_named(node)
}

fn descendant_named(node: &Node) -> bool {
    node.children.iter().any(|child| {
        !child.content_desc.is_empty() || !child.text.is_empty() || descendant_named(child)
    })
}

/// Writes an attribute value as the uiautomator dumper does: its `stripInvalidXMLChars` turns
/// control characters into `.`, then KXmlSerializer escapes `&<>"`, writes tab, newline and
/// carriage return as character references, keeps other text as is (the encoding is UTF-8)
/// and writes characters beyond the Basic Multilingual Plane as `&#N;`.
fn escape_attribute(out: &mut String, value: &str) {
    for c in value.chars() {
        let code = c as u32;
        let stripped = matches!(code, 0x0..=0x8 | 0xB..=0xC | 0xE..=0x1F | 0x7F..=0x84 | 0x86..=0x9F | 0xFDD0..=0xFDDF);
        match c {
            _ if stripped => out.push('.'),
            '\n' | '\r' | '\t' => {
                let _ = write!(out, "&#{code};");
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ if code > 0xFFFF => {
                let _ = write!(out, "&#{code};");
            }
            _ => out.push(c),
        }
    }
}

fn write_node(out: &mut String, node: &Node, screen: &Rect) {
    out.push_str("<node");
    if naf(node) {
        out.push_str(" NAF=\"true\"");
    }
    let mut attribute = |name: &str, value: &str| {
        out.push(' ');
        out.push_str(name);
        out.push_str("=\"");
        escape_attribute(out, value);
        out.push('"');
    };
    let flag = |value: bool| if value { "true" } else { "false" };
    attribute("index", &node.index.to_string());
    attribute("text", &node.text);
    attribute("resource-id", &node.resource_id);
    attribute("class", &node.class);
    attribute("package", &node.package);
    attribute("content-desc", &node.content_desc);
    attribute("checkable", flag(node.checkable));
    attribute("checked", flag(node.checked));
    attribute("clickable", flag(node.clickable));
    attribute("enabled", flag(node.enabled));
    attribute("focusable", flag(node.focusable));
    attribute("focused", flag(node.focused));
    attribute("scrollable", flag(node.scrollable));
    attribute("long-clickable", flag(node.long_clickable));
    attribute("password", flag(node.password));
    attribute("selected", flag(node.selected));
    // getVisibleBoundsInScreen clips to the display.
    attribute("bounds", &node.bounds.intersect(screen).to_string());
    // Children nobody can see (nothing left after clipping) are skipped, as `isVisibleToUser`
    // is false for them.
    let visible: Vec<&Node> = node
        .children
        .iter()
        .filter(|child| !child.bounds.intersect(screen).is_empty())
        .collect();
    if visible.is_empty() {
        out.push_str(" />");
        return;
    }
    out.push('>');
    for child in visible {
        write_node(out, child, screen);
    }
    out.push_str("</node>");
}

/// The document `uiautomator dump` writes for `root` on a display of `width`×`height` pixels
/// at `rotation` (0–3). It has no trailing newline.
pub fn hierarchy_xml(root: &Node, rotation: u8, width: i32, height: i32) -> String {
    let mut out = String::from("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>");
    let _ = write!(out, "<hierarchy rotation=\"{rotation}\">");
    write_node(&mut out, root, &Rect::new(0, 0, width, height));
    out.push_str("</hierarchy>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_close_themselves_and_attributes_keep_their_order() {
        let root = Node::new("android.widget.FrameLayout", Rect::new(0, 0, 100, 200))
            .children([
                Node::new("android.widget.TextView", Rect::new(0, 0, 50, 50))
                    .text("a \"b\" & <c>\n😀"),
            ])
            .in_package("p");
        let xml = hierarchy_xml(&root, 0, 100, 200);
        assert_eq!(
            xml,
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">\
             <node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" \
             package=\"p\" content-desc=\"\" checkable=\"false\" checked=\"false\" \
             clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" \
             scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" \
             bounds=\"[0,0][100,200]\"><node index=\"0\" \
             text=\"a &quot;b&quot; &amp; &lt;c&gt;&#10;&#128512;\" resource-id=\"\" \
             class=\"android.widget.TextView\" package=\"p\" content-desc=\"\" \
             checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" \
             focusable=\"false\" focused=\"false\" scrollable=\"false\" \
             long-clickable=\"false\" password=\"false\" selected=\"false\" \
             bounds=\"[0,0][50,50]\" /></node></hierarchy>"
        );
    }

    #[test]
    fn nameless_clickable_nodes_are_flagged_and_off_screen_ones_skipped() {
        let root = Node::new("android.widget.FrameLayout", Rect::new(0, 0, 100, 100)).children([
            Node::new("android.widget.ImageView", Rect::new(0, 0, 10, 10)).clickable(),
            Node::new("android.widget.TextView", Rect::new(0, 200, 10, 210)).text("gone"),
        ]);
        let xml = hierarchy_xml(&root, 0, 100, 100);
        assert!(xml.contains("<node NAF=\"true\" index=\"0\""));
        assert!(!xml.contains("gone"));
    }

    #[test]
    fn taps_reach_the_deepest_interested_node() {
        let root = Node::new("a", Rect::new(0, 0, 100, 100)).children([Node::new(
            "b",
            Rect::new(0, 0, 100, 50),
        )
        .clickable()
        .children([Node::new("c", Rect::new(0, 0, 10, 10))])]);
        assert_eq!(root.hit(5, 5).map(|n| n.class.as_str()), Some("b"));
        assert_eq!(root.hit(5, 80).map(|n| n.class.as_str()), None);
        let classes: Vec<&str> = root.walk().iter().map(|n| n.class.as_str()).collect();
        assert_eq!(classes, ["a", "b", "c"]);
    }
}
