//! Tasks end to end: `runTask` puts the real Claude Code CLI (against the scripted model
//! server) on a real Chromium device through `paddock mcp` with the launch's voucher. The
//! agent signs in to the fixture app; what it may not do (acquire another device, run a task,
//! reach another session) is refused and recorded; the trajectory masks the password and
//! filters other arguments; the plan exported from the task replays on a fresh device.
#![cfg(test)]

use std::time::Duration;

use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::model::{ScriptedModel, Turn};
use paddock_testkit::tasks::{
    SIGNED_IN, check_sign_in_trajectory, paddock_tool, sign_in_turns, task_device, trajectory,
    wait_ended,
};
use paddock_testkit::{DaemonHarness, McpHttp, McpStdio};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const KEY: &str = "sk-ant-task-test-key";
const PASSWORD: &str = "hunter2-task-secret";
/// A hang deadline, not a speed expectation.
const DEADLINE: Duration = Duration::from_secs(120);

/// Starts the harness's daemon with Claude Code pointed at `model`, the fixture app, and
/// `warm` warm web devices.
fn start(harness: &mut DaemonHarness, model: &ScriptedModel, app: &FixtureApp, warm: &str) {
    harness
        .with_agent_clis()
        .unwrap()
        .set_env("ANTHROPIC_BASE_URL", model.base_url())
        .set_env("ANTHROPIC_API_KEY", KEY);
    let app_arg = format!("fixture={}", app.url("/"));
    harness
        .start_detached(&["--web-app", app_arg.as_str(), "--web-warm", warm])
        .unwrap();
}

