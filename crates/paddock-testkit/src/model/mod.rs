//! A scripted model server on 127.0.0.1 that speaks real wire APIs, so real agent CLIs run end
//! to end with no internet. A [`Script`] is a list of turns written once, independent of the
//! API; each API module renders a turn in its own wire format: the Anthropic Messages API
//! (`POST /v1/messages`), the OpenAI Responses API (`POST /v1/responses`) and Chat Completions
//! (`POST /v1/chat/completions`), each as JSON or SSE. `GET /v1/models` lists one model.
//!
//! Requests are matched to turns in order, except that a turn may carry a `when` text that must
//! appear in the request's last user message; requests no turn claims (CLIs make side requests,
//! such as titles) get a short fallback answer. Every request is recorded for assertions.
//!
//! [`ScriptedModel::start_tls`] serves the same over TLS (HTTP/1.1 by ALPN) with a certificate
//! for `localhost`, `127.0.0.1` and `::1` from a CA made for it, whose PEM file
//! [`ScriptedModel::ca_pem_path`] names for a client's `SSL_CERT_FILE`. The server is blocking,
//! a thread per connection, so it uses rustls's blocking stream rather than tokio-rustls.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::tls::{ALPN_HTTP1, TestCa};

/// One step of a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Assistant text, streamed in these chunks.
    Text(Vec<String>),
    /// A tool call with its JSON input.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

/// How a turn is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A normal answer made of parts.
    Parts(Vec<Part>),
    /// An HTTP error status with an API error body (429, 500, …).
    Status(u16),
    /// Starts streaming the parts, then drops the connection after `after_chunks` chunks.
    Disconnect {
        parts: Vec<Part>,
        after_chunks: usize,
    },
}

/// One scripted turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Text the request's last user message must contain for this turn to answer it.
    pub when: Option<String>,
    pub reply: Reply,
    /// Pause between streamed chunks.
    pub chunk_delay: Duration,
    /// Wait for [`ScriptedModel::release`] before streaming the first chunk.
    pub gated: bool,
    /// After this many streamed chunks, wait for [`ScriptedModel::release`] before the rest:
    /// the model is visibly answering and cannot finish until the test lets it.
    pub hold_after: Option<usize>,
}

impl Turn {
    pub fn text(text: &str) -> Self {
        Self::parts(vec![Part::Text(vec![text.to_owned()])])
    }

    /// Text streamed word by word.
    pub fn streamed(text: &str) -> Self {
        let chunks = text.split_inclusive(' ').map(str::to_owned).collect();
        Self::parts(vec![Part::Text(chunks)])
    }

    pub fn tool(id: &str, name: &str, input: Value) -> Self {
        Self::parts(vec![Part::ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
        }])
    }

    pub fn parts(parts: Vec<Part>) -> Self {
        Self {
            when: None,
            reply: Reply::Parts(parts),
            chunk_delay: Duration::ZERO,
            gated: false,
            hold_after: None,
        }
    }

    pub fn status(code: u16) -> Self {
        Self {
            reply: Reply::Status(code),
            ..Self::text("")
        }
    }

    pub fn disconnect(text: &str, after_chunks: usize) -> Self {
        let chunks = text.split_inclusive(' ').map(str::to_owned).collect();
        Self {
            reply: Reply::Disconnect {
                parts: vec![Part::Text(chunks)],
                after_chunks,
            },
            ..Self::text("")
        }
    }

    pub fn when(mut self, text: &str) -> Self {
        self.when = Some(text.to_owned());
        self
    }

    pub fn slow(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// The reply starts streaming only after [`ScriptedModel::release`].
    pub fn gated(mut self) -> Self {
        self.gated = true;
        self
    }

    /// The reply streams `chunks` chunks, then waits for [`ScriptedModel::release`].
    pub fn held_after(mut self, chunks: usize) -> Self {
        self.hold_after = Some(chunks);
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// Which scripted turn answered it, if any.
    pub turn: Option<usize>,
    /// When the server had read the whole request (headers and body), for benchmarks that
    /// time a client up to its first request.
    pub received_at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Text of the last user message (Anthropic shape).
    pub fn last_user_text(&self) -> String {
        last_user_text(&self.body)
    }
}

struct State {
    turns: VecDeque<(usize, Turn)>,
    recorded: Vec<Recorded>,
    released: usize,
    streams_started: usize,
}

/// The running server. Dropping it stops it.
pub struct ScriptedModel {
    port: u16,
    /// The CA behind the server's certificate, when it speaks TLS.
    ca: Option<TestCa>,
    state: Arc<(Mutex<State>, Condvar)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("port", &self.port)
            .finish()
    }
}

