//! `paddock pii` through the real binary and daemon: the defaults of a fresh bot, plugins added
//! and run, switches and deletions that persist across restarts, the playground's limits, a
//! failing plugin that blocks without echoing the text, a plugin that keeps the job queue busy,
//! one bot's corrupted pipeline, the daemon-less `redact --defaults` (also on 2 MiB of card
//! numbers), and the errors for a missing bot or daemon.
#![cfg(test)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::Duration;

use paddock_testkit::{CommandOutput, DaemonHarness};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

const DEFAULT_IDS: [&str; 5] = ["keys", "email", "id-numbers", "phone-numbers", "bank-cards"];

/// The spec's example plugin, in TypeScript.
const WREN_PLUGIN: &str = r#"
export default (text: string): { text: string; triggered: boolean } => {
  let triggered = false;
  const output = text.replace(/Project Wren/g, () => {
    triggered = true;
    return "[INTERNAL_PROJECT]";
  });
  return { text: output, triggered };
};
"#;

/// A plugin that fails and would quote the text if its message were passed on.
const THROWING_PLUGIN: &str = r#"
export default (text: string) => {
  throw new Error("refusing to handle: " + text);
};
"#;

/// A plugin whose module-level microtask chain never lets the job queue empty.
const MICROTASK_PLUGIN: &str = r#"
const go = () => Promise.resolve().then(go);
go();
export default (text: string) => ({ text, triggered: false });
"#;

/// The same chain with the module held pending by a top-level await that never settles.
const PENDING_MICROTASK_PLUGIN: &str = r#"
const go = () => Promise.resolve().then(go);
go();
await new Promise(() => {});
export default (text: string) => ({ text, triggered: false });
"#;

/// Runs `paddock args…` with `input` on stdin.
fn run(harness: &DaemonHarness, args: &[&str], input: &str) -> CommandOutput {
    harness.run_with_stdin(args, input.as_bytes()).unwrap()
}

/// Assertions on a finished command.
trait Checks: Sized {
    fn ok(self) -> Self;
    fn json(&self) -> Value;
}

impl Checks for CommandOutput {
    /// Exited 0.
    fn ok(self) -> Self {
        assert_eq!(self.code(), Some(0), "{self}");
        self
    }

    /// Stdout as one JSON value.
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout().trim()).unwrap_or_else(|error| panic!("{error}\n{self}"))
    }
}

fn write_plugin(harness: &DaemonHarness, name: &str, source: &str) -> String {
    let path = harness.root().join(name);
    std::fs::write(&path, source).unwrap();
    path.display().to_string()
}

