#![cfg(test)]
//! The fake Android device against the real adb: each test runs its own adb server and
//! device, connects them with `adb connect`, and drives the device with the real client.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use paddock_testkit::android::{AdbServer, FakeAndroid, FakeAndroidConfig, fake_android_home};

/// The hang guard of every wait.
const DEADLINE: Duration = Duration::from_secs(30);

struct Phone {
    server: AdbServer,
    device: FakeAndroid,
}

impl Phone {
    fn start(config: FakeAndroidConfig) -> Self {
        let server = AdbServer::start().unwrap();
        let device = FakeAndroid::start(config).unwrap();
        server.connect(&device).unwrap();
        Self { server, device }
    }

    fn new() -> Self {
        Self::start(FakeAndroidConfig::default())
    }

    /// `adb -s SERIAL args…`.
    fn adb(&self, args: &[&str]) -> Output {
        let serial = self.device.serial();
        let mut full = vec!["-s", serial.as_str()];
        full.extend_from_slice(args);
        self.server.adb(&full).unwrap()
    }

    /// `adb shell COMMAND` (one argument: the device's shell splits it).
    fn shell(&self, command: &str) -> Output {
        self.adb(&["shell", command])
    }

    /// `adb shell COMMAND`, which must succeed; its stdout.
    fn ok(&self, command: &str) -> String {
        let output = self.shell(command);
        assert!(
            output.status.success(),
            "`{command}` failed: {}",
            describe(&output)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// `adb exec-out uiautomator dump /dev/tty`, split into the document and the message.
    fn dump(&self) -> String {
        let output = self.adb(&["exec-out", "uiautomator dump /dev/tty"]);
        assert!(output.status.success(), "{}", describe(&output));
        let text = String::from_utf8(output.stdout).unwrap();
        let xml = text
            .strip_suffix("UI hierchary dumped to: /dev/tty\n")
            .unwrap_or_else(|| panic!("no dump message after the XML: {text}"));
        xml.to_owned()
    }

    fn screenshot(&self) -> Vec<u8> {
        let output = self.adb(&["exec-out", "screencap -p"]);
        assert!(output.status.success(), "{}", describe(&output));
        output.stdout
    }

    fn launch_notes(&self) {
        self.ok("am start -n com.example.notes/.LoginActivity");
        assert_eq!(self.device.screen(), "notes-login");
    }

    fn tap_node(&self, matches: impl Fn(&roxmltree::Node) -> bool) {
        let xml = self.dump();
        let document = roxmltree::Document::parse(&xml).unwrap();
        let node = document
            .descendants()
            .find(|node| node.has_tag_name("node") && matches(node))
            .unwrap_or_else(|| panic!("no such node in {xml}"));
        let (x, y) = center(node.attribute("bounds").unwrap());
        self.ok(&format!("input tap {x} {y}"));
    }

    fn sign_in(&self) {
        self.launch_notes();
        self.tap_node(|n| n.attribute("resource-id") == Some("com.example.notes:id/username"));
        self.ok("input text ann");
        self.tap_node(|n| n.attribute("resource-id") == Some("com.example.notes:id/password"));
        self.ok("input text hunter2");
        self.tap_node(|n| n.attribute("text") == Some("Sign in"));
        assert_eq!(self.device.screen(), "notes-list");
    }
}

/// A child process killed if the test ends before it does.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn describe(output: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The centre of `[l,t][r,b]`.
fn center(bounds: &str) -> (i32, i32) {
    let numbers: Vec<i32> = bounds
        .split(|c: char| !c.is_ascii_digit() && c != '-')
        .filter(|part| !part.is_empty())
        .map(|part| part.parse().unwrap())
        .collect();
    ((numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2)
}

fn texts(xml: &str) -> Vec<String> {
    roxmltree::Document::parse(xml)
        .unwrap()
        .descendants()
        .filter_map(|node| node.attribute("text"))
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
        .collect()
}

fn node_with<'a>(
    document: &'a roxmltree::Document<'a>,
    attribute: &str,
    value: &str,
) -> roxmltree::Node<'a, 'a> {
    document
        .descendants()
        .find(|node| node.attribute(attribute) == Some(value))
        .unwrap_or_else(|| panic!("no node with {attribute}={value}"))
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let reader = decoder.read_info().unwrap();
    let info = reader.info();
    (info.width, info.height)
}

fn wait_until<T>(mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "condition not met within {DEADLINE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn adb_lists_the_device_with_its_model() {
    let phone = Phone::new();
    let output = phone.server.adb(&["devices", "-l"]).unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let line = stdout
        .lines()
        .find(|line| line.starts_with(&phone.device.serial()))
        .unwrap_or_else(|| panic!("not listed: {stdout}"));
    assert!(line.contains(" device "), "{line}");
    // adb writes the model with `_` for the space.
    assert!(
        line.contains("product:sunfish model:Pixel_4a device:sunfish"),
        "{line}"
    );
    assert_eq!(phone.ok("getprop ro.product.model"), "Pixel 4a\n");
}

#[test]
fn shell_v2_carries_stdout_stderr_and_exit_codes() {
    let phone = Phone::new();
    let output = phone.adb(&["shell", "getprop", "ro.build.version.sdk"]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(output.stdout, b"30\n");
    assert_eq!(phone.shell("false").status.code(), Some(1));
    assert_eq!(phone.shell("exit 42").status.code(), Some(42));
    let missing = phone.shell("frobnicate --now");
    assert_eq!(missing.status.code(), Some(127));
    assert!(missing.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "/system/bin/sh: frobnicate: inaccessible or not found\n"
    );
    assert_eq!(phone.ok("getprop ro.build.version.release"), "11\n");
    assert_eq!(phone.ok("getprop sys.boot_completed"), "1\n");
    assert_eq!(phone.ok("getprop ro.boot.qemu.avd_name"), "\n");
    let all = phone.ok("getprop");
    assert!(all.contains("[ro.build.version.sdk]: [30]\n"), "{all}");
    assert!(
        all.contains("[ro.product.manufacturer]: [Google]\n"),
        "{all}"
    );
    assert_eq!(
        phone.ok("echo $?; false || echo failed && echo then"),
        "0\nfailed\nthen\n"
    );
    assert_eq!(phone.ok("wm size"), "Physical size: 1080x2340\n");
    assert_eq!(phone.ok("wm density"), "Physical density: 440\n");
    assert!(
        phone
            .device
            .services()
            .contains(&"shell,v2,raw:getprop ro.build.version.sdk".to_owned()),
        "{:?}",
        phone.device.services()
    );
    assert!(
        phone
            .device
            .commands()
            .contains(&"frobnicate --now".to_owned())
    );
}

#[test]
fn a_dump_is_android_11_xml_of_the_launcher() {
    let phone = Phone::new();
    let xml = phone.dump();
    assert!(xml.starts_with(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" package=\"com.android.launcher3\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[0,0][1080,2340]\">"
    ));
    let document = roxmltree::Document::parse(&xml).unwrap();
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "hierarchy");
    let notes = node_with(&document, "text", "Notes");
    assert_eq!(notes.attribute("clickable"), Some("true"));
    assert_eq!(notes.attribute("class"), Some("android.widget.TextView"));
    assert!(texts(&xml).contains(&"Settings".to_owned()));
    // Tapping the icon launches the app.
    let (x, y) = center(notes.attribute("bounds").unwrap());
    phone.ok(&format!("input tap {x} {y}"));
    assert_eq!(phone.device.screen(), "notes-login");
    let xml = phone.dump();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let username = node_with(&document, "resource-id", "com.example.notes:id/username");
    // An empty EditText reports its hint.
    assert_eq!(username.attribute("text"), Some("Username"));
    assert_eq!(username.attribute("class"), Some("android.widget.EditText"));
    let password = node_with(&document, "resource-id", "com.example.notes:id/password");
    assert_eq!(password.attribute("password"), Some("true"));
    let remember = node_with(&document, "text", "Remember me");
    assert_eq!(remember.attribute("checkable"), Some("true"));
    assert_eq!(remember.attribute("checked"), Some("false"));
    node_with(&document, "resource-id", "android:id/content");
}

#[test]
fn tapping_a_field_and_typing_changes_the_dump() {
    let phone = Phone::new();
    phone.launch_notes();
    phone.tap_node(|n| n.attribute("resource-id") == Some("com.example.notes:id/username"));
    let xml = phone.dump();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let username = node_with(&document, "resource-id", "com.example.notes:id/username");
    assert_eq!(username.attribute("focused"), Some("true"));
    phone.ok("input text 'a b'");
    phone.ok(r"input text \ c\ d");
    phone.ok("input text %se");
    let xml = phone.dump();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let username = node_with(&document, "resource-id", "com.example.notes:id/username");
    assert_eq!(username.attribute("text"), Some("a b c d e"));
    // Several keys in one command: DEL twice, then the end of the field.
    phone.ok("input keyevent 67 KEYCODE_DEL MOVE_END");
    phone.tap_node(|n| n.attribute("resource-id") == Some("com.example.notes:id/password"));
    phone.ok("input text s3cret");
    let xml = phone.dump();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let username = node_with(&document, "resource-id", "com.example.notes:id/username");
    assert_eq!(username.attribute("text"), Some("a b c d"));
    let password = node_with(&document, "resource-id", "com.example.notes:id/password");
    assert_eq!(password.attribute("text"), Some("••••••"));
    assert_eq!(password.attribute("focused"), Some("true"));
    phone.tap_node(|n| n.attribute("text") == Some("Remember me"));
    let xml = phone.dump();
    let document = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        node_with(&document, "text", "Remember me").attribute("checked"),
        Some("true")
    );
}

#[test]
fn signing_in_reaches_the_list_and_back_returns() {
    let phone = Phone::new();
    phone.launch_notes();
    phone.tap_node(|n| n.attribute("text") == Some("Sign in"));
    assert!(texts(&phone.dump()).contains(&"Enter a username and password".to_owned()));
    assert_eq!(phone.device.screen(), "notes-login");
    phone.tap_node(|n| n.attribute("resource-id") == Some("com.example.notes:id/username"));
    phone.ok("input text ann");
    phone.tap_node(|n| n.attribute("resource-id") == Some("com.example.notes:id/password"));
    phone.ok("input text hunter2");
    phone.tap_node(|n| n.attribute("text") == Some("Sign in"));
    assert_eq!(phone.device.screen(), "notes-list");
    let xml = phone.dump();
    let shown = texts(&xml);
    assert!(shown.contains(&"My notes".to_owned()), "{shown:?}");
    assert!(shown.contains(&"Note 1".to_owned()), "{shown:?}");
    assert!(!shown.contains(&"Note 40".to_owned()), "{shown:?}");
    let document = roxmltree::Document::parse(&xml).unwrap();
    let list = node_with(&document, "resource-id", "com.example.notes:id/notes");
    assert_eq!(list.attribute("scrollable"), Some("true"));
    node_with(&document, "content-desc", "Add note");
    let windows = phone.ok("dumpsys window");
    assert!(
        windows.contains("mCurrentFocus=Window{")
            && windows.contains(" u0 com.example.notes/com.example.notes.ListActivity}"),
        "{windows}"
    );
    assert!(
        windows
            .lines()
            .any(|line| line.starts_with("  mFocusedApp=ActivityRecord{")
                && line.ends_with(" u0 com.example.notes/.ListActivity t12}")),
        "{windows}"
    );
    let displays = phone.ok("dumpsys window displays");
    assert!(displays.contains("  mCurrentFocus=Window{"), "{displays}");
    // As on Android 11, the window list no longer carries the focus lines.
    assert!(
        !phone
            .ok("dumpsys window windows")
            .contains("mCurrentFocus=")
    );
    // The switch in the toolbar toggles.
    phone.tap_node(|n| n.attribute("text") == Some("Dark mode"));
    let document_xml = phone.dump();
    let document = roxmltree::Document::parse(&document_xml).unwrap();
    assert_eq!(
        node_with(&document, "text", "Dark mode").attribute("checked"),
        Some("true")
    );
    phone.ok("input keyevent KEYCODE_BACK");
    assert_eq!(phone.device.screen(), "notes-login");
    phone.ok("input keyevent 3");
    assert_eq!(phone.device.screen(), "launcher");
}

#[test]
fn swipes_scroll_the_list_to_the_last_note() {
    let phone = Phone::new();
    phone.sign_in();
    let mut swipes = 0;
    while !texts(&phone.dump()).contains(&"Note 40".to_owned()) {
        assert!(swipes < 10, "Note 40 never became visible");
        phone.ok("input swipe 540 1900 540 500 300");
        swipes += 1;
    }
    assert!(swipes >= 4, "the list scrolled too fast: {swipes} swipes");
    let xml = phone.dump();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let last = node_with(&document, "text", "Note 40");
    // The last row sits at the bottom of the list, inside its bounds.
    assert_eq!(last.attribute("bounds"), Some("[0,1998][1080,2208]"));
    assert!(!texts(&xml).contains(&"Note 1".to_owned()));
    // A long press (a swipe that stays put) selects a note.
    let (x, y) = center(last.attribute("bounds").unwrap());
    phone.ok(&format!("input swipe {x} {y} {x} {y} 800"));
    let xml = phone.dump();
    let document = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        node_with(&document, "text", "Note 40").attribute("selected"),
        Some("true")
    );
}

