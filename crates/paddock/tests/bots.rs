//! Bots and their inboxes through the real binary and the real Claude Code CLI against the
//! scripted model server: a message wakes the bot with a notice that carries no body, the
//! agent pulls the body and replies with the `paddock` command inside its session
//! (authenticated by its voucher), a stale reply is held, a reply through a failing PII filter
//! is blocked (fail closed), and the session cannot reach another bot's data.
#![cfg(test)]

use std::path::PathBuf;
use std::time::Duration;

use paddock_testkit::DaemonHarness;
use paddock_testkit::model::{ScriptedModel, Turn};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const KEY: &str = "sk-ant-bots-test-key";
/// A hang deadline, not a speed expectation.
const DEADLINE: Duration = Duration::from_secs(60);

fn bash(id: &str, command: &str) -> Turn {
    Turn::tool(
        id,
        "Bash",
        json!({ "command": command, "description": "Run a command" }),
    )
}

/// Everything the model was sent, as text, for looking for what the agent saw.
fn bodies(model: &ScriptedModel) -> Vec<String> {
    model
        .scripted_requests()
        .iter()
        .map(|request| request.body.to_string())
        .collect()
}

/// Waits for `probe`; on a timeout the panic shows what the model was sent and the daemon's
/// log, so a failure says where the conversation stopped.
fn wait_for(
    what: &str,
    harness: &DaemonHarness,
    model: &ScriptedModel,
    mut probe: impl FnMut() -> bool,
) {
    if let Err(error) = paddock_testkit::wait_until(DEADLINE, || probe().then_some(())) {
        let state = harness
            .client_env_vars()
            .into_iter()
            .find(|(name, _)| name == "PADDOCK_STATE_DIR")
            .map(|(_, value)| PathBuf::from(value))
            .unwrap_or_default();
        let log = std::fs::read_to_string(state.join("logs/daemon.log")).unwrap_or_default();
        panic!(
            "{what}: {error}\nmodel was sent:\n{}\ndaemon log:\n{log}",
            bodies(model).join("\n---\n")
        );
    }
}