fn ids(listing: &Value) -> Vec<String> {
    listing["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|filter| filter["id"].as_str().unwrap().to_owned())
        .collect()
}

fn triggered(result: &Value) -> Vec<String> {
    result["triggeredFilters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect()
}

fn pipelines_file(harness: &DaemonHarness, bot: &str) -> PathBuf {
    let state = harness.paths().state_dir;
    let machine_id = std::fs::read_to_string(state.join("machine-id")).unwrap();
    state
        .join("daemons")
        .join(machine_id.trim())
        .join(bot)
        .join("pii/pipelines.json")
}

fn daemon_log(harness: &DaemonHarness) -> String {
    std::fs::read_to_string(harness.paths().state_dir.join("logs/daemon.log")).unwrap()
}

#[test]
fn a_fresh_bot_lists_the_five_defaults() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();

    let listing = run(&harness, &["pii", "list", "--bot", "helper", "--json"], "")
        .ok()
        .json();
    assert_eq!(listing["bot"], "helper");
    assert_eq!(ids(&listing), DEFAULT_IDS);
    for filter in listing["filters"].as_array().unwrap() {
        assert_eq!(filter["enabled"], true, "{listing}");
        assert_eq!(filter["kind"], "default", "{listing}");
    }

    // An agent session's identity is the default bot; the table names every filter.
    harness.set_env("PADDOCK_BOT_ID", "helper");
    let table = run(&harness, &["pii", "list"], "").ok();
    assert!(
        table.stdout().starts_with("bot helper, revision "),
        "{table}"
    );
    for id in DEFAULT_IDS {
        assert!(table.stdout().contains(id), "{table}");
    }

    // The machine id is created once, private, and keeps pipelines in one place.
    let machine_id = harness.paths().state_dir.join("machine-id");
    let mode = std::fs::metadata(&machine_id).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let id = std::fs::read_to_string(&machine_id).unwrap();
    assert_eq!(id.trim().len(), 16, "{id}");
    harness
        .run(["daemon", "restart"])
        .unwrap()
        .success()
        .unwrap();
    assert_eq!(std::fs::read_to_string(&machine_id).unwrap(), id);
}

#[test]
fn plugins_and_switches_change_runs_and_persist_across_restarts() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    harness.set_env("PADDOCK_BOT_ID", "helper");
    let plugin = write_plugin(&harness, "wren.ts", WREN_PLUGIN);
    let text = "Project Wren ships Friday; ask ana@example.com";

    // What an agent session may do: add (appends, enabled) and run.
    let added = run(
        &harness,
        &[
            "pii",
            "add",
            "--file",
            &plugin,
            "--description",
            "Redacts internal project names",
            "--json",
        ],
        "",
    )
    .ok()
    .json();
    assert_eq!(added["id"], "plugin-1", "{added}");
    assert_eq!(added["kind"], "plugin");
    assert_eq!(added["enabled"], true);
    assert_eq!(added["description"], "Redacts internal project names");
    let file = pipelines_file(&harness, "helper");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let result = run(&harness, &["pii", "redact"], text).ok().json();
    assert_eq!(
        result,
        json!({
            "text": "[INTERNAL_PROJECT] ships Friday; ask [EMAIL]",
            "triggeredFilters": ["email", "plugin-1"],
        })
    );

    // The owner disables the e-mail filter and the plugin: both stop acting, across a restart.
    for id in ["email", "plugin-1"] {
        let switched = run(&harness, &["pii", "disable", id, "--bot", "helper"], "").ok();
        assert!(switched.stdout().contains("disabled"), "{switched}");
    }
    let restart = harness.run(["daemon", "restart"]).unwrap();
    assert_eq!(restart.code(), Some(0), "{restart}");
    let listing = run(&harness, &["pii", "list", "--json"], "").ok().json();
    let enabled: Vec<(String, bool)> = listing["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|filter| {
            (
                filter["id"].as_str().unwrap().to_owned(),
                filter["enabled"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        enabled,
        [
            ("keys".to_owned(), true),
            ("email".to_owned(), false),
            ("id-numbers".to_owned(), true),
            ("phone-numbers".to_owned(), true),
            ("bank-cards".to_owned(), true),
            ("plugin-1".to_owned(), false),
        ]
    );
    let result = run(&harness, &["pii", "redact"], text).ok().json();
    assert_eq!(
        result,
        json!({ "text": text, "triggeredFilters": [] }),
        "disabled filters do not run"
    );

    // Enabled again, the plugin runs; deleted (a default too), they are gone after a restart.
    run(
        &harness,
        &["pii", "enable", "plugin-1", "--bot", "helper"],
        "",
    )
    .ok();
    let result = run(&harness, &["pii", "redact"], text).ok().json();
    assert_eq!(triggered(&result), ["plugin-1"]);
    for id in ["plugin-1", "keys"] {
        run(&harness, &["pii", "delete", id, "--bot", "helper"], "").ok();
    }
    harness
        .run(["daemon", "restart"])
        .unwrap()
        .success()
        .unwrap();
    let listing = run(&harness, &["pii", "list", "--json"], "").ok().json();
    assert_eq!(
        ids(&listing),
        ["email", "id-numbers", "phone-numbers", "bank-cards"]
    );
    let result = run(&harness, &["pii", "redact"], text).ok().json();
    assert_eq!(result, json!({ "text": text, "triggeredFilters": [] }));

    // A second plugin gets a fresh id: deleted ids are never reused.
    let again = run(
        &harness,
        &["pii", "add", "--file", &plugin, "--description", "Again"],
        "",
    )
    .ok();
    assert!(again.stdout().contains("added plugin-2"), "{again}");

    // Unknown filters are a typed error with a hint.
    let missing = run(
        &harness,
        &["pii", "delete", "plugin-1", "--bot", "helper"],
        "",
    );
    assert_eq!(missing.code(), Some(1), "{missing}");
    assert!(
        missing.stderr().contains("no filter `plugin-1`"),
        "{missing}"
    );
    assert!(
        missing
            .stderr()
            .contains("hint: `paddock pii list --bot helper`"),
        "{missing}"
    );

    // A source the sandbox refuses changes nothing.
    let importing = write_plugin(
        &harness,
        "import.ts",
        "import fs from 'fs';\nexport default (t: string) => t;\n",
    );
    let refused = run(
        &harness,
        &[
            "pii",
            "add",
            "--file",
            &importing,
            "--description",
            "Reads files",
        ],
        "",
    );
    assert_eq!(refused.code(), Some(1), "{refused}");
    assert!(refused.stderr().contains("plugin rejected"), "{refused}");
    let listing = run(&harness, &["pii", "list", "--json"], "").ok().json();
    assert_eq!(ids(&listing).last().map(String::as_str), Some("plugin-2"));
}

#[test]
fn the_playground_limits_input_and_output_and_stores_nothing() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    let before = run(&harness, &["pii", "list", "--bot", "owner", "--json"], "")
        .ok()
        .json();

    let result = run(
        &harness,
        &["pii", "test", "--bot", "owner", "--json"],
        "write to ana@example.com",
    )
    .ok()
    .json();
    assert_eq!(
        result,
        json!({ "text": "write to [EMAIL]", "triggeredFilters": ["email"] })
    );
    let plain = run(
        &harness,
        &["pii", "test", "--bot", "owner"],
        "write to ana@example.com",
    )
    .ok();
    assert_eq!(plain.stdout(), "write to [EMAIL]");
    assert!(plain.stderr().contains("triggered: email"), "{plain}");

    // Exactly 1024 UTF-8 bytes pass (multi-byte characters count as bytes); 1025 do not.
    let at_limit = format!("{}{}", "é".repeat(500), "x".repeat(24));
    assert_eq!(at_limit.len(), 1024);
    let passed = run(&harness, &["pii", "test", "--bot", "owner"], &at_limit).ok();
    assert_eq!(passed.stdout(), at_limit);
    let over = format!("{at_limit}y");
    let refused = run(&harness, &["pii", "test", "--bot", "owner"], &over);
    assert_eq!(refused.code(), Some(1), "{refused}");
    assert!(refused.stderr().contains("1025 bytes"), "{refused}");
    assert!(refused.stderr().contains("1024 UTF-8 bytes"), "{refused}");
    assert!(refused.stderr().contains("hint:"), "{refused}");
    assert!(!refused.stderr().contains("éé"), "{refused}");
    assert_eq!(refused.stdout(), "");

    // Output over 1024 bytes is refused whole: no partial output.
    let plugin = write_plugin(
        &harness,
        "triple.js",
        "export default (text) => ({ text: text + text + text, triggered: true });\n",
    );
    run(
        &harness,
        &[
            "pii",
            "add",
            "--bot",
            "owner",
            "--file",
            &plugin,
            "--description",
            "Triples",
        ],
        "",
    )
    .ok();
    let small = run(&harness, &["pii", "test", "--bot", "owner"], "abc").ok();
    assert_eq!(small.stdout(), "abcabcabc");
    let grows = run(
        &harness,
        &["pii", "test", "--bot", "owner"],
        &"z".repeat(400),
    );
    assert_eq!(grows.code(), Some(1), "{grows}");
    assert!(grows.stderr().contains("1200 bytes"), "{grows}");
    assert!(grows.stderr().contains("no output is shown"), "{grows}");
    assert_eq!(grows.stdout(), "");

    // Playground runs are transient: only the `add` changed the revision.
    let after = run(&harness, &["pii", "list", "--bot", "owner", "--json"], "")
        .ok()
        .json();
    assert_eq!(
        after["revision"].as_u64(),
        before["revision"].as_u64().map(|revision| revision + 1)
    );
}

#[test]
fn a_throwing_plugin_blocks_with_an_error_that_holds_no_text() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness
        .run(["--log-level", "trace", "daemon", "start"])
        .unwrap()
        .success()
        .unwrap();
    harness.set_env("PADDOCK_BOT_ID", "helper");
    let plugin = write_plugin(&harness, "throws.ts", THROWING_PLUGIN);
    run(
        &harness,
        &["pii", "add", "--file", &plugin, "--description", "Throws"],
        "",
    )
    .ok();

    let secret = "the launch code is tangerine-7731";
    for args in [
        &["pii", "redact"][..],
        &["pii", "test", "--bot", "helper"][..],
    ] {
        let blocked = run(&harness, args, secret);
        assert_eq!(blocked.code(), Some(1), "{blocked}");
        assert_eq!(
            blocked.stdout(),
            "",
            "nothing is printed for a blocked text"
        );
        assert!(
            blocked
                .stderr()
                .contains("filter `plugin-1` failed: it threw an exception; the text was blocked"),
            "{blocked}"
        );
        assert!(
            blocked
                .stderr()
                .contains("hint: nothing was sent; fix the plugin, or disable it"),
            "{blocked}"
        );
        assert!(!blocked.stderr().contains("tangerine"), "{blocked}");
    }

    // The daemon is unaffected: other bots run, and the owner can switch the plugin off.
    let other = run(&harness, &["pii", "redact", "--bot", "other"], secret)
        .ok()
        .json();
    assert_eq!(other["text"], secret);
    run(
        &harness,
        &["pii", "disable", "plugin-1", "--bot", "helper"],
        "",
    )
    .ok();
    let passes = run(&harness, &["pii", "redact"], secret).ok().json();
    assert_eq!(passes, json!({ "text": secret, "triggeredFilters": [] }));

    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    let log = daemon_log(&harness);
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "the log really is verbose"
    );
    assert!(!log.contains("tangerine"), "text in the daemon log:\n{log}");
    assert!(
        !log.contains("refusing to handle"),
        "plugin source in the log:\n{log}"
    );
}

