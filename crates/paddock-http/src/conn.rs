//! Serving HTTP/1.1 connections from a listener under limits that an unauthenticated local
//! user cannot exhaust: a header-read timeout (a request head must arrive whole within it), an
//! idle timeout for connections between requests, a cap on concurrent connections at which the
//! oldest idle connection is shed to make room, and [`AcceptBackoff`] on accept errors.
//!
//! A connection counts as idle while no request is in flight on it — which includes a client
//! still trickling in a request head, as a slowloris attack does — so legitimate requests always
//! find room: the attacker's half-sent heads are shed first, and time out anyway.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use http_body_util::BodyExt as _;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tracing::debug;

use crate::accept::AcceptBackoff;

/// Limits of one listener.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Most connections open at once; at the cap the oldest idle one is closed for a new one,
    /// and when none is idle the new one is refused.
    pub max_connections: usize,
    /// A request head must arrive completely within this time.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
    /// The largest request head (and read buffer) accepted.
    pub max_header_bytes: usize,
    /// The most header fields in one request.
    pub max_headers: usize,
    /// After shutdown, how long connections may finish their requests before they are cut.
    pub drain: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            drain: Duration::from_secs(5),
        }
    }
}

/// The response body type the served service may return.
pub type BoxBody = http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, BoxError>;
/// The error type of a response body.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request handler for [`serve_connections`]: a cloneable async function from request to
/// response. Errors are not part of the contract: a handler answers every request.
pub trait Handler: Clone + Send + Sync + 'static {
    fn call(
        &self,
        request: Request<Incoming>,
    ) -> Pin<Box<dyn Future<Output = Response<BoxBody>> + Send + 'static>>;
}

/// Accepts connections from `listener` and serves each with `handler` under `limits` until
/// `shutdown` resolves; then asks every connection to finish its current request and returns
/// once all have closed, cutting those still open after `limits.drain`. `name` names the listener in logs. Every accepted socket gets
/// `TCP_NODELAY`: small JSON answers must not wait for Nagle's algorithm.
pub async fn serve_connections<H: Handler>(
    listener: TcpListener,
    name: String,
    limits: ConnectionLimits,
    handler: H,
    shutdown: impl Future<Output = ()> + Send,
) {
    let tracker = Arc::new(Tracker::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut backoff = AcceptBackoff::new(name.clone());
    let mut shutdown = std::pin::pin!(shutdown);
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
            // Reap finished connection tasks as they end, so the set does not grow.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff.on_success(std::time::Instant::now());
                let _ = stream.set_nodelay(true);
                let Some(slot) = tracker.admit() else {
                    debug!(
                        listener = %name,
                        "connection refused: every connection is busy"
                    );
                    drop(stream);
                    continue;
                };
                tasks.spawn(serve_one(
                    stream,
                    slot,
                    limits.clone(),
                    handler.clone(),
                    stop_rx.clone(),
                ));
            }
            Err(error) => {
                if !backoff.wait_after(&error, shutdown.as_mut()).await {
                    break;
                }
            }
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(limits.drain, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        debug!(listener = %name, "cutting connections still open after the drain time");
        tasks.abort_all();
    }
}

