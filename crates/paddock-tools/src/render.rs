//! How observations read: a compact text for a language model (every character costs), and a
//! JSON form for programs.

use std::fmt::Write as _;

use paddock_devices::{Element, Observation, Orientation};
use serde_json::{Value, json};

/// Which elements' lines carry their bounds (`@x,y wxh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bounds {
    /// Only where a ref alone is not enough to act or to see what a finger hits: elements
    /// with no name (a canvas, say), hidden controls and closed shadow roots.
    #[default]
    WhereNeeded,
    /// Every element's.
    All,
}

/// What a caller last saw of a device: the header line of its last answer and the elements,
/// so that an action can answer with what changed since.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub header: String,
    pub elements: Vec<Element>,
}

impl Seen {
    pub fn of(observation: &Observation) -> Self {
        let mut header = String::new();
        header_line(&mut header, observation);
        Self {
            header,
            elements: observation.elements.clone(),
        }
    }
}

/// The text form: a header line, one line per element, and what lies off screen.
pub fn observation_text(observation: &Observation) -> String {
    observation_text_with(observation, Bounds::default())
}

/// [`observation_text`] with each element's bounds as `bounds` asks.
pub fn observation_text_with(observation: &Observation, bounds: Bounds) -> String {
    let mut out = String::with_capacity(64 + observation.elements.len() * 32);
    header_line(&mut out, observation);
    preamble(&mut out, observation);
    for element in &observation.elements {
        element_line(&mut out, element, bounds);
    }
    footer(&mut out, observation);
    out
}

/// The text form of an observation after an action, as changes since `previous` (what the
/// caller last saw): the header line only when it changed (another page, title, tab count
/// or screen), then `+` an element that appeared, `-` one that went, `~` one whose line
/// changed (shown as it is now). A move alone is not a change. `None` when the whole screen
/// would be as short.
pub fn change_text(previous: &Seen, observation: &Observation) -> Option<String> {
    let before: std::collections::HashMap<&str, String> = previous
        .elements
        .iter()
        .map(|element| (element.reference.as_str(), line_of(element)))
        .collect();
    let mut changes = String::new();
    let mut count = 0;
    let mut present = std::collections::HashSet::new();
    for element in &observation.elements {
        present.insert(element.reference.as_str());
        let line = line_of(element);
        match before.get(element.reference.as_str()) {
            Some(old) if *old == line => {}
            Some(_) => {
                count += 1;
                changes.push_str("~ ");
                changes.push_str(&line);
            }
            None => {
                count += 1;
                changes.push_str("+ ");
                changes.push_str(&line);
            }
        }
    }
    for element in &previous.elements {
        if !present.contains(element.reference.as_str()) {
            count += 1;
            changes.push_str("- ");
            changes.push_str(&line_of(element));
        }
    }
    let mut out = String::with_capacity(64 + changes.len());
    let mut now = String::new();
    header_line(&mut now, observation);
    if now != previous.header {
        out.push_str(&now);
    }
    preamble(&mut out, observation);
    if count == 0 {
        out.push_str("no element changed since your last observation\n");
    } else {
        let _ = writeln!(out, "{count} change(s) since your last observation:");
        out.push_str(&changes);
    }
    footer(&mut out, observation);
    let whole = observation_text(observation);
    (out.len() < whole.len()).then_some(out)
}

fn line_of(element: &Element) -> String {
    let mut line = String::new();
    element_line(&mut line, element, Bounds::default());
    line
}

/// The header line: device, profile, orientation, screen size, app, URL, title, tabs.
fn header_line(out: &mut String, observation: &Observation) {
    let orientation = match observation.orientation {
        Orientation::Portrait => "portrait",
        Orientation::Landscape => "landscape",
    };
    let _ = write!(
        out,
        "{} {} {} {}x{}",
        observation.device,
        observation.profile,
        orientation,
        observation.viewport[0],
        observation.viewport[1]
    );
    if let Some(app) = &observation.app {
        let _ = write!(out, " app={app}");
    }
    let _ = write!(out, " {}", observation.url);
    if !observation.title.is_empty() {
        let _ = write!(out, " \"{}\"", observation.title);
    }
    if let Some(tabs) = observation.tabs {
        let _ = write!(out, " tabs {} (active {})", tabs.count, tabs.active);
    }
    out.push('\n');
}

