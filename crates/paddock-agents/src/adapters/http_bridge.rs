//! The HTTP/SSE bridge, for runtimes served over HTTP rather than stdio (OpenCode's `serve`):
//! it carries a protocol's requests to one loopback service and brings the service's answers
//! and server-sent events back as lines, so that the protocol stays a line decoder like every
//! other. The bridge knows nothing of any one service's API: the protocol names the address,
//! the paths and the bodies.
//!
//! Lines to the bridge (what the protocol writes):
//!
//! - [`connect`]: `{"connect":"http://127.0.0.1:…"}` once the service announced where it
//!   listens; the bridge then subscribes to the events path (`GET`, SSE). Later ones are
//!   ignored.
//! - [`request`]: `{"method":…,"path":…,"body":…,"tag":…}` for each request, performed one at a
//!   time, in order, with a JSON body and the bridge's `Authorization`.
//!
//! Lines from the bridge (what the protocol decodes):
//!
//! - `{"bridge":"event","event":{…}}` for each SSE event whose data is JSON,
//! - `{"bridge":"response","tag":…,"status":…,"body":…}` for each answered request (the body
//!   as JSON, else its first 2000 characters as a string),
//! - `{"bridge":"failed","tag":…,"message":…}` when a request could not be made,
//! - `{"bridge":"ended","message":…}` when the event stream ends.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Bridge;

/// The line that tells the bridge where the service listens.
pub fn connect(url: &str) -> String {
    json!({ "connect": url }).to_string()
}

/// The line for one request; its answer comes back under `tag`.
pub fn request(method: &str, path: &str, body: Value, tag: &str) -> String {
    json!({ "method": method, "path": path, "body": body, "tag": tag }).to_string()
}

/// The `Authorization` header value; never shown.
#[derive(Clone)]
struct Authorization(String);

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authorization(<redacted>)")
    }
}

/// Carries a protocol's requests to one HTTP service and its events back.
#[derive(Debug)]
pub struct HttpBridge {
    events_path: String,
    auth: Option<Authorization>,
}

impl HttpBridge {
    /// A bridge that subscribes to `events_path` (`/event`) once connected, without
    /// credentials.
    pub fn new(events_path: impl Into<String>) -> Self {
        Self {
            events_path: events_path.into(),
            auth: None,
        }
    }

    /// Sends HTTP Basic credentials with every request and the event subscription.
    pub fn with_basic_auth(mut self, username: &str, password: &str) -> Self {
        use base64::Engine as _;
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        self.auth = Some(Authorization(format!("Basic {token}")));
        self
    }
}

type Client = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<hyper::body::Bytes>,
>;

/// How long one request may take (the server answers prompts at once; it streams in events).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest SSE event or response body accepted.
const MAX_BODY: usize = 16 * 1024 * 1024;

impl Bridge for HttpBridge {
    fn start(
        self: Box<Self>,
        inbound: mpsc::UnboundedSender<String>,
    ) -> mpsc::UnboundedSender<String> {
        let (outbound, mut requests) = mpsc::unbounded_channel::<String>();
        let HttpBridge { events_path, auth } = *self;
        tokio::spawn(async move {
            let client: Client =
                hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .build_http();
            // Requests go out one at a time, in order; the event stream runs beside them.
            // Dropping the set aborts both when the session drops the sender.
            let mut tasks = tokio::task::JoinSet::new();
            let (ordered, mut ordered_rx) = mpsc::unbounded_channel::<(String, Value)>();
            {
                let (client, auth, inbound) = (client.clone(), auth.clone(), inbound.clone());
                tasks.spawn(async move {
                    while let Some((base, message)) = ordered_rx.recv().await {
                        perform(&client, auth.as_ref(), &base, &message, &inbound).await;
                    }
                });
            }
            let mut base: Option<String> = None;
            while let Some(line) = requests.recv().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if let Some(url) = message["connect"].as_str() {
                    if base.is_none() {
                        base = Some(url.to_owned());
                        tasks.spawn(events(
                            client.clone(),
                            auth.clone(),
                            format!("{url}{events_path}"),
                            inbound.clone(),
                        ));
                    }
                    continue;
                }
                match &base {
                    Some(base) => {
                        let _ = ordered.send((base.clone(), message));
                    }
                    None => {
                        let _ = inbound.send(
                            json!({ "bridge": "failed", "tag": message["tag"], "message": "the server has not announced its address" })
                                .to_string(),
                        );
                    }
                }
            }
            tasks.abort_all();
        });
        outbound
    }
}

fn build(
    auth: Option<&Authorization>,
    method: &str,
    url: &str,
    body: Option<&Value>,
) -> Result<hyper::Request<http_body_util::Full<hyper::body::Bytes>>, String> {
    let method = hyper::Method::from_bytes(method.as_bytes()).map_err(|_| "bad method")?;
    let mut builder = hyper::Request::builder().method(method).uri(url);
    if let Some(auth) = auth {
        builder = builder.header(hyper::header::AUTHORIZATION, auth.0.as_str());
    }
    let bytes = match body {
        Some(body) => {
            builder = builder.header(hyper::header::CONTENT_TYPE, "application/json");
            body.to_string().into_bytes()
        }
        None => {
            builder = builder.header(hyper::header::ACCEPT, "text/event-stream");
            Vec::new()
        }
    };
    builder
        .body(http_body_util::Full::new(bytes.into()))
        .map_err(|error| format!("bad request: {error}"))
}

