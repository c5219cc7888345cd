//! How long a `notifications/tools/list_changed` takes to reach an HTTP listener
//! (`subscriptions/listen`, protocol 2026-07-28) after a `setToolEnabled` changes its session's
//! tool list: from sending the call to reading the notification off the stream. No peer offers
//! this over stateless HTTP, so it is reported on its own.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::json;

use crate::probe::{self, Target};

const SESSION: &str = "bench-listener";
const DEADLINE: Duration = Duration::from_secs(10);

/// Latencies of `rounds` changes, in milliseconds, sorted.
pub(crate) fn measure(url: &str, token: &str, rounds: usize) -> anyhow::Result<Vec<f64>> {
    let target = Target::parse(url)?;
    let mut stream = TcpStream::connect(&target.authority).context("connect the listener")?;
    stream.set_read_timeout(Some(DEADLINE))?;
    let body = json!({
        "jsonrpc": "2.0",
        "id": "bench-listen",
        "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            },
            "notifications": { "toolsListChanged": true }
        }
    })
    .to_string();
    write!(
        stream,
        "POST {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nx-paddock-session-id: {SESSION}\r\nContent-Length: {}\r\n\r\n{body}",
        target.path,
        target.authority,
        body.len()
    )?;
    let mut seen = String::new();
    wait_for(
        &mut stream,
        &mut seen,
        "notifications/subscriptions/acknowledged",
        1,
    )?;
    let authorization = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-06-18"),
        ("Authorization", authorization.as_str()),
        ("x-paddock-session-id", SESSION),
    ];
    let mut latencies = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let call = json!({
            "jsonrpc": "2.0",
            "id": round,
            "method": "tools/call",
            "params": {
                "name": "setToolEnabled",
                "arguments": { "toolName": "clipboard", "enabled": round % 2 == 0, "sessionUuid": SESSION }
            }
        })
        .to_string();
        let started = Instant::now();
        let answer = probe::send(
            &target,
            &probe::Request {
                method: "POST",
                headers: &headers,
                body: &call,
            },
            DEADLINE,
        )?;
        if answer.status != 200 {
            bail!("setToolEnabled answered HTTP {}", answer.status);
        }
        wait_for(
            &mut stream,
            &mut seen,
            "notifications/tools/list_changed",
            round + 1,
        )?;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    latencies.sort_by(f64::total_cmp);
    Ok(latencies)
}

/// Reads the stream until `needle` has appeared `count` times in all.
fn wait_for(
    stream: &mut TcpStream,
    seen: &mut String,
    needle: &str,
    count: usize,
) -> anyhow::Result<()> {
    let mut buffer = [0u8; 4096];
    while seen.matches(needle).count() < count {
        let read = stream
            .read(&mut buffer)
            .with_context(|| format!("waiting for {needle}"))?;
        if read == 0 {
            bail!("the listen stream ended before {needle}");
        }
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
    }
    Ok(())
}

/// The value at `quantile` (0..=1) of sorted `values`.
pub(crate) fn percentile(values: &[f64], quantile: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let index = ((values.len() - 1) as f64 * quantile).round() as usize;
    values[index.min(values.len() - 1)]
}
