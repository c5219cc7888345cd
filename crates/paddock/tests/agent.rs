//! `paddock agent` through the real binary and the real agent CLIs (hosted by the daemon the
//! command starts), against the scripted model server, with the key behind the credential
//! proxy.
#![cfg(test)]

use paddock_testkit::DaemonHarness;
use paddock_testkit::model::{ScriptedModel, Turn};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
const KEY: &str = "sk-ant-cli-test-key";

fn harness_with_claude() -> DaemonHarness {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    harness
        .with_agent_clis()
        .unwrap()
        .set_env("TEST_MODEL_KEY", KEY);
    harness
}

#[test]
fn agent_run_prints_the_answer_and_json_events() {
    let harness = harness_with_claude();
    let model = ScriptedModel::start(vec![
        Turn::streamed("The answer is forty-two."),
        Turn::text("Second run."),
    ])
    .unwrap();
    let upstream = model.base_url();
    let run = harness
        .run([
            "agent",
            "run",
            "--upstream",
            &upstream,
            "--key-from",
            "env:TEST_MODEL_KEY",
            "what is the answer?",
        ])
        .unwrap()
        .success()
        .unwrap();
    assert!(run.stdout().contains("The answer is forty-two."), "{run}");
    assert!(run.stderr().contains("[c1: Completed]"), "{run}");

    let json = harness
        .run([
            "agent",
            "run",
            "--json",
            "--upstream",
            &upstream,
            "--key-from",
            "env:TEST_MODEL_KEY",
            "again",
        ])
        .unwrap()
        .success()
        .unwrap();
    let kinds: Vec<String> = json
        .stdout()
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for kind in [
        "command_accepted",
        "turn_started",
        "session_started",
        "assistant_message_completed",
        "turn_completed",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "{kind} missing from {kinds:?}"
        );
    }
    for request in model.scripted_requests() {
        assert_eq!(
            request.header("x-api-key"),
            Some(KEY),
            "the upstream sees the real key"
        );
    }
    assert!(!run.stdout().contains(KEY) && !run.stderr().contains(KEY));
}

/// A real HTTPS upstream: the scripted server speaks TLS with a certificate from a CA made for
/// the test, which the proxy trusts only because `SSL_CERT_FILE` names it.
#[test]
fn agent_run_reaches_an_https_upstream_trusted_through_ssl_cert_file() {
    let mut harness = harness_with_claude();
    let model = ScriptedModel::start_tls(vec![Turn::streamed("Forty-two, over TLS.")]).unwrap();
    let upstream = model.base_url();
    assert!(upstream.starts_with("https://127.0.0.1:"), "{upstream}");
    harness.set_env("SSL_CERT_FILE", model.ca_pem_path().unwrap());
    let run = harness
        .run([
            "agent",
            "run",
            "--backend",
            "claude",
            "--upstream",
            &upstream,
            "--key-from",
            "env:TEST_MODEL_KEY",
            "what is the answer?",
        ])
        .unwrap()
        .success()
        .unwrap();
    assert!(run.stdout().contains("Forty-two, over TLS."), "{run}");
    assert!(run.stderr().contains("[c1: Completed]"), "{run}");
    let scripted = model.scripted_requests();
    assert_eq!(scripted.len(), 1, "{run}");
    assert_eq!(
        scripted[0].header("x-api-key"),
        Some(KEY),
        "the upstream sees the real key"
    );
    assert!(!run.stdout().contains(KEY) && !run.stderr().contains(KEY));
}

#[test]
fn agent_refuses_to_hand_over_the_key() {
    let harness = harness_with_claude();
    let leak = harness
        .run([
            "agent",
            "run",
            "--upstream",
            "http://127.0.0.1:9",
            "--key-from",
            "env:TEST_MODEL_KEY",
            "--pass-env",
            "TEST_MODEL_KEY",
            "hi",
        ])
        .unwrap();
    assert_eq!(leak.code(), Some(1));
    assert!(
        leak.stderr().contains("would hand the agent the real key"),
        "{leak}"
    );
}

