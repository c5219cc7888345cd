//! Hardened HTTP/1.1 serving for Paddock's loopback listeners (the daemon's ingress, the
//! credential proxy): a connection cap at which the oldest idle connection is shed, header-read
//! and idle timeouts, bounded heads, a drain on shutdown, and backoff for accept loops that
//! never spins or floods the log. It knows nothing of what the listeners serve.

pub mod accept;
pub mod conn;

pub use accept::AcceptBackoff;
pub use conn::{BoxBody, BoxError, ConnectionLimits, Handler, serve_connections};