async fn serve_one<H: Handler>(
    stream: TcpStream,
    slot: Slot,
    limits: ConnectionLimits,
    handler: H,
    mut stop: watch::Receiver<bool>,
) {
    let activity = slot.activity.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let guard = InFlight::begin(activity.clone());
        let response = handler.call(request);
        async move {
            let response = response.await;
            Ok::<_, Infallible>(response.map(|body| {
                TrackedBody {
                    body,
                    _guard: guard,
                }
                .boxed_unsync()
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        // The head limit is enforced on a complete head; the buffer limit stops a client that
        // never finishes one from growing the buffer past the same size.
        .max_header_size(limits.max_header_bytes)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_headers(limits.max_headers)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let Slot {
        activity,
        mut shed,
        _entry,
    } = slot;
    let mut stopping = false;
    loop {
        let idle_deadline = activity.idle_deadline(limits.idle_timeout);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    debug!(%error, "connection ended with an error");
                }
                return;
            }
            // Shed to make room for a new connection; only ever while idle.
            _ = &mut shed => return,
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
            () = sleep_until_or_forever(idle_deadline) => {
                if activity.is_idle_past(limits.idle_timeout) {
                    return;
                }
            }
        }
    }
}

async fn sleep_until_or_forever(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The connections of one listener, oldest first.
#[derive(Debug)]
struct Tracker {
    max: usize,
    state: Mutex<TrackerState>,
}

#[derive(Debug, Default)]
struct TrackerState {
    next_id: u64,
    open: BTreeMap<u64, Tracked>,
}

#[derive(Debug)]
struct Tracked {
    activity: Arc<Activity>,
    shed: Option<oneshot::Sender<()>>,
}

/// What a connection task holds: its activity, its shed signal, and its place in the tracker
/// (released on drop).
struct Slot {
    activity: Arc<Activity>,
    shed: oneshot::Receiver<()>,
    _entry: Entry,
}

struct Entry {
    id: u64,
    tracker: Arc<Tracker>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Ok(mut state) = self.tracker.state.lock() {
            state.open.remove(&self.id);
        }
    }
}

impl Tracker {
    fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            state: Mutex::new(TrackerState::default()),
        }
    }

    /// A place for a new connection: at the cap, the oldest idle connection is shed; with none
    /// idle, `None`.
    fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut state = self.state.lock().ok()?;
        if state.open.len() >= self.max {
            let oldest_idle = state
                .open
                .iter()
                .find(|(_, tracked)| tracked.activity.in_flight() == 0)
                .map(|(id, _)| *id)?;
            if let Some(mut tracked) = state.open.remove(&oldest_idle)
                && let Some(shed) = tracked.shed.take()
            {
                let _ = shed.send(());
            }
        }
        let id = state.next_id;
        state.next_id += 1;
        let activity = Arc::new(Activity::new());
        let (shed_tx, shed_rx) = oneshot::channel();
        state.open.insert(
            id,
            Tracked {
                activity: activity.clone(),
                shed: Some(shed_tx),
            },
        );
        Some(Slot {
            activity,
            shed: shed_rx,
            _entry: Entry {
                id,
                tracker: self.clone(),
            },
        })
    }
}

/// Requests in flight on one connection and when it last became idle.
#[derive(Debug)]
struct Activity {
    in_flight: AtomicUsize,
    idle_since: Mutex<Option<Instant>>,
}

impl Activity {
    fn new() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Some(Instant::now())),
        }
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// When the idle timeout would expire, or `None` while a request is in flight.
    fn idle_deadline(&self, timeout: Duration) -> Option<Instant> {
        let since = self.idle_since.lock().ok().and_then(|since| *since)?;
        Some(since + timeout)
    }

    fn is_idle_past(&self, timeout: Duration) -> bool {
        self.in_flight() == 0
            && self
                .idle_deadline(timeout)
                .is_some_and(|deadline| Instant::now() >= deadline)
    }
}

/// Marks one request as in flight from its arrival until its response body has ended.
struct InFlight {
    activity: Arc<Activity>,
}

impl InFlight {
    fn begin(activity: Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut since) = activity.idle_since.lock() {
            *since = None;
        }
        Self { activity }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.activity.in_flight.fetch_sub(1, Ordering::SeqCst) == 1
            && let Ok(mut since) = self.activity.idle_since.lock()
        {
            *since = Some(Instant::now());
        }
    }
}

/// A response body that keeps its request in flight until the body has been sent.
struct TrackedBody {
    body: BoxBody,
    _guard: InFlight,
}

impl Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_idle_connection_is_shed_and_busy_ones_never() {
        let tracker = Arc::new(Tracker::new(2));
        let mut first = tracker.admit().unwrap_or_else(|| panic!("first"));
        let second = tracker.admit().unwrap_or_else(|| panic!("second"));
        let busy = InFlight::begin(second.activity.clone());
        // Full: the first (idle) connection makes way.
        let third = tracker.admit().unwrap_or_else(|| panic!("third"));
        assert!(first.shed.try_recv().is_ok(), "the oldest idle was shed");
        drop(first);
        // Full again, and now the only other one is busy: the oldest idle is `third`.
        let _third_busy = InFlight::begin(third.activity.clone());
        assert!(tracker.admit().is_none(), "nothing idle to shed");
        drop(busy);
        let mut second = second;
        assert!(tracker.admit().is_some());
        assert!(second.shed.try_recv().is_ok());
    }

    #[test]
    fn in_flight_requests_hold_off_the_idle_timeout() {
        let activity = Arc::new(Activity::new());
        assert!(activity.idle_deadline(Duration::from_secs(1)).is_some());
        let guard = InFlight::begin(activity.clone());
        assert!(activity.idle_deadline(Duration::from_secs(1)).is_none());
        assert!(!activity.is_idle_past(Duration::ZERO));
        drop(guard);
        assert!(activity.is_idle_past(Duration::ZERO));
    }
}
