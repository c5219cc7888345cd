//! Actions on a web device, as CDP input events and navigations.

use std::time::Duration;

use serde_json::{Value, json};

use super::{BLANK, WebDevice, apply_emulation};
use crate::device::{Action, DeviceError, ImeAction, Key, SwipeDirection, TapKind, Target};

/// Performs `action`; returns an optional detail for the caller.
pub(super) async fn perform(
    device: &WebDevice,
    action: Action,
) -> Result<Option<String>, DeviceError> {
    match action {
        Action::Tap { target, kind } => {
            let (x, y, _) = device.point_of(&target).await?;
            tap(device, x, y, kind).await?;
            Ok(None)
        }
        Action::Swipe {
            direction,
            within,
            until_visible,
            max_swipes,
        } => {
            swipe(
                device,
                direction,
                within.as_ref(),
                until_visible.as_deref(),
                max_swipes,
            )
            .await
        }
        Action::Drag { from, to } => {
            let (x1, y1, _) = device.point_of(&from).await?;
            let (x2, y2, _) = device.point_of(&to).await?;
            drag(device, (x1, y1), (x2, y2)).await?;
            Ok(None)
        }
        Action::InputText { target, text } => {
            focus_editable(device, target.as_ref()).await?;
            device
                .call("Input.insertText", json!({ "text": text }))
                .await?;
            Ok(None)
        }
        Action::ClearText { target } => {
            focus_editable(device, target.as_ref()).await?;
            device
                .eval_focused("window.__paddock.selectFocused()")
                .await?;
            key(device, "Backspace", "Backspace", 8, None).await?;
            Ok(None)
        }
        Action::SendKeys { text } => {
            for character in text.chars() {
                let text = character.to_string();
                key(device, &text, &code_for(character), 0, Some(&text)).await?;
            }
            Ok(None)
        }
        Action::Press(button) => press(device, button).await,
        Action::Ime(action) => {
            match action {
                ImeAction::Next => key(device, "Tab", "Tab", 9, None).await?,
                ImeAction::Previous => key_with_modifiers(device, "Tab", "Tab", 9, 8).await?,
                ImeAction::Done | ImeAction::Go | ImeAction::Search | ImeAction::Send => {
                    key(device, "Enter", "Enter", 13, Some("\r")).await?
                }
            }
            Ok(None)
        }
        Action::OpenUrl(url) => {
            check_url(&url)?;
            device.navigate(&url).await?;
            Ok(None)
        }
        Action::LaunchApp(app) => {
            device.navigate(&app.url).await?;
            device.state.lock().await.app = Some(app.id);
            Ok(None)
        }
        Action::TerminateApp(app) => {
            let mut state = device.state.lock().await;
            if state.app.as_deref() != Some(app.id.as_str()) {
                return Err(DeviceError::InvalidInput(format!(
                    "app `{}` is not running",
                    app.id
                )));
            }
            state.app = None;
            drop(state);
            device.navigate(BLANK).await?;
            Ok(None)
        }
        Action::Rotate(orientation) => {
            let session = {
                let mut state = device.state.lock().await;
                state.orientation = orientation;
                state.session_id.clone()
            };
            apply_emulation(&device.cdp, &session, &device.profile, orientation).await?;
            // The profile's user agent replaced the one carrying the locale's Accept-Language.
            device.reapply_settings(&session).await?;
            Ok(None)
        }
        Action::ClipboardRead => Ok(Some(device.state.lock().await.clipboard.clone())),
        Action::ClipboardWrite(text) => {
            device.state.lock().await.clipboard = text.clone();
            Ok(Some(text))
        }
        Action::ClipboardCopy => {
            let selected = device
                .eval_focused("window.__paddock.selectionText()")
                .await?;
            let text = selected.as_str().unwrap_or_default().to_owned();
            if text.is_empty() {
                return Err(DeviceError::InvalidInput(
                    "nothing is selected to copy".into(),
                ));
            }
            device.state.lock().await.clipboard = text.clone();
            Ok(Some(text))
        }
        Action::ClipboardPaste => {
            let text = device.state.lock().await.clipboard.clone();
            if device.focus().await?.1.get("editable") != Some(&Value::Bool(true)) {
                return Err(DeviceError::InvalidInput(
                    "no text field is focused to paste into".into(),
                ));
            }
            device
                .call("Input.insertText", json!({ "text": text }))
                .await?;
            Ok(Some(text))
        }
        Action::Highlight { targets, color } => {
            let mut boxes = Vec::new();
            for target in &targets {
                let (_, _, found) = device.point_of(target).await?;
                let bounds = match target {
                    Target::Point(point) => json!([point.x - 20.0, point.y - 20.0, 40, 40]),
                    _ => found.get("bounds").cloned().unwrap_or(json!([0, 0, 0, 0])),
                };
                boxes.push(bounds);
            }
            let color = sanitize_color(&color)?;
            device
                .eval(
                    &format!(
                        "window.__paddock.highlight({}, {})",
                        Value::Array(boxes),
                        json!(color)
                    ),
                    false,
                )
                .await?;
            Ok(None)
        }
        Action::ClearHighlights => {
            let removed = device
                .eval("window.__paddock.clearHighlights()", false)
                .await?;
            Ok(Some(format!(
                "removed {} highlight(s)",
                removed.as_u64().unwrap_or(0)
            )))
        }
    }
}