/// What precedes the elements: notices, a modal, the focus.
fn preamble(out: &mut String, observation: &Observation) {
    for notice in &observation.notices {
        let _ = writeln!(out, "notice: {notice}");
    }
    if let Some(modal) = &observation.modal {
        let _ = writeln!(
            out,
            "modal dialog \"{modal}\": only its elements are listed"
        );
    }
    if let Some(focused) = &observation.focused {
        let _ = writeln!(out, "focused {focused}");
    }
}

/// What follows the elements: scroll hints, what lies off screen, whether the UI settled.
fn footer(out: &mut String, observation: &Observation) {
    for hint in &observation.scroll_hints {
        let _ = writeln!(out, "{hint}");
    }
    let above = observation.more_above();
    let below = observation.more_below();
    if above > 0 || below > 0 {
        let _ = writeln!(
            out,
            "scroll: {above}px above ({} elements), {below}px below ({} elements)",
            observation.elements_above, observation.elements_below
        );
    }
    let right = observation.more_right();
    if right > 0 {
        let _ = writeln!(out, "scroll: {right}px to the right");
    }
    if let Some(settled) = observation.settled {
        let _ = writeln!(out, "settled: {settled}");
    }
}

fn element_line(out: &mut String, element: &Element, bounds: Bounds) {
    let _ = write!(out, "{} {}", element.reference, element.role);
    if let Some(level) = element.level {
        let _ = write!(out, "/{level}");
    }
    if !element.name.is_empty() {
        let _ = write!(out, " \"{}\"", element.name);
    } else if element.role == "canvas" {
        out.push_str(" (no accessible content; tap by x,y)");
    }
    if let Some(value) = &element.value {
        let _ = write!(out, " ={value:?}");
    }
    if !element.states.is_empty() {
        let _ = write!(out, " [{}]", element.states.join(","));
    }
    let needed = element.name.is_empty()
        || element
            .states
            .iter()
            .any(|state| state == "hidden-control" || state == "closed-shadow-root");
    if bounds == Bounds::All || needed {
        let [x, y, width, height] = element.bounds;
        let _ = write!(out, " @{x},{y} {width}x{height}");
    }
    if element.offscreen {
        out.push_str(" offscreen");
    }
    out.push('\n');
}

/// The JSON form.
pub fn observation_json(observation: &Observation) -> Value {
    let elements: Vec<Value> = observation.elements.iter().map(element_json).collect();
    let mut value = json!({
        "device": observation.device,
        "platform": observation.platform.as_str(),
        "profile": observation.profile,
        "orientation": match observation.orientation { Orientation::Portrait => "portrait", Orientation::Landscape => "landscape" },
        "screen": { "width": observation.viewport[0], "height": observation.viewport[1], "scale": observation.device_scale_factor },
        "app": observation.app,
        "url": observation.url,
        "title": observation.title,
        "focused": observation.focused,
        "modal": observation.modal,
        "elements": elements,
        "offscreen": {
            "abovePx": observation.more_above(),
            "belowPx": observation.more_below(),
            "rightPx": observation.more_right(),
            "elementsAbove": observation.elements_above,
            "elementsBelow": observation.elements_below,
        },
    });
    if let Some(settled) = observation.settled {
        value["settled"] = json!(settled);
    }
    if !observation.notices.is_empty() {
        value["notices"] = json!(observation.notices);
    }
    if !observation.scroll_hints.is_empty() {
        value["scrollHints"] = json!(observation.scroll_hints);
    }
    if let Some(tabs) = observation.tabs {
        value["tabs"] = json!({ "count": tabs.count, "active": tabs.active });
    }
    value
}

/// One element as `observe` with `format: json` lists it.
pub fn element_json(element: &paddock_devices::Element) -> Value {
    let mut value = json!({
        "ref": element.reference,
        "role": element.role,
        "name": element.name,
        "bounds": element.bounds,
    });
    if let Some(text) = &element.value {
        value["value"] = json!(text);
    }
    if !element.states.is_empty() {
        value["states"] = json!(element.states);
    }
    if let Some(level) = element.level {
        value["level"] = json!(level);
    }
    if let Some(id) = &element.id {
        value["id"] = json!(id);
    }
    if element.offscreen {
        value["offscreen"] = json!(true);
    }
    value
}

#[cfg(test)]
mod tests {
    use paddock_devices::{Observation, Orientation, Platform};

    use super::*;

