//! A small MCP client over the daemon's control socket, for the commands that drive the
//! daemon's tools (`paddock plan run`, `paddock task …`).
//!
//! It connects as the owner, switches the connection to MCP with `mcp/connect` (a fresh
//! session id, not reconnectable, so a device the session acquires is released when the
//! connection closes), does the `initialize` handshake and then calls tools, one at a time.
//! Each side sends one JSON-RPC message per line. That is all these commands need, so this is a
//! line-JSON-RPC client of its own rather than rmcp's client feature: no second MCP stack in
//! the binary, and nothing here but requests matched to answers by id.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use paddock_client::control::{
    ControlClient, ControlClientError, McpConnect, McpConnectParams, read_frame, write_frame,
};
use paddock_client::{ClientEnv, DaemonPaths};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt as _, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::EXIT_NOT_RUNNING;

/// The MCP protocol version this client speaks.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// How long `mcp/connect` and `initialize` may take each.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// JSON-RPC's "method not found", for requests the server sends this client.
const METHOD_NOT_FOUND: i64 = -32601;

/// JSON-RPC's "invalid params", which the daemon answers for a tool it does not have.
const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC error answer.
#[derive(Debug)]
struct RpcError {
    code: i64,
    message: String,
}

/// An MCP session with the daemon over one control connection.
#[derive(Debug)]
pub struct McpClient {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    next_id: u64,
}

/// A tool call that did not give a result.
#[derive(Debug)]
pub enum ToolCallError {
    /// The tool ran and failed (`isError: true`); `text` is its answer, `[code] message`.
    Failed { tool: String, text: String },
    /// The daemon has no tool of that name (or none this caller may call).
    Unknown { tool: String, message: String },
    /// The daemon refused the request itself with a JSON-RPC error.
    Refused {
        tool: String,
        code: i64,
        message: String,
    },
}

impl std::fmt::Display for ToolCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Failed { tool, text } => write!(f, "`{tool}` failed: {text}"),
            Self::Unknown { tool, message } => {
                write!(f, "the daemon does not serve `{tool}` ({message})")
            }
            Self::Refused {
                tool,
                code,
                message,
            } => write!(
                f,
                "the daemon refused `{tool}`: {message} (JSON-RPC {code})"
            ),
        }
    }
}

impl std::error::Error for ToolCallError {}

impl ToolCallError {
    /// True when the daemon does not have the tool at all.
    pub fn is_unknown_tool(&self) -> bool {
        matches!(self, Self::Unknown { .. })
    }
}

/// A successful tool answer.
#[derive(Debug)]
pub struct ToolAnswer(Value);

impl ToolAnswer {
    /// `structuredContent`, or `null` when the tool answered without it.
    pub fn structured(&self) -> &Value {
        self.0.get("structuredContent").unwrap_or(&Value::Null)
    }

    /// The text content blocks, joined by newlines.
    pub fn text(&self) -> String {
        content_text(&self.0)
    }

    /// The first image content block: its `mimeType` and base64 `data`.
    pub fn image(&self) -> Option<(&str, &str)> {
        self.0["content"]
            .as_array()?
            .iter()
            .filter(|block| block["type"] == "image")
            .find_map(|block| Some((block["mimeType"].as_str()?, block["data"].as_str()?)))
    }
}

fn content_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|block| block["type"] == "text")
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