#[test]
fn an_agent_signs_in_on_its_own_device_and_what_it_did_replays_as_a_plan() {
    let app = FixtureApp::start().unwrap();
    let model = ScriptedModel::start(sign_in_turns(PASSWORD)).unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    start(&mut harness, &model, &app, "1");
    let http = McpHttp::for_harness(&harness).unwrap();

    let listed = http.tool_names().unwrap();
    for name in ["runTask", "getTask", "listTasks", "stopTask", "exportPlan"] {
        assert!(listed.iter().any(|tool| tool == name), "{name}: {listed:?}");
    }
    let started = http
        .call(
            "runTask",
            json!({ "goal": "Sign in to the fixture app as ada@example.com", "app": "fixture" }),
        )
        .unwrap();
    assert_eq!(started["isError"], false, "{started}");
    let task = started["structuredContent"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(started["structuredContent"]["state"], "queued", "{started}");

    let summary = wait_ended(&http, &task, DEADLINE).unwrap();
    assert_eq!(summary["state"], "completed", "{summary}");
    assert_eq!(summary["result"], SIGNED_IN, "{summary}");
    assert_eq!(summary["steps"], 6, "six tool calls: {summary}");
    let status = http
        .call("getTask", json!({ "taskId": task, "view": "status" }))
        .unwrap();
    assert!(
        status["structuredContent"]["status"]
            .as_str()
            .is_some_and(|line| line.contains("completed")),
        "{status}"
    );

    let steps = trajectory(&http, &task).unwrap();
    check_sign_in_trajectory(&steps, PASSWORD).unwrap();

    // The agent's connection was the task's own: the model never saw the owner's token, and
    // the device went back to the pool when the task ended.
    let token = harness.token().unwrap();
    for request in model.requests() {
        let body = request.body.to_string();
        assert!(!body.contains(&token), "the daemon token reached the model");
        assert!(!body.contains(KEY));
    }
    assert!(
        task_device(&harness, &task).unwrap().is_none(),
        "the task's device is released"
    );
    // Nothing the daemon keeps — its log, the store, the agent's launch directory — holds
    // the password, the real key or the daemon's token.
    let files = paddock_testkit::no_file_contains(
        &harness.paths().state_dir,
        &[PASSWORD, KEY, token.as_str()],
    )
    .unwrap();
    assert!(files > 1, "the state dir holds the store and the log");

    let shot = http
        .call(
            "getTaskMedia",
            json!({ "taskId": task, "kind": "screenshot" }),
        )
        .unwrap();
    assert_eq!(shot["isError"], false, "{shot}");
    assert!(
        shot["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["type"] == "image"),
        "{shot}"
    );
    let state = http
        .call("getTaskMedia", json!({ "taskId": task, "kind": "uiState" }))
        .unwrap();
    assert!(state.to_string().contains("Welcome"), "{state}");

    // What the agent did, as a plan, replays on a fresh device without a model.
    let exported = http.call("exportPlan", json!({ "taskId": task })).unwrap();
    let plan = exported["structuredContent"].clone();
    assert_eq!(plan["version"], 1, "{exported}");
    assert_eq!(plan["variables"], json!(["PASSWORD_1"]), "{plan}");
    assert!(!plan.to_string().contains(PASSWORD), "{plan}");
    let replay = http.with_session("task-replay");
    let acquired = replay.call("getWeb", json!({ "app": "fixture" })).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    let run = replay
        .call(
            "executePlan",
            json!({ "plan": plan, "variables": { "PASSWORD_1": PASSWORD } }),
        )
        .unwrap();
    assert_eq!(run["structuredContent"]["ok"], true, "{run}");
    let page = replay.call("observe", json!({})).unwrap();
    assert!(page.to_string().contains("Welcome"), "{page}");
}

/// Waits until the task has ended `failed` with `reason`; its summary.
fn wait_failed(http: &McpHttp, task: &str, reason: &str) -> Value {
    let summary = wait_ended(http, task, DEADLINE).unwrap();
    assert_eq!(summary["state"], "failed", "{summary}");
    assert_eq!(summary["reason"], reason, "{summary}");
    summary
}

/// Waits until `count` requests were answered (or are held) by scripted turns.
fn wait_scripted(model: &ScriptedModel, count: usize) {
    paddock_testkit::wait_until(DEADLINE, || {
        (model.scripted_requests().len() >= count).then_some(())
    })
    .unwrap_or_else(|_| panic!("the model was not asked {count} scripted times"));
}

/// A daemon with Claude Code and the fixture app, for one scenario.
fn daemon(model: &ScriptedModel, app: &FixtureApp) -> (DaemonHarness, McpHttp) {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    start(&mut harness, model, app, "1");
    let http = McpHttp::for_harness(&harness).unwrap();
    (harness, http)
}

fn run_task(http: &McpHttp, arguments: Value) -> String {
    let started = http.call("runTask", arguments).unwrap();
    assert_eq!(started["isError"], false, "{started}");
    started["structuredContent"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The hosted agent sessions, from `paddock agent list --json`.
fn agent_sessions(harness: &DaemonHarness) -> Vec<Value> {
    let listed = harness
        .run(["agent", "list", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let listing: Value = serde_json::from_str(listed.stdout().trim()).unwrap();
    listing["sessions"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_task_over_its_max_steps_fails_with_that_reason_and_returns_its_device() {
    let app = FixtureApp::start().unwrap();
    let model = ScriptedModel::start(vec![
        paddock_tool(1, "observe", json!({})),
        paddock_tool(2, "observe", json!({})),
        paddock_tool(3, "observe", json!({})),
        Turn::text("never reached"),
    ])
    .unwrap();
    let (harness, http) = daemon(&model, &app);
    let task = run_task(&http, json!({ "goal": "look around", "maxSteps": 2 }));
    let summary = wait_failed(&http, &task, "max_steps");
    assert_eq!(summary["steps"], 2, "{summary}");
    assert!(
        task_device(&harness, &task).unwrap().is_none(),
        "the device is back"
    );
}

#[test]
fn a_stopped_task_ends_its_agent_and_a_timed_out_one_fails() {
    let app = FixtureApp::start().unwrap();
    let model = ScriptedModel::start(vec![
        paddock_tool(1, "observe", json!({})).when("stop me"),
        Turn::text("held until the test lets go").gated(),
    ])
    .unwrap();
    let (mut harness, http) = daemon(&model, &app);
    let task = run_task(&http, json!({ "goal": "stop me" }));
    wait_scripted(&model, 2);

    // The task took the warm device; its replacement boots once the agent has reached its
    // model (its second request is held, so the task is still running), not at its end.
    paddock_testkit::wait_until(DEADLINE, || {
        let listed = http.call("listDevices", json!({})).ok()?;
        let devices = listed["structuredContent"]["devices"].as_array()?.clone();
        devices
            .iter()
            .any(|device| device["state"] == "warm")
            .then_some(())
    })
    .expect("the pool never refilled while the task ran");
    let log = harness.detached_log();
    assert!(
        log.lines().any(|line| line.contains(&task)
            && line.contains("the warm pool refills: its agent reached its model")),
        "{log}"
    );

    // While the agent works: neither it nor its MCP server holds the daemon's token or the
    // real key — only the voucher's file path.
    let token = harness.token().unwrap();
    let sessions = agent_sessions(&harness);
    let agent = sessions
        .iter()
        .find(|session| session["state"] != "closed")
        .unwrap_or_else(|| panic!("a running agent: {sessions:?}"))
        .clone();
    let pid = agent["pid"].as_u64().unwrap();
    let mut processes = vec![pid];
    processes.extend(
        paddock_testkit::procfs::descendants(u32::try_from(pid).unwrap())
            .iter()
            .map(|&p| u64::from(p)),
    );
    for process in &processes {
        let Ok(environ) = std::fs::read(format!("/proc/{process}/environ")) else {
            continue;
        };
        let environ = String::from_utf8_lossy(&environ);
        assert!(
            !environ.contains(&token),
            "process {process} holds the daemon token"
        );
        assert!(
            !environ.contains(KEY),
            "process {process} holds the real key"
        );
    }

    // As the agent would, with its voucher: `paddock mcp` serves only the task's device tools
    // on the task's session, and refuses the rest in words.
    let environ = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap())
        .into_owned();
    let voucher_file = environ
        .split('\0')
        .find_map(|entry| entry.strip_prefix("PADDOCK_PROXY_TOKEN_FILE="))
        .expect("the agent's voucher file")
        .to_owned();
    let socket = harness.paths().socket;
    harness
        .set_env("PADDOCK_CONTROL_SOCKET", socket.as_os_str())
        .set_env("PADDOCK_PROXY_TOKEN_FILE", &voucher_file);
    let mut agent_mcp = McpStdio::start(&harness, &[]).unwrap();
    harness
        .remove_env("PADDOCK_CONTROL_SOCKET")
        .remove_env("PADDOCK_PROXY_TOKEN_FILE");
    let offered = agent_mcp.tool_names().unwrap();
    assert!(offered.iter().any(|name| name == "observe"), "{offered:?}");
    for hidden in [
        "getWeb",
        "runTask",
        "provisionDevice",
        "setToolEnabled",
        "releaseDevice",
    ] {
        assert!(
            !offered.iter().any(|name| name == hidden),
            "{hidden}: {offered:?}"
        );
    }
    for (name, arguments) in [
        ("getWeb", json!({})),
        ("provisionDevice", json!({ "platform": "web" })),
        ("runTask", json!({ "goal": "escape" })),
        (
            "setToolEnabled",
            json!({ "name": "observe", "enabled": false, "__mcpSessionId": "other" }),
        ),
        ("listTasks", json!({})),
        ("observe", json!({ "__mcpSessionId": "someone-else" })),
    ] {
        let answer = agent_mcp.call(name, arguments).unwrap();
        assert_eq!(answer["isError"], true, "{name}: {answer}");
        assert!(
            answer.to_string().contains("[forbidden]"),
            "{name} is refused as forbidden: {answer}"
        );
    }
    let own = agent_mcp.call("observe", json!({})).unwrap();
    assert_eq!(own["isError"], false, "its own device answers: {own}");

    let stopped = http.call("stopTask", json!({ "taskId": task })).unwrap();
    let summary = &stopped["structuredContent"];
    assert_eq!(summary["state"], "stopped", "{stopped}");
    assert_eq!(summary["reason"], "stopped by the owner", "{stopped}");
    assert!(
        task_device(&harness, &task).unwrap().is_none(),
        "the device is back"
    );
    model.release();
    for process in processes {
        paddock_testkit::wait_until(DEADLINE, || {
            (!paddock_testkit::process_alive(u32::try_from(process).unwrap())).then_some(())
        })
        .unwrap_or_else(|_| panic!("process {process} of the stopped task is still running"));
    }
    // A stopped task's voucher is revoked: the agent's connection ended with it.
    let after = agent_mcp.call("observe", json!({}));
    assert!(
        after.is_err() || after.as_ref().is_ok_and(|answer| answer["isError"] == true),
        "the ended task's connection no longer serves its device: {after:?}"
    );
    let again = http
        .call(
            "sendTaskMessage",
            json!({ "taskId": task, "text": "hello?" }),
        )
        .unwrap();
    assert_eq!(again["isError"], true, "{again}");

    model.push(Turn::text("too late").gated().when("wait forever"));
    let slow = run_task(&http, json!({ "goal": "wait forever", "timeoutSecs": 5 }));
    wait_failed(&http, &slow, "timeout");
    model.release();
}

#[test]
fn a_message_reaches_a_running_task_and_a_lost_device_fails_its_task() {
    let app = FixtureApp::start().unwrap();
    let model = ScriptedModel::start(vec![
        Turn::text("First part done.").gated().when("two parts"),
        Turn::text("Second part done, as asked.").when("also do the second part"),
    ])
    .unwrap();
    let (harness, http) = daemon(&model, &app);
    let task = run_task(&http, json!({ "goal": "a task in two parts" }));
    wait_scripted(&model, 1);
    let sent = http
        .call(
            "sendTaskMessage",
            json!({ "taskId": task, "text": "also do the second part" }),
        )
        .unwrap();
    assert_eq!(sent["isError"], false, "{sent}");
    let receipt = sent["structuredContent"]["receipt"]
        .as_str()
        .unwrap_or_default();
    assert!(matches!(receipt, "accepted" | "queued"), "{sent}");
    model.release();
    let summary = wait_ended(&http, &task, DEADLINE).unwrap();
    assert_eq!(summary["state"], "completed", "{summary}");
    assert_eq!(
        summary["result"], "Second part done, as asked.",
        "{summary}"
    );

    // The device dies under a running task: it fails as `device_lost`.
    model.push(Turn::text("never finishes").gated().when("doomed device"));
    let doomed = run_task(&http, json!({ "goal": "doomed device" }));
    let device =
        paddock_testkit::wait_until(DEADLINE, || task_device(&harness, &doomed).unwrap()).unwrap();
    wait_scripted(&model, 3);
    let pid = device["pid"].as_u64().expect("a browser pid");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    wait_failed(&http, &doomed, "device_lost");
    model.release();
}

#[test]
fn two_tasks_run_at_once_on_their_own_devices_and_the_cli_follows_one_to_its_end() {
    let app = FixtureApp::start().unwrap();
    let model = ScriptedModel::start(vec![
        Turn::text("First errand done.")
            .gated()
            .when("first errand"),
        Turn::text("Second errand done.")
            .gated()
            .when("second errand"),
        Turn::text("Third errand done.").when("third errand"),
        Turn::text("held while the daemon stops")
            .gated()
            .when("fourth errand"),
    ])
    .unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    start(&mut harness, &model, &app, "2");
    let http = McpHttp::for_harness(&harness).unwrap();
    let first = run_task(
        &http,
        json!({ "goal": "the first errand", "app": "fixture" }),
    );
    let second = run_task(
        &http,
        json!({ "goal": "the second errand", "app": "fixture" }),
    );
    // Both agents are at the model at the same time, each task on its own device.
    wait_scripted(&model, 2);
    let running = http
        .call("listTasks", json!({ "state": "running" }))
        .unwrap();
    assert_eq!(
        running["structuredContent"]["tasks"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{running}"
    );
    model.release();
    model.release();
    let (one, two) = (
        wait_ended(&http, &first, DEADLINE).unwrap(),
        wait_ended(&http, &second, DEADLINE).unwrap(),
    );
    assert_eq!(one["result"], "First errand done.", "{one}");
    assert_eq!(two["result"], "Second errand done.", "{two}");
    assert_ne!(
        one["deviceId"], two["deviceId"],
        "each task has its own device"
    );
    let listed = http
        .call("listTasks", json!({ "state": "completed" }))
        .unwrap();
    assert_eq!(
        listed["structuredContent"]["tasks"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{listed}"
    );

    // The CLI starts a task and follows it to its end.
    let followed = harness.run(["task", "run", "the third errand"]).unwrap();
    assert_eq!(followed.code(), Some(0), "{followed}");
    assert!(
        followed.stdout().contains("Third errand done."),
        "{followed}"
    );

    // A daemon that stops ends its running tasks, and they say so after the restart.
    let held = run_task(&http, json!({ "goal": "the fourth errand" }));
    wait_scripted(&model, 4);
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    model.release();
    start(&mut harness, &model, &app, "1");
    let http = McpHttp::for_harness(&harness).unwrap();
    let after = http.call("getTask", json!({ "taskId": held })).unwrap();
    let summary = &after["structuredContent"]["summary"];
    assert_eq!(summary["state"], "failed", "{after}");
    assert_eq!(summary["reason"], "daemon_shutdown", "{after}");
    let shown = harness.run(["task", "show", &held]).unwrap();
    assert!(shown.stdout().contains("daemon_shutdown"), "{shown}");
}