impl ScriptedModel {
    pub fn start(turns: Vec<Turn>) -> anyhow::Result<Self> {
        Self::serve(turns, None)
    }

    /// The same server over TLS: `https://127.0.0.1:PORT`, trusted through
    /// [`Self::ca_pem_path`].
    pub fn start_tls(turns: Vec<Turn>) -> anyhow::Result<Self> {
        let ca = TestCa::new()?;
        let config = ca.localhost_config(ALPN_HTTP1)?;
        let mut model = Self::serve(turns, Some(config))?;
        model.ca = Some(ca);
        Ok(model)
    }

    fn serve(turns: Vec<Turn>, tls: Option<Arc<rustls::ServerConfig>>) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let state = Arc::new((
            Mutex::new(State {
                turns: turns.into_iter().enumerate().collect(),
                recorded: Vec::new(),
                released: 0,
                streams_started: 0,
            }),
            Condvar::new(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let state = state.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let state = state.clone();
                    let tls = tls.clone();
                    std::thread::spawn(move || {
                        let _ = serve(stream, tls, &state);
                    });
                }
            })
        };
        Ok(Self {
            port,
            ca: None,
            state,
            stop,
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The base URL for `ANTHROPIC_BASE_URL` and the like: `https://` when it speaks TLS.
    pub fn base_url(&self) -> String {
        let scheme = if self.ca.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The PEM file of the CA that signed the server's certificate (a TLS server only).
    pub fn ca_pem_path(&self) -> Option<&Path> {
        self.ca.as_ref().map(TestCa::pem_path)
    }

    /// Appends turns to the script.
    pub fn push(&self, turn: Turn) {
        let (lock, _) = &*self.state;
        if let Ok(mut state) = lock.lock() {
            let index = state.turns.len() + state.recorded.len() + 1000;
            state.turns.push_back((index, turn));
        }
    }

    /// Lets one gated turn start streaming.
    pub fn release(&self) {
        let (lock, condvar) = &*self.state;
        if let Ok(mut state) = lock.lock() {
            state.released += 1;
        }
        condvar.notify_all();
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        let (lock, _) = &*self.state;
        lock.lock()
            .map(|state| state.recorded.clone())
            .unwrap_or_default()
    }

    /// Requests answered by scripted turns.
    pub fn scripted_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|request| request.turn.is_some())
            .collect()
    }

    /// Whether a scripted turn has answered a request yet (the CLI is up and asking).
    pub fn asked(&self) -> bool {
        let (lock, _) = &*self.state;
        lock.lock()
            .map(|state| state.recorded.iter().any(|request| request.turn.is_some()))
            .unwrap_or(false)
    }

    /// Turns not yet used.
    pub fn remaining(&self) -> usize {
        let (lock, _) = &*self.state;
        lock.lock().map(|state| state.turns.len()).unwrap_or(0)
    }

    /// Waits until `count` scripted replies have started streaming.
    pub fn wait_streams_started(&self, count: usize, within: Duration) -> anyhow::Result<()> {
        let (lock, condvar) = &*self.state;
        let deadline = Instant::now() + within;
        let mut state = lock.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        while state.streams_started < count {
            let now = Instant::now();
            if now >= deadline {
                anyhow::bail!(
                    "only {} of {count} scripted streams started",
                    state.streams_started
                );
            }
            state = condvar
                .wait_timeout(state, deadline - now)
                .map_err(|_| anyhow::anyhow!("poisoned"))?
                .0;
        }
        Ok(())
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.release_all();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl ScriptedModel {
    fn release_all(&self) {
        let (lock, condvar) = &*self.state;
        if let Ok(mut state) = lock.lock() {
            state.released = usize::MAX / 2;
        }
        condvar.notify_all();
    }
}

/// The last user message's text: `messages` (Anthropic, Chat Completions) or `input` (a string
/// or items, Responses).
fn last_user_text(body: &Value) -> String {
    if let Some(text) = body.get("input").and_then(Value::as_str) {
        return text.to_owned();
    }
    let Some(messages) = body
        .get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array)
    else {
        return String::new();
    };
    let Some(last) = messages
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
    else {
        return String::new();
    };
    match &last["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| {
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .or_else(|| block.get("content").and_then(Value::as_str))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// One client connection: plain TCP, or TLS over it.
pub(crate) enum Wire {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Wire {
    fn socket(&self) -> &TcpStream {
        match self {
            Self::Plain(stream) => stream,
            Self::Tls(stream) => stream.get_ref(),
        }
    }

    /// Drops the connection mid-response, as a failing upstream would (over TLS too: no
    /// `close_notify`, so the client sees a truncated stream).
    pub(crate) fn cut(&mut self) {
        let _ = self.socket().shutdown(std::net::Shutdown::Both);
    }

    /// Ends the response. Streamed answers are delimited by the connection's end, and over TLS
    /// that end only counts when `close_notify` comes first.
    fn finish(&mut self) {
        if let Self::Tls(stream) = self {
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
    }
}

impl Read for Wire {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(stream) => stream.read(buffer),
            Self::Tls(stream) => stream.read(buffer),
        }
    }
}

impl Write for Wire {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(stream) => stream.write(bytes),
            Self::Tls(stream) => stream.write(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Plain(stream) => stream.flush(),
            Self::Tls(stream) => stream.flush(),
        }
    }
}

fn serve(
    stream: TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    state: &Arc<(Mutex<State>, Condvar)>,
) -> anyhow::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    // The TLS handshake happens on the first read.
    let wire = match tls {
        Some(config) => Wire::Tls(Box::new(rustls::StreamOwned::new(
            rustls::ServerConnection::new(config)?,
            stream,
        ))),
        None => Wire::Plain(stream),
    };
    let mut reader = BufReader::new(wire);
    let answered = answer_request(&mut reader, state);
    reader.get_mut().finish();
    answered
}

/// Reads one request from `reader` and writes its answer to the same connection (the
/// request is read whole before anything is written).
fn answer_request(
    reader: &mut BufReader<Wire>,
    state: &Arc<(Mutex<State>, Condvar)>,
) -> anyhow::Result<()> {
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_owned();
    let mut headers = Vec::new();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let (name, value) = (name.trim().to_owned(), value.trim().to_owned());
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            }
            if name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked") {
                chunked = true;
            }
            headers.push((name, value));
        }
    }
    let body = if chunked {
        read_chunked(reader)?
    } else {
        let mut body = vec![0; length.min(64 * 1024 * 1024)];
        reader.read_exact(&mut body)?;
        body
    };
    let received_at = Instant::now();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path_only = path.split('?').next().unwrap_or_default();
    let stream = reader.get_mut();
    let api = match path_only {
        "/v1/messages" => Api::Anthropic,
        "/v1/responses" => Api::Responses,
        "/v1/chat/completions" => Api::Chat,
        "/v1/models" => {
            return respond_json(
                stream,
                200,
                &json!({ "object": "list", "data": [
                    { "id": "scripted-model", "object": "model", "type": "model", "owned_by": "paddock", "created": 0, "display_name": "Scripted model" }
                ], "has_more": false }),
            );
        }
        _ => {
            return respond_json(
                stream,
                404,
                &json!({ "type": "error", "error": { "type": "not_found_error", "message": "scripted server: unknown path" } }),
            );
        }
    };
    let user_text = last_user_text(&body);
    let (lock, condvar) = &**state;
    let (turn_index, turn) = {
        let mut state = lock.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let position = state.turns.iter().position(|(_, turn)| {
            turn.when
                .as_ref()
                .is_none_or(|needle| user_text.contains(needle.as_str()))
        });
        // A side request (a title, a summary) without tools never consumes a turn whose
        // `when` is unset, unless nothing else is scripted: CLIs send those on their own.
        let side_request = body
            .get("tools")
            .is_none_or(|tools| tools.as_array().is_none_or(Vec::is_empty));
        let chosen = match position {
            Some(index) if !(side_request && state.turns[index].1.when.is_none()) => {
                state.turns.remove(index)
            }
            _ => None,
        };
        state.recorded.push(Recorded {
            path: path.clone(),
            headers: headers.clone(),
            body: body.clone(),
            turn: chosen.as_ref().map(|(index, _)| *index),
            received_at,
        });
        match chosen {
            Some((index, turn)) => (Some(index), turn),
            None => (None, Turn::text("OK")),
        }
    };
    if turn.gated {
        wait_released(state)?;
    }
    if turn_index.is_some() {
        if let Ok(mut state) = lock.lock() {
            state.streams_started += 1;
        }
        condvar.notify_all();
    }
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let index = turn_index.unwrap_or(9999);
    let stream = reader.get_mut();
    let pace = Pace {
        delay: turn.chunk_delay,
        hold_after: turn.hold_after,
        gate: state,
    };
    match api {
        Api::Anthropic => anthropic::answer(stream, &turn, &pace, streaming, index),
        Api::Responses => responses::answer(
            stream,
            &turn,
            &pace,
            streaming,
            index,
            body.get("tools").unwrap_or(&Value::Null),
        ),
        Api::Chat => chat::answer(stream, &turn, &pace, streaming, index),
    }
}