/// Every backend with the tests' pinned CLIs on PATH: installed with its version and declared
/// capabilities; Cursor (not installable here) is reported missing with an install hint.
#[test]
fn agent_probe_lists_every_backend() {
    let harness = harness_with_claude();
    let table = harness.run(["agent", "probe"]).unwrap().success().unwrap();
    let expected = [
        ("claude", "2.1.70", "session/process/safe_boundary_queue"),
        ("codex", "0.171.0", "session/process/safe_boundary_queue"),
        ("opencode", "1.18.33", "session/service/steer"),
        ("pi", "0.73.1", "session/process/steer"),
    ];
    for (backend, version, capabilities) in expected {
        assert!(
            table.stdout().lines().any(|line| line.starts_with(backend)
                && line.contains("installed")
                && line.contains(version)
                && line.contains(capabilities)),
            "{backend}: {table}"
        );
    }
    let json = harness
        .run(["agent", "probe", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let (backends, rest): (Vec<serde_json::Value>, Vec<serde_json::Value>) = json
        .stdout()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .partition(|line| line.get("backend").is_some());
    assert_eq!(backends.len(), 5, "{json}");
    // One more line: whether launches can be sandboxed (this machine's kernel has Landlock).
    assert_eq!(rest.len(), 1, "{json}");
    let sandbox = &rest[0]["sandbox"];
    assert_eq!(sandbox["kind"], "landlock", "{json}");
    assert_eq!(sandbox["available"], true, "{json}");
    assert!(
        sandbox["abi"].as_u64().is_some_and(|abi| abi >= 1),
        "{json}"
    );
    assert!(
        table
            .stdout()
            .lines()
            .any(|line| line.starts_with("sandbox: available (Landlock ABI ")),
        "{table}"
    );
    for (backend, version, _) in expected {
        assert!(
            backends.iter().any(|b| b["backend"] == backend
                && b["installed"] == true
                && b["version"] == version),
            "{backend}: {json}"
        );
    }
    let cursor = backends
        .iter()
        .find(|b| b["backend"] == "cursor")
        .expect("cursor listed");
    assert_eq!(cursor["installed"], false, "{json}");
    assert_eq!(cursor["midTurnDelivery"], "steer", "{json}");
    assert!(
        cursor["problem"]
            .as_str()
            .is_some_and(|problem| problem.contains("cursor-agent")),
        "{json}"
    );
}

/// Runs one prompt through `paddock agent run --backend <backend>`, the upstream given by the
/// environment variable for the backend's API, and checks the answer and that only the real key
/// reached the upstream.
fn run_backend(
    backend: &str,
    upstream_env: &str,
    key_env: &str,
    model: &ScriptedModel,
    extra: &[&str],
) {
    let mut harness = harness_with_claude();
    harness
        .set_env(upstream_env, model.base_url())
        .set_env(key_env, KEY);
    let mut args = vec!["agent", "run", "--backend", backend];
    args.extend_from_slice(extra);
    args.push("what is the answer?");
    let run = harness.run(args).unwrap().success().unwrap();
    assert!(run.stdout().contains("The answer is forty-two."), "{run}");
    assert!(run.stderr().contains("[c1: Completed]"), "{run}");
    assert!(!run.stdout().contains(KEY) && !run.stderr().contains(KEY));
    let requests = model.scripted_requests();
    assert!(!requests.is_empty());
    for request in requests {
        let key = request
            .header("x-api-key")
            .or_else(|| request.header("authorization"))
            .unwrap_or_default()
            .trim_start_matches("Bearer ")
            .to_owned();
        assert_eq!(key, KEY, "the upstream sees the real key");
    }
}

#[test]
fn agent_run_drives_pi() {
    let model = ScriptedModel::start(vec![Turn::streamed("The answer is forty-two.")]).unwrap();
    run_backend(
        "pi",
        "PADDOCK_ANTHROPIC_UPSTREAM",
        "ANTHROPIC_API_KEY",
        &model,
        &[],
    );
}

#[test]
fn agent_run_drives_codex() {
    let model = ScriptedModel::start(vec![Turn::streamed("The answer is forty-two.")]).unwrap();
    // Codex's own default model is one the scripted server does not know.
    run_backend(
        "codex",
        "PADDOCK_OPENAI_UPSTREAM",
        "OPENAI_API_KEY",
        &model,
        &["--model", "scripted-model"],
    );
}

#[test]
fn agent_run_drives_opencode() {
    let model = ScriptedModel::start(vec![Turn::streamed("The answer is forty-two.")]).unwrap();
    run_backend(
        "opencode",
        "PADDOCK_OPENAI_UPSTREAM",
        "OPENAI_API_KEY",
        &model,
        &["--model", "scripted-model"],
    );
}
