//! Minimal MCP clients for tests: JSON-RPC over the daemon's HTTP endpoint (raw, so tests see
//! status codes and headers), and over `paddock mcp`'s stdin/stdout.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::{DaemonHarness, RawRequest, RawResponse};

/// JSON-RPC over `POST /mcp`.
#[derive(Debug, Clone)]
pub struct McpHttp {
    pub port: u16,
    pub token: String,
    pub session: Option<String>,
}

impl McpHttp {
    /// For the daemon `harness` runs (started and ready).
    pub fn for_harness(harness: &DaemonHarness) -> anyhow::Result<Self> {
        let record =
            paddock_client::PidRecord::read(&harness.paths().pid_file)?.context("no PID record")?;
        Ok(Self {
            port: record.http_port.context("no port")?,
            token: harness.token()?,
            session: None,
        })
    }

    pub fn with_session(&self, session: &str) -> Self {
        Self {
            session: Some(session.to_owned()),
            ..self.clone()
        }
    }

    /// Posts a raw body and returns the raw response.
    pub fn post_raw(&self, body: &str) -> anyhow::Result<RawResponse> {
        let mut request = RawRequest::new("POST", "/mcp")
            .bearer(&self.token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .body(body);
        if let Some(session) = &self.session {
            request = request.header("x-paddock-session-id", session);
        }
        request.send(self.port)
    }

    /// Sends one request and returns the whole JSON-RPC answer.
    pub fn rpc(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let response = self.post_raw(&body.to_string())?;
        if response.status != 200 {
            bail!("HTTP {} for {method}: {}", response.status, response.body);
        }
        response.json()
    }

    /// `tools/list` names.
    pub fn tool_names(&self) -> anyhow::Result<Vec<String>> {
        let answer = self.rpc("tools/list", json!({}))?;
        tool_names(&answer)
    }

    /// `tools/call`; returns the `result` object (check `isError`).
    pub fn call(&self, tool: &str, arguments: Value) -> anyhow::Result<Value> {
        let answer = self.rpc(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )?;
        answer
            .get("result")
            .cloned()
            .with_context(|| format!("no result: {answer}"))
    }
}

/// Names from a `tools/list` answer.
pub fn tool_names(answer: &Value) -> anyhow::Result<Vec<String>> {
    answer["result"]["tools"]
        .as_array()
        .with_context(|| format!("no tools in {answer}"))?
        .iter()
        .map(|tool| {
            tool["name"]
                .as_str()
                .map(str::to_owned)
                .context("tool without a name")
        })
        .collect()
}

/// A `paddock mcp` child speaking JSON-RPC lines.
#[derive(Debug)]
pub struct McpStdio {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Notifications seen while waiting for answers.
    pub notifications: Vec<Value>,
    /// The answer to the `initialize` request `start` sent.
    pub initialize: Value,
    next_id: u64,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl McpStdio {
    /// Starts `paddock mcp extra…` in the harness's environment and initializes it.
    pub fn start(harness: &DaemonHarness, extra: &[&str]) -> anyhow::Result<Self> {
        let mut command = harness.command(["mcp"]);
        command
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().context("spawn paddock mcp")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = child.stdout.take().context("stdout")?;
        let captured = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            // Drain stderr so the child never blocks on a full pipe, keeping it for checks.
            let captured = captured.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { return };
                    if let Ok(mut text) = captured.lock() {
                        text.push_str(&line);
                        text.push('\n');
                    }
                }
            });
        }
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut client = Self {
            child,
            stdin: Some(stdin),
            lines: rx,
            notifications: Vec::new(),
            initialize: Value::Null,
            next_id: 1,
            stderr: captured,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "paddock-testkit", "version": "1" }
            }),
        )?;
        if init.get("result").is_none() {
            bail!("initialize failed: {init}");
        }
        client.initialize = init;
        client.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))?;
        Ok(client)
    }

    /// What `paddock mcp` wrote to stderr so far (its log).
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .map(|text| text.clone())
            .unwrap_or_default()
    }

    pub fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        self.send_raw(&message.to_string())
    }

    /// Writes a raw line (for malformed-input tests).
    pub fn send_raw(&mut self, line: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin is closed")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        Ok(())
    }

    /// The next line from stdout, parsed; every stdout line must be JSON.
    pub fn next_message(&mut self, within: Duration) -> anyhow::Result<Value> {
        let line = self
            .lines
            .recv_timeout(within)
            .context("no message from paddock mcp")?;
        serde_json::from_str(&line)
            .with_context(|| format!("stdout line is not JSON-RPC: {line:?}"))
    }

    /// Sends a request and waits for its answer, keeping notifications.
    pub fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let message = self.next_message(remaining)?;
            if message.get("id") == Some(&json!(id)) {
                return Ok(message);
            }
            if message.get("method").is_some() {
                self.notifications.push(message);
            }
        }
    }

    pub fn tool_names(&mut self) -> anyhow::Result<Vec<String>> {
        let answer = self.request("tools/list", json!({}))?;
        tool_names(&answer)
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> anyhow::Result<Value> {
        let answer = self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )?;
        answer
            .get("result")
            .cloned()
            .with_context(|| format!("no result: {answer}"))
    }

    /// Waits until a notification with `method` arrives (or was already seen); consumes it.
    pub fn wait_notification(&mut self, method: &str, within: Duration) -> anyhow::Result<Value> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(index) = self
                .notifications
                .iter()
                .position(|message| message["method"] == method)
            {
                return Ok(self.notifications.remove(index));
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                bail!("no `{method}` notification within {within:?}");
            }
            let message = self.next_message(remaining)?;
            if message.get("method").is_some() {
                self.notifications.push(message);
            }
        }
    }

    /// Closes stdin and waits for the process to exit.
    pub fn close(mut self) -> anyhow::Result<std::process::ExitStatus> {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                bail!("paddock mcp did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for McpStdio {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The JSON-RPC messages in an SSE body (each event's `data:` line), in order; an event that is
/// not JSON (a keep-alive, a cut-off tail) is skipped.
pub fn sse_messages(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|event| {
            event
                .lines()
                .find_map(|line| line.strip_prefix("data: "))
                .and_then(|data| serde_json::from_str(data).ok())
        })
        .collect()
}
