//! A minimal MCP client over Streamable HTTP for latency measurements: one JSON-RPC request
//! per fresh connection, answers read as JSON or as a server-sent event stream. It serves both
//! Paddock's stateless endpoint (bearer token, `x-paddock-session-id`) and session-based peers
//! (`initialize`, then the `mcp-session-id` header on every request).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_client::SecretString;
use serde_json::{Value, json};

use crate::probe::{self, Target};

const PROTOCOL_VERSION: &str = "2025-06-18";

/// How long one request may take; a cold device launch takes seconds.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(90);

/// How much of an unexpected answer an error message quotes.
const QUOTED_ANSWER_CHARS: usize = 600;

/// One MCP endpoint.
#[derive(Debug)]
pub struct McpClient {
    address: SocketAddr,
    target: Target,
    /// `Bearer <token>`, for Paddock.
    authorization: Option<SecretString>,
    /// The transport session a session-based server handed out at `initialize`.
    transport_session: Option<String>,
    next_id: u64,
}

/// A successful `tools/call` answer and how long the request took.
#[derive(Debug, Clone)]
pub struct ToolAnswer {
    pub elapsed: Duration,
    /// The JSON-RPC `result`.
    pub result: Value,
}

impl ToolAnswer {
    /// The text content blocks, joined by newlines.
    pub fn text(&self) -> String {
        self.blocks("text")
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The first image block, decoded.
    pub fn image(&self) -> Option<Image> {
        use base64::Engine as _;
        self.blocks("image").next().map(|block| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(block["data"].as_str().unwrap_or_default())
                .unwrap_or_default();
            Image {
                mime: block["mimeType"].as_str().unwrap_or("image/?").to_owned(),
                len: bytes.len(),
                dimensions: image_dimensions(&bytes),
            }
        })
    }

    pub fn structured(&self) -> &Value {
        &self.result["structuredContent"]
    }

    fn blocks<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(move |block| block["type"] == kind)
    }
}

/// An image block: its type, size in bytes and, for PNG and JPEG, width and height.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub mime: String,
    pub len: usize,
    pub dimensions: Option<(u32, u32)>,
}

/// Width and height of a PNG (its `IHDR`) or a baseline or progressive JPEG (its `SOF`).
pub fn image_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    let be16 = |at: usize| {
        Some(u32::from(u16::from_be_bytes([
            *bytes.get(at)?,
            *bytes.get(at + 1)?,
        ])))
    };
    let be32 = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16) == Some(b"IHDR") {
        return Some((be32(16)?, be32(20)?));
    }
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    // Walk the segments up to the frame header.
    let mut at = 2;
    loop {
        if *bytes.get(at)? != 0xFF {
            return None;
        }
        let marker = *bytes.get(at + 1)?;
        if matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF) {
            return Some((be16(at + 7)?, be16(at + 5)?));
        }
        at += 2 + usize::try_from(be16(at + 2)?).ok()?;
    }
}

impl McpClient {
    /// A client for `url` (`http://host:port/path`) that connects to `address`.
    pub fn new(
        address: SocketAddr,
        url: &str,
        authorization: Option<SecretString>,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            address,
            target: Target::parse(url)?,
            authorization,
            transport_session: None,
            next_id: 1,
        })
    }

    /// The handshake of a session-based server: `initialize`, keep the `mcp-session-id` it
    /// answers with, `notifications/initialized`. Returns the server's `serverInfo`.
    pub fn initialize(&mut self) -> anyhow::Result<Value> {
        let id = self.take_id();
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": { "name": "paddock-bench", "version": env!("CARGO_PKG_VERSION") },
            },
        });
        let response = self.post(&request.to_string(), None)?;
        let result = rpc_result(&response, id).context("initialize")?;
        let session = response
            .header("mcp-session-id")
            .context("initialize was answered without an `mcp-session-id` header")?;
        self.transport_session = Some(session.to_owned());
        let notification = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let response = self.post(&notification.to_string(), None)?;
        if !(200..300).contains(&response.status) {
            bail!(
                "notifications/initialized was answered with HTTP {}: {}",
                response.status,
                quote(&response.body)
            );
        }
        Ok(result["serverInfo"].clone())
    }

    /// Calls tool `name`, bound to Paddock session `session` when given. A JSON-RPC error or a
    /// tool error (`isError: true`) is an error: a benchmark of error answers is worthless.
    pub fn call_tool(
        &mut self,
        name: &str,
        arguments: &Value,
        session: Option<&str>,
    ) -> anyhow::Result<ToolAnswer> {
        let id = self.take_id();
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": { "name": name, "arguments": arguments },
        })
        .to_string();
        let started = Instant::now();
        let response = self.post(&request, session)?;
        let elapsed = started.elapsed();
        let result = rpc_result(&response, id).with_context(|| format!("tool `{name}`"))?;
        if result["isError"] == json!(true) {
            bail!(
                "tool `{name}` answered with an error: {}",
                quote(result.to_string().as_bytes())
            );
        }
        Ok(ToolAnswer { elapsed, result })
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn post(&self, body: &str, session: Option<&str>) -> anyhow::Result<probe::Response> {
        let authorization = self.authorization.as_ref().map(SecretString::expose_secret);
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        // The version header follows the handshake; a stateless server takes it on every call.
        if self.transport_session.is_some() || self.authorization.is_some() {
            headers.push(("MCP-Protocol-Version", PROTOCOL_VERSION));
        }
        if let Some(value) = authorization {
            headers.push(("Authorization", value));
        }
        if let Some(value) = &self.transport_session {
            headers.push(("mcp-session-id", value));
        }
        if let Some(value) = session {
            headers.push(("x-paddock-session-id", value));
        }
        let request = probe::Request {
            method: "POST",
            headers: &headers,
            body,
        };
        probe::send_to(self.address, &self.target, &request, REQUEST_TIMEOUT)
    }
}

