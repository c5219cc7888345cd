//! The daemon's device pool as a benchmark sees it over MCP: waiting until `listDevices` shows
//! the pool settled between timed operations, and checking that an answer bound a device to a
//! session. Shared by the benchmarks that acquire devices (`devices`, `tasks`).

use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{Value, json};

use crate::mcp_client::{McpClient, ToolAnswer};

/// How long the pool may take to settle (boot or reset devices) between iterations.
const POOL_TIMEOUT: Duration = Duration::from_secs(120);
const POOL_POLL: Duration = Duration::from_millis(20);

/// The answer binds a device to `session`.
pub(crate) fn check_bound(answer: &ToolAnswer, session: &str) -> anyhow::Result<()> {
    let structured = answer.structured();
    if structured["sessionUuid"] != json!(session) || !structured["device"]["id"].is_string() {
        bail!(
            "expected a device bound to session `{session}`, got {}",
            answer.result
        );
    }
    Ok(())
}

/// Waits until the pool is settled: at least `web_warm` devices warm and none resetting.
pub(crate) fn wait_for_warm_pool(client: &mut McpClient, web_warm: usize) -> anyhow::Result<()> {
    wait_for_pool(client, "a settled warm pool", |devices| {
        devices.iter().all(|(_, state)| state != "resetting")
            && devices.iter().filter(|(_, state)| state == "warm").count() >= web_warm
    })
}

/// Polls `listDevices` until `condition` holds for the (id, state) list.
pub(crate) fn wait_for_pool(
    client: &mut McpClient,
    what: &str,
    condition: impl Fn(&[(String, String)]) -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + POOL_TIMEOUT;
    loop {
        let answer = client.call_tool("listDevices", &json!({}), None)?;
        let devices = device_states(answer.structured());
        if condition(&devices) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "the device pool did not reach {what} within {}s; it lists {devices:?}",
                POOL_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(POOL_POLL);
    }
}

fn device_states(structured: &Value) -> Vec<(String, String)> {
    structured["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|device| {
            (
                device["id"].as_str().unwrap_or_default().to_owned(),
                device["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(result: Value) -> ToolAnswer {
        ToolAnswer {
            elapsed: Duration::ZERO,
            result,
        }
    }

    #[test]
    fn checks_bindings() {
        let bound = answer(json!({ "structuredContent": {
            "sessionUuid": "s-1", "device": { "id": "web-1" },
        } }));
        check_bound(&bound, "s-1").unwrap();
        assert!(check_bound(&bound, "s-2").is_err());
        assert!(check_bound(&answer(json!({ "content": [] })), "s-1").is_err());
    }

    #[test]
    fn reads_device_states() {
        let listed = json!({ "devices": [
            { "id": "web-1", "state": "warm" },
            { "id": "web-2", "state": "resetting" },
        ] });
        assert_eq!(
            device_states(&listed),
            vec![
                ("web-1".to_owned(), "warm".to_owned()),
                ("web-2".to_owned(), "resetting".to_owned())
            ]
        );
        assert!(device_states(&json!({})).is_empty());
    }
}
