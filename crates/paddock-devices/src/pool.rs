//! The device pool: warm devices per platform and profile, one device per session, reset and
//! return on release, idle timeout, and replacement of devices that die.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use paddock_store::Store;
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::android::adb::{Adb, ListedDevice, ServerAddress};
use crate::android::{AndroidDevice, AndroidFacts};
use crate::device::{Device, DeviceError, Platform};
use crate::profile::{self, AppConfig};
use crate::progress;
use crate::web::{ChromiumConfig, WebDevice};
use paddock_process::{ChildSpec, ManagedChild};

/// The progress steps of a device boot: started, browser up, ready.
const BOOT_STEPS: u64 = 2;

/// The web platform's settings.
#[derive(Debug, Clone)]
pub struct WebPoolConfig {
    pub chromium: ChromiumConfig,
    /// Devices kept warm with the default profile.
    pub warm: usize,
    pub profile: String,
    pub apps: Vec<AppConfig>,
}

impl Default for WebPoolConfig {
    fn default() -> Self {
        Self {
            chromium: ChromiumConfig::default(),
            warm: 2,
            profile: "pixel7".to_owned(),
            apps: Vec::new(),
        }
    }
}

/// The Android platform's settings.
#[derive(Debug, Clone)]
pub struct AndroidPoolConfig {
    /// Whether the pool follows an adb server at all.
    pub enabled: bool,
    /// The adb server (`ADB_SERVER_SOCKET` and friends resolve it, as for `adb` itself).
    pub server: ServerAddress,
    /// Release force-stops the apps the session launched.
    pub stop_launched_apps: bool,
    /// The Android SDK (`ANDROID_HOME`/`ANDROID_SDK_ROOT`): its `emulator/emulator` boots AVDs
    /// that `getAndroid {avdName}` asks for.
    pub sdk_root: Option<std::path::PathBuf>,
    /// The environment emulators run with.
    pub emulator_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// How long an emulator may take to boot.
    pub boot_timeout: Duration,
}

impl Default for AndroidPoolConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            server: ServerAddress {
                host: "127.0.0.1".to_owned(),
                port: crate::android::adb::DEFAULT_PORT,
            },
            stop_launched_apps: true,
            sdk_root: None,
            emulator_env: Vec::new(),
            boot_timeout: Duration::from_secs(300),
        }
    }
}

#[derive(Debug, Clone)]
pub struct PoolConfig {
    pub web: WebPoolConfig,
    pub android: AndroidPoolConfig,
    /// A session that makes no device call for this long is released.
    pub idle_timeout: Duration,
    /// Debug fault injection: every device boot first waits this long (tests of progress and
    /// cancellation during a slow boot; `PADDOCK_DEBUG_DEVICE_BOOT_DELAY_MS`).
    pub boot_delay: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            web: WebPoolConfig::default(),
            android: AndroidPoolConfig::default(),
            idle_timeout: Duration::from_secs(15 * 60),
            boot_delay: Duration::ZERO,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceState {
    Warm,
    Bound,
    Resetting,
}

impl DeviceState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warm => "warm",
            Self::Bound => "bound",
            Self::Resetting => "resetting",
        }
    }
}

/// A device as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub id: String,
    pub platform: Platform,
    pub profile: String,
    pub state: DeviceState,
    pub session: Option<String>,
    pub pid: Option<u32>,
    /// What an Android device said about itself.
    pub android: Option<AndroidFacts>,
}

struct Entry {
    device: Arc<dyn Device>,
    /// The same device when it is an Android one (for its facts and loss).
    android: Option<Arc<AndroidDevice>>,
    state: DeviceState,
    session: Option<String>,
}

impl Entry {
    fn web(device: Arc<WebDevice>, state: DeviceState, session: Option<String>) -> Self {
        Self {
            device,
            android: None,
            state,
            session,
        }
    }
}

/// What the pool knows of the adb server, for errors that say why no Android device is there.
#[derive(Debug, Clone)]
enum AdbStatus {
    Disabled,
    Connecting,
    Connected,
    Unreachable(String),
}

enum SessionStatus {
    Active {
        device: String,
        last_used: Instant,
    },
    /// The binding ended `at`, for `reason` (a phrase after "was": `released by
    /// releaseDevice`); `lost` when the device died under it.
    Ended {
        reason: String,
        lost: bool,
        at: Instant,
    },
}