#[test]
fn screencap_is_a_png_of_the_screen_that_changes_with_it() {
    let phone = Phone::new();
    let launcher = phone.screenshot();
    assert_eq!(&launcher[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(png_size(&launcher), (1080, 2340));
    phone.launch_notes();
    let login = phone.screenshot();
    assert_eq!(png_size(&login), (1080, 2340));
    assert_ne!(launcher, login);
    phone.tap_node(|n| n.attribute("resource-id") == Some("com.example.notes:id/username"));
    phone.ok("input text abc");
    assert_ne!(phone.screenshot(), login);
}

#[test]
fn push_and_pull_carry_a_file_byte_for_byte() {
    let phone = Phone::new();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("x.apk");
    // 300 KiB of varied bytes: more than one 64 KiB DATA chunk and one 256 KiB message.
    let mut state: u32 = 12345;
    let data: Vec<u8> = (0..300 * 1024)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (state >> 16) as u8
        })
        .collect();
    std::fs::write(&local, &data).unwrap();
    let push = phone.adb(&["push", local.to_str().unwrap(), "/data/local/tmp/x.apk"]);
    assert!(push.status.success(), "{}", describe(&push));
    assert_eq!(
        phone.device.pushed("/data/local/tmp/x.apk"),
        Some(data.clone())
    );
    assert!(phone.device.services().contains(&"sync:".to_owned()));
    let back = dir.path().join("back.apk");
    let pull = phone.adb(&["pull", "/data/local/tmp/x.apk", back.to_str().unwrap()]);
    assert!(pull.status.success(), "{}", describe(&pull));
    assert_eq!(std::fs::read(&back).unwrap(), data);
    assert_eq!(phone.ok("pm install -r /data/local/tmp/x.apk"), "Success\n");
    let missing = phone.shell("pm install -r /data/local/tmp/missing.apk");
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .starts_with("Error: Unable to open file: /data/local/tmp/missing.apk\n")
    );
    // Shared storage has its aliases; a read-only partition refuses the push.
    let sdcard = phone.adb(&["push", local.to_str().unwrap(), "/sdcard/Download/"]);
    assert!(sdcard.status.success(), "{}", describe(&sdcard));
    assert_eq!(
        phone
            .device
            .pushed("/storage/emulated/0/Download/x.apk")
            .map(|d| d.len()),
        Some(data.len())
    );
    assert_eq!(phone.ok("ls /sdcard/Download"), "x.apk\n");
    let refused = phone.adb(&["push", local.to_str().unwrap(), "/system/x.apk"]);
    assert!(!refused.status.success());
    // adb 29 prints a failed copy on stdout.
    assert!(
        describe(&refused).contains("remote couldn't create file: Read-only file system"),
        "{}",
        describe(&refused)
    );
    let absent = phone.adb(&["pull", "/data/local/tmp/nope", back.to_str().unwrap()]);
    assert!(!absent.status.success());
    assert!(
        describe(&absent).contains("No such file or directory"),
        "{}",
        describe(&absent)
    );
}