#[test]
fn a_microtask_plugin_fails_in_time_and_the_daemon_still_stops_on_sigterm() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    let daemon = harness.spawn_foreground(&[]).unwrap();
    daemon.wait_ready().unwrap();
    let secret = "the launch code is tangerine-7731";
    for (bot, source) in [
        ("spinner", MICROTASK_PLUGIN),
        ("pending", PENDING_MICROTASK_PLUGIN),
    ] {
        let plugin = write_plugin(&harness, &format!("{bot}.ts"), source);
        run(
            &harness,
            &[
                "pii",
                "add",
                "--bot",
                bot,
                "--file",
                &plugin,
                "--description",
                "Spins",
            ],
            "",
        )
        .ok();
        // A generous deadline that catches a hang; the run itself stops at its limits.
        let blocked = harness
            .run_with_stdin_within(
                ["pii", "redact", "--bot", bot],
                secret.as_bytes(),
                Duration::from_secs(30),
            )
            .unwrap();
        assert_eq!(blocked.code(), Some(1), "{blocked}");
        assert_eq!(
            blocked.stdout(),
            "",
            "nothing is printed for a blocked text"
        );
        let stderr = blocked.stderr();
        assert!(
            stderr.contains("filter `plugin-1` failed: it exceeded its time limit")
                || stderr.contains("filter `plugin-1` failed: it ran more than"),
            "{blocked}"
        );
        assert!(stderr.contains("; the text was blocked"), "{blocked}");
        assert!(!stderr.contains("tangerine"), "{blocked}");
    }
    // The daemon still answers.
    let other = run(&harness, &["pii", "redact", "--bot", "other"], secret)
        .ok()
        .json();
    assert_eq!(other["text"], secret);

    daemon.terminate();
    let status = harness
        .wait_child(daemon.pid, Duration::from_secs(30))
        .unwrap();
    assert!(status.success(), "stopped by SIGTERM, not killed: {status}");
    assert!(
        !daemon.log_text().contains("tangerine"),
        "{}",
        daemon.log_text()
    );
}

