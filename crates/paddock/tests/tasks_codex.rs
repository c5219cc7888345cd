//! Tasks end to end with Codex: `runTask {"backend": "codex"}` puts the real `codex` CLI
//! (`codex app-server`, against the scripted Responses API server) on a real Chromium device
//! through `paddock mcp` with the launch's voucher, the upstream resolved from the daemon's own
//! `OPENAI_BASE_URL` and `OPENAI_API_KEY`. The agent signs in to the fixture app with the same
//! script Claude Code runs in `tasks.rs`; its MCP calls run unattended — none waits for an
//! approval — and the trajectory records them with the password masked.
//!
//! Codex 0.171.0 offers the `paddock` server's tools as one Responses API `namespace` tool,
//! `mcp__paddock`, of plain `observe`, `tapOn`, … functions, and a call names both
//! (`"namespace": "mcp__paddock", "name": "observe"`); the scripted server sends the script's
//! `mcp__paddock__observe` in that shape.
#![cfg(test)]

use std::time::Duration;

use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::model::ScriptedModel;
use paddock_testkit::tasks::{
    SIGN_IN_TOOLS, SIGNED_IN, check_sign_in_trajectory, sign_in_turns, task_device, trajectory,
    wait_ended,
};
use paddock_testkit::{DaemonHarness, McpHttp};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const KEY: &str = "sk-openai-task-test-key";
const PASSWORD: &str = "hunter2-codex-secret";
/// A hang deadline, not a speed expectation.
const DEADLINE: Duration = Duration::from_secs(120);
/// The namespace Codex puts the `paddock` MCP server's tools in.
const NAMESPACE: &str = "mcp__paddock";

/// The function names a Responses API request offers the model, a namespaced one as
/// `<namespace>__<name>`.
fn offered_functions(body: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        let Some(name) = tool["name"].as_str() else {
            continue;
        };
        match tool["tools"].as_array() {
            Some(inner) => names.extend(
                inner
                    .iter()
                    .filter_map(|tool| tool["name"].as_str())
                    .map(|short| format!("{name}__{short}")),
            ),
            None => names.push(name.to_owned()),
        }
    }
    names
}

#[test]
fn codex_signs_in_on_its_own_device_with_unattended_mcp_calls() {
    let app = FixtureApp::start().unwrap();
    let model = ScriptedModel::start(sign_in_turns(PASSWORD)).unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    // The daemon resolves the task's upstream from its own environment, set as a user's shell
    // sets it for Codex.
    harness
        .with_agent_clis()
        .unwrap()
        .set_env("OPENAI_BASE_URL", format!("{}/v1", model.base_url()))
        .set_env("OPENAI_API_KEY", KEY);
    let app_arg = format!("fixture={}", app.url("/"));
    harness
        .start_detached(&["--web-app", app_arg.as_str(), "--web-warm", "1"])
        .unwrap();
    let http = McpHttp::for_harness(&harness).unwrap();

    let started = http
        .call(
            "runTask",
            json!({
                "goal": "Sign in to the fixture app as ada@example.com",
                "app": "fixture",
                "backend": "codex",
                // Codex's own default model is one the scripted server does not know.
                "model": "scripted-model",
            }),
        )
        .unwrap();
    assert_eq!(started["isError"], false, "{started}");
    let task = started["structuredContent"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();

    let summary = wait_ended(&http, &task, DEADLINE).unwrap();
    let requests = model.requests();
    let first = requests
        .iter()
        .find(|request| request.turn == Some(0))
        .unwrap_or_else(|| panic!("the model was never asked: {summary}"));
    let offered = offered_functions(&first.body);
    assert_eq!(summary["state"], "completed", "{summary}\n{offered:?}");
    assert_eq!(summary["result"], SIGNED_IN, "{summary}");
    assert_eq!(summary["steps"], 6, "six tool calls: {summary}");

    // Codex offers the server's tools in the `mcp__paddock` namespace, and no shell, patch or
    // image-reading tools beside them.
    assert!(
        first.body["tools"].as_array().is_some_and(|tools| tools
            .iter()
            .any(|tool| tool["type"] == "namespace" && tool["name"] == NAMESPACE)),
        "{offered:?}"
    );
    for name in SIGN_IN_TOOLS {
        assert!(
            offered.contains(&format!("{NAMESPACE}__{name}")),
            "{offered:?}"
        );
    }
    for hidden in ["exec_command", "shell", "apply_patch", "view_image"] {
        assert!(!offered.iter().any(|name| name == hidden), "{offered:?}");
    }

    let steps = trajectory(&http, &task).unwrap();
    assert!(
        !steps.iter().any(|step| step["kind"] == "denied"),
        "no MCP call waited for an approval that was refused: {steps:#?}"
    );
    check_sign_in_trajectory(&steps, PASSWORD).unwrap();

    // The calls are in Codex's history namespaced, and each answer went back to the model:
    // the refused one as an error, the others with the page they left behind.
    let history: Vec<Value> = requests
        .last()
        .and_then(|request| request.body["input"].as_array().cloned())
        .unwrap_or_default();
    let called: Vec<(&str, &str)> = history
        .iter()
        .filter(|item| item["type"] == "function_call")
        .map(|item| {
            (
                item["namespace"].as_str().unwrap_or_default(),
                item["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let expected: Vec<(&str, &str)> = SIGN_IN_TOOLS.map(|name| (NAMESPACE, name)).to_vec();
    assert_eq!(called, expected, "{history:#?}");
    let outputs: Vec<String> = history
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].to_string())
        .collect();
    assert_eq!(outputs.len(), 6, "{outputs:#?}");
    assert!(outputs[1].contains("forbidden"), "{}", outputs[1]);
    assert!(outputs[5].contains("Welcome"), "{}", outputs[5]);

    // The agent's connection was the task's own: the model never saw the owner's token or the
    // key (the upstream did), and the device went back to the pool when the task ended.
    let token = harness.token().unwrap();
    for request in &requests {
        let body = request.body.to_string();
        assert!(!body.contains(&token), "the daemon token reached the model");
        assert!(!body.contains(KEY), "the key is in a request body");
        let key = request
            .header("authorization")
            .unwrap_or_default()
            .trim_start_matches("Bearer ");
        assert_eq!(key, KEY, "the upstream sees the real key");
    }
    assert!(
        task_device(&harness, &task).unwrap().is_none(),
        "the task's device is released"
    );
}