#[test]
fn adb_install_streams_through_cmd_package() {
    let phone = Phone::new();
    let dir = tempfile::tempdir().unwrap();
    let apk = dir.path().join("app.apk");
    std::fs::write(&apk, b"PK\x03\x04 not really an APK").unwrap();
    let install = phone.adb(&["install", apk.to_str().unwrap()]);
    assert!(install.status.success(), "{}", describe(&install));
    assert!(String::from_utf8_lossy(&install.stdout).contains("Success"));
    assert!(
        phone
            .device
            .services()
            .iter()
            .any(|service| service.starts_with("exec:cmd package 'install' -S ")),
        "{:?}",
        phone.device.services()
    );
}

#[test]
fn going_offline_drops_the_device() {
    let phone = Phone::new();
    phone.device.go_offline();
    let serial = phone.device.serial();
    wait_until(|| match phone.server.state(&serial).unwrap() {
        None => Some(()),
        Some(state) if state == "offline" => Some(()),
        Some(_) => None,
    });
    assert!(!phone.shell("true").status.success());
}

#[test]
fn failed_dumps_say_so_until_the_device_recovers() {
    let phone = Phone::new();
    phone.device.fail_next_dumps(2);
    for _ in 0..2 {
        let output = phone.adb(&["exec-out", "uiautomator dump /dev/tty"]);
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "ERROR: null root node returned by UiTestAutomationBridge.\n"
        );
    }
    assert!(phone.dump().contains("com.android.launcher3"));
    // A dump to a file, read back with cat.
    assert_eq!(
        phone.ok("uiautomator dump"),
        "UI hierchary dumped to: /sdcard/window_dump.xml\n"
    );
    let xml = phone.ok("cat /sdcard/window_dump.xml");
    roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        phone.ok("uiautomator dump /data/local/tmp/ui.xml && cat /data/local/tmp/ui.xml | grep -c hierarchy"),
        "UI hierchary dumped to: /data/local/tmp/ui.xml\n1\n"
    );
}

