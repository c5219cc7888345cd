//! How observations read: a compact text for a language model (every character costs), and a
//! JSON form for programs.

use std::fmt::Write as _;

use paddock_devices::{Element, Observation, Orientation};
use serde_json::{Value, json};

/// The text form: a header line, one line per element, and what lies off screen.
pub fn observation_text(observation: &Observation) -> String {
    let mut out = String::with_capacity(64 + observation.elements.len() * 40);
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
    out.push('\n');
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
    for element in &observation.elements {
        element_line(&mut out, element);
    }
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
    out
}

fn element_line(out: &mut String, element: &Element) {
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
    let [x, y, width, height] = element.bounds;
    let _ = write!(out, " @{x},{y} {width}x{height}");
    if element.offscreen {
        out.push_str(" offscreen");
    }
    out.push('\n');
}

/// The JSON form.
pub fn observation_json(observation: &Observation) -> Value {
    let elements: Vec<Value> = observation
        .elements
        .iter()
        .map(|element| {
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
        })
        .collect();
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
    value
}
