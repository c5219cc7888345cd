//! The backend port: what tools need from the daemon's subsystems, as minimal Rust types. The
//! device pool and agent runtimes implement it; tools never see their internals.

use std::future::Future;
use std::pin::Pin;

use crate::error::ToolError;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A device as `listDevices` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSummary {
    pub id: String,
    pub platform: String,
    pub profile: String,
    pub state: String,
    pub session: Option<String>,
}

/// What the daemon provides to tools.
pub trait Backend: Send + Sync {
    fn list_devices(
        &self,
        platform: Option<&str>,
    ) -> BoxFuture<'_, Result<Vec<DeviceSummary>, ToolError>>;
}

/// A backend with no device platforms configured: an empty pool.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDevices;

impl Backend for NoDevices {
    fn list_devices(
        &self,
        _platform: Option<&str>,
    ) -> BoxFuture<'_, Result<Vec<DeviceSummary>, ToolError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}