#[test]
fn adb_keyboard_types_what_input_text_cannot() {
    let phone = Phone::new();
    phone.launch_notes();
    phone.tap_node(|n| n.attribute("resource-id") == Some("com.example.notes:id/username"));
    let refused = phone.shell("input text 'héllo'");
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .starts_with("java.lang.NullPointerException: Attempt to get length of null array\n")
    );
    assert_eq!(
        phone.ok("ime enable com.android.adbkeyboard/.AdbIME"),
        "Input method com.android.adbkeyboard/.AdbIME: now enabled for user #0\n"
    );
    assert_eq!(
        phone.ok("ime set com.android.adbkeyboard/.AdbIME"),
        "Input method com.android.adbkeyboard/.AdbIME selected for user #0\n"
    );
    let message = base64::engine::general_purpose::STANDARD.encode("héllo 👋");
    assert_eq!(
        phone.ok(&format!("am broadcast -a ADB_INPUT_B64 --es msg {message}")),
        "Broadcasting: Intent { act=ADB_INPUT_B64 flg=0x400000 (has extras) }\nBroadcast completed: result=0\n"
    );
    let xml = phone.dump();
    // Characters beyond the BMP are character references in the dump.
    assert!(xml.contains("text=\"héllo &#128075;\""), "{xml}");
    let document = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        node_with(&document, "resource-id", "com.example.notes:id/username").attribute("text"),
        Some("héllo 👋")
    );
    assert_eq!(
        phone.ok("am broadcast -a ADB_CLEAR_TEXT"),
        "Broadcasting: Intent { act=ADB_CLEAR_TEXT flg=0x400000 }\nBroadcast completed: result=0\n"
    );
    let xml = phone.dump();
    let document = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        node_with(&document, "resource-id", "com.example.notes:id/username").attribute("text"),
        Some("Username")
    );
    let unknown = phone.shell("ime set com.example/.Nope");
    assert_eq!(
        String::from_utf8_lossy(&unknown.stderr),
        "Unknown input method com.example/.Nope cannot be selected for user #0\n"
    );
}

