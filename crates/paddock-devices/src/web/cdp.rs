//! A small Chrome DevTools Protocol client over the pipe of `--remote-debugging-pipe`:
//! commands with ids and timeouts, flattened target sessions, and events delivered per session.
//!
//! Chromium reads commands from its descriptor 3 and writes responses and events to its
//! descriptor 4, each message one JSON text followed by a NUL byte. Nothing listens on a port:
//! only the process holding the other ends of the two pipes (the daemon) can drive the browser,
//! where a `--remote-debugging-port` would let any local user read the profile's files and
//! cookies.
//!
//! Written here rather than taken from chromiumoxide: Paddock drives about twenty CDP methods
//! with JSON it builds itself, and chromiumoxide's generated protocol crate (the whole CDP as
//! Rust types) costs minutes of compile time on our two-core machines for no behaviour we use.
//! The framing is a NUL splitter with a size cap ([`Framer`]).

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::unix::pipe;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

/// The descriptor Chromium reads commands from.
pub const BROWSER_COMMANDS_FD: i32 = 3;
/// The descriptor Chromium writes responses and events to.
pub const BROWSER_MESSAGES_FD: i32 = 4;
/// The largest message either way. Screenshots are the big ones (a full-resolution JPEG of a
/// large page, base64-encoded, is tens of MiB); past this a message is a fault, not data.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

const READ_CHUNK: usize = 64 * 1024;
const CLOSED_BY_BROWSER: &str = "the browser closed its pipe";

/// Errors of the CDP connection.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CdpError {
    #[error("could not set up the pipes to the browser: {0}")]
    Pipe(String),
    #[error("the browser connection is closed: {reason}")]
    Closed { reason: String },
    #[error("`{method}` timed out after {timeout:?}")]
    Timeout { method: String, timeout: Duration },
    #[error("`{method}` failed: {message}")]
    Protocol { method: String, message: String },
    #[error("`{method}` is {size} bytes, over the {limit}-byte message limit", limit = MAX_MESSAGE_BYTES)]
    TooLarge { method: String, size: usize },
}

impl CdpError {
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed { .. })
    }
}

/// A protocol event.
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub session_id: Option<String>,
    pub params: Value,
}

/// The browser's ends of the two pipes, for the child to inherit as [`BROWSER_COMMANDS_FD`]
/// and [`BROWSER_MESSAGES_FD`]. Both are close-on-exec here, so no other child inherits them;
/// drop them (spawning does) once the browser has its copies, or the end of the browser never
/// shows as end-of-file.
#[derive(Debug)]
pub struct BrowserEnds {
    /// The read end of the command pipe.
    pub commands: OwnedFd,
    /// The write end of the message pipe.
    pub messages: OwnedFd,
}

/// Calls waiting for an answer and, once the connection ended, why. One lock for both, so a
/// call either registers before the close (and is failed by it) or sees the reason.
#[derive(Debug, Default)]
struct Calls {
    waiting: HashMap<u64, oneshot::Sender<Result<Value, String>>>,
    closed: Option<String>,
}

type SharedCalls = Arc<Mutex<Calls>>;

/// One browser connection over its pipes.
#[derive(Debug, Clone)]
pub struct Cdp {
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    calls: SharedCalls,
    next_id: Arc<AtomicU64>,
    /// Weak, so that the event stream ends with the reader rather than with the last `Cdp`.
    events: broadcast::WeakSender<Event>,
    closed: watch::Receiver<bool>,
}

impl Cdp {
    /// Makes the two pipes and a client on Paddock's ends; the other ends are for the browser.
    pub fn over_pipes() -> Result<(Self, BrowserEnds), CdpError> {
        let cloexec = rustix::pipe::PipeFlags::CLOEXEC;
        let pipe_error = |error: rustix::io::Errno| CdpError::Pipe(error.to_string());
        let (commands, commands_writer) = rustix::pipe::pipe_with(cloexec).map_err(pipe_error)?;
        let (messages_reader, messages) = rustix::pipe::pipe_with(cloexec).map_err(pipe_error)?;
        let io_error = |error: std::io::Error| CdpError::Pipe(error.to_string());
        // Non-blocking mode is a property of each end's own open file, so the browser's ends
        // stay blocking.
        let writer = pipe::Sender::from_owned_fd(commands_writer).map_err(io_error)?;
        let reader = pipe::Receiver::from_owned_fd(messages_reader).map_err(io_error)?;
        Ok((
            Self::start(writer, reader),
            BrowserEnds { commands, messages },
        ))
    }

