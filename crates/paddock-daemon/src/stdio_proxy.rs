//! `paddock mcp`: MCP on stdin/stdout, forwarded over the control socket to the daemon's
//! in-process MCP transport. Starts the daemon when none runs, and survives a daemon restart:
//! it reconnects, replays the client's `initialize` handshake (dropping the duplicate answer),
//! fails the requests that were in flight, and tells the client to refresh its tool list.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{Context as _, bail};
use paddock_client::DaemonPaths;
use paddock_client::control::{
    ControlClient, ControlClientError, McpConnect, McpConnectParams, read_frame,
};
use paddock_tools::protocol;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tracing::{info, warn};

use crate::launcher::{DetachedLaunch, start_detached};

/// How long the daemon may take to answer `mcp/connect`.
const CONNECT_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to keep trying to reach (or start) the daemon.
const CONNECT_DEADLINE: Duration = Duration::from_secs(60);
const REPLAY_ID: &str = "paddock-replayed-initialize";

struct Connection {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

/// How the proxy reaches the daemon.
#[derive(Debug)]
pub enum Dial<'a> {
    /// As the owner, with the token file: starts the daemon when none runs, and reconnects
    /// after a daemon restart.
    Owner {
        paths: &'a DaemonPaths,
        launch: &'a DetachedLaunch,
    },
    /// Inside a task's agent: with the launch's voucher (read from its file). Never starts a
    /// daemon; when the connection ends (the task is over) the proxy ends too.
    Voucher {
        socket: &'a std::path::Path,
        voucher_file: &'a std::path::Path,
    },
}

/// Runs the proxy until stdin closes, as `session` (its id, and whether the client chose it).
pub async fn run(dial: &Dial<'_>, session: &McpConnectParams) -> anyhow::Result<()> {
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut connection = connect(dial, session).await?;
    let mut initialize: Option<Value> = None;
    let mut pending: HashSet<String> = HashSet::new();
    loop {
        tokio::select! {
            line = stdin.next_line() => {
                let Some(line) = line.context("reading stdin")? else {
                    let _ = connection.writer.shutdown().await;
                    return Ok(());
                };
                if line.trim().is_empty() {
                    continue;
                }
                let message: Value = match serde_json::from_str(&line) {
                    Ok(message) => message,
                    Err(error) => {
                        write_line(&mut stdout, &json!({
                            "jsonrpc": "2.0", "id": null,
                            "error": { "code": -32700, "message": format!("Parse error: {error}") }
                        })).await?;
                        continue;
                    }
                };
                // Refused here with the protocol's own error (and `"id": null` when there is
                // no id to answer), exactly as the HTTP route refuses it.
                let message = match protocol::request_object(message) {
                    Ok(message) => message,
                    Err(refusal) => {
                        write_line(&mut stdout, &refusal.response(None)).await?;
                        continue;
                    }
                };
                if let Some(refusal) = protocol::check_request(&message) {
                    write_line(&mut stdout, &refusal.response(message.get("id"))).await?;
                    continue;
                }
                let message = Value::Object(message);
                if message.get("method").and_then(Value::as_str) == Some("initialize") {
                    initialize = Some(message.clone());
                }
                if message.get("method").is_some()
                    && let Some(id) = message.get("id")
                {
                    pending.insert(id.to_string());
                }
                if write_line(&mut connection.writer, &message).await.is_err() {
                    connection = reconnect(dial, session, &mut stdout, &mut pending, initialize.as_ref()).await?;
                }
            }
            frame = read_frame(&mut connection.reader) => {
                match frame {
                    Ok(Some(bytes)) => {
                        if let Ok(message) = serde_json::from_slice::<Value>(&bytes)
                            && message.get("method").is_none()
                            && let Some(id) = message.get("id")
                        {
                            pending.remove(&id.to_string());
                        }
                        stdout.write_all(&bytes).await?;
                        stdout.write_all(b"\n").await?;
                        stdout.flush().await?;
                    }
                    Ok(None) | Err(_) => {
                        connection = reconnect(dial, session, &mut stdout, &mut pending, initialize.as_ref()).await?;
                    }
                }
            }
        }
    }
}