#[test]
fn input_answers_like_android_11() {
    let phone = Phone::new();
    // Android 11's `input` has no `keycombination`: it prints its usage and the error.
    let combination = phone.shell("input keycombination 113 29");
    let stderr = String::from_utf8_lossy(&combination.stderr);
    assert!(stderr.starts_with("Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n"));
    assert!(
        stderr.ends_with("\nError: Error: Unknown command: keycombination\n"),
        "{stderr}"
    );
    let missing = phone.shell("input tap 10");
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .ends_with("Error: Argument expected after \"tap\"\n")
    );
    let bad = phone.shell("input tap x 10");
    assert!(
        String::from_utf8_lossy(&bad.stderr)
            .ends_with("Error: Error: Invalid arguments for command: tap\n")
    );
    // Drag and drop moves a note in the list.
    phone.sign_in();
    phone.ok("input draganddrop 540 325 540 955 1000");
    let shown = texts(&phone.dump());
    let position = |title: &str| shown.iter().position(|t| t == title).unwrap();
    assert!(position("Note 2") < position("Note 1"), "{shown:?}");
}

#[test]
fn rotation_turns_the_app_but_not_the_panel() {
    let phone = Phone::new();
    phone.ok("settings put system accelerometer_rotation 0");
    phone.ok("settings put system user_rotation 1");
    assert_eq!(phone.ok("settings get system user_rotation"), "1\n");
    // The launcher stays in portrait.
    assert!(phone.dump().contains("<hierarchy rotation=\"0\">"));
    phone.launch_notes();
    let xml = phone.dump();
    assert!(xml.contains("<hierarchy rotation=\"1\">"), "{xml}");
    assert!(xml.contains("bounds=\"[0,0][2340,1080]\""));
    assert_eq!(phone.ok("wm size"), "Physical size: 1080x2340\n");
    assert_eq!(png_size(&phone.screenshot()), (2340, 1080));
    phone.ok("settings put system user_rotation 0");
    assert!(phone.dump().contains("<hierarchy rotation=\"0\">"));
}

