//! A minimal MCP client over stdio for latency measurements: it starts the server as a child
//! (through `paddock-process`), speaks newline-delimited JSON-RPC on the child's stdin and
//! stdout, and times each `tools/call` from writing the request to reading its answer. It
//! serves `paddock mcp` and any stdio peer alike.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_process::{ChildSpec, ManagedChild};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::mcp_client::ToolAnswer;

const PROTOCOL_VERSION: &str = "2025-06-18";

/// How long one request may take (a peer's first call may set up its device tooling).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(90);

/// How much of an unexpected answer an error message quotes.
const QUOTED_ANSWER_CHARS: usize = 600;

/// A server on the other end of a child's stdin and stdout; dropping it kills the child's
/// process group.
#[derive(Debug)]
pub struct StdioMcpClient {
    child: ManagedChild,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl StdioMcpClient {
    /// Starts `spec` with pipes on its stdin and stdout (whatever `spec` asked for).
    pub fn start(mut spec: ChildSpec) -> anyhow::Result<Self> {
        spec.stdin = true;
        spec.stdout = true;
        let mut child = ManagedChild::spawn(spec, None)?;
        let stdin = child.stdin.take().context("the child has no stdin pipe")?;
        let stdout = child
            .stdout
            .take()
            .context("the child has no stdout pipe")?;
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            next_id: 1,
        })
    }

    /// `initialize`, then `notifications/initialized`. Returns the server's `serverInfo`.
    pub async fn initialize(&mut self) -> anyhow::Result<Value> {
        let result = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": { "name": "paddock-bench", "version": env!("CARGO_PKG_VERSION") },
                }),
            )
            .await
            .context("initialize")?
            .1;
        self.write(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok(result["serverInfo"].clone())
    }

    /// Calls tool `name`. A JSON-RPC error or a tool error (`isError: true`) is an error, as in
    /// [`crate::mcp_client::McpClient::call_tool`].
    pub async fn call_tool(&mut self, name: &str, arguments: &Value) -> anyhow::Result<ToolAnswer> {
        let (elapsed, result) = self
            .request(
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            )
            .await
            .with_context(|| format!("tool `{name}`"))?;
        if result["isError"] == json!(true) {
            bail!(
                "tool `{name}` answered with an error: {}",
                quote(&result.to_string())
            );
        }
        Ok(ToolAnswer { elapsed, result })
    }

    /// The last lines of the child's stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        self.child.stderr_tail()
    }

    /// Closes the child's stdin, which ends a stdio server, and waits up to `grace` for it to
    /// exit before killing its process group.
    pub async fn stop(self, grace: Duration) {
        let Self { child, stdin, .. } = self;
        drop(stdin);
        if tokio::time::timeout(grace, child.exited()).await.is_err() {
            let _ = child.terminate(grace).await;
        }
    }

    /// Sends one request and reads until its answer, skipping the server's notifications and
    /// requests; returns how long that took and the `result`.
    async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<(Duration, Value)> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let started = Instant::now();
        self.write(&request).await?;
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, self.answer(id))
            .await
            .with_context(|| {
                format!(
                    "no answer within {}s; the server's stderr:\n{}",
                    REQUEST_TIMEOUT.as_secs(),
                    self.stderr_tail()
                )
            })??;
        let elapsed = started.elapsed();
        if let Some(error) = answer.get("error") {
            bail!("JSON-RPC error: {error}");
        }
        match answer.get("result") {
            Some(result) => Ok((elapsed, result.clone())),
            None => bail!("a JSON-RPC answer without `result`: {answer}"),
        }
    }

    async fn answer(&mut self, id: u64) -> anyhow::Result<Value> {
        loop {
            let Some(line) = self.stdout.next_line().await.context("reading stdout")? else {
                bail!(
                    "the server closed its stdout; its stderr:\n{}",
                    self.stderr_tail()
                );
            };
            if line.trim().is_empty() {
                continue;
            }
            let message: Value = serde_json::from_str(&line)
                .with_context(|| format!("not JSON on stdout: {}", quote(&line)))?;
            if message.get("method").is_none() && message["id"] == json!(id) {
                return Ok(message);
            }
        }
    }

    async fn write(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .with_context(|| {
                format!("writing to the server; its stderr:\n{}", self.stderr_tail())
            })?;
        self.stdin.flush().await?;
        Ok(())
    }
}

fn quote(text: &str) -> String {
    let mut quoted: String = text.chars().take(QUOTED_ANSWER_CHARS).collect();
    if text.chars().count() > QUOTED_ANSWER_CHARS {
        quoted.push('…');
    }
    quoted
}