struct Inner {
    config: PoolConfig,
    store: Arc<Store>,
    instance: String,
    devices: Mutex<HashMap<String, Entry>>,
    sessions: Mutex<HashMap<String, SessionStatus>>,
    next_id: AtomicU64,
    wake: Notify,
    stopping: AtomicBool,
    booting: AtomicU64,
    /// Live [`RefillHold`]s: while there are any, the warm set is not refilled.
    refill_holds: AtomicU64,
    /// Passes of the maintenance loop (tests wait for some to have run).
    passes: AtomicU64,
    adb: Mutex<AdbStatus>,
    /// Emulators this daemon booted, by AVD name; stopped at shutdown.
    emulators: Mutex<HashMap<String, ManagedChild>>,
    /// Online serials whose probe failed (still booting, say): probed again shortly.
    unprobed: Mutex<Vec<String>>,
}

/// Holds back the pool's warm refill while it lives ([`Pool::hold_refill`]).
#[derive(Debug)]
#[must_use = "the refill resumes as soon as the hold is dropped"]
pub struct RefillHold {
    inner: std::sync::Weak<Inner>,
}

impl Drop for RefillHold {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.refill_holds.fetch_sub(1, Ordering::SeqCst);
            inner.wake.notify_one();
        }
    }
}

/// The pool. Cheap to clone.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("instance", &self.inner.instance)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl Pool {
    /// A pool for daemon instance `instance` (a fresh id per daemon run).
    pub fn new(config: PoolConfig, store: Arc<Store>, instance: String) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                store,
                instance,
                devices: Mutex::new(HashMap::new()),
                sessions: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                wake: Notify::new(),
                stopping: AtomicBool::new(false),
                booting: AtomicU64::new(0),
                refill_holds: AtomicU64::new(0),
                passes: AtomicU64::new(0),
                adb: Mutex::new(AdbStatus::Disabled),
                emulators: Mutex::new(HashMap::new()),
                unprobed: Mutex::new(Vec::new()),
            }),
        }
    }

    pub fn apps(&self) -> &[AppConfig] {
        &self.inner.config.web.apps
    }

    pub fn default_profile(&self) -> &str {
        &self.inner.config.web.profile
    }

    /// Ends the sessions of earlier daemon instances (a restart ends every session) and
    /// returns how many there were.
    pub fn rehydrate(&self) -> Result<usize, DeviceError> {
        self.inner
            .store
            .end_bindings_of_other_instances(&self.inner.instance)
            .map_err(|error| DeviceError::Failed(error.to_string()))
    }

    /// Starts the background work: keeping devices warm and releasing idle sessions.
    pub fn start(&self) {
        let pool = self.clone();
        tokio::spawn(async move { pool.maintain().await });
        if self.inner.config.android.enabled {
            *lock(&self.inner.adb) = AdbStatus::Connecting;
            let pool = self.clone();
            tokio::spawn(async move { pool.follow_adb().await });
        }
    }

    /// Follows the adb server's device list for as long as the pool runs: devices that come
    /// online join the pool warm, devices that leave are lost (their sessions learn
    /// `device_lost`). Without a server it retries every two seconds.
    async fn follow_adb(self) {
        let adb = Adb::new(self.inner.config.android.server.clone());
        let mut reported = false;
        while !self.inner.stopping.load(Ordering::SeqCst) {
            match adb.track_devices().await {
                Ok(mut tracker) => {
                    *lock(&self.inner.adb) = AdbStatus::Connected;
                    info!(server = %adb.address(), "following the adb server's devices");
                    reported = false;
                    let mut last = Vec::new();
                    loop {
                        let retry = !lock(&self.inner.unprobed).is_empty();
                        let next = tokio::select! {
                            next = tracker.next() => Some(next),
                            () = tokio::time::sleep(Duration::from_secs(1)), if retry => None,
                            () = self.stopped() => return,
                        };
                        let Some(next) = next else {
                            // A device that was still booting: look again.
                            self.sync_android(&adb, last.clone()).await;
                            continue;
                        };
                        match next {
                            Ok(list) => {
                                last = list.clone();
                                self.sync_android(&adb, list).await;
                            }
                            Err(error) => {
                                warn!(%error, "lost the adb server");
                                *lock(&self.inner.adb) = AdbStatus::Unreachable(error.to_string());
                                break;
                            }
                        }
                    }
                    // Without the server no device can be reached.
                    self.sync_android(&adb, Vec::new()).await;
                }
                Err(error) => {
                    if !reported {
                        info!(%error, "no adb server yet; Android devices appear once one runs");
                        reported = true;
                    }
                    *lock(&self.inner.adb) = AdbStatus::Unreachable(error.to_string());
                }
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(2)) => {}
                () = self.stopped() => return,
            }
        }
    }

    /// Resolves once the pool is stopping.
    async fn stopped(&self) {
        while !self.inner.stopping.load(Ordering::SeqCst) {
            tokio::select! {
                _ = self.inner.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    }

    /// Brings the pool's Android devices in line with the server's list.
    async fn sync_android(&self, adb: &Adb, list: Vec<ListedDevice>) {
        let online: Vec<&ListedDevice> = list.iter().filter(|device| device.is_online()).collect();
        let gone: Vec<Arc<AndroidDevice>> = lock(&self.inner.devices)
            .values()
            .filter_map(|entry| entry.android.clone())
            .filter(|device| {
                !online
                    .iter()
                    .any(|listed| listed.serial == device.facts().serial)
            })
            .collect();
        for device in gone {
            info!(serial = %device.facts().serial, "Android device left adb");
            device.mark_lost();
        }
        let mut unprobed = Vec::new();
        for listed in online {
            let known = lock(&self.inner.devices).contains_key(&listed.serial);
            if known {
                continue;
            }
            match AndroidDevice::probe(adb, &listed.serial).await {
                Ok(facts) => {
                    info!(serial = %facts.serial, model = %facts.model, api = facts.api_level, "Android device joined the pool");
                    let device = AndroidDevice::new(
                        adb.clone(),
                        facts,
                        self.inner.config.android.stop_launched_apps,
                    );
                    self.watch(device.clone());
                    lock(&self.inner.devices).insert(
                        listed.serial.clone(),
                        Entry {
                            device: device.clone(),
                            android: Some(device),
                            state: DeviceState::Warm,
                            session: None,
                        },
                    );
                }
                Err(error) => {
                    debug!(serial = %listed.serial, %error, "Android device not ready yet");
                    unprobed.push(listed.serial.clone());
                }
            }
        }
        *lock(&self.inner.unprobed) = unprobed;
        self.inner.wake.notify_waiters();
    }

    /// The emulator binary of the configured SDK, if it is installed.
    fn emulator_binary(&self) -> Option<std::path::PathBuf> {
        let root = self.inner.config.android.sdk_root.as_ref()?;
        let binary = root.join("emulator").join("emulator");
        binary.is_file().then_some(binary)
    }

    /// Boots the emulator of AVD `avd` headless and waits until it has joined the pool (online
    /// and `sys.boot_completed`), reporting its stages as progress.
    async fn boot_avd(&self, avd: &str) -> Result<(), DeviceError> {
        const STEPS: u64 = 3;
        let Some(emulator) = self.emulator_binary() else {
            return Err(self.android_unavailable(Some(avd)));
        };
        let listed = self.list_avds(&emulator).await?;
        if !listed.iter().any(|name| name == avd) {
            return Err(DeviceError::NotFound(format!(
                "there is no AVD `{avd}`; the emulator knows: {}",
                if listed.is_empty() {
                    "none".to_owned()
                } else {
                    listed.join(", ")
                }
            )));
        }
        progress::report(
            0,
            Some(STEPS),
            format!("starting emulator `{avd}` (headless)"),
        );
        let server = &self.inner.config.android.server;
        let mut env = self.inner.config.android.emulator_env.clone();
        env.push((
            "ANDROID_ADB_SERVER_PORT".into(),
            server.port.to_string().into(),
        ));
        let spec = ChildSpec {
            program: emulator.clone(),
            args: vec![
                "-avd".into(),
                avd.into(),
                "-no-window".into(),
                "-no-snapshot-save".into(),
                "-no-boot-anim".into(),
            ],
            env,
            ..ChildSpec::default()
        };
        let child = ManagedChild::spawn(spec, None).map_err(|error| {
            DeviceError::Unavailable(format!("could not start `{}`: {error}", emulator.display()))
        })?;
        let exited = child.exited();
        lock(&self.inner.emulators).insert(avd.to_owned(), child);
        progress::report(
            1,
            Some(STEPS),
            format!("emulator `{avd}` started; waiting for it to boot"),
        );
        let joined = async {
            loop {
                if self.avd_running(avd) {
                    return;
                }
                tokio::select! {
                    _ = self.inner.wake.notified() => {}
                    () = tokio::time::sleep(Duration::from_millis(250)) => {}
                }
            }
        };
        let outcome = tokio::select! {
            () = joined => Ok(()),
            status = exited => {
                let tail = lock(&self.inner.emulators)
                    .remove(avd)
                    .map(|child| child.stderr_tail())
                    .unwrap_or_default();
                Err(DeviceError::Unavailable(format!(
                    "emulator `{avd}` exited ({}) before it booted: {}",
                    status.map_or("killed".to_owned(), |status| status.to_string()),
                    tail.trim()
                )))
            }
            () = tokio::time::sleep(self.inner.config.android.boot_timeout) => Err(DeviceError::Unavailable(format!(
                "emulator `{avd}` did not finish booting within {} s",
                self.inner.config.android.boot_timeout.as_secs()
            ))),
        };
        if outcome.is_err() {
            lock(&self.inner.emulators).remove(avd);
        }
        outcome?;
        progress::report(STEPS, Some(STEPS), format!("emulator `{avd}` is ready"));
        Ok(())
    }

    /// `emulator -list-avds`.
    async fn list_avds(&self, emulator: &std::path::Path) -> Result<Vec<String>, DeviceError> {
        let spec = ChildSpec {
            program: emulator.to_owned(),
            args: vec!["-list-avds".into()],
            env: self.inner.config.android.emulator_env.clone(),
            stdout: true,
            ..ChildSpec::default()
        };
        let mut child = ManagedChild::spawn(spec, None).map_err(|error| {
            DeviceError::Unavailable(format!("could not run `{}`: {error}", emulator.display()))
        })?;
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            use tokio::io::AsyncReadExt as _;
            let read =
                tokio::time::timeout(Duration::from_secs(30), stdout.read_to_string(&mut out));
            if read.await.is_err() {
                return Err(DeviceError::Unavailable(
                    "`emulator -list-avds` did not answer within 30 s".into(),
                ));
            }
        }
        Ok(out
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("INFO") && !line.contains(' '))
            .map(str::to_owned)
            .collect())
    }

    /// Boots AVD `avd` into the pool (for `paddock devices warm --platform android`); its
    /// serial.
    pub async fn warm_avd(&self, avd: &str) -> Result<String, DeviceError> {
        self.boot_avd(avd).await?;
        lock(&self.inner.devices)
            .values()
            .filter_map(|entry| entry.android.as_ref())
            .find(|device| device.facts().avd_name == avd)
            .map(|device| device.facts().serial.clone())
            .ok_or_else(|| DeviceError::Lost(format!("emulator `{avd}` left as it booted")))
    }

    /// Why no Android device can be bound, for the error a caller sees.
    fn android_unavailable(&self, avd: Option<&str>) -> DeviceError {
        let status = lock(&self.inner.adb).clone();
        match status {
            AdbStatus::Disabled => DeviceError::Unavailable(
                "Android devices are off in this daemon (`--android-adb off`); start it with `--android-adb connect` to follow the adb server at ADB_SERVER_SOCKET or 127.0.0.1:5037".into(),
            ),
            AdbStatus::Connecting => DeviceError::Unavailable(
                "the daemon is still connecting to the adb server; try again in a moment".into(),
            ),
            AdbStatus::Unreachable(reason) => DeviceError::Unavailable(format!(
                "{reason}. hint: Android devices come from the adb server; `adb devices` should list yours"
            )),
            AdbStatus::Connected => match avd {
                Some(avd) if self.avd_running(avd) => DeviceError::Unavailable(format!(
                    "emulator `{avd}` is bound to another session; release it there first"
                )),
                Some(avd) => DeviceError::NotFound(format!(
                    "no running emulator is AVD `{avd}`, and no Android emulator is installed to boot it (set ANDROID_HOME to an SDK with the emulator); `listDevices` shows the Android devices there are"
                )),
                None => {
                    let bound = lock(&self.inner.devices)
                        .values()
                        .filter(|entry| entry.android.is_some())
                        .count();
                    if bound == 0 {
                        DeviceError::NotFound(
                            "the adb server lists no online Android device; connect a phone (USB debugging on), start an emulator, or `adb connect HOST:PORT`".into(),
                        )
                    } else {
                        DeviceError::Unavailable(format!(
                            "all {bound} Android device(s) are bound to other sessions; release one or connect another"
                        ))
                    }
                }
            },
        }
    }

    /// Holds back the warm set's refill until the hold is dropped: a task takes it while its
    /// agent starts, so that booting a replacement Chromium does not compete with the agent
    /// for the CPU. A session that asks for a device meanwhile and finds none warm boots its
    /// own at once, as it would while a refill is booting.
    pub fn hold_refill(&self) -> RefillHold {
        self.inner.refill_holds.fetch_add(1, Ordering::SeqCst);
        RefillHold {
            inner: Arc::downgrade(&self.inner),
        }
    }

    async fn maintain(self) {
        loop {
            if self.inner.stopping.load(Ordering::SeqCst) {
                return;
            }
            self.inner.passes.fetch_add(1, Ordering::SeqCst);
            self.release_idle().await;
            let target = self.inner.config.web.warm;
            let profile_name = self.inner.config.web.profile.clone();
            let warm = self.count(DeviceState::Warm, Some(&profile_name))
                + self.inner.booting.load(Ordering::SeqCst) as usize;
            let held = self.inner.refill_holds.load(Ordering::SeqCst) > 0;
            if warm < target && !held {
                if let Err(error) = self.boot_warm(&profile_name).await {
                    warn!(%error, "could not warm a web device");
                    // Do not spin on a machine without Chromium.
                    tokio::select! {
                        _ = self.inner.wake.notified() => {}
                        _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                    }
                }
                continue;
            }
            tokio::select! {
                _ = self.inner.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    }

    fn count(&self, state: DeviceState, profile: Option<&str>) -> usize {
        lock(&self.inner.devices)
            .values()
            .filter(|entry| entry.state == state)
            .filter(|entry| profile.is_none_or(|name| entry.device.profile().name == name))
            .count()
    }

    async fn launch(&self, profile_name: &str) -> Result<Arc<WebDevice>, DeviceError> {
        let profile = profile::profile(profile_name).ok_or_else(|| {
            DeviceError::InvalidInput(format!(
                "unknown profile `{profile_name}`; known profiles: {}",
                profile::builtin_profiles()
                    .iter()
                    .map(|profile| profile.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let id = format!("web-{}", self.inner.next_id.fetch_add(1, Ordering::SeqCst));
        self.inner.booting.fetch_add(1, Ordering::SeqCst);
        progress::report(
            0,
            Some(BOOT_STEPS),
            format!("booting `{id}` (profile `{profile_name}`): starting Chromium"),
        );
        if !self.inner.config.boot_delay.is_zero() {
            tokio::time::sleep(self.inner.config.boot_delay).await;
        }
        progress::report(1, Some(BOOT_STEPS), format!("`{id}`: connecting over CDP"));
        let launched = WebDevice::launch(id, &self.inner.config.web.chromium, profile).await;
        self.inner.booting.fetch_sub(1, Ordering::SeqCst);
        let device = launched?;
        self.watch(device.clone() as Arc<dyn Device>);
        progress::report(
            BOOT_STEPS,
            Some(BOOT_STEPS),
            format!("`{}` is ready", device.id()),
        );
        Ok(device)
    }

    /// Boots one device into the warm set.
    async fn boot_warm(&self, profile_name: &str) -> Result<String, DeviceError> {
        let device = self.launch(profile_name).await?;
        let id = device.id().to_owned();
        if self.inner.stopping.load(Ordering::SeqCst) {
            device.shutdown().await;
            return Err(DeviceError::Unavailable("the daemon is stopping".into()));
        }
        lock(&self.inner.devices).insert(id.clone(), Entry::web(device, DeviceState::Warm, None));
        info!(device = %id, profile = profile_name, "web device warm");
        Ok(id)
    }

    /// Boots `count` more warm devices with `profile`, reporting each as it is ready.
    pub async fn warm(
        &self,
        count: usize,
        profile: Option<&str>,
        progress: impl Fn(usize, &str),
    ) -> Result<Vec<String>, DeviceError> {
        let profile = profile.unwrap_or(&self.inner.config.web.profile).to_owned();
        let mut ids = Vec::new();
        for index in 0..count {
            let id = self.boot_warm(&profile).await?;
            progress(index + 1, &id);
            ids.push(id);
        }
        Ok(ids)
    }

    /// When a device dies: its session learns `device_lost`, and the maintainer boots a
    /// replacement; other sessions are untouched.
    fn watch(&self, device: Arc<dyn Device>) {
        let pool = Arc::downgrade(&self.inner);
        let died = device.died();
        let id = device.id().to_owned();
        tokio::spawn(async move {
            died.await;
            let Some(inner) = pool.upgrade() else { return };
            let entry = lock(&inner.devices).remove(&id);
            if let Some(Entry {
                session: Some(session),
                ..
            }) = entry
            {
                warn!(device = %id, %session, "device died; its session is lost");
                lock(&inner.sessions).insert(
                    session.clone(),
                    SessionStatus::Ended {
                        reason: if id.starts_with("web-") {
                            format!("device `{id}` died (its browser exited)")
                        } else {
                            format!("Android device `{id}` left the adb server (unplugged, offline or stopped)")
                        },
                        lost: true,
                        at: Instant::now(),
                    },
                );
                persist(&inner.store, move |store| {
                    store.end_device_binding(&session, "lost")
                })
                .await;
            }
            inner.wake.notify_one();
        });
    }

    /// Binds a device to `session`: a warm one with `profile` when there is one, else a new one.
    /// A session that already holds a device gets it back.
    pub async fn acquire(
        &self,
        session: &str,
        profile: Option<&str>,
    ) -> Result<(Arc<dyn Device>, bool), DeviceError> {
        let wanted = profile.unwrap_or(&self.inner.config.web.profile).to_owned();
        if profile::profile(&wanted).is_none() {
            return Err(DeviceError::InvalidInput(format!(
                "unknown profile `{wanted}`; known profiles: {}",
                profile::builtin_profiles()
                    .iter()
                    .map(|profile| profile.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if let Ok(device) = self.device(session) {
            if device.profile().name != wanted {
                return Err(DeviceError::InvalidInput(format!(
                    "this session already holds `{}` with profile `{}`; release it first",
                    device.id(),
                    device.profile().name
                )));
            }
            return Ok((device, false));
        }
        let warm = self.bind_warm(session, |entry| {
            entry.android.is_none() && entry.device.profile().name == wanted
        });
        let device = match warm {
            Some(device) => device,
            None => {
                let device = self.launch(&wanted).await?;
                lock(&self.inner.devices).insert(
                    device.id().to_owned(),
                    Entry::web(device.clone(), DeviceState::Bound, Some(session.to_owned())),
                );
                device
            }
        };
        self.record_binding(session, device.clone()).await
    }

    /// Binds a free Android device to `session`: the running emulator of AVD `avd` when given,
    /// else any. A session that already holds an Android device gets it back.
    pub async fn acquire_android(
        &self,
        session: &str,
        avd: Option<&str>,
    ) -> Result<(Arc<dyn Device>, bool), DeviceError> {
        if let Ok(device) = self.device(session) {
            if device.platform() != Platform::Android {
                return Err(DeviceError::InvalidInput(format!(
                    "this session already holds `{}` ({}); release it first",
                    device.id(),
                    device.platform()
                )));
            }
            return Ok((device, false));
        }
        let bound = self.bind_warm(session, |entry| {
            entry
                .android
                .as_ref()
                .is_some_and(|device| avd.is_none_or(|avd| device.facts().avd_name == avd))
        });
        match (bound, avd) {
            (Some(device), _) => self.record_binding(session, device).await,
            (None, Some(name)) if self.emulator_binary().is_some() && !self.avd_running(name) => {
                self.boot_avd(name).await?;
                Box::pin(self.acquire_android(session, avd)).await
            }
            (None, _) => Err(self.android_unavailable(avd)),
        }
    }

    /// Binds the free device `id` to `session` (a session that already holds it gets it back).
    pub async fn acquire_id(
        &self,
        session: &str,
        id: &str,
    ) -> Result<(Arc<dyn Device>, bool), DeviceError> {
        if let Ok(device) = self.device(session) {
            if device.id() != id {
                return Err(DeviceError::InvalidInput(format!(
                    "this session already holds `{}`; release it first",
                    device.id()
                )));
            }
            return Ok((device, false));
        }
        match self.bind_warm(session, |entry| entry.device.id() == id) {
            Some(device) => self.record_binding(session, device).await,
            None if lock(&self.inner.devices).contains_key(id) => Err(DeviceError::Unavailable(
                format!("device `{id}` is bound to another session; wait for it or pick another"),
            )),
            None => Err(DeviceError::NotFound(format!(
                "no device `{id}` in the pool; listDevices shows them"
            ))),
        }
    }

    /// Whether a device of AVD `avd` is in the pool (bound or not).
    fn avd_running(&self, avd: &str) -> bool {
        lock(&self.inner.devices).values().any(|entry| {
            entry
                .android
                .as_ref()
                .is_some_and(|device| device.facts().avd_name == avd)
        })
    }

    /// Binds to `session` a warm, live device that `matches`, in the device map only (the
    /// caller records the binding); `None` when there is none.
    fn bind_warm(
        &self,
        session: &str,
        matches: impl Fn(&Entry) -> bool,
    ) -> Option<Arc<dyn Device>> {
        let mut devices = lock(&self.inner.devices);
        let entry = devices.values_mut().find(|entry| {
            entry.state == DeviceState::Warm && entry.device.is_alive() && matches(entry)
        })?;
        entry.state = DeviceState::Bound;
        entry.session = Some(session.to_owned());
        Some(entry.device.clone())
    }

    /// Records that `session` now holds `device` (in memory and in the store).
    async fn record_binding(
        &self,
        session: &str,
        device: Arc<dyn Device>,
    ) -> Result<(Arc<dyn Device>, bool), DeviceError> {
        self.inner.wake.notify_one();
        {
            let (session, device_id, instance, platform) = (
                session.to_owned(),
                device.id().to_owned(),
                self.inner.instance.clone(),
                device.platform().as_str(),
            );
            persist(&self.inner.store, move |store| {
                store.bind_device(&session, &device_id, platform, &instance)
            })
            .await;
        }
        lock(&self.inner.sessions).insert(
            session.to_owned(),
            SessionStatus::Active {
                device: device.id().to_owned(),
                last_used: Instant::now(),
            },
        );
        info!(device = %device.id(), %session, "device acquired");
        Ok((device, true))
    }

    /// The device bound to `session`, with a clear error when there is none.
    pub fn device(&self, session: &str) -> Result<Arc<dyn Device>, DeviceError> {
        let mut sessions = lock(&self.inner.sessions);
        match sessions.get_mut(session) {
            Some(SessionStatus::Active { device, last_used }) => {
                *last_used = Instant::now();
                let device = device.clone();
                drop(sessions);
                let devices = lock(&self.inner.devices);
                match devices.get(&device) {
                    Some(entry) if entry.device.is_alive() => Ok(entry.device.clone()),
                    _ => Err(DeviceError::Lost(format!("device `{device}` died"))),
                }
            }
            Some(SessionStatus::Ended {
                reason, lost: true, ..
            }) => Err(DeviceError::Lost(reason.clone())),
            Some(SessionStatus::Ended {
                reason,
                lost: false,
                at,
            }) => Err(DeviceError::NotFound(format!(
                "this session's device was {reason} ({} s ago); acquire a new one with getWeb",
                at.elapsed().as_secs()
            ))),
            None => {
                drop(sessions);
                match self.inner.store.device_binding(session) {
                    Some(binding) if binding.state == "ended_by_restart" => Err(DeviceError::Lost(
                        "the daemon restarted, which ended this session; do not retry it".into(),
                    )),
                    _ => Err(DeviceError::NotFound(
                        "no device is bound to this session; acquire one with getWeb".into(),
                    )),
                }
            }
        }
    }

    /// Releases the session's device: it is reset and returned to the warm set (or shut down
    /// when the warm set is full). Returns the device id, or `None` if none was bound.
    pub async fn release(&self, session: &str, reason: &str) -> Option<String> {
        let device_id = {
            let mut sessions = lock(&self.inner.sessions);
            match sessions.remove(session) {
                Some(SessionStatus::Active { device, .. }) => {
                    sessions.insert(
                        session.to_owned(),
                        SessionStatus::Ended {
                            reason: reason.to_owned(),
                            lost: false,
                            at: Instant::now(),
                        },
                    );
                    device
                }
                Some(other) => {
                    sessions.insert(session.to_owned(), other);
                    return None;
                }
                None => return None,
            }
        };
        {
            let session = session.to_owned();
            persist(&self.inner.store, move |store| {
                store.end_device_binding(&session, "released")
            })
            .await;
        }
        let device = {
            let mut devices = lock(&self.inner.devices);
            devices.get_mut(&device_id).map(|entry| {
                entry.state = DeviceState::Resetting;
                entry.session = None;
                entry.device.clone()
            })
        };
        let Some(device) = device else {
            return Some(device_id);
        };
        let pool = self.clone();
        let id = device_id.clone();
        tokio::spawn(async move {
            // An Android device always goes back (it is the user's, not ours to stop); a web
            // device only while the warm set is short.
            let keep = !pool.inner.stopping.load(Ordering::SeqCst)
                && (device.platform() == Platform::Android
                    || pool.count(DeviceState::Warm, Some(device.profile().name))
                        < pool.inner.config.web.warm);
            let reset = if keep {
                device.reset().await
            } else {
                Err(DeviceError::Unavailable("not kept".into()))
            };
            match reset {
                Ok(()) => {
                    if let Some(entry) = lock(&pool.inner.devices).get_mut(&id) {
                        entry.state = DeviceState::Warm;
                    }
                }
                Err(_) => {
                    lock(&pool.inner.devices).remove(&id);
                    device.shutdown().await;
                }
            }
            pool.inner.wake.notify_one();
        });
        Some(device_id)
    }

    async fn release_idle(&self) {
        let timeout = self.inner.config.idle_timeout;
        let idle: Vec<String> = lock(&self.inner.sessions)
            .iter()
            .filter_map(|(session, status)| match status {
                SessionStatus::Active { last_used, .. } if last_used.elapsed() >= timeout => {
                    Some(session.clone())
                }
                _ => None,
            })
            .collect();
        for session in idle {
            info!(%session, "releasing an idle session's device");
            self.release(
                &session,
                &format!("released after {}s without use", timeout.as_secs()),
            )
            .await;
        }
    }

    /// Every device with its state and session.
    pub fn list(&self, platform: Option<Platform>) -> Vec<DeviceInfo> {
        let mut list: Vec<DeviceInfo> = lock(&self.inner.devices)
            .iter()
            .filter(|(_, entry)| {
                platform.is_none_or(|platform| platform == entry.device.platform())
            })
            .map(|(id, entry)| DeviceInfo {
                id: id.clone(),
                platform: entry.device.platform(),
                profile: entry.device.profile().name.to_owned(),
                state: entry.state,
                session: entry.session.clone(),
                pid: entry.device.pid(),
                android: entry.android.as_ref().map(|device| device.facts().clone()),
            })
            .collect();
        // Web devices in boot order, then Android devices by serial.
        list.sort_by(|a, b| {
            let key = |info: &DeviceInfo| {
                (
                    info.platform != Platform::Web,
                    info.id
                        .strip_prefix("web-")
                        .and_then(|number| number.parse::<u64>().ok())
                        .unwrap_or(0),
                )
            };
            key(a).cmp(&key(b)).then_with(|| a.id.cmp(&b.id))
        });
        list
    }

    /// Stops every device.
    pub async fn shutdown(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        self.inner.wake.notify_waiters();
        let devices: Vec<Arc<dyn Device>> = lock(&self.inner.devices)
            .drain()
            .map(|(_, entry)| entry.device)
            .collect();
        for device in devices {
            device.shutdown().await;
        }
        // The emulators this daemon booted stop with it.
        let emulators: Vec<ManagedChild> = lock(&self.inner.emulators)
            .drain()
            .map(|(_, child)| child)
            .collect();
        for child in emulators {
            child.terminate(Duration::from_secs(10)).await;
        }
    }
}

/// Runs a store write on a blocking thread ([`Store::blocking`]). A failure is logged: the
/// in-memory state stays authoritative for this daemon's run.
async fn persist(
    store: &Arc<Store>,
    write: impl FnOnce(&Store) -> Result<(), paddock_store::StoreError> + Send + 'static,
) {
    if let Err(error) = store.blocking(write).await {
        warn!(%error, "could not persist a device binding");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of one warm web device whose browser cannot start, so every refill attempt
    /// shows as a device id used up.
    fn unbootable_pool(dir: &std::path::Path) -> Pool {
        let store = Arc::new(Store::open(&dir.join("store.sqlite")).unwrap());
        let config = PoolConfig {
            web: WebPoolConfig {
                chromium: ChromiumConfig {
                    executable: "/bin/false".into(),
                    ..ChromiumConfig::default()
                },
                warm: 1,
                ..WebPoolConfig::default()
            },
            ..PoolConfig::default()
        };
        Pool::new(config, store, "test".to_owned())
    }

    /// A hang deadline, not a speed expectation.
    const DEADLINE: Duration = Duration::from_secs(60);

    fn attempts(pool: &Pool) -> u64 {
        pool.inner.next_id.load(Ordering::SeqCst) - 1
    }

    /// Wakes the maintenance loop until it has made `count` more passes.
    async fn run_passes(pool: &Pool, count: u64) {
        let target = pool.inner.passes.load(Ordering::SeqCst) + count;
        tokio::time::timeout(DEADLINE, async {
            while pool.inner.passes.load(Ordering::SeqCst) < target {
                pool.inner.wake.notify_one();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the maintenance loop stopped making passes");
    }

    #[tokio::test]
    async fn a_held_refill_boots_nothing_until_the_last_hold_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let pool = unbootable_pool(dir.path());
        let first = pool.hold_refill();
        let second = pool.hold_refill();
        pool.start();
        // Several passes of the loop see the warm set short and leave it so.
        run_passes(&pool, 4).await;
        assert_eq!(attempts(&pool), 0, "booted while held");
        drop(first);
        run_passes(&pool, 3).await;
        assert_eq!(attempts(&pool), 0, "booted while one hold was left");
        drop(second);
        tokio::time::timeout(DEADLINE, async {
            while attempts(&pool) == 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the refill never resumed");
        pool.shutdown().await;
    }
}