#[test]
fn activity_and_package_managers_answer_like_android_11() {
    let phone = Phone::new();
    let third_party = phone.ok("pm list packages -3");
    let mut listed: Vec<&str> = third_party.lines().collect();
    listed.sort_unstable();
    assert_eq!(
        listed,
        [
            "package:com.android.adbkeyboard",
            "package:com.example.notes"
        ]
    );
    let all = phone.ok("pm list packages");
    for package in ["com.android.launcher3", "com.android.settings"] {
        assert!(all.contains(&format!("package:{package}\n")), "{all}");
    }
    assert_eq!(
        phone.ok("am start -a android.intent.action.VIEW -d https://example.com/page?q=1"),
        "Starting: Intent { act=android.intent.action.VIEW dat=https://example.com/... }\n"
    );
    assert_eq!(phone.device.screen(), "browser");
    assert_eq!(phone.device.opened_urls(), ["https://example.com/page?q=1"]);
    let monkey = phone.ok("monkey -p com.example.notes -c android.intent.category.LAUNCHER 1");
    assert!(monkey.contains("Events injected: 1\n"), "{monkey}");
    assert_eq!(phone.device.screen(), "notes-login");
    assert!(
        phone
            .ok("pidof com.example.notes")
            .trim()
            .parse::<u32>()
            .is_ok()
    );
    assert_eq!(phone.ok("am force-stop com.example.notes"), "");
    assert_eq!(phone.device.screen(), "launcher");
    assert_eq!(
        phone.shell("pidof com.example.notes").status.code(),
        Some(1)
    );
    let absent = phone.shell("monkey -p com.example.absent -c android.intent.category.LAUNCHER 1");
    assert!(
        String::from_utf8_lossy(&absent.stderr)
            .contains("** No activities found to run, monkey aborted.")
    );
    let class = phone.shell("am start -n com.example.notes/.Nope");
    assert_eq!(
        String::from_utf8_lossy(&class.stderr),
        "Error type 3\nError: Activity class {com.example.notes/com.example.notes.Nope} does not exist.\n"
    );
    let settings = phone.ok("am start -W -n com.android.settings/.Settings");
    assert!(
        settings.starts_with(
            "Starting: Intent { cmp=com.android.settings/.Settings }\nStatus: ok\nLaunchState: COLD\nActivity: com.android.settings/.Settings\nTotalTime: "
        ),
        "{settings}"
    );
    assert_eq!(phone.device.screen(), "settings");
    let not_debuggable = phone.shell("run-as com.example.notes ls");
    assert_eq!(not_debuggable.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&not_debuggable.stderr),
        "run-as: package not debuggable: com.example.notes\n"
    );
}