    fn start(writer: pipe::Sender, reader: pipe::Receiver) -> Self {
        let (outgoing, outgoing_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let calls = SharedCalls::default();
        let (events, _) = broadcast::channel(1024);
        let weak_events = events.downgrade();
        let (closed_tx, closed) = watch::channel(false);
        let closed_tx = Arc::new(closed_tx);
        {
            let calls = calls.clone();
            let closed_tx = closed_tx.clone();
            tokio::spawn(async move {
                if let Some(reason) = write_messages(writer, outgoing_rx).await {
                    close(&calls, &closed_tx, reason);
                }
            });
        }
        {
            let calls = calls.clone();
            tokio::spawn(async move {
                let reason = read_messages(reader, &calls, &events).await;
                close(&calls, &closed_tx, reason);
            });
        }
        Self {
            outgoing,
            calls,
            next_id: Arc::new(AtomicU64::new(1)),
            events: weak_events,
            closed,
        }
    }

    /// Sends `method` (to a target session when `session` is given) and waits for its result.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        // serde_json escapes a NUL inside a string as `\u0000`, so the text never contains the
        // terminator.
        let mut bytes = message.to_string().into_bytes();
        if bytes.len() > MAX_MESSAGE_BYTES {
            return Err(CdpError::TooLarge {
                method: method.to_owned(),
                size: bytes.len(),
            });
        }
        bytes.push(0);
        let (tx, rx) = oneshot::channel();
        {
            let mut calls = self.calls.lock().map_err(|_| poisoned())?;
            if let Some(reason) = &calls.closed {
                return Err(CdpError::Closed {
                    reason: reason.clone(),
                });
            }
            calls.waiting.insert(id, tx);
        }
        if self.outgoing.send(bytes).is_err() {
            self.forget(id);
            return Err(self.closed_error());
        }
        match tokio::time::timeout(timeout, rx).await {
            Err(_) => {
                self.forget(id);
                Err(CdpError::Timeout {
                    method: method.to_owned(),
                    timeout,
                })
            }
            Ok(Err(_)) => Err(self.closed_error()),
            Ok(Ok(Err(message))) => Err(CdpError::Protocol {
                method: method.to_owned(),
                message,
            }),
            Ok(Ok(Ok(result))) => Ok(result),
        }
    }

    /// Events from now on; the stream ends when the connection does.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        match self.events.upgrade() {
            Some(events) => events.subscribe(),
            // The reader has finished: a receiver whose sender is already gone.
            None => broadcast::channel(1).1,
        }
    }

    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Resolves once the connection has ended (immediately if it has).
    pub fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut closed = self.closed.clone();
        async move {
            let _ = closed.wait_for(|closed| *closed).await;
        }
    }

    fn forget(&self, id: u64) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.waiting.remove(&id);
        }
    }

    fn closed_error(&self) -> CdpError {
        let reason = self
            .calls
            .lock()
            .ok()
            .and_then(|calls| calls.closed.clone())
            .unwrap_or_else(|| "the connection ended".to_owned());
        CdpError::Closed { reason }
    }
}

fn poisoned() -> CdpError {
    CdpError::Closed {
        reason: "its state was poisoned by a panic".to_owned(),
    }
}

/// Records why the connection ended (the first reason wins) and fails every waiting call.
fn close(calls: &SharedCalls, closed_tx: &watch::Sender<bool>, reason: String) {
    let waiting = calls.lock().ok().map(|mut calls| {
        calls.closed.get_or_insert(reason);
        std::mem::take(&mut calls.waiting)
    });
    // Dropping the senders wakes each waiter with "closed".
    drop(waiting);
    let _ = closed_tx.send(true);
}

