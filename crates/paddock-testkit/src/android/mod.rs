//! A fake Android 11 (API 30) phone for tests: it speaks the device side of the adb transport
//! byte for byte (AOSP `protocol.md`), so the real adb server accepts it with `adb connect
//! 127.0.0.1:PORT` and real `adb shell`, `exec-out`, `push` and `pull` work against it.
//!
//! The device skips authentication, as a phone with `ro.adb.secure=0` does: it answers the
//! host's CNXN with its own at once and never sends AUTH (nor STLS). Its banner announces only
//! the features it implements (`shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir`). Every stream
//! runs on its own thread with flow control both ways, several at once per connection.
//!
//! Behind the transport sits a small scripted phone ([`FakeAndroidConfig`]): a 1080×2340 panel
//! at density 440, `getprop`, packages, a file system, settings, a task stack with a launcher,
//! Settings, a WebView browser and a notes app (sign-in, then a list of 40 notes), whose
//! screens `uiautomator dump` renders in Android 11's exact XML and `screencap -p` draws as a
//! PNG. `input tap`, `text`, `keyevent`, `swipe` and `draganddrop` drive it; ADBKeyboard's
//! broadcasts type what `input text` cannot. [`AdbServer`] runs a private real adb server for
//! each test, and [`fake_android_home`] an Android SDK whose `emulator` starts a fake device.
//!
//! The device has no clipboard: Android 11 offers no shell command for it and ADBKeyboard has
//! no clipboard broadcast (third-party apps such as Clipper add one).

mod adb_server;
mod apps;
mod commands;
mod device;
mod emulator;
mod render;
mod services;
mod shell;
mod shell_words;
mod sync;
mod transport;
mod ui;
mod wire;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;

pub use adb_server::AdbServer;
pub use device::FakeAndroidConfig;
pub use emulator::fake_android_home;
pub use shell_words::{ShellSyntaxError, quote, split_words};

use device::Device;
use transport::{Connection, lock};

/// The ports the adb server scans for emulators (5555, 5557, … 5585 with their consoles): a
/// fake listening there would be found as `emulator-55xx` besides its `adb connect` name.
const EMULATOR_PORTS: std::ops::RangeInclusive<u16> = 5554..=5585;

/// What the services record for a test to read.
#[derive(Debug, Default)]
struct Log {
    commands: Vec<String>,
    services: Vec<String>,
}

/// The state shared by the device's threads.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) device: Mutex<Device>,
    log: Mutex<Log>,
    delay: Mutex<Duration>,
    /// Set by [`FakeAndroid::go_offline`] and on drop: the listener closes, and new connections
    /// are refused.
    closing: AtomicBool,
    connections: Mutex<Vec<Weak<Connection>>>,
}

impl Core {
    fn cut_connections(&self) {
        let connections: Vec<_> = lock(&self.connections).drain(..).collect();
        for connection in connections.iter().filter_map(Weak::upgrade) {
            connection.shut_down();
        }
    }
}

/// A fake phone listening on `127.0.0.1:PORT`. Dropping it stops it and joins every thread.
#[derive(Debug)]
pub struct FakeAndroid {
    core: Arc<Core>,
    port: u16,
    acceptor: Option<JoinHandle<()>>,
}

fn bind_outside_emulator_ports() -> anyhow::Result<TcpListener> {
    // Linux hands out ephemeral ports from 32768 up, but a host may be set up otherwise; a
    // listener in the emulator range is kept open while asking again, so the next answer
    // differs.
    let mut rejected = Vec::new();
    for _ in 0..16 {
        let listener =
            TcpListener::bind("127.0.0.1:0").context("binding the fake device's port")?;
        let port = listener.local_addr()?.port();
        if !EMULATOR_PORTS.contains(&port) {
            return Ok(listener);
        }
        rejected.push(listener);
    }
    anyhow::bail!("the system keeps handing out ports in the emulator range 5554-5585")
}

