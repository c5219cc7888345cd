//! The backend port: what tools need from the daemon's subsystems, as Rust types. The device
//! pool implements it; tools never see its internals.

use std::sync::Arc;

use paddock_devices::{AppConfig, Device, DeviceError, DeviceInfo, Platform, Pool};

/// A boxed, sendable future: `futures-util`'s alias, the one every crate of the workspace uses.
pub use futures_util::future::BoxFuture;

/// A device bound to a session, and whether this call bound it.
pub type Acquired = (Arc<dyn Device>, bool);

/// Which device an acquisition asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceRequest<'a> {
    pub platform: Platform,
    /// Web: the emulation profile (the daemon's default when `None`).
    pub profile: Option<&'a str>,
    /// Android: the emulator's AVD name (any free device when `None`).
    pub avd: Option<&'a str>,
}

/// What the daemon provides to tools.
pub trait Backend: Send + Sync {
    fn list_devices(&self, platform: Option<Platform>) -> Vec<DeviceInfo>;
    /// Binds a device as `request` asks to `session`; `true` when newly bound.
    fn acquire<'a>(
        &'a self,
        session: &'a str,
        request: DeviceRequest<'a>,
    ) -> BoxFuture<'a, Result<Acquired, DeviceError>>;
    /// Adds a new warm device to the pool; returns its id.
    fn provision<'a>(
        &'a self,
        platform: Platform,
        profile: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, DeviceError>>;
    /// The device bound to `session`.
    fn device(&self, session: &str) -> Result<Arc<dyn Device>, DeviceError>;
    /// Releases the session's device; its id, if one was bound.
    /// Releases the session's device, remembering `reason` (a phrase after "was", such as
    /// `released by releaseDevice`) for the session's later calls; the device id, or `None`.
    fn release<'a>(&'a self, session: &'a str, reason: &'a str) -> BoxFuture<'a, Option<String>>;
    fn apps(&self) -> Vec<AppConfig>;
}

fn not_available(platform: Platform) -> DeviceError {
    let name = match platform {
        Platform::Web => "web device",
        Platform::Android => "Android device",
        Platform::Ios => "iOS simulator",
    };
    DeviceError::NotFound(format!(
        "no {name} is available: this Paddock release drives web and Android devices; use getWeb or getAndroid"
    ))
}

impl Backend for Pool {
    fn list_devices(&self, platform: Option<Platform>) -> Vec<DeviceInfo> {
        self.list(platform)
    }

    fn acquire<'a>(
        &'a self,
        session: &'a str,
        request: DeviceRequest<'a>,
    ) -> BoxFuture<'a, Result<Acquired, DeviceError>> {
        Box::pin(async move {
            match request.platform {
                Platform::Web => Pool::acquire(self, session, request.profile).await,
                Platform::Android => Pool::acquire_android(self, session, request.avd).await,
                other => Err(not_available(other)),
            }
        })
    }

    fn provision<'a>(
        &'a self,
        platform: Platform,
        profile: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, DeviceError>> {
        Box::pin(async move {
            match platform {
                Platform::Web => {
                    let ids = self.warm(1, profile, |_, _| {}).await?;
                    ids.into_iter()
                        .next()
                        .ok_or_else(|| DeviceError::Failed("no device was provisioned".into()))
                }
                other => Err(not_available(other)),
            }
        })
    }

    fn device(&self, session: &str) -> Result<Arc<dyn Device>, DeviceError> {
        Pool::device(self, session)
    }

    fn release<'a>(&'a self, session: &'a str, reason: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(Pool::release(self, session, reason))
    }

    fn apps(&self) -> Vec<AppConfig> {
        Pool::apps(self).to_vec()
    }
}

/// A backend with no device platforms: an empty pool (for hosts without devices).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDevices;

impl Backend for NoDevices {
    fn list_devices(&self, _platform: Option<Platform>) -> Vec<DeviceInfo> {
        Vec::new()
    }

    fn acquire<'a>(
        &'a self,
        _session: &'a str,
        request: DeviceRequest<'a>,
    ) -> BoxFuture<'a, Result<Acquired, DeviceError>> {
        Box::pin(async move { Err(not_available(request.platform)) })
    }

    fn provision<'a>(
        &'a self,
        platform: Platform,
        _profile: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, DeviceError>> {
        Box::pin(async move { Err(not_available(platform)) })
    }

    fn device(&self, _session: &str) -> Result<Arc<dyn Device>, DeviceError> {
        Err(DeviceError::NotFound(
            "no device is bound to this session; acquire one with getWeb".into(),
        ))
    }

    fn release<'a>(&'a self, _session: &'a str, _reason: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }

    fn apps(&self) -> Vec<AppConfig> {
        Vec::new()
    }
}