/// Writes each queued message; returns why it stopped when writing failed (and `None` when the
/// last `Cdp` went away, which closes the command pipe and so tells Chromium to exit).
async fn write_messages(
    mut writer: pipe::Sender,
    mut outgoing: mpsc::UnboundedReceiver<Vec<u8>>,
) -> Option<String> {
    while let Some(bytes) = outgoing.recv().await {
        match writer.write_all(&bytes).await {
            Ok(()) => {}
            // The browser exited (or closed its end) before reading this.
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                return Some(CLOSED_BY_BROWSER.to_owned());
            }
            Err(error) => return Some(format!("writing to the browser failed: {error}")),
        }
    }
    None
}

/// Reads messages until the pipe ends or breaks the protocol; returns why it stopped.
async fn read_messages(
    mut reader: pipe::Receiver,
    calls: &SharedCalls,
    events: &broadcast::Sender<Event>,
) -> String {
    let mut framer = Framer::new(MAX_MESSAGE_BYTES);
    let mut chunk = vec![0_u8; READ_CHUNK];
    loop {
        let read = match reader.read(&mut chunk).await {
            Ok(0) => {
                return match framer.finish() {
                    Ok(()) => CLOSED_BY_BROWSER.to_owned(),
                    Err(error) => error.to_string(),
                };
            }
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return format!("reading from the browser failed: {error}"),
        };
        framer.extend(chunk.get(..read).unwrap_or_default());
        loop {
            match framer.next_message() {
                Ok(Some(message)) => dispatch(&message, calls, events),
                Ok(None) => break,
                Err(error) => return error.to_string(),
            }
        }
    }
}

/// Hands one message to the call waiting for it, or to the event subscribers.
fn dispatch(message: &[u8], calls: &SharedCalls, events: &broadcast::Sender<Event>) {
    let Ok(value) = serde_json::from_slice::<Value>(message) else {
        tracing::debug!(
            bytes = message.len(),
            "ignored a CDP message that is not JSON"
        );
        return;
    };
    if let Some(id) = value.get("id").and_then(Value::as_u64) {
        let waiter = calls
            .lock()
            .ok()
            .and_then(|mut calls| calls.waiting.remove(&id));
        if let Some(waiter) = waiter {
            let outcome = match value.get("error") {
                Some(error) => Err(error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_owned()),
                None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = waiter.send(outcome);
        }
    } else if let Some(method) = value.get("method").and_then(Value::as_str) {
        let _ = events.send(Event {
            method: method.to_owned(),
            session_id: value
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            params: value.get("params").cloned().unwrap_or(Value::Null),
        });
    }
}

/// Why the message stream cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a message from the browser exceeded the {limit}-byte limit")]
    TooLarge { limit: usize },
    #[error(
        "the browser closed its pipe in the middle of a message ({pending} bytes unterminated)"
    )]
    Truncated { pending: usize },
}

/// Splits the byte stream from the browser into NUL-terminated messages, holding at most
/// `limit` bytes of an unfinished one.
#[derive(Debug)]
pub struct Framer {
    buffer: Vec<u8>,
    /// Where the next message starts in `buffer`.
    start: usize,
    /// How far past `start` is known to hold no NUL.
    scanned: usize,
    limit: usize,
}

impl Framer {
    pub fn new(limit: usize) -> Self {
        Self {
            buffer: Vec::new(),
            start: 0,
            scanned: 0,
            limit,
        }
    }

