//! The shell commands that act on an Android device: key codes, `input text` escaping, swipe
//! geometry, and checks of what goes into an `am` command line.

use base64::Engine as _;

use super::adb::shell_quote;
use super::hierarchy::{self, Display};
use crate::device::{DeviceError, Key, SwipeDirection};

/// An Android `KeyEvent` key code (`android.view.KeyEvent.KEYCODE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keycode(pub u32);

impl Keycode {
    pub const HOME: Self = Self(3);
    pub const BACK: Self = Self(4);
    pub const DPAD_UP: Self = Self(19);
    pub const DPAD_DOWN: Self = Self(20);
    pub const DPAD_LEFT: Self = Self(21);
    pub const DPAD_RIGHT: Self = Self(22);
    pub const VOLUME_UP: Self = Self(24);
    pub const VOLUME_DOWN: Self = Self(25);
    pub const POWER: Self = Self(26);
    pub const TAB: Self = Self(61);
    pub const SPACE: Self = Self(62);
    pub const ENTER: Self = Self(66);
    pub const DEL: Self = Self(67);
    pub const PAGE_UP: Self = Self(92);
    pub const PAGE_DOWN: Self = Self(93);
    pub const ESCAPE: Self = Self(111);
    pub const FORWARD_DEL: Self = Self(112);
    pub const MOVE_END: Self = Self(123);
    pub const FORWARD: Self = Self(125);
    pub const APP_SWITCH: Self = Self(187);
    pub const COPY: Self = Self(278);
    pub const PASTE: Self = Self(279);
}

/// The key code for a named key; `None` for keys Android has no equivalent of (reload).
pub fn keycode(key: Key) -> Option<Keycode> {
    Some(match key {
        Key::Back => Keycode::BACK,
        Key::Forward => Keycode::FORWARD,
        Key::Home => Keycode::HOME,
        Key::Reload => return None,
        Key::Enter => Keycode::ENTER,
        Key::Tab => Keycode::TAB,
        Key::Escape => Keycode::ESCAPE,
        Key::Backspace => Keycode::DEL,
        Key::Delete => Keycode::FORWARD_DEL,
        Key::Space => Keycode::SPACE,
        Key::ArrowUp => Keycode::DPAD_UP,
        Key::ArrowDown => Keycode::DPAD_DOWN,
        Key::ArrowLeft => Keycode::DPAD_LEFT,
        Key::ArrowRight => Keycode::DPAD_RIGHT,
        Key::PageUp => Keycode::PAGE_UP,
        Key::PageDown => Keycode::PAGE_DOWN,
        Key::AppSwitch => Keycode::APP_SWITCH,
        Key::VolumeUp => Keycode::VOLUME_UP,
        Key::VolumeDown => Keycode::VOLUME_DOWN,
        Key::Power => Keycode::POWER,
    })
}

/// The `input text` command that types `text`, or `None` when `input text` cannot type it.
///
/// `input text` maps each character through the device's key character map, which has
/// printable ASCII only, and it turns the two characters `%s` into a space (its way to pass a
/// space through old shells). So: printable ASCII without `%s` is typed this way, each space
/// written `%s` and the whole argument single-quoted for `sh` (quotes, `$`, `;`, `&`, `|`, `*`,
/// backslashes and backticks then reach `input` unchanged). Anything else goes through the
/// ADBKeyboard broadcast ([`adb_keyboard_broadcast`]).
pub fn input_text_command(text: &str) -> Option<String> {
    if text.is_empty()
        || text.contains("%s")
        || !text
            .chars()
            .all(|character| character == ' ' || character.is_ascii_graphic())
    {
        return None;
    }
    Some(format!(
        "input text {}",
        shell_quote(&text.replace(' ', "%s"))
    ))
}

/// ADBKeyboard's broadcast for any Unicode text: the UTF-8 bytes as base64, so nothing in the
/// text reaches the shell or `am`'s own argument parsing.
pub fn adb_keyboard_broadcast(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("am broadcast -a ADB_INPUT_B64 --es msg {encoded}")
}

/// Moves to the end of the focused field and deletes `length` characters (at least one key
/// press, so an unknown length still clears a one-character field).
pub fn clear_command(length: usize) -> String {
    let mut command = format!("input keyevent {}", Keycode::MOVE_END.0);
    for _ in 0..length.max(1) {
        command.push_str(&format!(" {}", Keycode::DEL.0));
    }
    command
}

