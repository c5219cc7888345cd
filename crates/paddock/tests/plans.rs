//! Plans end to end: `executePlan` (plan-only: callable by name, never listed) replays a plan
//! document on a real Chromium device against the fixture web app, over MCP and through
//! `paddock plan run`.
#![cfg(test)]

use std::time::Duration;

use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::{CommandOutput, DaemonHarness, McpHttp};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn sign_in_plan() -> Value {
    json!({
        "version": 1,
        "source": "written for a test",
        "variables": ["PASSWORD_1"],
        "steps": [
            { "tool": "tapOn", "arguments": { "text": "Sign in" } },
            { "tool": "inputText", "arguments": { "label": "Email", "text": "ada@example.com" } },
            { "tool": "inputText", "arguments": { "label": "Password", "text": "${PASSWORD_1}" } },
            { "tool": "tapOn", "arguments": { "text": "Sign in" } },
        ],
    })
}

/// The fixture app and a daemon whose app `fixture` opens `path`, started with `extra`.
fn fixture_daemon(path: &str, extra: &[&str]) -> (FixtureApp, DaemonHarness) {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    let app_arg = format!("fixture={}", app.url(path));
    let mut args = vec!["--web-app", app_arg.as_str()];
    args.extend_from_slice(extra);
    harness.start_detached(&args).unwrap();
    (app, harness)
}

#[test]
fn a_plan_replays_a_sign_in_and_reports_the_step_that_fails() {
    let (app, harness) = fixture_daemon("/", &["--web-warm", "1"]);
    let http = McpHttp::for_harness(&harness).unwrap();
    let session = http.with_session("plan-replay");
    let acquired = session.call("getWeb", json!({ "app": "fixture" })).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");

    let listed = session.tool_names().unwrap();
    assert!(
        !listed.iter().any(|name| name == "executePlan"),
        "plan-only tools are never listed: {listed:?}"
    );

    // Without the variable, the step that needs it fails, naming it, and the run stops there.
    let missing = session
        .call("executePlan", json!({ "plan": sign_in_plan() }))
        .unwrap();
    let run = &missing["structuredContent"];
    assert_eq!(run["ok"], false, "{missing}");
    assert_eq!(run["failedStep"], 3, "{missing}");
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(3), "{missing}");
    assert!(
        run["steps"][2]["error"]
            .as_str()
            .is_some_and(|error| error.contains("`PASSWORD_1`")),
        "{missing}"
    );
    assert!(
        run["observation"]
            .as_str()
            .is_some_and(|screen| screen.contains("Password")),
        "the screen at the failure: {missing}"
    );

    // With it, from the start page again, the whole plan runs and signs in.
    let back = session
        .call("openLink", json!({ "url": app.url("/") }))
        .unwrap();
    assert_eq!(back["isError"], false, "{back}");
    let done = session
        .call(
            "executePlan",
            json!({ "plan": sign_in_plan(), "variables": { "PASSWORD_1": "hunter2" } }),
        )
        .unwrap();
    let run = &done["structuredContent"];
    assert_eq!(run["ok"], true, "{done}");
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(4), "{done}");
    assert!(run.get("failedStep").is_none(), "{done}");
    let page = session
        .call("observe", json!({ "format": "json" }))
        .unwrap();
    let page = &page["structuredContent"];
    assert!(
        page["url"]
            .as_str()
            .is_some_and(|url| url.starts_with(&app.url("/welcome"))),
        "{page}"
    );

    // A step whose target is not on the page fails with the screen; later steps do not run
    // unless asked.
    let changed = json!({
        "version": 1,
        "steps": [
            { "tool": "tapOn", "arguments": { "text": "A button nobody drew" } },
            { "tool": "tapOn", "arguments": { "text": "Items" } },
        ],
    });
    let failed = session
        .call("executePlan", json!({ "plan": changed }))
        .unwrap();
    let run = &failed["structuredContent"];
    assert_eq!(run["ok"], false, "{failed}");
    assert_eq!(run["failedStep"], 1, "{failed}");
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(1), "{failed}");
    assert!(run["observation"].as_str().is_some(), "{failed}");
    let went_on = session
        .call(
            "executePlan",
            json!({ "plan": changed, "stopOnError": false }),
        )
        .unwrap();
    let run = &went_on["structuredContent"];
    assert_eq!(run["steps"].as_array().map(Vec::len), Some(2), "{went_on}");
    assert_eq!(run["steps"][1]["ok"], true, "{went_on}");
    assert_eq!(run["failedStep"], 1, "{went_on}");

    // A plan of another format version, or a step that is not a device tool, is refused.
    let future = session
        .call(
            "executePlan",
            json!({ "plan": { "version": 2, "steps": [] } }),
        )
        .unwrap();
    assert_eq!(future["isError"], true, "{future}");
    assert!(
        future["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("[invalid_input]") && text.contains("version 2")),
        "{future}"
    );
    let not_device = session
        .call(
            "executePlan",
            json!({ "plan": { "version": 1, "steps": [{ "tool": "getWeb", "arguments": {} }] } }),
        )
        .unwrap();
    let run = &not_device["structuredContent"];
    assert_eq!(run["ok"], false, "{not_device}");
    assert!(
        run["steps"][0]["error"]
            .as_str()
            .is_some_and(|error| error.contains("not a device tool")),
        "{not_device}"
    );
}