    /// Adds bytes read from the pipe.
    pub fn extend(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            // Drop the messages already handed out before growing.
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete message without its NUL, `None` until more bytes arrive, or an error
    /// once a message is over the limit.
    pub fn next_message(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let unread = self.buffer.get(self.start..).unwrap_or_default();
        let searched = unread.get(self.scanned..).unwrap_or_default();
        match searched.iter().position(|byte| *byte == 0) {
            Some(offset) => {
                let length = self.scanned + offset;
                if length > self.limit {
                    return Err(FrameError::TooLarge { limit: self.limit });
                }
                let message = unread.get(..length).unwrap_or_default().to_vec();
                self.start += length + 1;
                self.scanned = 0;
                Ok(Some(message))
            }
            None => {
                let pending = unread.len();
                self.scanned = pending;
                if pending > self.limit {
                    return Err(FrameError::TooLarge { limit: self.limit });
                }
                Ok(None)
            }
        }
    }

    /// At end-of-file: an error when part of a message is left over.
    pub fn finish(&self) -> Result<(), FrameError> {
        match self.buffer.len() - self.start {
            0 => Ok(()),
            pending => Err(FrameError::Truncated { pending }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn drain(framer: &mut Framer) -> Result<Vec<Vec<u8>>, FrameError> {
        let mut messages = Vec::new();
        while let Some(message) = framer.next_message()? {
            messages.push(message);
        }
        Ok(messages)
    }

    #[test]
    fn messages_split_on_nul_across_reads() {
        let mut framer = Framer::new(64);
        framer.extend(b"{\"id\":1}\0{\"me");
        assert_eq!(drain(&mut framer), Ok(vec![b"{\"id\":1}".to_vec()]));
        framer.extend(b"thod\":\"x\"}\0\0");
        assert_eq!(
            drain(&mut framer),
            Ok(vec![b"{\"method\":\"x\"}".to_vec(), Vec::new()])
        );
        assert_eq!(framer.finish(), Ok(()));
    }

    #[test]
    fn a_partial_message_at_end_of_file_is_truncation() {
        let mut framer = Framer::new(64);
        framer.extend(b"{\"id\":1}\0{\"id\":");
        assert_eq!(drain(&mut framer).map(|messages| messages.len()), Ok(1));
        assert_eq!(framer.finish(), Err(FrameError::Truncated { pending: 6 }));
    }

    #[test]
    fn messages_over_the_limit_are_refused_with_or_without_their_nul() {
        let mut unterminated = Framer::new(8);
        unterminated.extend(b"123456789");
        assert_eq!(
            unterminated.next_message(),
            Err(FrameError::TooLarge { limit: 8 })
        );
        let mut terminated = Framer::new(8);
        terminated.extend(b"12345678\x00abcdefghi\x00");
        assert_eq!(terminated.next_message(), Ok(Some(b"12345678".to_vec())));
        assert_eq!(
            terminated.next_message(),
            Err(FrameError::TooLarge { limit: 8 })
        );
        assert!(
            FrameError::TooLarge { limit: 8 }
                .to_string()
                .contains("8-byte limit")
        );
    }

    proptest! {
        /// However the stream is cut into reads, the same messages come out.
        #[test]
        fn any_split_of_the_stream_yields_the_same_messages(
            messages in proptest::collection::vec(
                proptest::collection::vec(1_u8..=255, 0..40), 0..8),
            cuts in proptest::collection::vec(0_usize..400, 0..8),
        ) {
            let stream: Vec<u8> = messages
                .iter()
                .flat_map(|message| message.iter().copied().chain([0]))
                .collect();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut % (stream.len() + 1)).collect();
            cuts.sort_unstable();
            let mut framer = Framer::new(64);
            let mut out = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([stream.len()]) {
                framer.extend(&stream[from..cut]);
                from = cut;
                out.extend(drain(&mut framer).unwrap());
            }
            prop_assert_eq!(framer.finish(), Ok(()));
            prop_assert_eq!(out, messages);
        }
    }

    /// A stand-in browser on the other ends of the pipes, driven by the test.
    struct FakeBrowser {
        commands: std::fs::File,
        messages: std::fs::File,
    }

    impl FakeBrowser {
        fn new(ends: BrowserEnds) -> Self {
            Self {
                commands: ends.commands.into(),
                messages: ends.messages.into(),
            }
        }

        /// Reads one command (blocking; the test runs it off the runtime).
        fn read_command(&mut self) -> Value {
            use std::io::Read as _;
            let mut bytes = Vec::new();
            let mut byte = [0_u8; 1];
            loop {
                self.commands.read_exact(&mut byte).unwrap();
                if byte[0] == 0 {
                    return serde_json::from_slice(&bytes).unwrap();
                }
                bytes.push(byte[0]);
            }
        }

        fn send(&mut self, bytes: &[u8]) {
            use std::io::Write as _;
            self.messages.write_all(bytes).unwrap();
        }
    }

    async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        tokio::time::timeout(Duration::from_secs(20), tokio::task::spawn_blocking(work))
            .await
            .unwrap()
            .unwrap()
    }

    #[tokio::test]
    async fn calls_get_their_answers_events_arrive_and_end_of_file_closes() {
        let (cdp, ends) = Cdp::over_pipes().unwrap();
        let mut browser = FakeBrowser::new(ends);
        let mut events = cdp.events();
        let call = {
            let cdp = cdp.clone();
            tokio::spawn(async move {
                cdp.call(
                    Some("S1"),
                    "Page.enable",
                    json!({}),
                    Duration::from_secs(20),
                )
                .await
            })
        };
        let (command, browser) = blocking(move || {
            let command = browser.read_command();
            let id = command["id"].as_u64().unwrap();
            browser.send(
                format!(
                    "{{\"method\":\"Page.loadEventFired\",\"sessionId\":\"S1\",\"params\":{{}}}}\0{{\"id\":{id},\"result\":{{\"ok\":true}}}}\0"
                )
                .as_bytes(),
            );
            (command, browser)
        })
        .await;
        assert_eq!(command["method"], "Page.enable");
        assert_eq!(command["sessionId"], "S1");
        assert_eq!(call.await.unwrap().unwrap(), json!({ "ok": true }));
        let event = events.recv().await.unwrap();
        assert_eq!(event.method, "Page.loadEventFired");
        assert_eq!(event.session_id.as_deref(), Some("S1"));

        drop(browser);
        tokio::time::timeout(Duration::from_secs(20), cdp.closed())
            .await
            .unwrap();
        let error = cdp
            .call(
                None,
                "Browser.getVersion",
                json!({}),
                Duration::from_secs(20),
            )
            .await
            .unwrap_err();
        assert!(error.is_closed(), "{error}");
        assert!(error.to_string().contains("closed its pipe"), "{error}");
        assert!(matches!(
            events.recv().await,
            Err(broadcast::error::RecvError::Closed)
        ));
    }

    #[tokio::test]
    async fn a_partial_message_at_end_of_file_fails_the_waiting_call() {
        let (cdp, ends) = Cdp::over_pipes().unwrap();
        let mut browser = FakeBrowser::new(ends);
        let call = {
            let cdp = cdp.clone();
            tokio::spawn(async move {
                cdp.call(
                    None,
                    "Browser.getVersion",
                    json!({}),
                    Duration::from_secs(20),
                )
                .await
            })
        };
        blocking(move || {
            let command = browser.read_command();
            let id = command["id"].as_u64().unwrap();
            browser.send(format!("{{\"id\":{id},\"res").as_bytes());
        })
        .await;
        let error = call.await.unwrap().unwrap_err();
        assert!(error.is_closed(), "{error}");
        assert!(error.to_string().contains("unterminated"), "{error}");
    }

    #[tokio::test]
    async fn protocol_errors_and_timeouts_are_typed() {
        let (cdp, ends) = Cdp::over_pipes().unwrap();
        let mut browser = FakeBrowser::new(ends);
        let failing = {
            let cdp = cdp.clone();
            tokio::spawn(async move {
                cdp.call(None, "Nope.nothing", json!({}), Duration::from_secs(20))
                    .await
            })
        };
        let browser = blocking(move || {
            let command = browser.read_command();
            let id = command["id"].as_u64().unwrap();
            browser.send(
                format!("{{\"id\":{id},\"error\":{{\"message\":\"no such method\"}}}}\0")
                    .as_bytes(),
            );
            browser
        })
        .await;
        let error = failing.await.unwrap().unwrap_err();
        assert!(
            matches!(&error, CdpError::Protocol { message, .. } if message == "no such method"),
            "{error:?}"
        );
        // The browser reads the next command and never answers it.
        let error = cdp
            .call(
                None,
                "Browser.getVersion",
                json!({}),
                Duration::from_millis(1),
            )
            .await
            .unwrap_err();
        assert!(matches!(error, CdpError::Timeout { .. }), "{error:?}");
        assert!(!cdp.is_closed());
        drop(browser);
    }
}
