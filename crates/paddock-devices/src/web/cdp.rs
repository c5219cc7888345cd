//! A small Chrome DevTools Protocol client over one WebSocket: commands with ids and timeouts,
//! flattened target sessions, and events delivered per session.
//!
//! Written here rather than taken from chromiumoxide: Paddock drives about twenty CDP methods
//! with JSON it builds itself, and chromiumoxide's generated protocol crate (the whole CDP as
//! Rust types) costs minutes of compile time on our two-core machines for no behaviour we use.
//! tokio-tungstenite carries the frames.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// Errors of the CDP connection.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CdpError {
    #[error("could not connect to the browser's DevTools endpoint: {0}")]
    Connect(String),
    #[error("the browser connection is closed")]
    Closed,
    #[error("`{method}` timed out after {timeout:?}")]
    Timeout { method: String, timeout: Duration },
    #[error("`{method}` failed: {message}")]
    Protocol { method: String, message: String },
}

impl CdpError {
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed)
    }
}

/// A protocol event.
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub session_id: Option<String>,
    pub params: Value,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// One WebSocket connection to a browser.
#[derive(Debug, Clone)]
pub struct Cdp {
    outgoing: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
    events: broadcast::Sender<Event>,
    closed: Arc<tokio::sync::watch::Receiver<bool>>,
}

impl Cdp {
    /// Connects to `ws_url` (the browser endpoint Chromium prints).
    pub async fn connect(ws_url: &str) -> Result<Self, CdpError> {
        let (socket, _) = tokio_tungstenite::connect_async(ws_url)
            .await
            .map_err(|error| CdpError::Connect(error.to_string()))?;
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut outgoing_rx) = mpsc::unbounded_channel::<String>();
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let (events, _) = broadcast::channel(1024);
        let (closed_tx, closed_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            while let Some(text) = outgoing_rx.recv().await {
                if sink.send(Message::text(text)).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        {
            let pending = pending.clone();
            let events = events.clone();
            tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let Message::Text(text) = message else {
                        continue;
                    };
                    let Ok(value) = serde_json::from_str::<Value>(text.as_str()) else {
                        continue;
                    };
                    if let Some(id) = value.get("id").and_then(Value::as_u64) {
                        let waiter = pending.lock().ok().and_then(|mut map| map.remove(&id));
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
                // Fail everything still waiting: the browser is gone.
                if let Ok(mut map) = pending.lock() {
                    map.clear();
                }
                let _ = closed_tx.send(true);
            });
        }
        Ok(Self {
            outgoing,
            pending,
            next_id: Arc::new(AtomicU64::new(1)),
            events,
            closed: Arc::new(closed_rx),
        })
    }

    /// Sends `method` (to a target session when `session` is given) and waits for its result.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        if *self.closed.borrow() {
            return Err(CdpError::Closed);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .map_err(|_| CdpError::Closed)?
            .insert(id, tx);
        if self.outgoing.send(message.to_string()).is_err() {
            return Err(CdpError::Closed);
        }
        match tokio::time::timeout(timeout, rx).await {
            Err(_) => {
                if let Ok(mut map) = self.pending.lock() {
                    map.remove(&id);
                }
                Err(CdpError::Timeout {
                    method: method.to_owned(),
                    timeout,
                })
            }
            Ok(Err(_)) => Err(CdpError::Closed),
            Ok(Ok(Err(message))) => Err(CdpError::Protocol {
                method: method.to_owned(),
                message,
            }),
            Ok(Ok(Ok(result))) => Ok(result),
        }
    }

    /// Events from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }
}
