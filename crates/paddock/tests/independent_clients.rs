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
        if call.starts_with("getAndroid") || call.starts_with("getApple") {
            assert!(outcome.contains("[not_found]"), "{call}: {outcome}");
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
