//! A private real adb server per test: `adb -P PORT server nodaemon` as a child on a free port,
//! with its own HOME (so its RSA key and state stay in a temporary directory), and the real
//! adb client pointed at it through `ADB_SERVER_SOCKET=tcp:127.0.0.1:PORT`. A client given a
//! non-`localhost` socket never starts a server of its own, so a test cannot leave a stray
//! daemon behind even after this one is gone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::FakeAndroid;

/// How long a wait on the adb server may take before the test fails (a hang guard).
const DEADLINE: Duration = Duration::from_secs(30);

/// The adb binary: `PADDOCK_TEST_ADB` if set, else `adb` on the PATH, else `/usr/bin/adb`.
pub(crate) fn adb_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("PADDOCK_TEST_ADB") {
        return Ok(PathBuf::from(path));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("adb");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    let fallback = PathBuf::from("/usr/bin/adb");
    if fallback.is_file() {
        return Ok(fallback);
    }
    bail!("`adb` is not installed\nhint: install Debian's `adb` package (`apt-get install adb`)")
}

/// A running adb server; dropping it kills the process.
#[derive(Debug)]
pub struct AdbServer {
    child: Child,
    port: u16,
    adb: PathBuf,
    home: tempfile::TempDir,
}

/// Asks the server at `port` for `host:version`; its answer is `OKAY` and a hex length and
/// version (`0029` for adb 1.0.41).
fn server_version(port: u16) -> Option<u32> {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.write_all(b"000chost:version").ok()?;
    let mut status = [0u8; 4];
    stream.read_exact(&mut status).ok()?;
    if &status != b"OKAY" {
        return None;
    }
    let mut length = [0u8; 4];
    stream.read_exact(&mut length).ok()?;
    let length = usize::from_str_radix(std::str::from_utf8(&length).ok()?, 16).ok()?;
    let mut version = vec![0u8; length];
    stream.read_exact(&mut version).ok()?;
    u32::from_str_radix(std::str::from_utf8(&version).ok()?, 16).ok()
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Runs `command` to completion, killing it if it outlives `within`.
pub(crate) fn output_within(mut command: Command, within: Duration) -> anyhow::Result<Output> {
    let description = format!("{command:?}");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command
        .spawn()
        .with_context(|| format!("starting {description}"))?;
    crate::collect_output(child, &description, Some(Instant::now() + within))
}

fn wait_until_ready(child: &mut Child, port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if server_version(port).is_some() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("the adb server exited with {status}");
        }
        if Instant::now() >= deadline {
            bail!("the adb server did not answer within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl AdbServer {
    /// Starts a server on a free port and waits until it answers `host:version`.
    pub fn start() -> anyhow::Result<Self> {
        let adb = adb_binary()?;
        let home = tempfile::Builder::new()
            .prefix("paddock-adb-server-")
            .tempdir()?;
        let mut last_error = String::new();
        // The port is free when chosen but may be taken before the server binds it: try again.
        for attempt in 0..5 {
            let port = free_port()?;
            let log_path = home.path().join(format!("server-{attempt}.log"));
            let log = std::fs::File::create(&log_path)?;
            let mut child = Command::new(&adb)
                .args(["-P", &port.to_string(), "server", "nodaemon"])
                .env_clear()
                .env("HOME", home.path())
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .process_group(0)
                .spawn()
                .with_context(|| format!("starting `{} server nodaemon`", adb.display()))?;
            match wait_until_ready(&mut child, port) {
                Ok(()) => {
                    return Ok(Self {
                        child,
                        port,
                        adb,
                        home,
                    });
                }
                Err(error) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_error = format!(
                        "{error:#}\n{}",
                        std::fs::read_to_string(&log_path).unwrap_or_default()
                    );
                }
            }
        }
        bail!("the adb server did not start: {last_error}")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The value for `ADB_SERVER_SOCKET` that points clients at this server.
    pub fn socket_env(&self) -> String {
        format!("tcp:127.0.0.1:{}", self.port)
    }

    /// The adb binary that runs the server (and [`Self::command`]'s clients).
    pub fn adb_binary(&self) -> &Path {
        &self.adb
    }

    /// The server's HOME (its `.android` key directory lives there).
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// A real adb client command against this server.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.adb);
        command
            .args(args)
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ADB_SERVER_SOCKET", self.socket_env());
        command
    }

    /// Runs the real adb client against this server (killed if it hangs for 30 s).
    pub fn adb(&self, args: &[&str]) -> anyhow::Result<Output> {
        output_within(self.command(args), DEADLINE)
    }

    /// `adb connect` to `device`, then waits until `adb devices` lists it as `device`.
    pub fn connect(&self, device: &FakeAndroid) -> anyhow::Result<()> {
        let serial = device.serial();
        let output = self.adb(&["connect", &serial])?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !stdout.contains(&format!("connected to {serial}")) {
            bail!(
                "`adb connect {serial}` failed: {}{}",
                stdout,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        self.wait_for_state(&serial, "device")
    }

    /// The state `adb devices` shows for `serial` (`device`, `offline`, …), if listed.
    pub fn state(&self, serial: &str) -> anyhow::Result<Option<String>> {
        let output = self.adb(&["devices"])?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        Ok(stdout.lines().find_map(|line| {
            let (name, state) = line.split_once('\t')?;
            (name == serial).then(|| state.trim().to_owned())
        }))
    }

    /// Waits until `adb devices` shows `serial` in `state`.
    pub fn wait_for_state(&self, serial: &str, state: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let current = self.state(serial)?;
            if current.as_deref() == Some(state) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "`{serial}` did not become `{state}` within {DEADLINE:?} (last: {current:?})"
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for AdbServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
