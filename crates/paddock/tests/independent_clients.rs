//! Independent MCP clients against the real daemon: the official Python SDK (`mcp` from PyPI)
//! and the official TypeScript SDK (`@modelcontextprotocol/sdk` from npm), each over HTTP with
//! the bearer token and over `paddock mcp`. `scripts/setup --dev` installs both.
#![cfg(test)]

use std::path::PathBuf;
use std::process::Command;

use paddock_testkit::DaemonHarness;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let path = std::env::var_os("PADDOCK_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/test-clients/venv/bin/python"));
    assert!(
        path.exists(),
        "{} is missing\nhint: run `scripts/setup --dev`",
        path.display()
    );
    path
}

fn node_client() -> PathBuf {
    let dir = repo().join("tests/clients/node");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk").exists(),
        "the TypeScript SDK is not installed in {}\nhint: run `scripts/setup --dev`",
        dir.display()
    );
    dir.join("paddock_check.mjs")
}

fn run_client(harness: &DaemonHarness, mut command: Command) -> Value {
    command
        .env_clear()
        .envs(harness.client_env_vars())
        .env("PADDOCK_TOKEN_FILE", harness.paths().token_file)
        .current_dir(harness.launch_dir());
    let output = command.output().expect("run client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{command:?}\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("client output is not JSON ({error}): {stdout}"))
}

fn assert_report(report: &Value) {
    assert_eq!(report["server"], "paddock", "{report}");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in [
        "setToolEnabled",
        "listDevices",
        "discovery",
        "getWeb",
        "observe",
        "tapOn",
    ] {
        assert!(tools.contains(&name), "{name} missing: {report}");
    }
    assert_eq!(report["isError"], false, "{report}");
    assert_eq!(report["structured"], json!({ "devices": [] }), "{report}");
    let unknown = report["unknownTool"]["error"].as_str().unwrap_or_default();
    assert!(unknown.contains("Unknown tool: `noSuchTool`"), "{report}");
}

fn endpoint(harness: &DaemonHarness) -> String {
    harness.start_detached(&[]).unwrap().http_endpoint.unwrap()
}

#[test]
fn python_sdk_over_http() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let url = endpoint(&harness);
    let mut command = Command::new(python());
    command
        .arg(repo().join("tests/clients/python/paddock_check.py"))
        .args(["http", &url]);
    assert_report(&run_client(&harness, command));
}

#[test]
fn python_sdk_over_paddock_mcp() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let mut command = Command::new(python());
    command
        .arg(repo().join("tests/clients/python/paddock_check.py"))
        .args(["stdio", BIN]);
    assert_report(&run_client(&harness, command));
}

#[test]
fn typescript_sdk_over_http() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let url = endpoint(&harness);
    let mut command = Command::new("node");
    command.arg(node_client()).args(["http", &url]);
    assert_report(&run_client(&harness, command));
}

#[test]
fn typescript_sdk_over_paddock_mcp() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let mut command = Command::new("node");
    command.arg(node_client()).args(["stdio", BIN]);
    assert_report(&run_client(&harness, command));
}

