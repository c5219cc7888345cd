//! The device pool as a daemon subsystem: warming starts with device discovery, earlier
//! sessions end during session rehydration (a restart ends every session), and every device
//! stops at shutdown.

use paddock_devices::Pool;
use tracing::{info, warn};

use crate::subsystem::{BoxFuture, Subsystem};

/// Joins the pool to the daemon's lifecycle.
#[derive(Debug, Clone)]
pub struct PoolSubsystem(pub Pool);

impl Subsystem for PoolSubsystem {
    fn name(&self) -> &'static str {
        "device-pool"
    }

    fn discover_devices(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            self.0.start();
            Ok(())
        })
    }

    fn rehydrate_sessions(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            match self.0.rehydrate() {
                Ok(0) => {}
                Ok(ended) => info!(ended, "ended the device sessions of the previous daemon"),
                Err(error) => warn!(%error, "could not end the previous daemon's sessions"),
            }
            Ok(())
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.shutdown())
    }
}
