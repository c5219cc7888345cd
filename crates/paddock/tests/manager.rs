//! The manager with the real Claude Code CLI against the scripted model server: messages that
//! arrive while a turn runs become one notice at the boundary, an idle bot's process is
//! stopped and a new message starts it again, concurrent messages start one process, and a
//! turn that goes silent is ended. The gated stream holds a turn open; timings come from the
//! config file (`[agents] idle_stop_secs`, `stall_after_secs`).
#![cfg(test)]

use std::time::Duration;

use paddock_testkit::DaemonHarness;
use paddock_testkit::model::{Recorded, ScriptedModel, Turn};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const KEY: &str = "sk-ant-manager-test-key";
/// A hang deadline, not a speed expectation.
const DEADLINE: Duration = Duration::from_secs(60);

struct Bot {
    harness: DaemonHarness,
    work: tempfile::TempDir,
}

impl Bot {
    /// A daemon whose config file points at `model` and sets `agents`, with bot `helper`.
    fn start(model: &ScriptedModel, agents: &str) -> Self {
        let mut harness = DaemonHarness::new(BIN).unwrap();
        harness.with_agent_clis().unwrap();
        harness
            .write_anthropic_config(&model.base_url(), KEY, agents)
            .unwrap();
        harness.start_detached(&[]).unwrap();
        let work = tempfile::tempdir().unwrap();
        harness
            .add_claude_bot("helper", work.path(), false)
            .unwrap();
        Self { harness, work }
    }

    fn message(&self, text: &str) -> String {
        let file = self.work.path().join(format!("m-{}.txt", text.len()));
        std::fs::write(&file, text).unwrap();
        self.harness
            .run(["bot", "message", "helper", "--file", file.to_str().unwrap()])
            .unwrap()
            .success()
            .unwrap()
            .stdout()
    }

    fn sessions(&self) -> Vec<Value> {
        let listed = self
            .harness
            .run(["agent", "list", "--json"])
            .unwrap()
            .success()
            .unwrap();
        let value: Value = serde_json::from_str(listed.stdout().trim()).unwrap();
        value["sessions"].as_array().unwrap().clone()
    }
}

/// The user message as Paddock sent it, without the context Claude Code puts before it.
fn own_text(request: &Recorded) -> String {
    request
        .last_user_text()
        .rsplit("</system-reminder>")
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn wait_for(what: &str, mut probe: impl FnMut() -> bool) {
    paddock_testkit::wait_until(DEADLINE, || probe().then_some(()))
        .unwrap_or_else(|error| panic!("{what}: {error}"));
}

#[test]
fn busy_messages_coalesce_into_one_notice_and_an_idle_bot_sleeps_and_wakes() {
    let model = ScriptedModel::start(vec![
        Turn::streamed("First answer.").gated(),
        Turn::text("Second answer."),
        Turn::text("Third answer."),
    ])
    .unwrap();
    let bot = Bot::start(&model, "idle_stop_secs = 2");
    bot.message("one");
    wait_for("the first notice reaches the model", || model.asked());
    // Two more while the first turn is held open.
    bot.message("two");
    bot.message("three");
    model.release();
    wait_for("the coalesced notice reaches the model", || {
        model.scripted_requests().len() >= 2
    });
    let requests = model.scripted_requests();
    assert_eq!(
        own_text(&requests[0]),
        "[inbox notice: 1 new in /.dm/owner from owner, latest #1]"
    );
    assert_eq!(
        own_text(&requests[1]),
        "[inbox notice: 3 new in /.dm/owner from owner, latest #3]",
        "two messages during the turn became one delivery"
    );
    let first = bot.sessions();
    assert_eq!(first.len(), 1, "{first:?}");
    let first_id = first[0]["id"].as_str().unwrap().to_owned();

    // Idle past idle_stop_secs: the process is stopped.
    wait_for("the idle session is stopped", || {
        bot.sessions()
            .iter()
            .any(|session| session["id"] == first_id.as_str() && session["state"] == "closed")
    });
    assert_eq!(
        model.scripted_requests().len(),
        2,
        "no turn without a message"
    );
    // A new message wakes the bot in a new process.
    let woke = bot.message("four");
    assert!(woke.contains("starting its session"), "{woke}");
    wait_for("the new session's notice reaches the model", || {
        model.scripted_requests().len() >= 3
    });
    assert_eq!(
        own_text(&model.scripted_requests()[2]),
        "[inbox notice: 4 new in /.dm/owner from owner, latest #4]"
    );
    let sessions = bot.sessions();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert!(
        sessions
            .iter()
            .any(|session| session["id"] != first_id.as_str() && session["state"] != "closed")
    );
    for request in model.scripted_requests() {
        assert_eq!(request.header("x-api-key"), Some(KEY));
    }
}

#[test]
fn concurrent_messages_start_one_process_and_a_silent_turn_is_ended() {
    // The turn never streams: the model holds it at the gate for the whole test.
    let model = ScriptedModel::start(vec![Turn::streamed("never").gated()]).unwrap();
    // Long enough for the CLI to start and ask, on a loaded machine too.
    let bot = Bot::start(&model, "stall_after_secs = 10");
    std::thread::scope(|scope| {
        for text in ["a", "bb", "ccc", "dddd"] {
            let bot = &bot;
            scope.spawn(move || bot.message(text));
        }
    });
    wait_for("the notice reaches the model", || model.asked());
    let sessions = bot.sessions();
    assert_eq!(
        sessions.len(),
        1,
        "one process for four concurrent messages: {sessions:?}"
    );
    let id = sessions[0]["id"].as_str().unwrap().to_owned();
    // No event for stall_after_secs while the turn is active: the manager ends it.
    wait_for("the stalled session is ended", || {
        bot.sessions()
            .iter()
            .any(|session| session["id"] == id.as_str() && session["state"] == "closed")
    });
    let attach = bot
        .harness
        .run(["agent", "attach", &id, "--json"])
        .unwrap()
        .success()
        .unwrap();
    let closed: Value = serde_json::from_str(attach.stdout().lines().last().unwrap()).unwrap();
    assert_eq!(closed["closed"]["detail"], "stalled", "{attach}");
    assert_eq!(closed["closed"]["forced"], true, "{attach}");
    assert_eq!(model.scripted_requests().len(), 1);
}