/// Every tool that declares an `outputSchema` answers with `structuredContent` that a JSON
/// Schema 2020-12 validator (Python's `jsonschema`, beside the official SDK) accepts, and every
/// schema is itself valid 2020-12.
#[test]
fn structured_results_match_their_declared_output_schemas() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let url = harness
        .start_detached(&["--web-warm", "1"])
        .unwrap()
        .http_endpoint
        .unwrap();
    let mut command = Command::new(python());
    command
        .arg(repo().join("tests/clients/python/validate_outputs.py"))
        .arg(&url);
    let report = run_client(&harness, command);
    let declared: Vec<&str> = report["declared"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in [
        "getWeb",
        "getAndroid",
        "getApple",
        "provisionDevice",
        "releaseDevice",
        "listDevices",
        "setToolEnabled",
        "discovery",
        "listApps",
        "runTask",
        "getTask",
        "listTasks",
        "stopTask",
        "sendTaskMessage",
        "exportPlan",
    ] {
        assert!(
            declared.contains(&tool),
            "{tool} declares no outputSchema: {report}"
        );
    }
    assert_eq!(report["schemaErrors"], json!({}), "{report}");
    let results = report["results"].as_object().unwrap();
    for (call, outcome) in results {
        let outcome = outcome.as_str().unwrap_or_default();
        if call.starts_with("getAndroid") {
            // The harness runs the daemon without an adb server.
            assert!(outcome.contains("[unavailable]"), "{call}: {outcome}");
        } else if call.starts_with("getApple") {
            assert!(outcome.contains("[not_found]"), "{call}: {outcome}");
        } else if call.starts_with("sendTaskMessage") {
            // The task has ended.
            assert!(outcome.contains("[invalid_input]"), "{call}: {outcome}");
        } else {
            assert_eq!(outcome, "valid", "{call}: {report}");
        }
    }
    // Every declared schema was exercised by a successful call (or a typed error).
    for tool in &declared {
        assert!(
            results
                .keys()
                .any(|call| call.split('#').next() == Some(tool)),
            "{tool} was not called: {report}"
        );
    }
}

// --- The daemon's features through the SDKs: progress, cancellation, resources, list changes
// and instructions, as `tests/clients/python/features_check.py` and
// `tests/clients/node/features_check.mjs` meet them.

/// How long one features client may run before the test calls it hung (each of its steps has
/// its own, shorter deadline inside the client).
const FEATURES_DEADLINE: std::time::Duration = std::time::Duration::from_secs(900);

/// A daemon that boots its web devices slowly, none warm, so that every `getWeb` reports its
/// boot stages; its HTTP endpoint; and the fixture app whose `/list` page a long swipe scrolls.
struct FeaturesWorld {
    harness: DaemonHarness,
    url: String,
    app: paddock_testkit::fixture::FixtureApp,
}

fn features_world() -> FeaturesWorld {
    let app = paddock_testkit::fixture::FixtureApp::start().unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.set_env("PADDOCK_DEBUG_DEVICE_BOOT_DELAY_MS", "1500");
    let url = harness
        .start_detached(&["--web-warm", "0"])
        .unwrap()
        .http_endpoint
        .unwrap();
    FeaturesWorld { harness, url, app }
}

/// A client in its own process group, killed with its group (the `paddock mcp` it launched
/// included) unless it has exited.
struct ClientProcess(std::process::Child);

impl Drop for ClientProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let pid = rustix::process::Pid::from_child(&self.0);
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            let _ = self.0.wait();
        }
    }
}

/// Runs a features client beside the harness's daemon, its output in files, within
/// [`FEATURES_DEADLINE`]; returns the JSON report on its last line of output.
fn run_features_client(harness: &DaemonHarness, mut command: Command, name: &str) -> Value {
    use std::os::unix::process::CommandExt as _;
    let stdout_path = harness.root().join(format!("{name}.stdout"));
    let stderr_path = harness.root().join(format!("{name}.stderr"));
    command
        .env_clear()
        .envs(harness.client_env_vars())
        .env("PADDOCK_TOKEN_FILE", harness.paths().token_file)
        .current_dir(harness.launch_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .process_group(0);
    let description = format!("{command:?}");
    let mut child = ClientProcess(
        command
            .spawn()
            .unwrap_or_else(|error| panic!("{description}: {error}")),
    );
    let outputs = || {
        format!(
            "--- stdout\n{}\n--- stderr\n{}",
            std::fs::read_to_string(&stdout_path).unwrap_or_default(),
            std::fs::read_to_string(&stderr_path).unwrap_or_default()
        )
    };
    let deadline = std::time::Instant::now() + FEATURES_DEADLINE;
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            drop(child);
            panic!(
                "{description} was still running after {FEATURES_DEADLINE:?} (hang guard)\n{}",
                outputs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(status.success(), "{description}: {status}\n{}", outputs());
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("client output is not JSON ({error}):\n{}", outputs()))
}

/// How a run's tool-list changes reach the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListChanges {
    /// A connection (stdio): `tools.listChanged` promised, and a notification after a change.
    Notified,
    /// Stateless HTTP before 2026-07-28: nothing promised, nothing received.
    None,
    /// HTTP at 2026-07-28: promised, and heard on a `subscriptions/listen` stream.
    Listened,
}

