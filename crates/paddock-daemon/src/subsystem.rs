//! The hooks through which subsystems join the daemon's lifecycle: device discovery and session
//! rehydration during startup, and teardown during shutdown.

/// A boxed, sendable future: `futures-util`'s alias, the one every crate of the workspace uses.
pub use futures_util::future::BoxFuture;

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
