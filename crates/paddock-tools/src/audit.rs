//! Audit telemetry: one event per tool call with who, what, outcome and duration — never
//! arguments, tokens or other secrets (spec 002 "Audit telemetry").

use std::io::Write as _;

use serde::Serialize;

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Error,
    Denied,
    /// The caller cancelled the call while it ran.
    Cancelled,
}

/// The caller, as far as an audit line may say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditAuth {
    pub kind: &'static str,
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    pub tool_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    pub outcome: Outcome,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub auth: AuditAuth,
}

/// Where audit events go. Swap it for an exporter without touching the tool core.
pub trait AuditSink: Send + Sync {
    fn record(&self, event: &ToolCallEvent);
    /// Waits until every recorded event has been written; the daemon calls it at shutdown.
    fn flush(&self) {}
}

/// How long the writer waits after each batch: the most an audit line is delayed.
const BATCH_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

enum SinkMessage {
    Line(Vec<u8>),
    Flush(std::sync::mpsc::Sender<()>),
}

/// Writes each event as one JSON line on stderr, prefixed by `"type":"audit"`. Never stdout:
/// `paddock mcp` reserves stdout for JSON-RPC. A writer thread takes the lines, so a tool call
/// never waits on the log file, and writes them in batches, in order.
#[derive(Debug)]
pub struct StderrAuditSink {
    lines: std::sync::mpsc::Sender<SinkMessage>,
}

impl Default for StderrAuditSink {
    fn default() -> Self {
        Self::new()
    }
}

impl StderrAuditSink {
    pub fn new() -> Self {
        let (lines, receiver) = std::sync::mpsc::channel::<SinkMessage>();
        std::thread::spawn(move || {
            let mut out = std::io::BufWriter::new(std::io::stderr());
            while let Ok(message) = receiver.recv() {
                let mut next = Some(message);
                while let Some(message) = next.take() {
                    match message {
                        SinkMessage::Line(line) => {
                            let _ = out.write_all(&line);
                        }
                        SinkMessage::Flush(done) => {
                            let _ = out.flush();
                            let _ = done.send(());
                        }
                    }
                    next = receiver.try_recv().ok();
                }
                let _ = out.flush();
                // Under load, lines arriving during this pause are written together, and
                // senders find the writer awake rather than waking it once per tool call.
                std::thread::sleep(BATCH_PAUSE);
            }
        });
        Self { lines }
    }
}

impl std::fmt::Debug for SinkMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SinkMessage")
    }
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    event: &'a ToolCallEvent,
}

impl AuditSink for StderrAuditSink {
    fn record(&self, event: &ToolCallEvent) {
        let Ok(mut line) = serde_json::to_vec(&Line {
            kind: "audit",
            event,
        }) else {
            return;
        };
        line.push(b'\n');
        let _ = self.lines.send(SinkMessage::Line(line));
    }

    fn flush(&self) {
        let (done, wait) = std::sync::mpsc::channel();
        if self.lines.send(SinkMessage::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(std::time::Duration::from_secs(5));
        }
    }
}

/// Keeps events in memory; for hosts that export in batches, and for tests.
#[derive(Debug, Default)]
pub struct MemoryAuditSink {
    events: std::sync::Mutex<Vec<ToolCallEvent>>,
}

impl MemoryAuditSink {
    pub fn events(&self) -> Vec<ToolCallEvent> {
        self.events
            .lock()
            .map(|events| events.clone())
            .unwrap_or_default()
    }
}

impl AuditSink for MemoryAuditSink {
    fn record(&self, event: &ToolCallEvent) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.clone());
        }
    }
}
