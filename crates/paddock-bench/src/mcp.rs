//! `paddock-bench mcp`: an authenticated stateless MCP `tools/call` on the daemon, next to the
//! official TypeScript SDK's stateless Streamable HTTP server and a bare axum hello-world, all
//! measured in the same run with the same load.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::LoadArgs;
use crate::daemon::{PrivateDaemon, paddock_binary};
use crate::ingress::{EXPECTED_HEARTBEAT, spawn_bare_axum};
use crate::node_package::installed_version;
use crate::probe::{self, Target};
use crate::smoke::{self, Mode};
use crate::ts_peer::{self, TsPeer};
use crate::wrk::{self, Script, Summary};

/// The request both MCP servers get: a stateless `tools/call` of a tool that does no work.
const TOOLS_CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"listDevices","arguments":{}}}"#;

const MCP_HEADERS: [(&str, &str); 3] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", "2025-06-18"),
];

/// What a successful `listDevices` answer contains on both servers.
const EXPECTED_MCP_TEXT: &str = r#""devices":[]"#;

const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct McpArgs {
    #[command(flatten)]
    load: LoadArgs,
    /// The TypeScript MCP SDK peer (default: `bench/peers/ts-mcp-server` of this checkout).
    #[arg(long)]
    ts_server_dir: Option<PathBuf>,
    /// The node binary that runs the peer.
    #[arg(long, default_value = "node")]
    node: PathBuf,
}

/// One measured server: where wrk sends load, with which script.
#[derive(Debug)]
struct Server {
    name: &'static str,
    url: String,
    /// The request script for measured runs; `None` is a plain `GET`.
    script: Option<PathBuf>,
    /// The same request, also counting answers that lack the expected text.
    check_script: PathBuf,
    runs: Vec<Summary>,
}

