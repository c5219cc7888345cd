//! A task seen from outside, for the task tests: its ending and trajectory through the task
//! tools over MCP, and the device bound to its session through `paddock devices --json`. And
//! the scenario they share: a scripted agent signing in to the fixture app, which drives
//! Claude Code and Codex alike.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use crate::model::Turn;
use crate::{DaemonHarness, McpHttp};

/// A call of the task's `paddock` MCP server's tool `name`, qualified as the agents qualify
/// it: `mcp__paddock__<name>` (the scripted Responses server sends it to Codex as the call
/// of `name` in its `mcp__paddock` namespace).
pub fn paddock_tool(n: usize, name: &str, input: Value) -> Turn {
    Turn::tool(
        &format!("toolu_{n}"),
        &format!("mcp__paddock__{name}"),
        input,
    )
}

/// The last answer of [`sign_in_turns`], which a completed task has as its result.
pub const SIGNED_IN: &str = "Signed in: the welcome page greets ada.";

/// The device tools [`sign_in_turns`] calls, in order.
pub const SIGN_IN_TOOLS: [&str; 6] = [
    "observe",
    "observe",
    "tapOn",
    "inputText",
    "inputText",
    "tapOn",
];

/// An agent signing in to the fixture app as `ada@example.com` with `password`: six device
/// tool calls — the second reaches for another session's device, which is refused — and then
/// [`SIGNED_IN`].
pub fn sign_in_turns(password: &str) -> Vec<Turn> {
    vec![
        paddock_tool(1, "observe", json!({})),
        paddock_tool(2, "observe", json!({ "__mcpSessionId": "someone-else" })),
        paddock_tool(3, "tapOn", json!({ "text": "Sign in" })),
        paddock_tool(
            4,
            "inputText",
            json!({ "label": "Email", "text": "ada@example.com" }),
        ),
        paddock_tool(
            5,
            "inputText",
            json!({ "label": "Password", "text": password }),
        ),
        paddock_tool(6, "tapOn", json!({ "text": "Sign in" })),
        Turn::text(SIGNED_IN),
    ]
}

/// Checks the trajectory of a task that ran [`sign_in_turns`]: the six tool steps in order,
/// the second refused as forbidden and the others done; the password never stored and the
/// email filtered out as PII; the agent's message; the end last.
pub fn check_sign_in_trajectory(steps: &[Value], password: &str) -> anyhow::Result<()> {
    let calls: Vec<&Value> = steps.iter().filter(|step| step["kind"] == "tool").collect();
    let tools: Vec<&str> = calls
        .iter()
        .map(|call| call["tool"].as_str().unwrap_or_default())
        .collect();
    ensure!(tools == SIGN_IN_TOOLS, "the tool steps: {steps:#?}");
    for (index, call) in calls.iter().enumerate() {
        let refused = index == 1;
        ensure!(call["ok"] == !refused, "step {index}: {call:#}");
    }
    let outcome = calls[1]["outcome"].as_str().unwrap_or_default();
    ensure!(
        outcome.starts_with("[forbidden]"),
        "another session's device is refused as forbidden: {outcome}"
    );
    let everything = serde_json::to_string(steps)?;
    ensure!(
        !everything.contains(password),
        "the password is never stored"
    );
    ensure!(
        !everything.contains("ada@example.com"),
        "other arguments pass the PII default filters: {everything}"
    );
    ensure!(
        steps
            .iter()
            .any(|step| step["kind"] == "message" && step["text"].as_str().is_some()),
        "the agent's message is a step: {steps:#?}"
    );
    ensure!(
        steps.last().is_some_and(|step| step["kind"] == "end"),
        "the end is the last step: {steps:#?}"
    );
    Ok(())
}

/// Polls `getTask` until the task has ended (completed, failed or stopped) or `within`
/// passes; its summary.
pub fn wait_ended(http: &McpHttp, task: &str, within: Duration) -> anyhow::Result<Value> {
    let mut last = Value::Null;
    crate::wait_until(within, || {
        let answer = http.call("getTask", json!({ "taskId": task })).ok()?;
        last = answer["structuredContent"]["summary"].clone();
        matches!(
            last["state"].as_str(),
            Some("completed" | "failed" | "stopped")
        )
        .then(|| last.clone())
    })
    .with_context(|| format!("task `{task}` did not end; its last summary: {last}"))
}

/// The task's whole trajectory (`getTask` with `view: trajectory`), four steps a page, so
/// that the cursor is followed.
pub fn trajectory(http: &McpHttp, task: &str) -> anyhow::Result<Vec<Value>> {
    let mut steps = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut arguments = json!({ "taskId": task, "view": "trajectory", "limit": 4 });
        if let Some(cursor) = &cursor {
            arguments["cursor"] = json!(cursor);
        }
        let page = http.call("getTask", arguments)?;
        let page = &page["structuredContent"];
        steps.extend(page["steps"].as_array().cloned().unwrap_or_default());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(steps),
        }
    }
}

/// The device bound to the task's session (`task-<id>`), as `paddock devices --json` lists
/// it; `None` once it went back to the pool.
pub fn task_device(harness: &DaemonHarness, task: &str) -> anyhow::Result<Option<Value>> {
    let listed = harness.run(["devices", "--json"])?.success()?;
    let listing: Value = serde_json::from_str(listed.stdout().trim())
        .with_context(|| format!("`paddock devices --json` printed {listed}"))?;
    let session = format!("task-{task}");
    Ok(listing["devices"].as_array().and_then(|devices| {
        devices
            .iter()
            .find(|device| device["session"] == session.as_str())
            .cloned()
    }))
}