#[test]
fn one_bots_corrupted_pipeline_does_not_affect_another() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    let plugin = write_plugin(&harness, "wren.ts", WREN_PLUGIN);
    for bot in ["broken", "healthy"] {
        run(
            &harness,
            &[
                "pii",
                "add",
                "--bot",
                bot,
                "--file",
                &plugin,
                "--description",
                "Wren",
            ],
            "",
        )
        .ok();
    }
    let garbage = "{\"schemaVersion\": 1, \"filters\": [ hunter2-garbage";
    std::fs::write(pipelines_file(&harness, "broken"), garbage).unwrap();
    let restart = harness.run(["daemon", "restart"]).unwrap();
    assert_eq!(restart.code(), Some(0), "{restart}");

    for args in [
        &["pii", "list", "--bot", "broken"][..],
        &["pii", "redact", "--bot", "broken"][..],
    ] {
        let failed = run(&harness, args, "Project Wren");
        assert_eq!(failed.code(), Some(1), "{failed}");
        assert_eq!(failed.stdout(), "", "a broken pipeline sends nothing");
        assert!(
            failed.stderr().contains("pipelines of bot `broken` at `"),
            "{failed}"
        );
        assert!(failed.stderr().contains("pipelines.json"), "{failed}");
        assert!(
            failed.stderr().contains("hint: other bots are unaffected"),
            "{failed}"
        );
        assert!(!failed.stderr().contains("hunter2"), "{failed}");
    }

    let listing = run(&harness, &["pii", "list", "--bot", "healthy", "--json"], "")
        .ok()
        .json();
    assert_eq!(ids(&listing).last().map(String::as_str), Some("plugin-1"));
    let result = run(
        &harness,
        &["pii", "redact", "--bot", "healthy"],
        "Project Wren",
    )
    .ok()
    .json();
    assert_eq!(
        result,
        json!({ "text": "[INTERNAL_PROJECT]", "triggeredFilters": ["plugin-1"] })
    );
    // The broken file is left for its owner to fix.
    assert_eq!(
        std::fs::read_to_string(pipelines_file(&harness, "broken")).unwrap(),
        garbage
    );
}