/// The `result` of the JSON-RPC answer with `id`, from a JSON body or an event stream.
pub fn rpc_result(response: &probe::Response, id: u64) -> anyhow::Result<Value> {
    if response.status != 200 {
        bail!(
            "HTTP {} instead of 200: {}",
            response.status,
            quote(&response.body)
        );
    }
    let text = std::str::from_utf8(&response.body).context("the answer is not UTF-8")?;
    let is_stream = response
        .header("content-type")
        .is_some_and(|value| value.starts_with("text/event-stream"));
    let messages = if is_stream {
        event_stream_messages(text)?
    } else {
        vec![
            serde_json::from_str(text)
                .with_context(|| format!("not JSON: {}", quote(&response.body)))?,
        ]
    };
    let Some(answer) = messages
        .into_iter()
        .find(|message| message["id"] == json!(id))
    else {
        bail!("no JSON-RPC answer with id {id}: {}", quote(&response.body));
    };
    if let Some(error) = answer.get("error") {
        bail!("JSON-RPC error: {error}");
    }
    match answer.get("result") {
        Some(result) => Ok(result.clone()),
        None => bail!("a JSON-RPC answer without `result`: {answer}"),
    }
}

/// The JSON messages of a server-sent event stream: each event's `data:` lines, joined.
pub fn event_stream_messages(text: &str) -> anyhow::Result<Vec<Value>> {
    let mut messages = Vec::new();
    let mut data = String::new();
    // A blank line ends an event; the end of the stream ends the last one.
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                messages.push(
                    serde_json::from_str(&data)
                        .with_context(|| format!("an event's data is not JSON: {data}"))?,
                );
                data.clear();
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    Ok(messages)
}

fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut quoted: String = text.chars().take(QUOTED_ANSWER_CHARS).collect();
    if text.chars().count() > QUOTED_ANSWER_CHARS {
        quoted.push('…');
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(content_type: &str, body: &str) -> probe::Response {
        probe::Response {
            status: 200,
            headers: vec![("Content-Type".to_owned(), content_type.to_owned())],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn reads_json_and_event_stream_answers() {
        let json_answer = response(
            "application/json",
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
        );
        assert_eq!(
            rpc_result(&json_answer, 3).unwrap()["content"][0]["text"],
            "hi"
        );
        let stream = response(
            "text/event-stream",
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\ndata: \"result\":{\"ok\":true}}\n\n",
        );
        assert_eq!(rpc_result(&stream, 7).unwrap(), json!({ "ok": true }));
        let unterminated = response(
            "text/event-stream",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
        );
        assert_eq!(rpc_result(&unterminated, 1).unwrap(), json!({}));
    }

    #[test]
    fn refuses_errors_and_foreign_answers() {
        let error = response(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool"}}"#,
        );
        assert!(rpc_result(&error, 1).is_err());
        let other_id = response(
            "application/json",
            r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
        );
        assert!(rpc_result(&other_id, 1).is_err());
        let unauthorized = probe::Response {
            status: 401,
            body: br#"{"error":"Unauthorized"}"#.to_vec(),
            ..probe::Response::default()
        };
        assert!(rpc_result(&unauthorized, 1).is_err());
        assert!(rpc_result(&response("text/event-stream", "data: {oops\n\n"), 1).is_err());
    }

    #[test]
    fn reads_text_and_image_blocks() {
        let answer = ToolAnswer {
            elapsed: Duration::ZERO,
            result: json!({ "content": [
                { "type": "text", "text": "a" },
                { "type": "image", "mimeType": "image/jpeg", "data": "AAAA/w==" },
                { "type": "text", "text": "b" },
            ] }),
        };
        assert_eq!(answer.text(), "a\nb");
        assert_eq!(
            answer.image(),
            Some(Image {
                mime: "image/jpeg".to_owned(),
                len: 4,
                dimensions: None
            })
        );
    }

    #[test]
    fn reads_image_dimensions() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&412_u32.to_be_bytes());
        png.extend_from_slice(&839_u32.to_be_bytes());
        assert_eq!(image_dimensions(&png), Some((412, 839)));
        // SOI, an APP0 segment of 4 bytes, then SOF0 with height 2100 and width 945.
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x08,
            0x34, 0x03, 0xB1,
        ];
        assert_eq!(image_dimensions(&jpeg), Some((945, 2100)));
        assert_eq!(image_dimensions(&jpeg[..12]), None);
        assert_eq!(image_dimensions(b"GIF89a"), None);
    }
}