/// Asserts every item of one run of a features report (`version`, as negotiated).
fn assert_features_run(report: &Value, version: &str, changes: ListChanges) {
    let run = &report["runs"][version];
    assert!(run.is_object(), "no {version} run: {report}");
    let context = format!("{version} run: {run}");
    assert_eq!(run["protocolVersion"], version, "{context}");

    // Instructions, and what `tools.listChanged` promises.
    let instructions = run["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.contains("getWeb") && instructions.contains("observe"),
        "{context}"
    );
    let promised = match changes {
        ListChanges::None => Value::Null,
        ListChanges::Notified | ListChanges::Listened => Value::Bool(true),
    };
    assert_eq!(run["listChangedCapability"], promised, "{context}");

    // Progress during a slow boot, through the SDK's progress callback.
    let acquired = &run["getWebProgress"];
    assert_eq!(acquired["isError"], false, "{context}");
    let session = acquired["sessionUuid"].as_str().unwrap_or_default();
    assert!(!session.is_empty(), "{context}");
    if let Some(pinned) = run["sessionId"].as_str() {
        assert_eq!(session, pinned, "the header named the session: {context}");
    }
    // At least one boot stage, in increasing order. (Not all three: the TypeScript SDK over
    // stdio drops the last one, which arrives in the same read as the answer — it handles
    // notifications a microtask after responses, and the answer removes the progress handler.)
    let progress = acquired["progress"].as_array().unwrap();
    assert!(!progress.is_empty(), "boot stages reported: {context}");
    assert_eq!(acquired["increasing"], true, "{context}");
    assert!(
        progress
            .iter()
            .all(|item| item["total"].is_number() && item["progress"].is_number()),
        "{context}"
    );

    // A long swipe, cancelled through the SDK once it reported progress; the session goes on.
    let cancel = &run["cancelSwipe"];
    assert_eq!(cancel["progressBeforeCancel"], true, "{context}");
    assert_eq!(cancel["cancelled"], true, "{context}");
    assert!(cancel["answeredAnyway"].is_null(), "{context}");
    assert_eq!(cancel["observeAfter"]["isError"], false, "{context}");
    assert!(
        cancel["observeAfter"]["elements"]
            .as_u64()
            .is_some_and(|count| count > 0),
        "{context}"
    );

    // A linked screenshot is the session's resource: listed, and read back as a JPEG.
    let resources = &run["resources"];
    assert_eq!(resources["resourceLink"], true, "{context}");
    let uri = resources["uri"].as_str().unwrap_or_default();
    assert!(
        uri.starts_with(&format!("paddock://session/{session}/screenshot/"))
            && uri.ends_with(".jpg"),
        "{context}"
    );
    assert_eq!(resources["linkMimeType"], "image/jpeg", "{context}");
    assert_eq!(resources["listed"], true, "{context}");
    assert_eq!(resources["readMimeType"], "image/jpeg", "{context}");
    assert_eq!(resources["jpegMagic"], "ffd8", "{context}");
    assert_eq!(resources["sizeMatches"], true, "{context}");

    // Tool list changes, as the transport and version carry them.
    match changes {
        ListChanges::Notified | ListChanges::None => {
            let changed = &run["toolsListChanged"];
            assert_eq!(changed["isError"], false, "{context}");
            assert_eq!(changed["clipboardListed"], true, "{context}");
            let notifications = changed["notifications"].as_u64().unwrap();
            if changes == ListChanges::Notified {
                assert!(notifications >= 1, "{context}");
                if let Some(refreshed) = changed.get("refreshedToolsHaveClipboard") {
                    assert_eq!(refreshed, true, "the SDK refreshed its tools: {context}");
                }
            } else {
                assert_eq!(notifications, 0, "{context}");
                assert_eq!(run["toolsListChangedTotal"], 0, "{context}");
            }
        }
        ListChanges::Listened => {
            let listen = &run["listen"];
            assert_eq!(listen["acknowledged"], true, "{context}");
            assert_eq!(listen["setToolEnabledIsError"], false, "{context}");
            assert_eq!(listen["toolsListChanged"], true, "{context}");
            assert_eq!(listen["clipboardListed"], true, "{context}");
            // At 2026-07-28 a list change is delivered only on a listen stream the client
            // opened, over HTTP and over stdio alike.
            assert_eq!(run["toolsListChangedOutsideListen"], 0, "{context}");
        }
    }
}