#[test]
fn redact_defaults_runs_without_a_daemon() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let result = run(
        &harness,
        &["pii", "redact", "--defaults"],
        "card 4111 1111 1111 1111, mail ana@example.com\n",
    )
    .ok();
    let value = result.json();
    assert_eq!(
        value,
        json!({
            "text": "card [CARD], mail [EMAIL]\n",
            "triggeredFilters": ["email", "bank-cards"],
        }),
        "{result}"
    );
    // One JSON object on one line, keys in this order, for scripts.
    assert!(
        result.stdout().starts_with("{\"text\":") && result.stdout().ends_with("]}\n"),
        "{result}"
    );
    assert!(!harness.paths().socket.exists(), "no daemon was started");

    let clean = run(&harness, &["pii", "redact", "--defaults"], "nothing to see")
        .ok()
        .json();
    assert_eq!(
        clean,
        json!({ "text": "nothing to see", "triggeredFilters": [] })
    );
    let both = run(
        &harness,
        &["pii", "redact", "--defaults", "--bot", "helper"],
        "",
    );
    assert_eq!(both.code(), Some(2), "{both}");
}

#[test]
fn redact_defaults_handles_two_mebibytes_of_card_numbers() {
    let harness = DaemonHarness::new(BIN).unwrap();
    // The stdin limit, filled with card numbers in the layouts that used to be quadratic.
    let limit = 2 * 1024 * 1024;
    for card in ["4111 1111 1111 1111 ", "4111-1111-1111-1111 "] {
        let input = card.repeat(limit / card.len());
        let cards = limit / card.len();
        // A generous deadline that catches a hang, not a speed requirement.
        let result = harness
            .run_with_stdin_within(
                ["pii", "redact", "--defaults"],
                input.as_bytes(),
                Duration::from_secs(60),
            )
            .unwrap();
        assert_eq!(result.code(), Some(0), "{card:?}: {}", result.stderr());
        let value: Value = serde_json::from_str(result.stdout().trim()).unwrap();
        let text = value["text"].as_str().unwrap();
        assert_eq!(text.matches("[CARD]").count(), cards, "{card:?}");
        assert!(!text.contains("4111"), "{card:?}: a card survived");
        assert_eq!(value["triggeredFilters"], json!(["bank-cards"]));
    }
}