#[test]
fn run_as_reads_a_debuggable_apps_database() {
    let phone = Phone::start(FakeAndroidConfig {
        notes_debuggable: true,
        ..FakeAndroidConfig::default()
    });
    let rows = phone
        .ok("run-as com.example.notes sqlite3 databases/notes.db \"SELECT id, title FROM notes\"");
    let rows: Vec<&str> = rows.lines().collect();
    assert_eq!(rows.len(), 40);
    assert_eq!(rows[0], "1|Note 1");
    assert_eq!(
        phone.ok("run-as com.example.notes ls"),
        "cache\ncode_cache\ndatabases\nshared_prefs\n"
    );
    let denied = phone.shell("ls /data/user/0/com.example.notes");
    assert!(!denied.status.success());
}

#[test]
fn several_streams_run_at_once_on_one_connection() {
    let phone = Phone::new();
    phone.device.set_delay(Duration::from_millis(50));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..6)
            .map(|n| {
                let phone = &phone;
                scope.spawn(move || {
                    for round in 0..3 {
                        let text = phone.ok(&format!("echo {n}-{round}"));
                        assert_eq!(text, format!("{n}-{round}\n"));
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
    });
    assert_eq!(
        phone
            .device
            .commands()
            .iter()
            .filter(|command| command.starts_with("echo "))
            .count(),
        18
    );
}

#[test]
fn terminals_echo_and_exit_with_the_last_status() {
    let phone = Phone::new();
    let serial = phone.device.serial();
    // `-tt` asks for a pty even though stdin is a pipe.
    let mut command: Command = phone.server.command(&["-s", &serial, "shell", "-tt"]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"echo one\nexit 3\n")
        .unwrap();
    let mut stdout = String::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 {
        stdout.push_str(&line);
        line.clear();
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(
        stdout.starts_with("sunfish:/ $ echo one\r\none\r\nsunfish:/ $ exit 3\r\n"),
        "{stdout:?}"
    );
    assert_eq!(phone.ok("echo plain"), "plain\n");
    let pty = phone.adb(&["shell", "-tt", "echo", "crlf"]);
    assert_eq!(pty.stdout, b"crlf\r\n");
}

#[test]
fn the_fake_emulator_registers_a_device_with_its_avd_name() {
    let server = AdbServer::start().unwrap();
    let home = tempfile::tempdir().unwrap();
    fake_android_home(
        home.path(),
        std::path::Path::new(env!("CARGO_BIN_EXE_fake-android")),
        &["Pixel_4a_API_30", "Tablet_API_30"],
    )
    .unwrap();
    let emulator = home.path().join("emulator/emulator");
    let list = Command::new(&emulator).arg("-list-avds").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&list.stdout),
        "Pixel_4a_API_30\nTablet_API_30\n"
    );
    let unknown = Command::new(&emulator)
        .args(["-avd", "Nope"])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(
        std::fs::read_link(home.path().join("platform-tools/adb"))
            .unwrap()
            .ends_with("adb")
    );
    let child = Command::new(&emulator)
        .args([
            "-avd",
            "Pixel_4a_API_30",
            "-no-window",
            "-no-snapshot-save",
            "-no-audio",
        ])
        .env_clear()
        .env("ANDROID_ADB_SERVER_PORT", server.port().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let child = &mut child.0;
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let serial = format!("127.0.0.1:{}", port.trim());
    server.wait_for_state(&serial, "device").unwrap();
    let avd = server
        .adb(&["-s", &serial, "shell", "getprop", "ro.boot.qemu.avd_name"])
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&avd.stdout), "Pixel_4a_API_30\n");
    let model = server
        .adb(&["-s", &serial, "shell", "getprop", "ro.product.model"])
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&model.stdout),
        "sdk_gphone_x86_64\n"
    );
    // Closing stdin stops the emulator.
    drop(child.stdin.take());
    let status = wait_until(|| child.try_wait().unwrap());
    assert!(status.success(), "{status}");
    wait_until(|| match server.state(&serial).unwrap() {
        Some(state) if state == "device" => None,
        _ => Some(()),
    });
}