    fn element(reference: &str, role: &str, name: &str, states: &[&str]) -> Element {
        Element {
            reference: reference.into(),
            role: role.into(),
            name: name.into(),
            value: None,
            states: states.iter().map(|state| (*state).to_owned()).collect(),
            level: None,
            id: None,
            bounds: [0, 0, 100, 40],
            offscreen: false,
        }
    }

    fn screen(elements: Vec<Element>) -> Observation {
        Observation {
            device: "web-1".into(),
            platform: Platform::Web,
            profile: "pixel7".into(),
            orientation: Orientation::Portrait,
            viewport: [412, 915],
            device_scale_factor: 2.625,
            app: None,
            url: "http://127.0.0.1/".into(),
            title: "Todo".into(),
            focused: None,
            modal: None,
            elements,
            scroll: [0, 0],
            content: [412, 915],
            elements_above: 0,
            elements_below: 0,
            screenshot: None,
            settled: Some(true),
            notices: Vec::new(),
            scroll_hints: Vec::new(),
            tabs: None,
        }
    }

    fn many(extra: Vec<Element>) -> Vec<Element> {
        let mut elements: Vec<Element> = (1..=20)
            .map(|n| element(&format!("e{n}"), "checkbox", &format!("Item {n}"), &[]))
            .collect();
        elements.extend(extra);
        elements
    }

    #[test]
    fn a_small_change_is_listed_instead_of_the_screen() {
        let before = Seen::of(&screen(many(vec![element(
            "e30",
            "text",
            "3 items left",
            &[],
        )])));
        let mut after = many(vec![element("e31", "text", "2 items left", &[])]);
        after[1] = element("e2", "checkbox", "Item 2", &["checked"]);
        // A move alone is no change.
        after[3].bounds = [0, 300, 100, 40];
        let text = change_text(&before, &screen(after)).unwrap_or_default();
        assert!(
            text.starts_with("3 change(s) since your last observation:\n"),
            "the unchanged header is not repeated: {text}"
        );
        assert!(
            text.contains("~ e2 checkbox \"Item 2\" [checked]\n"),
            "{text}"
        );
        assert!(text.contains("+ e31 text \"2 items left\"\n"), "{text}");
        assert!(text.contains("- e30 text \"3 items left\"\n"), "{text}");
        assert!(
            !text.contains("Item 7") && !text.contains("Item 4"),
            "{text}"
        );
        assert!(text.ends_with("settled: true\n"), "{text}");

        let mut elsewhere = screen(many(Vec::new()));
        elsewhere.url = "http://127.0.0.1/#/done".into();
        let text = change_text(&before, &elsewhere).unwrap_or_default();
        assert!(
            text.starts_with("web-1 pixel7 portrait 412x915 http://127.0.0.1/#/done \"Todo\"\n"),
            "a changed header is sent: {text}"
        );
    }

    #[test]
    fn nothing_changed_says_so_and_a_new_screen_is_sent_whole() {
        let same = Seen::of(&screen(many(Vec::new())));
        let text = change_text(&same, &screen(many(Vec::new()))).unwrap_or_default();
        assert!(
            text.contains("no element changed since your last observation"),
            "{text}"
        );
        let other: Vec<Element> = (40..45)
            .map(|n| element(&format!("e{n}"), "link", &format!("Page {n}"), &[]))
            .collect();
        assert_eq!(change_text(&same, &screen(other)), None);
    }

    #[test]
    fn bounds_are_listed_where_a_ref_is_not_enough_or_on_request() {
        let mut canvas = element("e2", "canvas", "", &[]);
        canvas.bounds = [8, 60, 300, 150];
        let mut hidden = element("e3", "checkbox", "Fancy", &["hidden-control"]);
        hidden.bounds = [16, 220, 24, 24];
        let observation = screen(vec![element("e1", "button", "Save", &[]), canvas, hidden]);
        let text = observation_text(&observation);
        assert!(text.contains("e1 button \"Save\"\n"), "{text}");
        assert!(
            text.contains("e2 canvas (no accessible content; tap by x,y) @8,60 300x150\n"),
            "{text}"
        );
        assert!(
            text.contains("e3 checkbox \"Fancy\" [hidden-control] @16,220 24x24\n"),
            "{text}"
        );
        let all = observation_text_with(&observation, Bounds::All);
        assert!(all.contains("e1 button \"Save\" @0,0 100x40\n"), "{all}");
    }
}
