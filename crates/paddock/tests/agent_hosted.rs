//! Agents hosted by the daemon, through the real binary and the real Claude Code CLI against
//! the scripted model server: a session outlives the command that started it, `attach`
//! replays its events without gaps, its voucher is listed while it runs, a daemon restart
//! forgets it with a typed error, and the ordinary `ANTHROPIC_*` variables are enough.
#![cfg(test)]

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::time::Duration;

use paddock_testkit::DaemonHarness;
use paddock_testkit::model::{ScriptedModel, Turn};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const KEY: &str = "sk-ant-hosted-test-key";
/// A hang deadline, not a speed expectation.
const DEADLINE: Duration = Duration::from_secs(90);

fn harness_with_claude() -> DaemonHarness {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness
        .with_agent_clis()
        .unwrap()
        .set_env("TEST_MODEL_KEY", KEY);
    harness
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect()
}

#[test]
fn a_started_agent_outlives_its_command_and_attach_replays_every_event_in_order() {
    let harness = harness_with_claude();
    let model = ScriptedModel::start(vec![
        Turn::streamed("First answer, held at the gate.").gated(),
        Turn::streamed("Second answer."),
    ])
    .unwrap();
    let upstream = model.base_url();
    let started = harness
        .run([
            "agent",
            "start",
            "--upstream",
            &upstream,
            "--key-from",
            "env:TEST_MODEL_KEY",
            "the first question",
        ])
        .unwrap()
        .success()
        .unwrap();
    let id = started
        .stdout()
        .split_whitespace()
        .last()
        .expect("an id on stdout")
        .to_owned();
    assert!(id.starts_with("agt-"), "{started}");

    // The command has exited; the turn is still held open at the model.
    paddock_testkit::wait_until(DEADLINE, || model.asked().then_some(())).unwrap();
    let listed = harness
        .run(["agent", "list", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let listing: Value = serde_json::from_str(listed.stdout().trim()).unwrap();
    let session = listing["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|session| session["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not listed: {listed}"))
        .clone();
    assert_eq!(session["backend"], "claude", "{listed}");
    let voucher = session["voucher"]
        .as_str()
        .expect("a live voucher")
        .to_owned();
    let vouchers = harness
        .run(["credentials", "list", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let vouchers: Value = serde_json::from_str(vouchers.stdout().trim()).unwrap();
    assert!(
        vouchers["vouchers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|entry| entry["id"] == voucher.as_str() && entry["launch"] == id.as_str()),
        "the daemon's broker lists the hosted launch's voucher: {vouchers}"
    );

    // Attach from the start while the turn is held, then let it finish.
    let mut attach = harness
        .command(["agent", "attach", &id, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = attach.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    model.release();
    let mut seen = Vec::new();
    loop {
        let line = lines_rx
            .recv_timeout(DEADLINE)
            .expect("attach printed the first turn's completion");
        let event: Value = serde_json::from_str(&line).unwrap();
        let done = event["type"] == "turn_completed" && event["commandId"] == "c1";
        seen.push(event);
        if done {
            break;
        }
    }
    // A message sent from another command goes to the same session.
    let sent = harness
        .run(["agent", "send", &id, "the second question"])
        .unwrap()
        .success()
        .unwrap();
    assert!(sent.stdout().starts_with("c2 "), "{sent}");
    loop {
        let line = lines_rx
            .recv_timeout(DEADLINE)
            .expect("attach printed the second turn's completion");
        let event: Value = serde_json::from_str(&line).unwrap();
        let done = event["type"] == "turn_completed" && event["commandId"] == "c2";
        seen.push(event);
        if done {
            break;
        }
    }
    let stopped = harness
        .run(["agent", "stop", &id])
        .unwrap()
        .success()
        .unwrap();
    assert!(stopped.stdout().contains("stopped"), "{stopped}");
    let closed: Value = serde_json::from_str(
        &lines_rx
            .recv_timeout(DEADLINE)
            .expect("attach printed the close"),
    )
    .unwrap();
    assert_eq!(closed["type"], "closed", "{closed}");
    let status = attach.wait().unwrap();
    assert!(status.success());

    let seqs: Vec<u64> = seen
        .iter()
        .map(|event| event["seq"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "events from 1 without gaps: {seen:?}");
    let text: String = seen
        .iter()
        .filter(|event| event["type"] == "assistant_text_delta")
        .map(|event| event["text"].as_str().unwrap_or_default())
        .collect();
    assert!(text.contains("First answer, held at the gate."), "{text}");
    assert!(text.contains("Second answer."), "{text}");

    // A replay from the middle starts exactly there.
    let replay = harness
        .run(["agent", "attach", &id, "--json", "--from", "3"])
        .unwrap()
        .success()
        .unwrap();
    let replayed = json_lines(&replay.stdout());
    assert_eq!(replayed[0]["seq"], 3, "{replay}");
    assert_eq!(
        replayed.len(),
        seen.len() - 2 + 1,
        "the rest and the close: {replay}"
    );

    // Closed: the voucher is gone, and the real key reached only the upstream.
    let vouchers = harness
        .run(["credentials", "list", "--json"])
        .unwrap()
        .success()
        .unwrap();
    assert!(!vouchers.stdout().contains(&voucher), "{vouchers}");
    for request in model.scripted_requests() {
        assert_eq!(request.header("x-api-key"), Some(KEY));
    }

    // A restart forgets hosted agents and says so.
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    harness.start_detached(&[]).unwrap();
    let gone = harness.run(["agent", "attach", &id]).unwrap();
    assert_eq!(gone.code(), Some(1), "{gone}");
    assert!(
        gone.stderr()
            .contains("belonged to an earlier run of the daemon, which has restarted since"),
        "{gone}"
    );
    let listed = harness
        .run(["agent", "list", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let listing: Value = serde_json::from_str(listed.stdout().trim()).unwrap();
    assert_eq!(listing["sessions"], serde_json::json!([]), "{listed}");
    for output in [&started, &sent, &stopped, &replay, &gone] {
        assert!(!output.stdout().contains(KEY) && !output.stderr().contains(KEY));
    }
}

/// With only the variables a Claude Code user already has, `paddock agent run` works: the
/// base URL from `ANTHROPIC_BASE_URL`, the key from `ANTHROPIC_API_KEY`.
#[test]
fn the_ordinary_anthropic_variables_are_enough() {
    let mut harness = harness_with_claude();
    let model =
        ScriptedModel::start(vec![Turn::streamed("Configured by the environment.")]).unwrap();
    harness
        .set_env("ANTHROPIC_BASE_URL", model.base_url())
        .set_env("ANTHROPIC_API_KEY", KEY);
    let run = harness
        .run(["agent", "run", "--backend", "claude", "what is configured?"])
        .unwrap()
        .success()
        .unwrap();
    assert!(
        run.stdout().contains("Configured by the environment."),
        "{run}"
    );
    let requests = model.scripted_requests();
    assert_eq!(requests.len(), 1, "{run}");
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert!(!run.stdout().contains(KEY) && !run.stderr().contains(KEY));
}

/// No key anywhere: a typed error that says where a key may come from.
#[test]
fn no_key_anywhere_is_an_error_with_a_hint() {
    let harness = harness_with_claude();
    let run = harness.run(["agent", "run", "hi"]).unwrap();
    assert_eq!(run.code(), Some(1), "{run}");
    assert!(run.stderr().contains("hint:"), "{run}");
    assert!(run.stderr().contains("ANTHROPIC_API_KEY"), "{run}");
}