impl FakeAndroid {
    /// Starts a device with `config` on a free loopback port.
    pub fn start(config: FakeAndroidConfig) -> anyhow::Result<Self> {
        let listener = bind_outside_emulator_ports()?;
        let port = listener.local_addr()?.port();
        let core = Arc::new(Core {
            device: Mutex::new(Device::new(config)),
            log: Mutex::new(Log::default()),
            delay: Mutex::new(Duration::ZERO),
            closing: AtomicBool::new(false),
            connections: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let core = Arc::clone(&core);
            std::thread::Builder::new()
                .name(format!("fake-adb accept {port}"))
                .spawn(move || accept_loop(listener, core))
                .context("starting the fake device's accept thread")?
        };
        Ok(Self {
            core,
            port,
            acceptor: Some(acceptor),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The name adb gives the device after `adb connect`: `127.0.0.1:PORT`.
    pub fn serial(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Every shell and exec command line as received, in order (interactive shells add each
    /// line typed).
    pub fn commands(&self) -> Vec<String> {
        lock(&self.core.log).commands.clone()
    }

    /// How many shell and exec command lines the device has received: the length of
    /// [`Self::commands`], without copying them.
    pub fn command_count(&self) -> usize {
        lock(&self.core.log).commands.len()
    }

    /// Every service string a host OPENed, in order, refused ones included.
    pub fn services(&self) -> Vec<String> {
        lock(&self.core.log).services.clone()
    }

    /// The contents of the file `adb push` (the sync service) stored at `path`.
    pub fn pushed(&self, path: &str) -> Option<Vec<u8>> {
        lock(&self.core.device)
            .files
            .pushed(&device::normalize(path, "/"))
    }

    /// The screen in front: `launcher`, `settings`, `browser`, `notes-login` or `notes-list`.
    pub fn screen(&self) -> String {
        lock(&self.core.device).front().screen.name().to_owned()
    }

    /// The URLs `am start -a android.intent.action.VIEW -d URL` opened, in order.
    pub fn opened_urls(&self) -> Vec<String> {
        lock(&self.core.device).opened_urls.clone()
    }

    /// The next `n` `uiautomator dump`s fail as they do when the accessibility bridge has no
    /// window yet (`ERROR: null root node returned by UiTestAutomationBridge.`).
    pub fn fail_next_dumps(&self, n: u32) {
        lock(&self.core.device).dumps_to_fail = n;
    }

    /// Every shell or exec command line waits this long before it runs.
    pub fn set_delay(&self, per_command: Duration) {
        *lock(&self.core.delay) = per_command;
    }

    /// Pulls the cable: every connection drops and new ones are refused (the port closes).
    pub fn go_offline(&self) {
        self.stop_accepting();
        self.core.cut_connections();
    }

    fn stop_accepting(&self) {
        if !self.core.closing.swap(true, Ordering::SeqCst) {
            // Wake the accept thread, which sees the flag and closes the listener.
            let address = SocketAddr::from(([127, 0, 0, 1], self.port));
            let _ = TcpStream::connect_timeout(&address, Duration::from_secs(1));
        }
    }
}

impl Drop for FakeAndroid {
    fn drop(&mut self) {
        self.stop_accepting();
        self.core.cut_connections();
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept_loop(listener: TcpListener, core: Arc<Core>) {
    let mut connections: Vec<JoinHandle<()>> = Vec::new();
    let services: Arc<dyn transport::Services> = Arc::new(services::DeviceServices {
        core: Arc::clone(&core),
    });
    for stream in listener.incoming() {
        if core.closing.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else {
            continue;
        };
        connections.retain(|connection| !connection.is_finished());
        let services = Arc::clone(&services);
        let registry = Arc::clone(&core);
        let spawned = std::thread::Builder::new()
            .name("fake-adb connection".to_owned())
            .spawn(move || {
                let _ = transport::serve(stream, services, |connection| {
                    let mut connections = lock(&registry.connections);
                    connections.retain(|weak| weak.strong_count() > 0);
                    connections.push(Arc::downgrade(connection));
                    // A connection that raced the cut is cut too.
                    if registry.closing.load(Ordering::SeqCst) {
                        connection.shut_down();
                    }
                });
            });
        if let Ok(handle) = spawned {
            connections.push(handle);
        }
    }
    drop(listener);
    core.cut_connections();
    for connection in connections {
        let _ = connection.join();
    }
}