#[test]
fn a_missing_or_invalid_bot_gives_a_hint() {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    let plugin = write_plugin(&harness, "wren.ts", WREN_PLUGIN);
    for args in [
        &["pii", "list"][..],
        &["pii", "add", "--file", &plugin, "--description", "Wren"][..],
        &["pii", "redact"][..],
    ] {
        let failed = run(&harness, args, "text");
        assert_eq!(failed.code(), Some(2), "{failed}");
        assert!(failed.stderr().contains("needs a bot"), "{failed}");
        assert!(failed.stderr().contains("hint: pass `--bot B`"), "{failed}");
        assert!(failed.stderr().contains("PADDOCK_BOT_ID"), "{failed}");
    }
    let redact = run(&harness, &["pii", "redact"], "text");
    assert!(redact.stderr().contains("`--defaults`"), "{redact}");

    // Owner commands never take the bot from an agent session's environment.
    harness.set_env("PADDOCK_BOT_ID", "helper");
    for args in [
        &["pii", "disable", "email"][..],
        &["pii", "enable", "email"][..],
        &["pii", "delete", "email"][..],
        &["pii", "test"][..],
    ] {
        let failed = run(&harness, args, "text");
        assert_eq!(failed.code(), Some(2), "{failed}");
        assert!(failed.stderr().contains("needs `--bot B`"), "{failed}");
        assert!(failed.stderr().contains("hint: owner commands"), "{failed}");
    }

    harness.set_env("PADDOCK_BOT_ID", "../escape");
    let bad_env = run(&harness, &["pii", "list"], "");
    assert_eq!(bad_env.code(), Some(2), "{bad_env}");
    assert!(
        bad_env.stderr().contains("`PADDOCK_BOT_ID` is not valid"),
        "{bad_env}"
    );
    for bad in ["a/b", "", &"x".repeat(65), "..", "bot id"] {
        let failed = run(&harness, &["pii", "list", "--bot", bad], "");
        assert_eq!(failed.code(), Some(2), "{bad:?}: {failed}");
    }
    let longest = "x".repeat(64);
    let accepted = run(&harness, &["pii", "list", "--bot", &longest], "");
    assert_eq!(accepted.code(), Some(3), "valid, but no daemon: {accepted}");
}

#[test]
fn without_a_daemon_commands_exit_3_with_a_hint() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let plugin = write_plugin(&harness, "wren.ts", WREN_PLUGIN);
    for args in [
        &["pii", "list", "--bot", "helper"][..],
        &[
            "pii",
            "add",
            "--bot",
            "helper",
            "--file",
            &plugin,
            "--description",
            "Wren",
        ][..],
        &["pii", "disable", "email", "--bot", "helper"][..],
        &["pii", "test", "--bot", "helper"][..],
        &["pii", "redact", "--bot", "helper"][..],
    ] {
        let failed = run(&harness, args, "text");
        assert_eq!(failed.code(), Some(3), "{failed}");
        assert!(
            failed.stderr().contains("paddock daemon is not running"),
            "{failed}"
        );
        assert!(
            failed
                .stderr()
                .contains("hint: start it with `paddock daemon start`"),
            "{failed}"
        );
    }
}