/// Only http and https pages may be opened: `file:`, `chrome:`, `javascript:`, `data:` and the
/// like would reach the machine or the browser itself.
pub(crate) fn check_url(url: &str) -> Result<(), DeviceError> {
    let lower = url.trim().to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        if url.chars().any(char::is_whitespace) {
            return Err(DeviceError::InvalidInput(format!(
                "`{url}` contains whitespace"
            )));
        }
        return Ok(());
    }
    Err(DeviceError::InvalidInput(format!(
        "only http and https URLs can be opened, not `{}`",
        url.split(':').next().unwrap_or(url)
    )))
}

fn sanitize_color(color: &str) -> Result<String, DeviceError> {
    let ok = !color.is_empty()
        && color.len() <= 32
        && color.chars().all(|c| c.is_ascii_alphanumeric() || c == '#');
    if ok {
        Ok(color.to_owned())
    } else {
        Err(DeviceError::InvalidInput(
            "`color` must be a CSS color name or #hex".into(),
        ))
    }
}

async fn mouse(
    device: &WebDevice,
    kind: &str,
    x: f64,
    y: f64,
    click_count: u32,
) -> Result<(), DeviceError> {
    device
        .call(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": "left", "buttons": if kind == "mouseReleased" { 0 } else { 1 }, "clickCount": click_count, "pointerType": "mouse" }),
        )
        .await
        .map(drop)
}

async fn tap(device: &WebDevice, x: f64, y: f64, kind: TapKind) -> Result<(), DeviceError> {
    device
        .call(
            "Input.dispatchMouseEvent",
            json!({ "type": "mouseMoved", "x": x, "y": y }),
        )
        .await?;
    match kind {
        TapKind::Tap => {
            mouse(device, "mousePressed", x, y, 1).await?;
            mouse(device, "mouseReleased", x, y, 1).await
        }
        TapKind::DoubleTap => {
            mouse(device, "mousePressed", x, y, 1).await?;
            mouse(device, "mouseReleased", x, y, 1).await?;
            mouse(device, "mousePressed", x, y, 2).await?;
            mouse(device, "mouseReleased", x, y, 2).await
        }
        TapKind::LongPress => {
            mouse(device, "mousePressed", x, y, 1).await?;
            tokio::time::sleep(Duration::from_millis(700)).await;
            mouse(device, "mouseReleased", x, y, 1).await
        }
        // The `mouseMoved` above is the whole hover.
        TapKind::Hover => Ok(()),
    }
}

async fn drag(device: &WebDevice, from: (f64, f64), to: (f64, f64)) -> Result<(), DeviceError> {
    device
        .call(
            "Input.dispatchMouseEvent",
            json!({ "type": "mouseMoved", "x": from.0, "y": from.1 }),
        )
        .await?;
    mouse(device, "mousePressed", from.0, from.1, 1).await?;
    const STEPS: u32 = 12;
    for step in 1..=STEPS {
        let t = f64::from(step) / f64::from(STEPS);
        let x = from.0 + (to.0 - from.0) * t;
        let y = from.1 + (to.1 - from.1) * t;
        device
            .call(
                "Input.dispatchMouseEvent",
                json!({ "type": "mouseMoved", "x": x, "y": y, "button": "left", "buttons": 1 }),
            )
            .await?;
    }
    mouse(device, "mouseReleased", to.0, to.1, 1).await
}

