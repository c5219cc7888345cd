//! The hooks through which subsystems join the daemon's lifecycle: device discovery and session
//! rehydration during startup, and teardown during shutdown.

use std::future::Future;
use std::pin::Pin;

/// A boxed future, so that subsystems stay object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A part of the daemon with startup and shutdown work. The daemon runs every subsystem's
/// `discover_devices`, then every `rehydrate_sessions`, before it publishes its token; it runs
/// `shutdown` in reverse order when stopping.
pub trait Subsystem: Send + Sync {
    fn name(&self) -> &'static str;

    fn discover_devices(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn rehydrate_sessions(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
