//! The device pool as a daemon subsystem: warming starts with device discovery, earlier
//! sessions end during session rehydration (a restart ends every session), and every device
//! stops at shutdown. The `devices/*` control methods are served here.

use paddock_client::control::{
    ControlError, DeviceEntry, DevicesListResult, DevicesWarmParams, DevicesWarmResult, ErrorCode,
};
use paddock_devices::Pool;
use tokio::sync::mpsc;
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
            // The store waits on disk: not on an async worker.
            let pool = self.0.clone();
            match tokio::task::spawn_blocking(move || pool.rehydrate()).await {
                Ok(Ok(0)) => {}
                Ok(Ok(ended)) => info!(ended, "ended the device sessions of the previous daemon"),
                Ok(Err(error)) => warn!(%error, "could not end the previous daemon's sessions"),
                Err(_) => warn!("ending the previous daemon's sessions failed unexpectedly"),
            }
            Ok(())
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.shutdown())
    }
}

/// `devices/list`: the pool and its sessions.
pub fn list(pool: &Pool) -> DevicesListResult {
    let devices = pool
        .list(None)
        .into_iter()
        .map(|device| DeviceEntry {
            id: device.id,
            platform: device.platform.as_str().to_owned(),
            profile: device.profile,
            state: device.state.as_str().to_owned(),
            session: device.session,
            pid: device.pid,
        })
        .collect();
    DevicesListResult {
        devices,
        default_profile: pool.default_profile().to_owned(),
    }
}

/// `devices/warm`: boots warm devices, sending a progress line as each is ready.
pub async fn warm(
    pool: Pool,
    params: DevicesWarmParams,
    progress: mpsc::UnboundedSender<String>,
) -> Result<DevicesWarmResult, ControlError> {
    let DevicesWarmParams {
        count,
        platform,
        profile,
        avd,
    } = params;
    if platform == "android" {
        let Some(avd) = avd else {
            return Err(ControlError::new(
                ErrorCode::InvalidParams,
                "an Android device is warmed by booting an emulator: give `--avd NAME` (phones join the pool by themselves when adb lists them)",
            ));
        };
        let sender = progress.clone();
        let reporter = paddock_devices::progress::Reporter::new(move |step| {
            let _ = sender.send(step.message);
        });
        let serial = paddock_devices::progress::with_progress(reporter, pool.warm_avd(&avd))
            .await
            .map_err(|error| ControlError::new(ErrorCode::DeviceError, error.to_string()))?;
        return Ok(DevicesWarmResult {
            warmed: vec![serial],
        });
    }
    if platform != "web" {
        return Err(ControlError::new(
            ErrorCode::InvalidParams,
            format!(
                "no `{platform}` devices can be warmed: this release drives web and Android devices"
            ),
        ));
    }
    if !(1..=16).contains(&count) {
        return Err(ControlError::new(
            ErrorCode::InvalidParams,
            "warm 1 to 16 devices at a time",
        ));
    }
    let warmed = pool
        .warm(count, profile.as_deref(), |done, id| {
            let _ = progress.send(format!("{done}/{count} warm: {id}"));
        })
        .await
        .map_err(|error| ControlError::new(ErrorCode::DeviceError, error.to_string()))?;
    Ok(DevicesWarmResult { warmed })
}