/// Acquires a device with the fixture app open for `session`; the elements it observes.
fn fixture_elements(session: &McpHttp) -> Vec<Value> {
    let acquired = session.call("getWeb", json!({ "app": "fixture" })).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    let page = session
        .call("observe", json!({ "format": "json" }))
        .unwrap();
    page["structuredContent"]["elements"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn password_fields_carry_the_password_state() {
    let (_app, harness) = fixture_daemon("/login", &[]);
    let http = McpHttp::for_harness(&harness).unwrap();
    let elements = fixture_elements(&http.with_session("password-state"));
    let states = |name: &str| {
        elements
            .iter()
            .find(|element| element["name"] == name)
            .map(|element| element["states"].clone())
    };
    assert!(
        states("Password")
            .and_then(|states| states.as_array().cloned())
            .is_some_and(|states| states.iter().any(|state| state == "password")),
        "{elements:?}"
    );
    assert!(
        states("Email").is_some_and(|states| !states.to_string().contains("password")),
        "{elements:?}"
    );
}

/// A `paddock plan run` that has not exited by then hangs.
const PLAN_RUN_DEADLINE: Duration = Duration::from_secs(180);

fn plan_run(harness: &DaemonHarness, args: &[&str], stdin: &[u8]) -> CommandOutput {
    let mut argv = vec!["plan", "run"];
    argv.extend_from_slice(args);
    harness
        .run_with_stdin_within(argv, stdin, PLAN_RUN_DEADLINE)
        .unwrap()
}

/// Fails when the password reached stdout or stderr.
fn assert_no_password(output: &CommandOutput) {
    assert!(
        !output.stdout().contains("hunter2") && !output.stderr().contains("hunter2"),
        "the variable's value was printed: {output}"
    );
}

#[test]
fn paddock_plan_run_replays_a_plan_file_and_never_prints_a_variable() {
    let (_app, harness) = fixture_daemon("/", &["--web-warm", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let plan = write(
        "sign-in.json",
        &serde_json::to_vec_pretty(&sign_in_plan()).unwrap(),
    );

    // With the variable, on a fresh device with the app open, every step runs: exit 0.
    let done = plan_run(
        &harness,
        &[&plan, "--app", "fixture", "--var", "PASSWORD_1=hunter2"],
        b"",
    );
    assert_eq!(done.code(), Some(0), "{done}");
    let steps: Vec<String> = done.stdout().lines().map(str::to_owned).collect();
    assert_eq!(steps.len(), 4, "{done}");
    for (index, tool) in ["tapOn", "inputText", "inputText", "tapOn"]
        .iter()
        .enumerate()
    {
        let prefix = format!("step {} {tool} ok ", index + 1);
        assert!(
            steps[index].starts_with(&prefix) && steps[index].ends_with(" ms"),
            "{done}"
        );
    }
    assert_no_password(&done);

    // Without it (the plan on stdin), step 3 fails naming the variable, step 4 does not run,
    // the screen is shown: exit 1.
    let missing = plan_run(
        &harness,
        &["-", "--app", "fixture"],
        &serde_json::to_vec(&sign_in_plan()).unwrap(),
    );
    assert_eq!(missing.code(), Some(1), "{missing}");
    let stdout = missing.stdout();
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("step 3 inputText error: ")
                && line.contains("`PASSWORD_1`")),
        "{missing}"
    );
    assert!(stdout.contains("step 4 tapOn not run"), "{missing}");
    assert!(stdout.contains("screen at step 3:"), "{missing}");
    assert!(
        missing.stderr().contains("the plan failed at step 3 of 4"),
        "{missing}"
    );

    // A step whose target is the password itself fails; the daemon's error and the screen
    // are printed with the value replaced by its name, as text and as JSON.
    let quoting = write(
        "quoting.json",
        &serde_json::to_vec(&json!({
            "version": 1,
            "variables": ["PASSWORD_1"],
            "steps": [{ "tool": "tapOn", "arguments": { "text": "${PASSWORD_1}" } }],
        }))
        .unwrap(),
    );
    for extra in [None, Some("--json")] {
        let mut args = vec![quoting.as_str(), "--var", "PASSWORD_1=hunter2"];
        args.extend(extra);
        let failed = plan_run(&harness, &args, b"");
        assert_eq!(failed.code(), Some(1), "{failed}");
        assert_no_password(&failed);
        if extra.is_some() {
            let run: Value = serde_json::from_str(failed.stdout().trim()).unwrap();
            assert_eq!(run["ok"], false, "{failed}");
            assert_eq!(run["failedStep"], 1, "{failed}");
        } else {
            assert!(
                failed.stdout().starts_with("step 1 tapOn error: "),
                "{failed}"
            );
        }
    }

    // A file that is not JSON, or not a plan, is refused before anything runs: exit 2.
    let not_json = write("not-json.json", b"PASSWORD_1=hunter2");
    let refused = plan_run(&harness, &[&not_json, "--var", "PASSWORD_1=hunter2"], b"");
    assert_eq!(refused.code(), Some(2), "{refused}");
    assert!(refused.stderr().contains("is not JSON"), "{refused}");
    assert_no_password(&refused);
    let not_plan = write("not-plan.json", br#"{"version": 1, "stepz": []}"#);
    let refused = plan_run(&harness, &[&not_plan], b"");
    assert_eq!(refused.code(), Some(2), "{refused}");
    assert!(
        refused
            .stderr()
            .contains("the plan is not a Paddock plan document"),
        "{refused}"
    );

    // A malformed `--var` is a usage error naming the flag, which never quotes the argument.
    for bad in ["bad", "hunter2", "password_1=hunter2"] {
        let refused = plan_run(&harness, &[&plan, "--var", bad], b"");
        assert_eq!(refused.code(), Some(2), "{refused}");
        assert!(refused.stderr().contains("`--var`"), "{refused}");
        assert_no_password(&refused);
    }
}

/// With `--tool-call-recording`, an ordinary session's calls become a plan whose targets are
/// ids, labels and texts rather than refs: it replays on a page where an element was inserted
/// before every target (so every ref moved), and the password it typed is a variable.
#[test]
fn a_recorded_session_exports_a_plan_that_survives_an_inserted_element() {
    let (app, harness) = fixture_daemon("/login", &["--web-warm", "2", "--tool-call-recording"]);
    let http = McpHttp::for_harness(&harness).unwrap();
    let recorded = http.with_session("recorded-sign-in");
    let elements = fixture_elements(&recorded);
    let reference = |name: &str, role: &str| {
        elements
            .iter()
            .find(|element| element["name"] == name && element["role"] == role)
            .and_then(|element| element["ref"].as_str())
            .unwrap_or_else(|| panic!("no {role} {name}: {elements:?}"))
            .to_owned()
    };
    let (email, password, button) = (
        reference("Email", "textbox"),
        reference("Password", "textbox"),
        reference("Sign in", "button"),
    );
    for (tool, arguments) in [
        (
            "inputText",
            json!({ "ref": email, "text": "grace@example.com" }),
        ),
        (
            "inputText",
            json!({ "ref": password, "text": "recorded-secret" }),
        ),
        ("tapOn", json!({ "ref": button })),
    ] {
        let answer = recorded.call(tool, arguments).unwrap();
        assert_eq!(answer["isError"], false, "{tool}: {answer}");
    }

    let exported = http
        .call("exportPlan", json!({ "sessionUuid": "recorded-sign-in" }))
        .unwrap();
    assert_eq!(exported["isError"], false, "{exported}");
    let plan = exported["structuredContent"].clone();
    let text = plan.to_string();
    assert!(!text.contains("recorded-secret"), "{plan}");
    assert!(
        !text.contains("\"ref\""),
        "targets are robust, not refs: {plan}"
    );
    assert_eq!(plan["variables"], json!(["PASSWORD_1"]), "{plan}");
    assert_eq!(plan["steps"].as_array().map(Vec::len), Some(3), "{plan}");

    // On a fresh device, with a notice inserted before the form.
    let replay = http.with_session("replay-with-notice");
    let acquired = replay.call("getWeb", json!({})).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    let opened = replay
        .call("openLink", json!({ "url": app.url("/login?notice=1") }))
        .unwrap();
    assert!(opened.to_string().contains("Dismiss"), "{opened}");
    let run = replay
        .call(
            "executePlan",
            json!({ "plan": plan, "variables": { "PASSWORD_1": "another-secret" } }),
        )
        .unwrap();
    assert_eq!(run["structuredContent"]["ok"], true, "{run}");
    let page = replay.call("observe", json!({ "format": "json" })).unwrap();
    assert!(
        page["structuredContent"]["url"]
            .as_str()
            .is_some_and(|url| url.contains("/welcome?user=grace%40example.com")),
        "{page}"
    );

    // A session the daemon never recorded says so.
    let unknown = http
        .call("exportPlan", json!({ "sessionUuid": "never-used" }))
        .unwrap();
    assert_eq!(unknown["isError"], true, "{unknown}");
    // Neither the daemon's log nor any file of its state (the store and its journal
    // included) holds the password that was typed or the one the replay was given.
    let files = paddock_testkit::no_file_contains(
        &harness.paths().state_dir,
        &["recorded-secret", "another-secret"],
    )
    .unwrap();
    assert!(files > 1, "the state dir holds the store and the log");
}