/// Takes one [`ScriptedModel::release`], waiting for it.
fn wait_released(gate: &(Mutex<State>, Condvar)) -> anyhow::Result<()> {
    let (lock, condvar) = gate;
    let mut state = lock.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    while state.released == 0 {
        state = condvar
            .wait(state)
            .map_err(|_| anyhow::anyhow!("poisoned"))?;
    }
    state.released -= 1;
    Ok(())
}

/// How a stream is paced: the turn's delay before each scripted chunk, and its hold.
pub(super) struct Pace<'a> {
    delay: Duration,
    hold_after: Option<usize>,
    gate: &'a (Mutex<State>, Condvar),
}

impl Pace<'_> {
    /// Called before the scripted chunk that follows `sent` chunks already written.
    pub(super) fn before_chunk(&self, sent: usize) -> anyhow::Result<()> {
        if self.hold_after == Some(sent) {
            wait_released(self.gate)?;
        }
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        Ok(())
    }
}

/// The wire APIs the server speaks.
#[derive(Debug, Clone, Copy)]
enum Api {
    Anthropic,
    Responses,
    Chat,
}

/// OpenAI's error shape for a scripted status (Responses and Chat Completions share it):
/// `{"error": {"message", "type", "param", "code"}}`.
fn openai_error_body(code: u16) -> Value {
    let (kind, error_code) = match code {
        400 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        404 => ("invalid_request_error", json!("model_not_found")),
        429 => ("requests", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    };
    json!({ "error": {
        "message": format!("scripted {code}"),
        "type": kind,
        "param": null,
        "code": error_code,
    } })
}

/// Reads a `Transfer-Encoding: chunked` body (clients streaming their request, and proxies
/// forwarding one, send these).
fn read_chunked(reader: &mut impl BufRead) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
            .context("chunk size")?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        anyhow::ensure!(body.len() + size <= 64 * 1024 * 1024, "body too large");
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = String::new();
        reader.read_line(&mut crlf)?;
    }
}