async fn swipe(
    device: &WebDevice,
    direction: SwipeDirection,
    within: Option<&Target>,
    until_visible: Option<&str>,
    max_swipes: u32,
) -> Result<Option<String>, DeviceError> {
    let (width, height, _) = device.viewport().await?;
    let (x, y, area_width, area_height) = match within {
        Some(target) => {
            let (x, y, found) = device.point_of(target).await?;
            let w = found
                .pointer("/bounds/2")
                .and_then(Value::as_f64)
                .unwrap_or(width);
            let h = found
                .pointer("/bounds/3")
                .and_then(Value::as_f64)
                .unwrap_or(height);
            (x, y, w, h)
        }
        None => (width / 2.0, height / 2.0, width, height),
    };
    let (delta_x, delta_y) = match direction {
        SwipeDirection::Up => (0.0, area_height * 0.7),
        SwipeDirection::Down => (0.0, -area_height * 0.7),
        SwipeDirection::Left => (area_width * 0.7, 0.0),
        SwipeDirection::Right => (-area_width * 0.7, 0.0),
    };
    let visible = |found: &Value| {
        found.get("found") == Some(&Value::Bool(true))
            && found.get("offscreen").is_some_and(Value::is_null)
    };
    let query = until_visible.map(|text| json!({ "text": text }));
    let swipes = if query.is_some() {
        max_swipes.max(1)
    } else {
        1
    };
    for done in 0..swipes {
        if let Some(query) = &query {
            let found = device.locate(query).await?;
            if visible(&found) {
                return Ok(Some(format!(
                    "`{}` is visible after {done} swipe(s)",
                    until_visible.unwrap_or_default()
                )));
            }
        }
        if query.is_some() {
            crate::progress::report(
                u64::from(done),
                Some(u64::from(swipes)),
                format!(
                    "swipe {} of at most {swipes}, looking for `{}`",
                    done + 1,
                    until_visible.unwrap_or_default()
                ),
            );
        }
        let before = device.eval("window.__paddock.scrollInfo()", false).await?;
        let moved = device.scroll_at(x, y, delta_x, delta_y).await?;
        // Let the scroll apply and lazily loaded content arrive before looking again.
        device.settle(Duration::from_millis(600)).await;
        if query.is_some() {
            let after = device.eval("window.__paddock.scrollInfo()", false).await?;
            if !moved
                && after.get("scroll") == before.get("scroll")
                && after.get("content") == before.get("content")
            {
                let found = device.locate(&query.clone().unwrap_or_default()).await?;
                if visible(&found) {
                    return Ok(Some(format!(
                        "`{}` is visible after {} swipe(s)",
                        until_visible.unwrap_or_default(),
                        done + 1
                    )));
                }
                return Err(DeviceError::NotFound(format!(
                    "`{}` did not come into view: the content stopped scrolling after {} swipe(s)",
                    until_visible.unwrap_or_default(),
                    done + 1
                )));
            }
        }
    }
    if let Some(query) = &query {
        let found = device.locate(query).await?;
        if visible(&found) {
            return Ok(Some(format!(
                "`{}` is visible after {swipes} swipe(s)",
                until_visible.unwrap_or_default()
            )));
        }
        return Err(DeviceError::NotFound(format!(
            "`{}` is not visible after {swipes} swipe(s)",
            until_visible.unwrap_or_default()
        )));
    }
    Ok(None)
}

async fn focus_editable(device: &WebDevice, target: Option<&Target>) -> Result<(), DeviceError> {
    if let Some(target) = target {
        let (x, y, found) = device.point_of(target).await?;
        if found.get("editable") == Some(&Value::Bool(false)) {
            return Err(DeviceError::InvalidInput(
                "the target is not a text field".into(),
            ));
        }
        if found.get("disabled") == Some(&Value::Bool(true)) {
            return Err(DeviceError::InvalidInput(
                "the text field is disabled".into(),
            ));
        }
        tap(device, x, y, TapKind::Tap).await?;
    }
    let (_, focused) = device.focus().await?;
    if focused.get("editable") != Some(&Value::Bool(true)) {
        return Err(DeviceError::InvalidInput(
            "no text field is focused; pass a target (ref, text or id) to type into".into(),
        ));
    }
    Ok(())
}

async fn key(
    device: &WebDevice,
    key: &str,
    code: &str,
    key_code: u32,
    text: Option<&str>,
) -> Result<(), DeviceError> {
    key_event(device, key, code, key_code, text, 0).await
}

async fn key_with_modifiers(
    device: &WebDevice,
    key: &str,
    code: &str,
    key_code: u32,
    modifiers: u32,
) -> Result<(), DeviceError> {
    key_event(device, key, code, key_code, None, modifiers).await
}