/// Performs one request and reports its answer.
async fn perform(
    client: &Client,
    auth: Option<&Authorization>,
    base: &str,
    message: &Value,
    inbound: &mpsc::UnboundedSender<String>,
) {
    use http_body_util::BodyExt as _;
    let tag = message["tag"].clone();
    let failed =
        |text: String| json!({ "bridge": "failed", "tag": tag, "message": text }).to_string();
    let (Some(method), Some(path)) = (message["method"].as_str(), message["path"].as_str()) else {
        let _ = inbound.send(failed("a request without method or path".into()));
        return;
    };
    if !path.starts_with('/') {
        let _ = inbound.send(failed("a request path must start with `/`".into()));
        return;
    }
    let request = match build(
        auth,
        method,
        &format!("{base}{path}"),
        Some(&message["body"]),
    ) {
        Ok(request) => request,
        Err(error) => {
            let _ = inbound.send(failed(error));
            return;
        }
    };
    let answer = tokio::time::timeout(REQUEST_TIMEOUT, async {
        let response = client
            .request(request)
            .await
            .map_err(|error| error.to_string())?;
        let status = response.status().as_u16();
        let limited = http_body_util::Limited::new(response.into_body(), MAX_BODY);
        let bytes = limited
            .collect()
            .await
            .map_err(|error| error.to_string())?
            .to_bytes();
        Ok::<_, String>((status, bytes))
    })
    .await;
    let line = match answer {
        Ok(Ok((status, bytes))) => {
            let body = serde_json::from_slice::<Value>(&bytes).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&bytes).chars().take(2000).collect())
            });
            json!({ "bridge": "response", "tag": tag, "status": status, "body": body }).to_string()
        }
        Ok(Err(error)) => failed(error),
        Err(_) => failed(format!("no answer within {}s", REQUEST_TIMEOUT.as_secs())),
    };
    let _ = inbound.send(line);
}

/// Subscribes to `GET url` and forwards each event until the stream ends.
async fn events(
    client: Client,
    auth: Option<Authorization>,
    url: String,
    inbound: mpsc::UnboundedSender<String>,
) {
    let ended = |text: String| json!({ "bridge": "ended", "message": text }).to_string();
    let request = match build(auth.as_ref(), "GET", &url, None) {
        Ok(request) => request,
        Err(error) => {
            let _ = inbound.send(ended(error));
            return;
        }
    };
    let response = match client.request(request).await {
        Ok(response) => response,
        Err(error) => {
            let _ = inbound.send(ended(error.to_string()));
            return;
        }
    };
    if !response.status().is_success() {
        let _ = inbound.send(ended(format!("HTTP {}", response.status().as_u16())));
        return;
    }
    let mut body = response.into_body();
    let mut parser = SseParser::default();
    let reason = loop {
        use http_body_util::BodyExt as _;
        match body.frame().await {
            None => break "the server closed it".to_owned(),
            Some(Err(error)) => break error.to_string(),
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                match parser.push(&data) {
                    Ok(events) => {
                        for event in events {
                            let _ = inbound
                                .send(json!({ "bridge": "event", "event": event }).to_string());
                        }
                    }
                    Err(error) => break error,
                }
            }
        }
    };
    let _ = inbound.send(ended(reason));
}

/// Splits an SSE byte stream into the JSON values of its `data:` fields.
#[derive(Debug, Default)]
struct SseParser {
    buffer: Vec<u8>,
}

impl SseParser {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Value>, String> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, gap)) = find_blank_line(&self.buffer) {
            let block: Vec<u8> = self.buffer.drain(..end + gap).take(end).collect();
            let text = String::from_utf8_lossy(&block);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect();
            if data.is_empty() {
                continue;
            }
            if let Ok(value) = serde_json::from_str::<Value>(&data.join("\n")) {
                events.push(value);
            }
        }
        if self.buffer.len() > MAX_BODY {
            return Err(format!("an event exceeded {MAX_BODY} bytes"));
        }
        Ok(events)
    }
}

/// The first blank line (`\n\n` or `\r\n\r\n`): where the block ends and the separator's length.
fn find_blank_line(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|at| (at, 2));
    let crlf = buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_frames_split_across_chunks() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"data: {\"type\":\"a\"").unwrap().is_empty());
        let events = parser
            .push(b"}\n\n: comment\n\ndata: {\"type\":\"b\"}\r\n\r\ndata: not json\n\n")
            .unwrap();
        assert_eq!(events, vec![json!({ "type": "a" }), json!({ "type": "b" })]);
    }

    #[test]
    fn the_authorization_is_never_shown() {
        let bridge = HttpBridge::new("/event").with_basic_auth("user", "hunter2-secret");
        let shown = format!("{bridge:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("aHVudGVy"),
            "{shown}"
        );
        assert!(shown.contains("/event"), "{shown}");
    }

    #[test]
    fn requests_name_method_path_body_and_tag() {
        let line: Value =
            serde_json::from_str(&request("POST", "/session", json!({}), "create")).unwrap();
        assert_eq!(
            line,
            json!({ "method": "POST", "path": "/session", "body": {}, "tag": "create" })
        );
        assert_eq!(
            connect("http://127.0.0.1:9"),
            r#"{"connect":"http://127.0.0.1:9"}"#
        );
    }
}
