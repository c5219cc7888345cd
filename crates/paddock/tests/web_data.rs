//! Web session data through the official Python SDK against the real daemon and Chromium:
//! console and network logs, device settings, page script (`evaluate`, `networkBody`) and saved
//! storage that survives a release and a daemon restart, stored 0600 where another user cannot
//! read it. `tests/clients/python/web_data_check.py` drives the tools and reports; this file
//! asserts on the report.
#![cfg(test)]

use std::path::{Path, PathBuf};
use std::process::Command;

use paddock_testkit::DaemonHarness;
use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::fixture::web_data::{SESSION_COOKIE_VALUE, SESSION_STORAGE_VALUE};
use paddock_testkit::other_user::OtherUser;
use serde_json::Value;

use paddock_testkit::clients::{python, repo_root as repo};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn run_check(harness: &DaemonHarness, phase: &str, url: &str, app: &FixtureApp) -> Value {
    let mut command = Command::new(python());
    command
        .arg(repo().join("tests/clients/python/web_data_check.py"))
        .args([phase, url, &app.url("")])
        .env_clear()
        .envs(harness.client_env_vars())
        .env("PADDOCK_TOKEN_FILE", harness.paths().token_file)
        .current_dir(harness.launch_dir());
    let output = command.output().expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{command:?}\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("client output is not JSON ({error}): {stdout}"))
}

fn names(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn entries(page: &Value) -> &Vec<Value> {
    page["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {page}"))
}

fn error_text(answer: &Value) -> &str {
    assert_eq!(answer["isError"], true, "expected an error: {answer}");
    answer["text"].as_str().unwrap_or_default()
}