async fn key_event(
    device: &WebDevice,
    key: &str,
    code: &str,
    key_code: u32,
    text: Option<&str>,
    modifiers: u32,
) -> Result<(), DeviceError> {
    let mut down = json!({ "type": if text.is_some() { "keyDown" } else { "rawKeyDown" }, "key": key, "code": code, "modifiers": modifiers });
    if key_code != 0 {
        down["windowsVirtualKeyCode"] = json!(key_code);
    }
    if let Some(text) = text {
        down["text"] = json!(text);
    }
    device.call("Input.dispatchKeyEvent", down).await?;
    let mut up = json!({ "type": "keyUp", "key": key, "code": code, "modifiers": modifiers });
    if key_code != 0 {
        up["windowsVirtualKeyCode"] = json!(key_code);
    }
    device.call("Input.dispatchKeyEvent", up).await.map(drop)
}

fn code_for(character: char) -> String {
    match character {
        'a'..='z' | 'A'..='Z' => format!("Key{}", character.to_ascii_uppercase()),
        '0'..='9' => format!("Digit{character}"),
        ' ' => "Space".to_owned(),
        _ => String::new(),
    }
}

async fn press(device: &WebDevice, button: Key) -> Result<Option<String>, DeviceError> {
    let named = |key: &'static str, code: &'static str, key_code: u32| (key, code, key_code);
    let (key_name, code, key_code) = match button {
        Key::Back => {
            let history = device.call("Page.getNavigationHistory", json!({})).await?;
            let index = history
                .get("currentIndex")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if index <= 0 {
                return Err(DeviceError::InvalidInput(
                    "there is no page to go back to".into(),
                ));
            }
            let entry = history
                .pointer(&format!("/entries/{}/id", index - 1))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            device
                .call("Page.navigateToHistoryEntry", json!({ "entryId": entry }))
                .await?;
            return Ok(None);
        }
        Key::Forward => {
            let history = device.call("Page.getNavigationHistory", json!({})).await?;
            let index = history
                .get("currentIndex")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let Some(entry) = history
                .pointer(&format!("/entries/{}/id", index + 1))
                .and_then(Value::as_i64)
            else {
                return Err(DeviceError::InvalidInput(
                    "there is no page to go forward to".into(),
                ));
            };
            device
                .call("Page.navigateToHistoryEntry", json!({ "entryId": entry }))
                .await?;
            return Ok(None);
        }
        Key::Home => {
            device.state.lock().await.app = None;
            device.navigate(BLANK).await?;
            return Ok(None);
        }
        Key::Reload => {
            device.call("Page.reload", json!({})).await?;
            return Ok(None);
        }
        Key::Enter => named("Enter", "Enter", 13),
        Key::Tab => named("Tab", "Tab", 9),
        Key::Escape => named("Escape", "Escape", 27),
        Key::Backspace => named("Backspace", "Backspace", 8),
        Key::Delete => named("Delete", "Delete", 46),
        Key::Space => named(" ", "Space", 32),
        Key::ArrowUp => named("ArrowUp", "ArrowUp", 38),
        Key::ArrowDown => named("ArrowDown", "ArrowDown", 40),
        Key::ArrowLeft => named("ArrowLeft", "ArrowLeft", 37),
        Key::ArrowRight => named("ArrowRight", "ArrowRight", 39),
        Key::PageUp => named("PageUp", "PageUp", 33),
        Key::PageDown => named("PageDown", "PageDown", 34),
        Key::AppSwitch | Key::VolumeUp | Key::VolumeDown | Key::Power => {
            return Err(DeviceError::Unsupported(format!(
                "a web device has no {} button; it is an Android key",
                match button {
                    Key::AppSwitch => "app-switch",
                    Key::VolumeUp => "volume-up",
                    Key::VolumeDown => "volume-down",
                    _ => "power",
                }
            )));
        }
    };
    let text = match button {
        Key::Enter => Some("\r"),
        Key::Space => Some(" "),
        _ => None,
    };
    key(device, key_name, code, key_code, text).await?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_urls_open() {
        assert!(check_url("https://example.com/a?b").is_ok());
        assert!(check_url("http://127.0.0.1:8080/").is_ok());
        for bad in [
            "file:///etc/passwd",
            "chrome://settings",
            "javascript:alert(1)",
            "data:text/html,x",
            "about:blank",
            "view-source:http://x",
            "FILE:///x",
            "ftp://x",
            "http://a b",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