/// The user message as Paddock sent it, without the context Claude Code puts before it.
fn own_text(request: &paddock_testkit::model::Recorded) -> String {
    let text = request.last_user_text();
    text.rsplit("</system-reminder>")
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn outbox(harness: &DaemonHarness) -> Vec<Value> {
    let out = harness
        .run(["bot", "outbox", "helper", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let value: Value = serde_json::from_str(out.stdout().trim()).unwrap();
    value["messages"].as_array().unwrap().clone()
}

#[test]
fn a_message_wakes_the_bot_which_pulls_replies_and_is_held_or_blocked_when_it_should_be() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.with_agent_clis().unwrap();
    let model = ScriptedModel::start(vec![
        // Woken by the first notice: pull, then reply with a card number in the text.
        bash("call_pull", "paddock inbox pull"),
        bash(
            "call_send",
            "printf 'Order confirmed, card 4111 1111 1111 1111.' > reply.txt && paddock message send --target /.dm/owner --file reply.txt",
        ),
        Turn::text("Replied."),
        // The second notice: reply without pulling first — held.
        bash(
            "call_stale",
            "printf 'stale answer' > stale.txt; paddock message send --target /.dm/owner --file stale.txt; echo exit=$?",
        ),
        Turn::text("Held."),
        // The third notice: pull, reply through the failing filter, try another bot's data.
        bash(
            "call_blocked",
            "paddock inbox pull > /dev/null; printf 'anything' > r3.txt; paddock message send --target /.dm/owner --file r3.txt; paddock bot outbox other; echo exit=$?",
        ),
        Turn::text("Blocked."),
    ])
    .unwrap();

    // The upstream and key the way a user configures them: the config file and a 0600 key
    // file under the user's own config directory.
    harness
        .write_anthropic_config(&model.base_url(), KEY, "")
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    harness.start_detached(&[]).unwrap();
    harness.add_claude_bot("helper", work.path(), true).unwrap();

    let body = "Please confirm order 7731 for Ada.";
    let message = work.path().join("message.txt");
    std::fs::write(&message, body).unwrap();
    let sent = harness
        .run([
            "bot",
            "message",
            "helper",
            "--file",
            message.to_str().unwrap(),
        ])
        .unwrap()
        .success()
        .unwrap();
    assert!(sent.stdout().starts_with("#1 for helper: "), "{sent}");

    wait_for(
        "the bot's reply reaches the outbox",
        &harness,
        &model,
        || {
            outbox(&harness)
                .iter()
                .any(|entry| entry["state"] == "sent")
        },
    );
    let requests = model.scripted_requests();
    assert_eq!(
        own_text(&requests[0]),
        "[inbox notice: 1 new in /.dm/owner from owner, latest #1]",
        "the agent is woken with the notice alone"
    );
    assert!(
        !requests[0].body.to_string().contains(body),
        "no body in the notice"
    );
    assert!(
        bodies(&model)[1].contains(body),
        "the agent read the body with `paddock inbox pull`"
    );
    let sent_entry = outbox(&harness)
        .into_iter()
        .find(|entry| entry["state"] == "sent")
        .unwrap();
    assert_eq!(sent_entry["target"], "/.dm/owner");
    let text = sent_entry["text"].as_str().unwrap();
    assert!(text.starts_with("Order confirmed, card "), "{text}");
    assert!(
        !text.contains("4111 1111 1111 1111"),
        "the bot's PII pipeline redacted the card: {text}"
    );
    wait_for("the first turn ends", &harness, &model, || {
        model.scripted_requests().len() >= 3
    });

    // A second message; the agent answers without pulling it: held, saved as a draft.
    std::fs::write(&message, "A second question.").unwrap();
    let again = harness
        .run([
            "bot",
            "message",
            "helper",
            "--file",
            message.to_str().unwrap(),
        ])
        .unwrap()
        .success()
        .unwrap();
    assert!(
        again.stdout().starts_with("#2 for helper: notice to agt-"),
        "{again}"
    );
    wait_for("the stale reply is held", &harness, &model, || {
        outbox(&harness)
            .iter()
            .any(|entry| entry["state"] == "held")
    });
    wait_for(
        "the held turn's tool result reaches the model",
        &harness,
        &model,
        || model.scripted_requests().len() >= 5,
    );
    let held_result = &bodies(&model)[4];
    assert!(
        held_result.contains("held: 1 message(s) arrived that you have not seen"),
        "{held_result}"
    );
    assert!(
        held_result.contains("A second question."),
        "the held send shows the unseen message"
    );
    assert!(held_result.contains("exit=1"), "{held_result}");
    assert_eq!(
        own_text(&model.scripted_requests()[3]),
        "[inbox notice: 1 new in /.dm/owner from owner, latest #2]",
        "the second wake is a new notice, handed to the running session"
    );

    // A plugin that always fails: the next reply is blocked, never sent.
    let plugin = work.path().join("fails.js");
    std::fs::write(
        &plugin,
        "export default (text) => { throw new Error('broken on purpose'); };",
    )
    .unwrap();
    harness
        .run([
            "pii",
            "add",
            "--bot",
            "helper",
            "--file",
            plugin.to_str().unwrap(),
            "--description",
            "Always fails",
        ])
        .unwrap()
        .success()
        .unwrap();
    std::fs::write(&message, "A third question.").unwrap();
    harness
        .run([
            "bot",
            "message",
            "helper",
            "--file",
            message.to_str().unwrap(),
        ])
        .unwrap()
        .success()
        .unwrap();
    wait_for(
        "the reply through the failing filter is blocked",
        &harness,
        &model,
        || {
            outbox(&harness)
                .iter()
                .any(|entry| entry["state"] == "blocked")
        },
    );
    wait_for(
        "the blocked turn's tool result reaches the model",
        &harness,
        &model,
        || model.scripted_requests().len() >= 7,
    );
    let blocked_result = &bodies(&model)[6];
    assert!(
        blocked_result.contains("blocked: the bot's PII pipeline failed"),
        "{blocked_result}"
    );
    assert!(
        blocked_result.contains("an agent session may only"),
        "another bot's outbox is refused to the session: {blocked_result}"
    );
    let entries = outbox(&harness);
    assert_eq!(
        entries
            .iter()
            .filter(|entry| entry["state"] == "sent")
            .count(),
        1,
        "nothing else was sent: {entries:?}"
    );
    for request in model.scripted_requests() {
        assert_eq!(
            request.header("x-api-key"),
            Some(KEY),
            "the upstream sees the real key"
        );
    }
}