fn assert_logs(logs: &Value) {
    let console = entries(&logs["console"]);
    let texts: Vec<(&str, &str)> = console
        .iter()
        .map(|entry| {
            (
                entry["level"].as_str().unwrap_or_default(),
                entry["text"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    for (level, text) in [
        ("debug", "debug message"),
        ("info", "log message 42"),
        ("info", "info message"),
        ("warn", "warn message"),
        ("error", "error message"),
    ] {
        assert!(
            texts.contains(&(level, text)),
            "{level} `{text}` missing: {texts:?}"
        );
    }
    let exception = console
        .iter()
        .find(|entry| entry["source"] == "exception")
        .unwrap_or_else(|| panic!("no uncaught exception: {texts:?}"));
    assert!(
        exception["text"]
            .as_str()
            .unwrap_or_default()
            .contains("uncaught boom"),
        "{exception}"
    );
    assert!(
        exception["location"]
            .as_str()
            .unwrap_or_default()
            .contains("/logs:"),
        "{exception}"
    );
    // `level: error` keeps errors and the exception only.
    let errors = entries(&logs["errors"]);
    assert!(!errors.is_empty());
    assert!(
        errors.iter().all(|entry| entry["level"] == "error"),
        "{errors:?}"
    );
    assert!(errors.iter().any(|entry| entry["text"] == "error message"));
    assert!(
        !errors.iter().any(|entry| entry["text"] == "warn message"),
        "{errors:?}"
    );
    // `since` the mark: nothing, then only what came after.
    assert!(
        entries(&logs["emptySinceMark"]).is_empty(),
        "{}",
        logs["emptySinceMark"]
    );
    let after = entries(&logs["afterMark"]);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0]["text"], "after the mark");
    assert_eq!(logs["afterMark"]["dropped"], 0);

    let network = entries(&logs["network"]);
    let missing = network
        .iter()
        .find(|entry| {
            entry["url"]
                .as_str()
                .unwrap_or_default()
                .ends_with("/missing-resource")
        })
        .unwrap_or_else(|| panic!("no request for the missing resource: {network:?}"));
    assert_eq!(missing["status"], 404, "{missing}");
    assert_eq!(missing["method"], "GET");
    assert_eq!(missing["type"], "Fetch", "{missing}");
    assert!(missing["durationMs"].is_number(), "{missing}");
    let page = network
        .iter()
        .find(|entry| entry["type"] == "Document")
        .unwrap_or_else(|| panic!("no document request: {network:?}"));
    assert_eq!(page["status"], 200, "{page}");

    let failed = entries(&logs["failed"]);
    assert!(
        failed.iter().any(|entry| entry["status"] == 404),
        "{failed:?}"
    );
    let refused = failed
        .iter()
        .find(|entry| {
            entry["url"]
                .as_str()
                .unwrap_or_default()
                .contains("127.0.0.1:2/")
        })
        .unwrap_or_else(|| panic!("the refused request is not among the failures: {failed:?}"));
    assert_eq!(
        refused["failed"], "net::ERR_CONNECTION_REFUSED",
        "{refused}"
    );
    assert!(refused["status"].is_null(), "{refused}");
    // The browser's own log reports both failed loads.
    let browser: Vec<&str> = console
        .iter()
        .filter(|entry| entry["source"] == "network")
        .filter_map(|entry| entry["text"].as_str())
        .collect();
    assert!(
        browser.iter().any(|text| text.contains("404")),
        "{browser:?}"
    );
    assert!(
        browser
            .iter()
            .any(|text| text.contains("ERR_CONNECTION_REFUSED")),
        "{browser:?}"
    );
    assert!(
        failed.iter().all(|entry| entry["type"] != "Document"),
        "{failed:?}"
    );

    let with_bodies = entries(&logs["withBodies"]);
    assert_eq!(with_bodies.len(), 1, "{with_bodies:?}");
    assert!(
        with_bodies[0]["body"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Not found"),
        "{}",
        with_bodies[0]
    );
    let body = &logs["body"];
    assert_eq!(body["isError"], false, "{body}");
    assert!(
        body["json"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Not found"),
        "{body}"
    );
    assert_eq!(body["json"]["truncated"], false, "{body}");
    assert!(
        error_text(&logs["unknownBody"]).starts_with("[not_found]"),
        "{}",
        logs["unknownBody"]
    );
}

fn assert_settings(settings: &Value) {
    assert_eq!(settings["set"]["isError"], false, "{}", settings["set"]);
    let shown = settings["shown"].as_str().unwrap_or_default();
    for line in [
        "Language: de-DE",
        "Timezone: Asia/Tokyo",
        "Dark scheme: yes",
        "Reduced motion: yes",
        "Online: yes",
        "Position: 48.137, 11.575",
    ] {
        assert!(shown.contains(line), "`{line}` missing:\n{shown}");
    }
    assert_eq!(
        settings["offlineOnLine"]["json"]["value"], false,
        "{}",
        settings["offlineOnLine"]
    );
    assert_eq!(
        settings["rotatedLanguage"]["json"]["value"], "de-DE",
        "the locale stays after a rotation: {}",
        settings["rotatedLanguage"]
    );
    let got = &settings["get"]["json"];
    assert_eq!(got["defaults"], false, "{got}");
    assert_eq!(got["settings"]["locale"], "de-DE");
    assert_eq!(got["settings"]["timezone"], "Asia/Tokyo");
    assert_eq!(got["settings"]["colorScheme"], "dark");
    assert_eq!(got["settings"]["offline"], true);
    assert_eq!(got["settings"]["geolocation"]["latitude"], 48.137);
    for key in ["badTimezone", "badLatitude", "badLocale"] {
        assert!(
            error_text(&settings[key]).starts_with("[invalid_input]"),
            "{key}: {}",
            settings[key]
        );
    }
    assert!(error_text(&settings["badTimezone"]).contains("Mars/Olympus"));
    assert_eq!(settings["released"]["isError"], false);
    let after = &settings["getAfterRelease"]["json"];
    assert_eq!(after["defaults"], true, "{after}");
    assert_eq!(after["settings"], serde_json::json!({}), "{after}");
    let shown = settings["shownAfterRelease"].as_str().unwrap_or_default();
    for line in [
        "Dark scheme: no",
        "Reduced motion: no",
        "Online: yes",
        "Position: denied",
    ] {
        assert!(shown.contains(line), "`{line}` missing:\n{shown}");
    }
    assert!(!shown.contains("de-DE"), "{shown}");
    assert!(!shown.contains("Asia/Tokyo"), "{shown}");
}

fn assert_script(script: &Value) {
    let value = &script["value"]["json"]["value"];
    assert_eq!(value["title"], "Session - Fixture", "{script}");
    assert_eq!(value["sum"], 3);
    assert_eq!(script["promise"]["json"]["value"], "later", "{script}");
    let thrown = error_text(&script["thrown"]);
    assert!(thrown.starts_with("[upstream_error]"), "{thrown}");
    assert!(thrown.contains("nope"), "{thrown}");
    let large = &script["large"]["json"];
    assert_eq!(large["truncated"], true, "{}", script["large"]);
    assert!(large["bytes"].as_u64().unwrap_or(0) > 200_000);
    assert!(large["preview"].as_str().unwrap_or_default().len() <= 64 * 1024);
}

fn assert_restored(text: &str) {
    assert!(
        text.contains(&format!("Cookie: {SESSION_COOKIE_VALUE}")),
        "the cookie was not restored:\n{text}"
    );
    assert!(
        text.contains(&format!("Stored: {SESSION_STORAGE_VALUE}")),
        "localStorage was not restored:\n{text}"
    );
}

fn assert_storage(storage: &Value) {
    assert_restored(storage["signedIn"].as_str().unwrap_or_default());
    assert!(
        storage["saved"]["json"].get("notSaved").is_none(),
        "{}",
        storage["saved"]
    );
    let saved = &storage["saved"]["json"]["saved"];
    assert_eq!(saved["name"], "site-login", "{}", storage["saved"]);
    assert_eq!(saved["cookies"], 1, "{saved}");
    assert_eq!(
        saved["origins"].as_array().map(Vec::len),
        Some(1),
        "{saved}"
    );
    let listed = storage["listed"]["json"]["storage"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["name"], "site-login");
    for key in ["badName", "badSlash"] {
        assert!(
            error_text(&storage[key]).starts_with("[invalid_input]"),
            "{key}: {}",
            storage[key]
        );
    }
    for key in ["unknownDelete", "unknownGet"] {
        assert!(
            error_text(&storage[key]).starts_with("[not_found]"),
            "{key}: {}",
            storage[key]
        );
    }
    let plain = storage["plain"].as_str().unwrap_or_default();
    assert!(plain.contains("Cookie: none"), "{plain}");
    assert!(plain.contains("Stored: none"), "{plain}");
    assert_restored(storage["restored"].as_str().unwrap_or_default());
    assert_eq!(storage["deleted"]["json"]["deleted"], "throwaway");
    let after_delete = storage["listedAfterDelete"]["json"]["storage"]
        .as_array()
        .unwrap();
    assert_eq!(after_delete.len(), 1, "{after_delete:?}");
}

/// The one storage file, and that another local user can read neither it nor its directory.
fn assert_private_storage(state_dir: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let root = state_dir.join("web-storage");
    let profiles: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(profiles.len(), 1, "{profiles:?}");
    let file = profiles[0].join("site-login.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    let dir_mode = std::fs::metadata(&profiles[0])
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    let attacker = OtherUser::get().unwrap();
    let read = attacker.command("cat").arg(&file).output().unwrap();
    assert!(!read.status.success(), "another user read the storage file");
    assert!(
        !String::from_utf8_lossy(&read.stdout).contains(SESSION_COOKIE_VALUE),
        "another user saw the cookie"
    );
}

fn assert_log_clean(state_dir: &Path) {
    let logs = state_dir.join("logs");
    assert!(logs.is_dir(), "no log directory at {}", logs.display());
    let log = std::fs::read_to_string(logs.join("daemon.log")).unwrap_or_default();
    assert!(!log.is_empty(), "the daemon log is empty");
    for secret in [SESSION_COOKIE_VALUE, SESSION_STORAGE_VALUE] {
        assert!(!log.contains(secret), "the daemon log holds a stored value");
    }
    paddock_testkit::no_file_contains(&logs, &[SESSION_COOKIE_VALUE, SESSION_STORAGE_VALUE])
        .unwrap();
}

#[test]
fn logs_settings_script_and_storage_that_survives_a_restart() {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    let url = harness
        .start_detached(&["--web-warm", "1"])
        .unwrap()
        .http_endpoint
        .unwrap();
    let report = run_check(&harness, "before-restart", &url, &app);

    let default_tools = names(&report["defaultTools"]);
    for tool in [
        "consoleLog",
        "networkLog",
        "configureDevice",
        "saveStorage",
        "listStorage",
        "deleteStorage",
    ] {
        assert!(default_tools.contains(&tool), "{tool} not listed: {report}");
    }
    for tool in ["evaluate", "networkBody"] {
        assert!(!default_tools.contains(&tool), "{tool} listed by default");
        assert!(
            names(&report["enabledTools"]).contains(&tool),
            "{tool} not listed once enabled: {}",
            report["enabled"]
        );
    }
    assert_logs(&report["logs"]);
    assert_settings(&report["settings"]);
    assert_script(&report["script"]);
    assert_storage(&report["storage"]);

    let state_dir = harness.paths().state_dir;
    assert_private_storage(&state_dir);

    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    let url = harness
        .start_detached(&["--web-warm", "1"])
        .unwrap()
        .http_endpoint
        .unwrap();
    let after = run_check(&harness, "after-restart", &url, &app);
    let listed = after["listed"]["json"]["storage"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{after}");
    assert_eq!(after["getWeb"]["isError"], false, "{after}");
    assert_restored(after["restored"].as_str().unwrap_or_default());

    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    assert_log_clean(&state_dir);
}