pub(crate) async fn run(args: McpArgs, mode: Mode) -> anyhow::Result<()> {
    let paddock = paddock_binary(args.load.paddock.clone())?;
    if mode.is_smoke() {
        return smoke(&paddock);
    }
    wrk::check_installed()?;
    let ts_dir = args
        .ts_server_dir
        .clone()
        .unwrap_or_else(ts_peer::default_dir);
    // The peer first: a missing `node_modules` should fail before anything else starts.
    let ts = TsPeer::start(&args.node, &ts_dir)?;
    // No warm devices: listDevices answers `[]`, like the peer, whatever Chromium is doing.
    let daemon = PrivateDaemon::start(&paddock, &["--web-warm", "0"])?;
    let bare_port = spawn_bare_axum().await?;
    let scripts = daemon.dir.path();

    let mcp_script = Script {
        method: Some("POST".to_owned()),
        body: Some(TOOLS_CALL.to_owned()),
        headers: MCP_HEADERS
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        ..Script::default()
    };
    let paddock_script = Script {
        bearer_token_file: Some(daemon.token_file()),
        ..mcp_script.clone()
    };
    let checking = |script: &Script, expected: &str| Script {
        expect_body: Some(expected.to_owned()),
        ..script.clone()
    };
    let mut servers = [
        Server {
            name: "bare axum",
            url: format!("http://127.0.0.1:{bare_port}/heartbeat"),
            script: None,
            check_script: checking(&Script::default(), EXPECTED_HEARTBEAT)
                .write(&scripts.join("bare-check.lua"))?,
            runs: Vec::new(),
        },
        Server {
            name: "ts-sdk (node)",
            url: ts.url(),
            script: Some(mcp_script.write(&scripts.join("ts.lua"))?),
            check_script: checking(&mcp_script, EXPECTED_MCP_TEXT)
                .write(&scripts.join("ts-check.lua"))?,
            runs: Vec::new(),
        },
        Server {
            name: "paddock daemon",
            url: daemon.url("/mcp")?,
            script: Some(paddock_script.write(&scripts.join("paddock.lua"))?),
            check_script: checking(&paddock_script, EXPECTED_MCP_TEXT)
                .write(&scripts.join("paddock-check.lua"))?,
            runs: Vec::new(),
        },
    ];

    // A benchmark of error answers is worthless: check one answer of each server by hand, then
    // every answer of a short wrk run with the measured request.
    probe_heartbeat(&servers[0].url)?;
    probe_tools_call(&servers[1].url, None).context("the TypeScript MCP peer")?;
    let token = paddock_client::token::read_token_file(&daemon.token_file())?;
    probe_tools_call(&servers[2].url, Some(token.expose_secret())).context("the paddock daemon")?;
    drop(token);
    let load = wrk::Load {
        threads: args.load.threads,
        connections: args.load.connections,
        duration: Duration::from_secs(args.load.duration),
    };
    for server in &servers {
        let check = wrk::run(&load.check(), &server.url, Some(&server.check_script))?;
        if check.non_2xx > 0 || check.unexpected_bodies != Some(0) {
            bail!(
                "{}: the check run got {} non-2xx answers and {} answers without the expected result",
                server.name,
                check.non_2xx,
                check
                    .unexpected_bodies
                    .map_or_else(|| "an unknown number of".to_owned(), |n| n.to_string())
            );
        }
    }

    // Warm every server, then alternate so that drift affects all alike.
    for server in &servers {
        wrk::run(&load.warmup(), &server.url, server.script.as_deref())?;
    }
    for _ in 0..args.load.rounds {
        for server in &mut servers {
            let summary = wrk::run(&load, &server.url, server.script.as_deref())?;
            if summary.non_2xx > 0 {
                bail!(
                    "{} answered {} non-2xx responses under load",
                    server.name,
                    summary.non_2xx
                );
            }
            server.runs.push(summary);
        }
    }
    let [bare, ts_sdk, ours] = [
        Summary::best(&servers[0].runs)?,
        Summary::best(&servers[1].runs)?,
        Summary::best(&servers[2].runs)?,
    ];

    println!(
        "mcp: authenticated stateless tools/call `listDevices`, {} connections, {} threads, {}s x {} rounds (best round)",
        args.load.connections, args.load.threads, args.load.duration, args.load.rounds
    );
    println!(
        "peers: @modelcontextprotocol/sdk {} stateless Streamable HTTP with JSON responses (no auth); bare axum GET /heartbeat",
        installed_version(&ts_dir, "@modelcontextprotocol/sdk")
    );
    wrk::print_table(&[
        (servers[0].name, &bare),
        (servers[1].name, &ts_sdk),
        (servers[2].name, &ours),
    ]);
    let versus_ts = ours.requests_per_sec / ts_sdk.requests_per_sec;
    let versus_bare = ours.requests_per_sec / bare.requests_per_sec;
    println!(
        "ratio paddock/ts-sdk throughput:    {versus_ts:>7.2}x  (goal >= 50x: {})",
        verdict(versus_ts >= 50.0)
    );
    println!(
        "ratio paddock/bare-axum throughput: {versus_bare:>7.2}   (goal >= 0.4: {})",
        verdict(versus_bare >= 0.4)
    );
    println!(
        "paddock p99:                        {:>7.3} ms (goal < 5 ms: {})",
        ours.p99_ms,
        verdict(ours.p99_ms < 5.0)
    );
    let token = paddock_client::token::read_token_file(&daemon.token_file())?;
    let latencies = crate::listen::measure(&servers[2].url, token.expose_secret(), 50)?;
    println!(
        "tools/list_changed to an HTTP subscriptions/listen stream, setToolEnabled sent -> notification read ({} changes): p50 {:.3} ms, p99 {:.3} ms (no peer serves it)",
        latencies.len(),
        crate::listen::percentile(&latencies, 0.5),
        crate::listen::percentile(&latencies, 0.99)
    );
    Ok(())
}

