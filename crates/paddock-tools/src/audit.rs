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
}

/// Writes each event as one JSON line on stderr, prefixed by `"type":"audit"`. Never stdout:
/// `paddock mcp` reserves stdout for JSON-RPC.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrAuditSink;

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
        let _ = std::io::stderr().lock().write_all(&line);
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