/// The finger's path for a swipe in `direction` within `bounds` (dp), in pixels: from 80 % to
/// 20 % of the area along the direction, through its middle the other way.
pub fn swipe_line(bounds: [i64; 4], direction: SwipeDirection, display: &Display) -> [i64; 4] {
    let [x, y, width, height] = bounds;
    let point = |fx: f64, fy: f64| {
        let dp = [
            x + (width as f64 * fx).round() as i64,
            y + (height as f64 * fy).round() as i64,
            0,
            0,
        ];
        hierarchy::center_px(dp, display)
    };
    let ((x1, y1), (x2, y2)) = match direction {
        SwipeDirection::Up => (point(0.5, 0.8), point(0.5, 0.2)),
        SwipeDirection::Down => (point(0.5, 0.2), point(0.5, 0.8)),
        SwipeDirection::Left => (point(0.8, 0.5), point(0.2, 0.5)),
        SwipeDirection::Right => (point(0.2, 0.5), point(0.8, 0.5)),
    };
    [x1, y1, x2, y2]
}

pub fn direction_name(direction: SwipeDirection) -> &'static str {
    match direction {
        SwipeDirection::Up => "up",
        SwipeDirection::Down => "down",
        SwipeDirection::Left => "left",
        SwipeDirection::Right => "right",
    }
}

/// `openLink` takes http and https URLs on every platform.
pub fn check_url(url: &str) -> Result<(), DeviceError> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(DeviceError::InvalidInput(format!(
            "`{url}` is not an http or https URL"
        )));
    }
    if url.chars().any(char::is_control) {
        return Err(DeviceError::InvalidInput(
            "the URL contains control characters".into(),
        ));
    }
    Ok(())
}

/// A Java package name (`com.example.notes`): dot-separated identifiers, so it can go on a
/// command line unquoted.
pub fn check_package(package: &str) -> Result<&str, DeviceError> {
    let valid = !package.is_empty()
        && package.len() <= 255
        && package.split('.').all(|part| {
            let mut characters = part.chars();
            characters
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
                && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
        });
    if valid {
        Ok(package)
    } else {
        Err(DeviceError::InvalidInput(format!(
            "`{package}` is not an Android package name (such as `com.example.app`)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_ascii_is_typed_with_input_text_and_survives_the_shell() {
        assert_eq!(
            input_text_command("a b").as_deref(),
            Some("input text 'a%sb'")
        );
        assert_eq!(
            input_text_command(r#"it's "$HOME" ; rm -rf * | `x` & \n"#).as_deref(),
            Some(r#"input text 'it'\''s%s"$HOME"%s;%srm%s-rf%s*%s|%s`x`%s&%s\n'"#)
        );
        // What input cannot type: non-ASCII, control characters, a literal `%s`, nothing.
        assert_eq!(input_text_command("grüße"), None);
        assert_eq!(input_text_command("日本"), None);
        assert_eq!(input_text_command("a\tb"), None);
        assert_eq!(input_text_command("100%s"), None);
        assert_eq!(input_text_command(""), None);
        assert_eq!(
            input_text_command("100% sure").as_deref(),
            Some("input text '100%%ssure'")
        );
    }

    #[test]
    fn the_keyboard_broadcast_carries_base64() {
        assert_eq!(
            adb_keyboard_broadcast("grüße 😀"),
            "am broadcast -a ADB_INPUT_B64 --es msg Z3LDvMOfZSDwn5iA"
        );
    }

    #[test]
    fn clearing_deletes_each_character() {
        assert_eq!(clear_command(3), "input keyevent 123 67 67 67");
        assert_eq!(clear_command(0), "input keyevent 123 67");
    }

    #[test]
    fn packages_and_urls_are_checked() {
        assert!(check_package("com.example.notes").is_ok());
        assert!(check_package("com.example.notes; reboot").is_err());
        assert!(check_package("1abc").is_err());
        assert!(check_package("").is_err());
        assert!(check_url("https://example.com/?q=1&x='2'").is_ok());
        assert!(check_url("file:///sdcard").is_err());
        assert!(check_url("intent://x").is_err());
    }
}
