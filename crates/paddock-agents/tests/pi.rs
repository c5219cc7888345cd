//! The conformance suite against the real `pi` CLI (npm `@mariozechner/pi-coding-agent`,
//! installed by `scripts/setup --dev`) in RPC mode, reaching the scripted Anthropic server
//! through the credential proxy with only a voucher.
#![cfg(test)]

mod common;

use common::{ScriptedHost, npm_bin};
use paddock_agents::testing;
use paddock_agents::*;

fn pi_host() -> ScriptedHost {
    ScriptedHost::new(BackendId::Pi, ModelApi::AnthropicMessages, npm_bin("pi"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_two_turns() {
    let host = pi_host();
    testing::two_turns(&host).await.unwrap();
    host.assert_only_real_key_upstream();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_steers_mid_turn() {
    let host = pi_host();
    testing::steer_mid_turn(&host).await.unwrap();
    // The steered text reached the model inside the same run.
    let requests = host.scripted_requests();
    assert!(
        requests
            .iter()
            .any(|request| request.last_user_text().contains("and also this")),
        "{requests:?}"
    );
}

/// Pi's isolated models file names the voucher's variable; neither it nor Pi's arguments hold
/// the voucher.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_config_holds_no_voucher() {
    use paddock_agents::testing::{ConformanceHost, ScriptTurn};
    let host = pi_host();
    let session = host
        .open(vec![ScriptTurn::GatedText("later".into())])
        .await
        .unwrap();
    session.start(Command::user("c1", "go")).await;
    common::until(|| host.asked()).await;
    let launches = host.root.path().join("launches");
    let launch = std::fs::read_dir(&launches)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let models = std::fs::read_to_string(launch.path().join("pi-agent/models.json")).unwrap();
    assert!(
        models.contains("\"apiKey\":\"ANTHROPIC_API_KEY\""),
        "{models}"
    );
    assert!(!models.contains("vch_"), "{models}");
    let pid = session.snapshot().await.pid.unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains("vch_"));
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    assert!(String::from_utf8_lossy(&environ).contains("ANTHROPIC_API_KEY=vch_"));
    assert!(!String::from_utf8_lossy(&environ).contains(common::REAL_KEY));
    host.release_gate();
    session
        .stop(StopRequest {
            reason: "test".into(),
            force_after: std::time::Duration::from_secs(5),
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_interrupt() {
    testing::interrupt(&pi_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_crash_closes_once() {
    testing::crash(&pi_host()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_stop_fails_the_running_command() {
    testing::stop(&pi_host()).await.unwrap();
}