pub(crate) fn respond_json(stream: &mut Wire, status: u16, body: &Value) -> anyhow::Result<()> {
    let text = body.to_string();
    write!(
        stream,
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{text}",
        reason(status),
        text.len(),
        if status == 429 { "retry-after: 0\r\n" } else { "" }
    )
    .context("write response")
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Error",
    }
}

mod anthropic;
mod chat;
mod responses;

#[cfg(test)]
mod tests {
    use super::*;

    /// A TLS client that trusts only `ca_pem`.
    fn tls_client(
        ca_pem: &Path,
        port: u16,
    ) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;

        let mut roots = rustls::RootCertStore::empty();
        for certificate in CertificateDer::pem_file_iter(ca_pem).unwrap() {
            roots.add(certificate.unwrap()).unwrap();
        }
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
        socket.set_read_timeout(Some(crate::DEADLINE)).unwrap();
        rustls::StreamOwned::new(connection, socket)
    }

    #[test]
    fn a_tls_server_streams_sse_and_ends_it_with_close_notify() {
        let model = ScriptedModel::start_tls(vec![Turn::streamed("over tls").when("hi")]).unwrap();
        assert!(model.base_url().starts_with("https://127.0.0.1:"));
        let body = json!({ "stream": true, "messages": [{ "role": "user", "content": "hi" }] })
            .to_string();
        let mut stream = tls_client(model.ca_pem_path().unwrap(), model.port());
        write!(
            stream,
            "POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nx-api-key: k\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        // Without close_notify before the socket closes, rustls reports a truncated stream.
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert_eq!(stream.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains(r#""text":"over ""#), "{answer}");
        assert!(
            answer
                .trim_end()
                .ends_with(r#"data: {"type":"message_stop"}"#),
            "{answer}"
        );
        assert_eq!(model.scripted_requests()[0].header("x-api-key"), Some("k"));
    }

    #[test]
    fn a_plain_server_has_no_ca() {
        let model = ScriptedModel::start(Vec::new()).unwrap();
        assert!(model.base_url().starts_with("http://127.0.0.1:"));
        assert!(model.ca_pem_path().is_none());
    }
}
