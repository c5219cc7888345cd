//! Android devices end to end: the real binary, the real adb server (Debian's `adb`, a private
//! one per test on a free port), and the testkit's fake Android 11 phone, which speaks the
//! device side of the adb transport. Every action is checked against the exact shell command
//! the phone received.
#![cfg(test)]

use std::time::Duration;

use base64::Engine as _;
use paddock_testkit::android::{AdbServer, FakeAndroid, FakeAndroidConfig};
use paddock_testkit::{DaemonHarness, McpHttp, wait_until};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const DEADLINE: Duration = Duration::from_secs(30);
/// The fake phone's density: 440 dpi, 2.75 px per dp.
const DPI: i64 = 440;

struct World {
    // Dropped in this order: the daemon, then the phone, then the adb server.
    http: McpHttp,
    harness: DaemonHarness,
    phone: FakeAndroid,
    adb: AdbServer,
}

fn world(config: FakeAndroidConfig) -> World {
    let adb = AdbServer::start().unwrap();
    let phone = FakeAndroid::start(config).unwrap();
    adb.connect(&phone).unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.with_adb_server(&adb.socket_env());
    harness.start_detached(&[]).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    let serial = phone.serial();
    wait_until(DEADLINE, || {
        let listed = http
            .call("listDevices", json!({ "platform": "android" }))
            .ok()?;
        let devices = listed["structuredContent"]["devices"].as_array()?.clone();
        devices
            .iter()
            .any(|device| device["id"] == serial.as_str())
            .then_some(())
            .or_else(|| {
                std::thread::sleep(Duration::from_millis(50));
                None
            })
    })
    .unwrap();
    World {
        http,
        harness,
        phone,
        adb,
    }
}

fn ok_text(result: &Value) -> String {
    assert_eq!(result["isError"], false, "{result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected an error: {result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn acquire(http: &McpHttp, session: &str) -> McpHttp {
    let session = http.with_session(session);
    let answer = session.call("getAndroid", json!({})).unwrap();
    assert_eq!(answer["isError"], false, "{answer}");
    session
}

fn observe(http: &McpHttp) -> Value {
    let result = http.call("observe", json!({ "format": "json" })).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    result["structuredContent"].clone()
}

fn element<'a>(observation: &'a Value, role: &str, name: &str) -> &'a Value {
    observation["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|element| element["role"] == role && element["name"] == name)
        .unwrap_or_else(|| panic!("no {role} \"{name}\" in {observation}"))
}