/// The Python SDK over HTTP, at 2025-11-25 (`initialize`) and at 2026-07-28
/// (`server/discover`, and `subscriptions/listen` for tool list changes).
#[test]
fn python_sdk_meets_every_feature_over_http() {
    let FeaturesWorld { harness, url, app } = features_world();
    let mut command = Command::new(python());
    command
        .arg(repo().join("tests/clients/python/features_check.py"))
        .args(["http", &url, &app.url("/list")]);
    let report = run_features_client(&harness, command, "python-http");
    assert_features_run(&report, "2025-11-25", ListChanges::None);
    assert_features_run(&report, "2026-07-28", ListChanges::Listened);
}

/// The Python SDK over `paddock mcp`, where the connection is the session: at 2025-11-25 it
/// carries `notifications/tools/list_changed`; at 2026-07-28 a `subscriptions/listen` on it does.
#[test]
fn python_sdk_meets_every_feature_over_paddock_mcp() {
    let FeaturesWorld { harness, app, .. } = features_world();
    let mut command = Command::new(python());
    command
        .arg(repo().join("tests/clients/python/features_check.py"))
        .args(["stdio", BIN, &app.url("/list")]);
    let report = run_features_client(&harness, command, "python-stdio");
    assert_features_run(&report, "2025-11-25", ListChanges::Notified);
    assert_features_run(&report, "2026-07-28", ListChanges::Listened);
}

/// The TypeScript SDK over HTTP; it speaks no version past 2025-11-25, so it has no
/// `subscriptions/listen` and is promised no tool list changes.
#[test]
fn typescript_sdk_meets_every_feature_over_http() {
    let FeaturesWorld { harness, url, app } = features_world();
    let mut command = Command::new("node");
    command
        .arg(node_features_client())
        .args(["http", &url, &app.url("/list")]);
    let report = run_features_client(&harness, command, "typescript-http");
    assert_eq!(
        report["runs"].as_object().map(|runs| runs.len()),
        Some(1),
        "{report}"
    );
    assert_features_run(&report, "2025-11-25", ListChanges::None);
}

/// The TypeScript SDK over `paddock mcp`: its `listChanged` option refreshes the tools when
/// the list changes.
#[test]
fn typescript_sdk_meets_every_feature_over_paddock_mcp() {
    let FeaturesWorld { harness, app, .. } = features_world();
    let mut command = Command::new("node");
    command
        .arg(node_features_client())
        .args(["stdio", BIN, &app.url("/list")]);
    let report = run_features_client(&harness, command, "typescript-stdio");
    assert_features_run(&report, "2025-11-25", ListChanges::Notified);
}

/// `tests/clients/node/features_check.mjs`, failing (never skipping) when the SDK is missing.
fn node_features_client() -> PathBuf {
    node_client().with_file_name("features_check.mjs")
}

/// A one-shot stdio client through the Python SDK — a new `paddock mcp --session-id` process
/// per call — keeps its device from one process to the next within the grace period.
#[test]
fn python_sdk_one_shot_stdio_calls_keep_their_device() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&["--web-warm", "1"]).unwrap();
    let mut command = Command::new(python());
    command
        .arg(repo().join("tests/clients/python/reconnect_check.py"))
        .args([BIN, "one-shot-python"]);
    let report = run_client(&harness, command);
    assert_eq!(report["acquireError"], false, "{report}");
    assert_eq!(report["observeError"], false, "{report}");
    assert!(
        report["observeText"]
            .as_str()
            .is_some_and(|text| text.contains("about:blank")),
        "{report}"
    );
    let device = report["acquiredDevice"].as_str().unwrap();
    assert_eq!(report["boundDevices"], json!([device]), "{report}");
}