async fn reconnect(
    dial: &Dial<'_>,
    session: &McpConnectParams,
    stdout: &mut tokio::io::Stdout,
    pending: &mut HashSet<String>,
    initialize: Option<&Value>,
) -> anyhow::Result<Connection> {
    if let Dial::Voucher { .. } = dial {
        fail_pending(
            stdout,
            pending,
            "The task's MCP connection ended: the task is over.",
        )
        .await?;
        bail!("the daemon ended this task's MCP connection (the task is over)");
    }
    warn!("lost the daemon connection; reconnecting");
    fail_pending(
        stdout,
        pending,
        "The Paddock daemon restarted while this request was in flight; retry it. Device sessions ended with the restart: acquire a device again.",
    )
    .await?;
    let mut connection = connect(dial, session).await?;
    if let Some(initialize) = initialize {
        let mut replay = initialize.clone();
        replay["id"] = json!(REPLAY_ID);
        write_line(&mut connection.writer, &replay).await?;
        loop {
            let frame = read_frame(&mut connection.reader)
                .await?
                .context("the daemon closed the connection during the replayed handshake")?;
            let message: Value = serde_json::from_slice(&frame)?;
            if message.get("id") == Some(&json!(REPLAY_ID)) {
                break;
            }
        }
        write_line(
            &mut connection.writer,
            &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        )
        .await?;
        write_line(
            stdout,
            &json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }),
        )
        .await?;
    }
    info!("reconnected to the daemon");
    Ok(connection)
}

/// Connects to the daemon's control socket and switches the connection to MCP, starting the
/// daemon first when none answers.
async fn connect(dial: &Dial<'_>, session: &McpConnectParams) -> anyhow::Result<Connection> {
    let (paths, launch) = match dial {
        Dial::Owner { paths, launch } => (*paths, *launch),
        Dial::Voucher {
            socket,
            voucher_file,
        } => {
            let voucher = std::fs::read_to_string(voucher_file)
                .context("could not read this session's voucher file")?;
            let (client, _) = ControlClient::connect_session(socket, voucher.trim()).await?;
            return switch_to_mcp(client, session).await;
        }
    };
    let deadline = tokio::time::Instant::now() + CONNECT_DEADLINE;
    loop {
        match try_connect(paths, session).await {
            Ok(connection) => return Ok(connection),
            // Something that is not our daemon listens where it should: never retry into it.
            Err(error) if is_impersonation(&error) => return Err(error),
            Err(error) if tokio::time::Instant::now() >= deadline => return Err(error),
            Err(_) => {}
        }
        match start_detached(paths, launch).await {
            Ok(_) => {}
            Err(error) if is_impersonation(&error) => return Err(error),
            Err(error) if tokio::time::Instant::now() >= deadline => {
                return Err(error.context("could not start the Paddock daemon"));
            }
            // Another client may be starting it at the same moment; try again shortly.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

fn is_impersonation(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<ControlClientError>()
        .is_some_and(ControlClientError::is_impersonation)
}

async fn try_connect(
    paths: &DaemonPaths,
    session: &McpConnectParams,
) -> anyhow::Result<Connection> {
    let client = ControlClient::connect_owner(paths).await?;
    switch_to_mcp(client, session).await
}

async fn switch_to_mcp(
    mut client: ControlClient,
    session: &McpConnectParams,
) -> anyhow::Result<Connection> {
    let answer = client
        .request::<McpConnect>(session.clone(), CONNECT_ANSWER_TIMEOUT)
        .await;
    if let Err(ControlClientError::Remote(error)) = &answer {
        bail!(
            "the daemon refused the MCP connection: [{}] {}",
            error.code,
            error.message
        );
    }
    answer?;
    let (reader, writer) = client.into_parts();
    Ok(Connection { reader, writer })
}

/// Answers every request still in flight with an internal error saying `message`.
async fn fail_pending(
    stdout: &mut tokio::io::Stdout,
    pending: &mut HashSet<String>,
    message: &str,
) -> anyhow::Result<()> {
    for id in pending.drain() {
        let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
        write_line(
            stdout,
            &json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32603, "message": message } }),
        )
        .await?;
    }
    Ok(())
}

async fn write_line<W: AsyncWrite + Unpin, T: serde::Serialize>(
    writer: &mut W,
    value: &T,
) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    writer.write_all(&bytes).await?;
    writer.flush().await?;
    Ok(())
}

/// A fresh session id for one `paddock mcp` process: `stdio-` and 16 random hex digits.
pub fn new_session_id() -> anyhow::Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|error| anyhow::anyhow!("OS random source: {error}"))?;
    Ok(format!(
        "stdio-{}",
        bytes
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<String>()
    ))
}