/// The measured request once, on the daemon alone: the stateless `tools/call` must return
/// `{"devices":[]}`.
fn smoke(paddock: &Path) -> anyhow::Result<()> {
    let daemon = PrivateDaemon::start(paddock, &["--web-warm", "0"])?;
    let token = paddock_client::token::read_token_file(&daemon.token_file())?;
    probe_tools_call(&daemon.url("/mcp")?, Some(token.expose_secret()))
        .context("the paddock daemon")?;
    let heard = crate::listen::measure(&daemon.url("/mcp")?, token.expose_secret(), 1)?;
    smoke::passed(
        "mcp",
        &format!(
            "authenticated stateless tools/call `listDevices` returned {{\"devices\":[]}}; a listener heard {} tools/list_changed",
            heard.len()
        ),
    );
    Ok(())
}

pub(crate) fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "missed" }
}

fn probe_heartbeat(url: &str) -> anyhow::Result<()> {
    let request = probe::Request {
        method: "GET",
        headers: &[],
        body: "",
    };
    let response = probe::send(&Target::parse(url)?, &request, PROBE_TIMEOUT)?;
    if response.status != 200 || response.body != EXPECTED_HEARTBEAT.as_bytes() {
        bail!(
            "bare axum answered {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        );
    }
    Ok(())
}

/// Sends the measured `tools/call` once and checks that it succeeded.
fn probe_tools_call(url: &str, bearer_token: Option<&str>) -> anyhow::Result<()> {
    let authorization = bearer_token.map(|token| format!("Bearer {token}"));
    let mut headers = MCP_HEADERS.to_vec();
    if let Some(value) = &authorization {
        headers.push(("Authorization", value));
    }
    let request = probe::Request {
        method: "POST",
        headers: &headers,
        body: TOOLS_CALL,
    };
    let response = probe::send(&Target::parse(url)?, &request, PROBE_TIMEOUT)?;
    check_tools_call(&response)
}

/// A successful `listDevices` result: HTTP 200, a JSON-RPC result (not an error), not a tool
/// error, and structured content `{"devices":[]}`.
fn check_tools_call(response: &probe::Response) -> anyhow::Result<()> {
    let text = String::from_utf8_lossy(&response.body);
    if response.status != 200 {
        bail!("tools/call answered HTTP {}: {text}", response.status);
    }
    let answer: Value = serde_json::from_str(&text)
        .with_context(|| format!("tools/call answered with something other than JSON: {text}"))?;
    let result = &answer["result"];
    if answer.get("error").is_some()
        || result["isError"] == json!(true)
        || result["structuredContent"] != json!({ "devices": [] })
        || !text.contains(EXPECTED_MCP_TEXT)
    {
        bail!("tools/call did not return `{{\"devices\":[]}}`: {text}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, body: &str) -> probe::Response {
        probe::Response {
            status,
            body: body.as_bytes().to_vec(),
            ..probe::Response::default()
        }
    }

    #[test]
    fn accepts_the_answers_of_both_servers() {
        let paddock = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"devices\":[]}"}],"structuredContent":{"devices":[]},"isError":false}}"#;
        let ts_sdk = r#"{"result":{"content":[{"type":"text","text":"{\"devices\":[]}"}],"structuredContent":{"devices":[]}},"jsonrpc":"2.0","id":1}"#;
        check_tools_call(&response(200, paddock)).unwrap();
        check_tools_call(&response(200, ts_sdk)).unwrap();
    }

    #[test]
    fn refuses_errors_dressed_as_success() {
        let cases = [
            response(401, r#"{"error":"Unauthorized"}"#),
            response(200, "not json"),
            response(
                200,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool"}}"#,
            ),
            response(
                200,
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"devices\":[]}"}],"isError":true}}"#,
            ),
            response(
                200,
                r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"devices":[{"id":"a"}]}}}"#,
            ),
        ];
        for case in &cases {
            assert!(
                check_tools_call(case).is_err(),
                "accepted {}",
                String::from_utf8_lossy(&case.body)
            );
        }
    }
}
