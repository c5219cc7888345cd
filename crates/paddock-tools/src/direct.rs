//! The direct answer to the two methods that carry almost all traffic, `tools/call` and
//! `tools/list`, for the protocol versions that need no negotiation. rmcp builds a service, a
//! peer, several channels and tasks for each stateless request; for these the same handler is
//! called without that machinery, producing the same JSON-RPC answer (the daemon's tests
//! compare both paths). Anything else — another method, 2026-07-28's `_meta`, an unknown
//! version, an unusual `Accept` — is `None`, for rmcp to answer.

use serde_json::{Map, Value};

use crate::server::McpServer;

/// A JSON-RPC answer, serialised straight to bytes.
#[derive(serde::Serialize)]
struct Reply<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a rmcp::model::ServerResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a rmcp::ErrorData>,
}

/// The JSON body answering `message` (a parsed JSON-RPC request) on `server`, or `None` when
/// it is not one this path serves.
pub async fn answer(
    server: &McpServer,
    headers: &http::HeaderMap,
    mut message: Map<String, Value>,
) -> Option<Vec<u8>> {
    let call = match message.get("method")?.as_str()? {
        "tools/call" => true,
        "tools/list" => false,
        _ => return None,
    };
    let id = message.remove("id")?;
    if !(id.is_string() || id.is_i64() || id.is_u64()) || message.get("jsonrpc")?.as_str()? != "2.0"
    {
        return None;
    }
    match headers
        .get("mcp-protocol-version")
        .map(|value| value.to_str())
    {
        None | Some(Ok("2025-06-18" | "2025-11-25")) => {}
        _ => return None,
    }
    let accepts = headers
        .get(http::header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| {
            accept.contains("application/json") && accept.contains("text/event-stream")
        });
    let json_body = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("application/json"));
    if !accepts || !json_body {
        return None;
    }
    // The request is answered here, so its parameters can be taken, not copied.
    let params = message.remove("params");
    if params
        .as_ref()
        .and_then(|params| params.get("_meta"))
        .is_some()
    {
        return None;
    }
    let session = headers.get(crate::session::SESSION_HEADER);
    let outcome = if call {
        let request: rmcp::model::CallToolRequestParams = serde_json::from_value(params?).ok()?;
        let request_id = match &id {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        server
            .call_http(request, session, request_id)
            .await
            .map(|result| legacy(rmcp::model::ServerResult::CallToolResult(result)))
    } else {
        server
            .list(session)
            .map(|result| legacy(rmcp::model::ServerResult::ListToolsResult(result)))
    };
    let reply = match &outcome {
        Ok(result) => Reply {
            jsonrpc: "2.0",
            id: &id,
            result: Some(result),
            error: None,
        },
        Err(error) => Reply {
            jsonrpc: "2.0",
            id: &id,
            result: None,
            error: Some(error),
        },
    };
    serde_json::to_vec(&reply).ok()
}

/// A result in the shape rmcp gives peers of the versions this path serves.
fn legacy(mut result: rmcp::model::ServerResult) -> rmcp::model::ServerResult {
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    result
}
