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
    use paddock_agents::testing::ConformanceHost;
    let host = pi_host();
    let (session, pid) = host.running().await;
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
    assert!(!common::cmdline(pid).contains("vch_"));
    let environ = common::Environ::of(pid);
    assert!(
        environ
            .var("ANTHROPIC_API_KEY")
            .is_some_and(|key| key.starts_with("vch_"))
    );
    assert!(!environ.contains(common::REAL_KEY));
    host.release_gate();
    common::stop(&session).await;
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