impl McpClient {
    /// Connects to the daemon as its owner and opens an MCP session; when no daemon runs, says
    /// so (with the hint to start one) and gives the exit code for that.
    pub async fn connect() -> anyhow::Result<Result<Self, ExitCode>> {
        let paths = DaemonPaths::resolve(&ClientEnv::from_process());
        let mut control = match ControlClient::connect_owner(&paths).await {
            Ok(control) => control,
            Err(error) if error.is_not_running() => {
                eprintln!("error: paddock daemon is not running");
                eprintln!("hint: start it with `paddock daemon start`");
                return Ok(Err(ExitCode::from(EXIT_NOT_RUNNING)));
            }
            Err(error) => return Err(error.into()),
        };
        let session = McpConnectParams {
            session_id: paddock_daemon::stdio_proxy::new_session_id()?,
            reconnectable: false,
        };
        match control
            .request::<McpConnect>(session, HANDSHAKE_TIMEOUT)
            .await
        {
            Ok(_) => {}
            Err(ControlClientError::Remote(error)) => anyhow::bail!(
                "the daemon refused the MCP connection: [{}] {}",
                error.code,
                error.message
            ),
            Err(error) => return Err(error.into()),
        }
        let (reader, writer) = control.into_parts();
        let mut client = Self {
            reader,
            writer,
            next_id: 1,
        };
        let initialize = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "paddock-cli", "version": env!("CARGO_PKG_VERSION") },
        });
        client
            .request("initialize", initialize, HANDSHAKE_TIMEOUT)
            .await
            .context("the MCP handshake with the daemon failed")?
            .map_err(|error| {
                anyhow::anyhow!(
                    "the daemon refused the MCP handshake: {} (JSON-RPC {})",
                    error.message,
                    error.code
                )
            })?;
        client
            .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok(Ok(client))
    }

    /// Calls tool `name` and waits at most `timeout` for its answer.
    pub async fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> anyhow::Result<ToolAnswer> {
        let params = json!({ "name": name, "arguments": arguments });
        let answer = self
            .request("tools/call", params, timeout)
            .await
            .with_context(|| format!("calling `{name}`"))?;
        let result = answer.map_err(|RpcError { code, message }| {
            let tool = name.to_owned();
            if code == INVALID_PARAMS && message.starts_with("Unknown tool") {
                ToolCallError::Unknown { tool, message }
            } else {
                ToolCallError::Refused {
                    tool,
                    code,
                    message,
                }
            }
        })?;
        if result["isError"] == true {
            return Err(ToolCallError::Failed {
                tool: name.to_owned(),
                text: content_text(&result),
            }
            .into());
        }
        Ok(ToolAnswer(result))
    }

    /// Ends the session: the daemon releases the session's device when the connection closes.
    pub async fn close(mut self) {
        let _ = self.writer.shutdown().await;
    }

    /// Sends a request and waits for the answer with its id: `Ok(result)`, or the JSON-RPC
    /// error. Notifications from the server are skipped; requests
    /// from it are answered "method not found" (this client offers no capabilities).
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> anyhow::Result<Result<Value, RpcError>> {
        let id = self.next_id;
        self.next_id += 1;
        let exchange = async {
            self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
                .await?;
            loop {
                let frame = read_frame(&mut self.reader)
                    .await
                    .context("reading from the daemon")?
                    .context("the daemon closed the MCP connection")?;
                let message: Value = serde_json::from_slice(&frame)
                    .context("the daemon sent a line that is not JSON")?;
                if let Some(server_method) = message.get("method") {
                    if let Some(request_id) = message.get("id") {
                        let refusal = json!({
                            "jsonrpc": "2.0",
                            "id": request_id,
                            "error": {
                                "code": METHOD_NOT_FOUND,
                                "message": format!("this client does not handle {server_method}"),
                            },
                        });
                        self.send(&refusal).await?;
                    }
                    continue;
                }
                if message.get("id") != Some(&json!(id)) {
                    continue;
                }
                if let Some(error) = message.get("error") {
                    return Ok(Err(RpcError {
                        code: error["code"].as_i64().unwrap_or_default(),
                        message: error["message"].as_str().unwrap_or("no message").to_owned(),
                    }));
                }
                return Ok(Ok(message.get("result").cloned().unwrap_or(Value::Null)));
            }
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .with_context(|| format!("the daemon did not answer `{method}` within {timeout:?}"))?
    }

    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        write_frame(&mut self.writer, message)
            .await
            .context("writing to the daemon")
    }
}

/// Prints `error` (the whole chain, passed through `redact`) with a hint where there is an
/// obvious next step, and gives exit code 1. `unknown_tool_hint` is the hint for a tool the
/// daemon does not serve.
pub fn print_error(
    error: &anyhow::Error,
    unknown_tool_hint: &str,
    redact: impl Fn(&str) -> String,
) -> ExitCode {
    eprintln!("error: {}", redact(&format!("{error:#}")));
    let unknown = error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<ToolCallError>())
        .any(ToolCallError::is_unknown_tool);
    if unknown {
        eprintln!("hint: {unknown_tool_hint}");
    }
    ExitCode::FAILURE
}
