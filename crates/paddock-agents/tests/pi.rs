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
    testing::steer_mid_turn(&pi_host()).await.unwrap();
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