/// The pixel at the centre of an element given in dp, as the phone must receive it.
fn center_px(element: &Value) -> (i64, i64) {
    let bounds: Vec<i64> = element["bounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|value| value.as_i64().unwrap())
        .collect();
    let along = |start: i64, length: i64| ((2 * start + length) * DPI + 160) / 320;
    (along(bounds[0], bounds[2]), along(bounds[1], bounds[3]))
}

/// The pixel bounds of the node with `resource_id` in the phone's own dump.
fn node_bounds_px(adb: &AdbServer, phone: &FakeAndroid, resource_id: &str) -> [i64; 4] {
    let output = adb
        .adb(&[
            "-s",
            &phone.serial(),
            "exec-out",
            "uiautomator",
            "dump",
            "/dev/tty",
        ])
        .unwrap();
    let dump = String::from_utf8_lossy(&output.stdout).into_owned();
    let needle = format!("resource-id=\"{resource_id}\"");
    let node = dump
        .split("<node ")
        .find(|node| node.contains(&needle))
        .unwrap_or_else(|| panic!("no {resource_id} in {dump}"));
    let bounds = node
        .split("bounds=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let numbers: Vec<i64> = bounds
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .map(|part| part.parse().unwrap())
        .collect();
    [numbers[0], numbers[1], numbers[2], numbers[3]]
}

/// The commands the phone received after the first `skip`.
fn commands_since(phone: &FakeAndroid, skip: usize) -> Vec<String> {
    phone.commands().into_iter().skip(skip).collect()
}

#[test]
fn an_agent_signs_in_scrolls_and_releases_an_android_phone() {
    let World {
        http,
        harness: _harness,
        phone,
        adb,
    } = world(FakeAndroidConfig::default());
    let serial = phone.serial();

    let listed = http.call("listDevices", json!({})).unwrap();
    let device = listed["structuredContent"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|device| device["id"] == serial.as_str())
        .unwrap()
        .clone();
    assert_eq!(device["platform"], "android", "{device}");
    assert_eq!(device["state"], "warm", "{device}");
    assert_eq!(device["android"]["model"], "Pixel 4a", "{device}");
    assert_eq!(device["android"]["apiLevel"], 30, "{device}");
    assert_eq!(device["android"]["screenWidthPx"], 1080, "{device}");
    assert_eq!(device["android"]["screenHeightPx"], 2340, "{device}");
    assert_eq!(device["android"]["densityDpi"], 440, "{device}");

    let answer = http
        .with_session("phone")
        .call("getAndroid", json!({}))
        .unwrap();
    assert_eq!(answer["isError"], false, "{answer}");
    assert_eq!(answer["structuredContent"]["device"]["id"], serial.as_str());
    assert_eq!(answer["structuredContent"]["device"]["platform"], "android");
    let session = http.with_session("phone");

    let before = phone.commands().len();
    let text = ok_text(
        &session
            .call("launchApp", json!({ "appId": "com.example.notes" }))
            .unwrap(),
    );
    assert_eq!(
        commands_since(&phone, before).first().map(String::as_str),
        Some("monkey -p com.example.notes -c android.intent.category.LAUNCHER 1")
    );
    assert!(text.contains("app=com.example.notes"), "{text}");
    assert!(text.contains("textbox \"Username\""), "{text}");
    assert!(text.contains("button \"Sign in\""), "{text}");
    assert!(text.contains("settled: true"), "{text}");

    // A tap on an element given in dp lands on the pixel at its centre, inside the node the
    // phone itself reports.
    let page = observe(&session);
    assert_eq!(page["platform"], "android");
    assert_eq!(page["screen"]["scale"], 2.75);
    let username = element(&page, "textbox", "Username").clone();
    let (x, y) = center_px(&username);
    let [x1, y1, x2, y2] = node_bounds_px(&adb, &phone, "com.example.notes:id/username");
    assert!(
        (x1..x2).contains(&x) && (y1..y2).contains(&y),
        "({x},{y}) outside [{x1},{y1}][{x2},{y2}]"
    );
    let before = phone.commands().len();
    ok_text(
        &session
            .call("inputText", json!({ "label": "Username", "text": "alice" }))
            .unwrap(),
    );
    let sent = commands_since(&phone, before);
    assert_eq!(
        sent.first(),
        Some(&format!("input tap {x} {y}")),
        "{sent:?}"
    );
    assert!(sent.contains(&"input text 'alice'".to_owned()), "{sent:?}");

    let before = phone.commands().len();
    let text = ok_text(
        &session
            .call("inputText", json!({ "id": "password", "text": "hunter2" }))
            .unwrap(),
    );
    assert!(
        commands_since(&phone, before).contains(&"input text 'hunter2'".to_owned()),
        "{:?}",
        commands_since(&phone, before)
    );
    assert!(
        !text.contains("hunter2"),
        "a password reached the observation: {text}"
    );
    assert!(
        text.contains("[password") || text.contains(",password"),
        "{text}"
    );

    let text = ok_text(&session.call("tapOn", json!({ "text": "sign in" })).unwrap());
    assert_eq!(phone.screen(), "notes-list");
    assert!(text.contains("My notes"), "{text}");
    assert!(text.contains("scroll: "), "{text}");

    // Only an exact match is tapped; a partial one lists the candidates.
    let refused = error_text(&session.call("tapOn", json!({ "text": "Note" })).unwrap());
    assert!(refused.contains("[not_found]"), "{refused}");
    assert!(
        refused.contains("no element shows exactly `Note`"),
        "{refused}"
    );
    assert!(refused.contains("\"Note 1\""), "{refused}");

    let before = phone.commands().len();
    let text = ok_text(
        &session
            .call(
                "swipeOn",
                json!({ "direction": "up", "untilVisible": "Note 40" }),
            )
            .unwrap(),
    );
    assert!(text.contains("\"Note 40\""), "{text}");
    let swipes: Vec<String> = commands_since(&phone, before)
        .into_iter()
        .filter(|command| command.starts_with("input swipe "))
        .collect();
    assert!(!swipes.is_empty());
    assert!(
        swipes.iter().all(|command| command.ends_with(" 300")),
        "{swipes:?}"
    );

    let shot = session.call("screenshot", json!({ "width": 200 })).unwrap();
    assert_eq!(shot["isError"], false, "{shot}");
    let image = shot["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "image")
        .unwrap();
    assert_eq!(image["mimeType"], "image/jpeg");
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(image["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(&jpeg[..3], &[0xff, 0xd8, 0xff]);

    let before = phone.commands().len();
    let released = session.call("releaseDevice", json!({})).unwrap();
    assert_eq!(released["isError"], false, "{released}");
    wait_until(DEADLINE, || {
        let sent = commands_since(&phone, before);
        (sent.contains(&"am force-stop com.example.notes".to_owned())
            && sent.contains(&"input keyevent 3".to_owned()))
        .then_some(())
    })
    .unwrap();
    wait_until(DEADLINE, || (phone.screen() == "launcher").then_some(())).unwrap();
    wait_until(DEADLINE, || {
        let listed = http
            .call("listDevices", json!({ "platform": "android" }))
            .ok()?;
        (listed["structuredContent"]["devices"][0]["state"] == "warm").then_some(())
    })
    .unwrap();
}

#[test]
fn typed_text_reaches_the_phone_exactly_whatever_it_holds() {
    let World {
        http,
        harness: _harness,
        phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let session = acquire(&http, "typing");
    ok_text(
        &session
            .call("launchApp", json!({ "appId": "com.example.notes" }))
            .unwrap(),
    );

    // Printable ASCII goes through `input text`, spaces as %s, single-quoted for the shell.
    let tricky = r#"it's "$HOME"; rm -rf * | `id` & 100% \o/"#;
    let before = phone.commands().len();
    let text = ok_text(
        &session
            .call("inputText", json!({ "label": "Username", "text": tricky }))
            .unwrap(),
    );
    let sent = commands_since(&phone, before);
    assert!(
        sent.contains(
            &r#"input text 'it'\''s%s"$HOME";%srm%s-rf%s*%s|%s`id`%s&%s100%%s\o/'"#.to_owned()
        ),
        "{sent:?}"
    );
    assert!(
        text.contains(&format!("textbox {tricky:?}")) || text.contains(tricky),
        "{text}"
    );

    // Anything else goes through ADBKeyboard's base64 broadcast.
    ok_text(
        &session
            .call("clearText", json!({ "id": "username" }))
            .unwrap(),
    );
    let unicode = "Grüße, 世界 😀";
    let before = phone.commands().len();
    let text = ok_text(
        &session
            .call("inputText", json!({ "id": "username", "text": unicode }))
            .unwrap(),
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(unicode);
    let sent = commands_since(&phone, before);
    assert!(
        sent.contains(&format!("am broadcast -a ADB_INPUT_B64 --es msg {encoded}")),
        "{sent:?}"
    );
    assert!(text.contains(unicode), "{text}");
}

#[test]
fn a_phone_that_goes_away_loses_its_session_and_others_are_told_why() {
    let World {
        http,
        harness: _harness,
        phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let session = acquire(&http, "cable");
    ok_text(&session.call("observe", json!({})).unwrap());
    phone.go_offline();
    let error = wait_until(DEADLINE, || {
        let result = session.call("observe", json!({})).ok()?;
        (result["isError"] == true).then(|| error_text(&result))
    })
    .unwrap();
    assert!(error.contains("[device_lost]"), "{error}");
    wait_until(DEADLINE, || {
        let listed = http
            .call("listDevices", json!({ "platform": "android" }))
            .ok()?;
        listed["structuredContent"]["devices"]
            .as_array()?
            .is_empty()
            .then_some(())
    })
    .unwrap();
    let again = error_text(
        &http
            .with_session("next")
            .call("getAndroid", json!({}))
            .unwrap(),
    );
    assert!(again.contains("lists no online Android device"), "{again}");
}

#[test]
fn without_an_adb_server_get_android_says_how_to_get_one() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.with_adb_server(&format!("tcp:127.0.0.1:{port}"));
    harness.start_detached(&[]).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();
    let error = wait_until(DEADLINE, || {
        let text = error_text(
            &http
                .with_session("s")
                .call("getAndroid", json!({}))
                .unwrap(),
        );
        (!text.contains("still connecting")).then_some(text)
    })
    .unwrap();
    assert!(error.contains("[unavailable]"), "{error}");
    assert!(
        error.contains(&format!("no adb server answers at `tcp:127.0.0.1:{port}`")),
        "{error}"
    );
    assert!(error.contains("adb start-server"), "{error}");
    // The daemon is fine.
    let listed = http.call("listDevices", json!({})).unwrap();
    assert_eq!(listed["isError"], false, "{listed}");
}

#[test]
fn web_only_tools_and_unknown_avds_are_refused_with_reasons() {
    let World {
        http,
        harness: _harness,
        phone: _phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let session = acquire(&http, "limits");
    let enabled = session
        .call("setToolEnabled", json!({ "toolNames": ["highlight"] }))
        .unwrap();
    assert_eq!(enabled["isError"], false, "{enabled}");
    let refused = error_text(&session.call("highlight", json!({ "clear": true })).unwrap());
    assert!(refused.contains("[unsupported_platform]"), "{refused}");
    assert!(
        refused.contains("does not support android devices"),
        "{refused}"
    );

    let avd = error_text(
        &http
            .with_session("avd")
            .call("getAndroid", json!({ "avdName": "pixel_9" }))
            .unwrap(),
    );
    assert!(
        avd.contains("no running emulator is AVD `pixel_9`"),
        "{avd}"
    );
    assert!(avd.contains("ANDROID_HOME"), "{avd}");
}

#[test]
fn install_app_pushes_the_apk_and_sql_query_needs_a_debuggable_app() {
    let World {
        http,
        harness,
        phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let session = acquire(&http, "tools");
    let enabled = session
        .call(
            "setToolEnabled",
            json!({ "toolNames": ["installApp", "sqlQuery"] }),
        )
        .unwrap();
    assert_eq!(enabled["isError"], false, "{enabled}");

    let apk = harness.home().join("app-debug.apk");
    let bytes: Vec<u8> = (0..300 * 1024).map(|index| (index % 251) as u8).collect();
    std::fs::write(&apk, &bytes).unwrap();
    let before = phone.commands().len();
    let installed = session
        .call("installApp", json!({ "path": apk.to_str().unwrap() }))
        .unwrap();
    assert_eq!(installed["isError"], false, "{installed}");
    assert_eq!(installed["structuredContent"]["installer"], "Success");
    let sent = commands_since(&phone, before);
    let install = sent
        .iter()
        .find(|command| command.starts_with("pm install -r /data/local/tmp/paddock-"))
        .unwrap_or_else(|| panic!("{sent:?}"));
    let remote = install.trim_start_matches("pm install -r ");
    assert!(sent.contains(&format!("rm -f {remote}")), "{sent:?}");

    let refused = error_text(
        &session
            .call("installApp", json!({ "path": "/etc/passwd" }))
            .unwrap(),
    );
    assert!(refused.contains("`.apk` file"), "{refused}");

    let denied = error_text(
        &session
            .call(
                "sqlQuery",
                json!({ "package": "com.example.notes", "database": "notes.db", "sql": "SELECT 1" }),
            )
            .unwrap(),
    );
    assert!(denied.contains("not debuggable"), "{denied}");
    let bad = error_text(
        &session
            .call(
                "sqlQuery",
                json!({ "package": "com.example.notes", "database": "../x.db", "sql": "SELECT 1" }),
            )
            .unwrap(),
    );
    assert!(bad.contains("not a database file name"), "{bad}");
}

/// The testkit's `fake-android` binary, built beside the test binaries by `cargo test
/// --workspace`.
fn fake_android_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let binary = dir.join("fake-android");
    assert!(
        binary.is_file(),
        "`{}` is missing; build it with `cargo build -p paddock-testkit --bin fake-android` (cargo test --workspace does)",
        binary.display()
    );
    binary
}

/// Processes whose command line names `needle`.
fn processes_naming(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            paddock_testkit::procfs::cmdline(*pid)
                .is_some_and(|args| args.iter().any(|arg| arg == needle))
        })
        .collect()
}

#[test]
fn get_android_with_an_avd_name_boots_that_emulator_and_the_daemon_stops_it() {
    let adb = AdbServer::start().unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    let sdk = harness.root().join("android-sdk");
    let avd = format!("paddock_test_{}", std::process::id());
    paddock_testkit::android::fake_android_home(&sdk, &fake_android_binary(), &[&avd, "other_avd"])
        .unwrap();
    harness.with_adb_server(&adb.socket_env());
    harness.set_env("ANDROID_HOME", &sdk);
    harness.start_detached(&[]).unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();

    let unknown = error_text(
        &http
            .with_session("nope")
            .call("getAndroid", json!({ "avdName": "pixel_9" }))
            .unwrap(),
    );
    assert!(unknown.contains("there is no AVD `pixel_9`"), "{unknown}");
    assert!(unknown.contains("other_avd"), "{unknown}");

    let answer = http
        .with_session("emulator")
        .call("getAndroid", json!({ "avdName": avd }))
        .unwrap();
    assert_eq!(answer["isError"], false, "{answer}");
    assert_eq!(answer["structuredContent"]["device"]["platform"], "android");
    let listed = http
        .call("listDevices", json!({ "platform": "android" }))
        .unwrap();
    let device = &listed["structuredContent"]["devices"][0];
    assert_eq!(device["android"]["avdName"], avd.as_str(), "{listed}");
    assert_eq!(device["session"], "emulator", "{listed}");
    assert_eq!(processes_naming(&avd).len(), 1, "one emulator runs");

    // The same AVD again in another session: it is bound, not booted twice.
    let busy = error_text(
        &http
            .with_session("second")
            .call("getAndroid", json!({ "avdName": avd }))
            .unwrap(),
    );
    assert!(busy.contains("is bound to another session"), "{busy}");
    assert_eq!(processes_naming(&avd).len(), 1);

    let stopped = harness.run(["daemon", "stop"]).unwrap();
    assert_eq!(stopped.code(), Some(0), "{}", stopped.stderr());
    wait_until(DEADLINE, || processes_naming(&avd).is_empty().then_some(())).unwrap();
}

#[test]
fn devices_warm_boots_an_avd_with_its_stages_on_stderr() {
    let adb = AdbServer::start().unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    let sdk = harness.root().join("android-sdk");
    let avd = format!("paddock_warm_{}", std::process::id());
    paddock_testkit::android::fake_android_home(&sdk, &fake_android_binary(), &[&avd]).unwrap();
    harness.with_adb_server(&adb.socket_env());
    harness.set_env("ANDROID_HOME", &sdk);
    harness.start_detached(&[]).unwrap();
    let warmed = harness
        .run([
            "devices",
            "warm",
            "1",
            "--platform",
            "android",
            "--avd",
            &avd,
        ])
        .unwrap();
    assert_eq!(warmed.code(), Some(0), "{}", warmed.stderr());
    let stderr = warmed.stderr();
    assert!(
        stderr.contains(&format!("starting emulator `{avd}` (headless)")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("emulator `{avd}` is ready")),
        "{stderr}"
    );
    assert!(
        warmed.stdout().trim().starts_with("127.0.0.1:"),
        "{}",
        warmed.stdout()
    );
    let missing = harness
        .run(["devices", "warm", "1", "--platform", "android"])
        .unwrap();
    assert_ne!(missing.code(), Some(0));
    assert!(
        missing.stderr().contains("--avd NAME"),
        "{}",
        missing.stderr()
    );
    let stopped = harness.run(["daemon", "stop"]).unwrap();
    assert_eq!(stopped.code(), Some(0), "{}", stopped.stderr());
    wait_until(DEADLINE, || processes_naming(&avd).is_empty().then_some(())).unwrap();
}

#[test]
fn a_daemon_restart_ends_an_android_session_with_the_reason() {
    let World {
        http,
        harness,
        phone: _phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let session = acquire(&http, "before-restart");
    ok_text(&session.call("observe", json!({})).unwrap());
    let restarted = harness.run(["daemon", "restart"]).unwrap();
    assert_eq!(restarted.code(), Some(0), "{}", restarted.stderr());
    let http = McpHttp::for_harness(&harness).unwrap();
    let error = error_text(
        &http
            .with_session("before-restart")
            .call("observe", json!({}))
            .unwrap(),
    );
    assert!(error.contains("[device_lost]"), "{error}");
    assert!(error.contains("the daemon restarted"), "{error}");
}

#[test]
fn a_phone_that_drops_mid_action_fails_the_action_cleanly() {
    let World {
        http,
        harness: _harness,
        phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let session = acquire(&http, "mid-action");
    ok_text(&session.call("observe", json!({})).unwrap());
    phone.set_delay(Duration::from_secs(2));
    let pulled = std::thread::scope(|scope| {
        let tap = scope.spawn(|| {
            session
                .call("pressButton", json!({ "button": "home" }))
                .unwrap()
        });
        wait_until(DEADLINE, || {
            phone
                .commands()
                .iter()
                .any(|command| command == "input keyevent 3")
                .then_some(())
        })
        .unwrap();
        phone.go_offline();
        tap.join().unwrap()
    });
    let error = error_text(&pulled);
    assert!(
        error.contains("[device_lost]") || error.contains("[upstream_error]"),
        "{error}"
    );
    // The daemon serves on.
    let listed = http.call("listDevices", json!({})).unwrap();
    assert_eq!(listed["isError"], false, "{listed}");
}

#[test]
fn an_action_after_an_observation_answers_with_what_changed() {
    let World {
        http,
        harness: _harness,
        phone: _phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let session = acquire(&http, "changes");
    ok_text(
        &session
            .call("launchApp", json!({ "appId": "com.example.notes" }))
            .unwrap(),
    );
    let whole = ok_text(&session.call("observe", json!({})).unwrap());
    assert!(whole.contains("button \"Sign in\""), "{whole}");
    let checkbox = whole
        .lines()
        .find(|line| line.contains("checkbox \"Remember me\""))
        .unwrap()
        .to_owned();
    let reference = checkbox.split(' ').next().unwrap().to_owned();
    let answer = ok_text(&session.call("tapOn", json!({ "ref": reference })).unwrap());
    assert!(
        answer.contains("1 change(s) since your last observation"),
        "{answer}"
    );
    assert!(
        answer.contains(&format!("~ {reference} checkbox \"Remember me\" [checked")),
        "{answer}"
    );
    assert!(
        !answer.contains("button \"Sign in\""),
        "unchanged lines are left out: {answer}"
    );
    assert!(answer.contains("settled: true"), "{answer}");
    // observe still gives everything.
    let again = ok_text(&session.call("observe", json!({})).unwrap());
    assert!(again.contains("button \"Sign in\""), "{again}");
}

#[test]
fn every_action_sends_its_documented_command() {
    let World {
        http,
        harness: _harness,
        phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let answer = http
        .with_session("actions")
        .call("getAndroid", json!({ "enableTools": ["installApp"] }))
        .unwrap();
    assert_eq!(answer["isError"], false, "{answer}");
    let enabled = answer["structuredContent"]["enabledTools"]
        .as_array()
        .unwrap();
    assert!(enabled.contains(&json!("installApp")), "{answer}");
    let session = http.with_session("actions");
    ok_text(
        &session
            .call("launchApp", json!({ "appId": "com.example.notes" }))
            .unwrap(),
    );
    let page = observe(&session);
    let sign_in = element(&page, "button", "Sign in").clone();
    let remember = element(&page, "checkbox", "Remember me").clone();
    let (sx, sy) = center_px(&sign_in);
    let (rx, ry) = center_px(&remember);

    // Each call, and the first command it sent that is not part of observing.
    let observing = |command: &str| {
        command.starts_with("uiautomator dump")
            || command.starts_with("dumpsys window")
            || command.starts_with("service call SurfaceFlinger")
    };
    let cases: Vec<(&str, Value, String)> = vec![
        (
            "tapOn",
            json!({ "ref": sign_in["ref"], "action": "doubleTap" }),
            format!("input tap {sx} {sy}; input tap {sx} {sy}"),
        ),
        (
            "tapOn",
            json!({ "ref": remember["ref"], "action": "longPress" }),
            format!("input swipe {rx} {ry} {rx} {ry} 600"),
        ),
        (
            "tapOn",
            json!({ "x": 100, "y": 200 }),
            "input tap 275 550".to_owned(),
        ),
        (
            "dragAndDrop",
            json!({ "from": { "ref": remember["ref"] }, "to": { "x": 100, "y": 600 } }),
            format!("input draganddrop {rx} {ry} 275 1650 1000"),
        ),
        (
            "imeAction",
            json!({ "action": "next" }),
            "input keyevent 61".to_owned(),
        ),
        (
            "imeAction",
            json!({ "action": "search" }),
            "input keyevent 66".to_owned(),
        ),
        (
            "pressButton",
            json!({ "button": "back" }),
            "input keyevent 4".to_owned(),
        ),
        (
            "pressButton",
            json!({ "button": "appSwitch" }),
            "input keyevent 187".to_owned(),
        ),
        (
            "openLink",
            json!({ "url": "https://example.com/a b?q='x'" }),
            "am start -a android.intent.action.VIEW -d 'https://example.com/a b?q='\\''x'\\'''"
                .to_owned(),
        ),
        (
            "rotate",
            json!({ "orientation": "landscape" }),
            "settings put system accelerometer_rotation 0; settings put system user_rotation 1"
                .to_owned(),
        ),
        (
            "rotate",
            json!({ "orientation": "portrait" }),
            "settings put system accelerometer_rotation 0; settings put system user_rotation 0"
                .to_owned(),
        ),
        (
            "terminateApp",
            json!({ "appId": "com.example.notes" }),
            "am force-stop com.example.notes".to_owned(),
        ),
    ];
    for (tool, arguments, expected) in cases {
        let before = phone.commands().len();
        let result = session.call(tool, arguments.clone()).unwrap();
        assert_eq!(result["isError"], false, "{tool} {arguments}: {result}");
        let sent: Vec<String> = commands_since(&phone, before)
            .into_iter()
            .filter(|command| !observing(command))
            .collect();
        assert_eq!(
            sent.first(),
            Some(&expected),
            "{tool} {arguments}: {sent:?}"
        );
    }
    assert!(
        phone
            .opened_urls()
            .iter()
            .any(|url| url == "https://example.com/a b?q='x'"),
        "{:?}",
        phone.opened_urls()
    );
    // Names that are not packages never reach the shell.
    let refused = error_text(
        &session
            .call("launchApp", json!({ "appId": "com.example; reboot" }))
            .unwrap(),
    );
    assert!(
        refused.contains("is not an Android package name"),
        "{refused}"
    );
}

#[test]
fn a_repeated_observe_of_an_unchanged_screen_reuses_the_dump() {
    let World {
        http,
        harness: _harness,
        phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let session = acquire(&http, "cache");
    let first = ok_text(
        &session
            .call("launchApp", json!({ "appId": "com.example.notes" }))
            .unwrap(),
    );
    assert!(
        first.contains("app=com.example.notes com.example.notes/.LoginActivity"),
        "the header names the activity: {first}"
    );
    let dumps = |commands: &[String]| {
        commands
            .iter()
            .filter(|command| command.starts_with("uiautomator dump"))
            .count()
    };
    let before = phone.commands().len();
    let again = ok_text(&session.call("observe", json!({})).unwrap());
    let sent = commands_since(&phone, before);
    assert_eq!(dumps(&sent), 0, "nothing was redrawn, so no dump: {sent:?}");
    assert!(
        sent.contains(&"service call SurfaceFlinger 1013".to_owned()),
        "{sent:?}"
    );
    assert!(again.contains("button \"Sign in\""), "{again}");
    // A change on screen is seen at once.
    ok_text(
        &session
            .call("tapOn", json!({ "text": "Remember me" }))
            .unwrap(),
    );
    let before = phone.commands().len();
    let after = ok_text(&session.call("observe", json!({})).unwrap());
    assert_eq!(dumps(&commands_since(&phone, before)), 0);
    assert!(
        after.contains("checkbox \"Remember me\" [checked"),
        "{after}"
    );
}

#[test]
fn the_clipboard_copies_and_pastes_on_android_and_says_why_it_cannot_read() {
    let World {
        http,
        harness: _harness,
        phone,
        adb: _adb,
    } = world(FakeAndroidConfig::default());
    let answer = http
        .with_session("clip")
        .call("getAndroid", json!({ "enableTools": ["clipboard"] }))
        .unwrap();
    assert_eq!(answer["isError"], false, "{answer}");
    let session = http.with_session("clip");
    let before = phone.commands().len();
    let copied = session
        .call("clipboard", json!({ "operation": "copy" }))
        .unwrap();
    assert_eq!(copied["isError"], false, "{copied}");
    assert!(commands_since(&phone, before).contains(&"input keyevent 278".to_owned()));
    let before = phone.commands().len();
    ok_text(
        &session
            .call("clipboard", json!({ "operation": "paste" }))
            .unwrap(),
    );
    assert!(commands_since(&phone, before).contains(&"input keyevent 279".to_owned()));
    let refused = error_text(
        &session
            .call("clipboard", json!({ "operation": "read" }))
            .unwrap(),
    );
    assert!(refused.contains("[unsupported_platform]"), "{refused}");
    assert!(
        refused.contains("no shell command to read or set the clipboard"),
        "{refused}"
    );
}
