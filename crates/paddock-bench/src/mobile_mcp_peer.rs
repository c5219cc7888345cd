//! The mobile-mcp peer (`bench/peers/mobile-mcp`): mobile-next's MCP server for mobile
//! automation, run under node on stdio for the length of a benchmark. It drives Android through
//! the `mobilecli` binary its npm package ships, which runs the adb client found at
//! `$ANDROID_HOME/platform-tools/adb`; the peer is given an SDK directory whose `adb` is the
//! system's and `ADB_SERVER_SOCKET`, so that it reaches the benchmark's private adb server.
//!
//! With `MOBILEMCP_LEGACY_ROBOT=1` ([`PeerConfig::legacy_robot`]) it runs adb itself instead,
//! one `adb -s SERIAL …` process per device command, as its releases before mobilecli did.
//!
//! `mobilecli` starts a daemon of its own on its first device command, in a session of its own
//! (so the peer's process group does not hold it), found again through `$HOME/.mobilecli`:
//! [`MobilecliDaemon`] stops it when the benchmark ends.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_process::ChildSpec;
use serde_json::Value;

use crate::node_package::installed_version;
use crate::stdio_client::StdioMcpClient;

/// How long mobilecli's daemon may take to exit after SIGTERM before it is killed.
const DAEMON_STOP_GRACE: Duration = Duration::from_secs(3);
const DAEMON_POLL: Duration = Duration::from_millis(20);

/// Variables the peer inherits; nothing else of this process's environment reaches it.
const INHERITED_ENV: [&str; 6] = ["PATH", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"];

/// The peer's directory in this repository, as of the build.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers/mobile-mcp")
}

/// The installed `@mobilenext/mobile-mcp` version, for the report.
pub fn version(dir: &Path) -> String {
    installed_version(dir, "@mobilenext/mobile-mcp")
}

/// What to run.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub node: PathBuf,
    pub dir: PathBuf,
    /// The adb client the peer runs (the one that started the private server).
    pub adb: PathBuf,
    /// `ADB_SERVER_SOCKET` of the private adb server (`tcp:127.0.0.1:PORT`).
    pub adb_server_socket: String,
    /// A private directory for the peer: its HOME and its Android SDK directory.
    pub work_dir: PathBuf,
    /// `MOBILEMCP_LEGACY_ROBOT=1`: drive Android with adb commands of its own instead of
    /// through mobilecli (no element refs then).
    pub legacy_robot: bool,
}

/// Checks the installation in `dir` before anything else starts; returns the entry point.
pub fn check_installed(dir: &Path) -> anyhow::Result<PathBuf> {
    if !dir.join("package.json").is_file() {
        bail!(
            "no mobile-mcp peer at `{}`\nhint: pass --mobile-mcp-dir <bench/peers/mobile-mcp>",
            dir.display()
        );
    }
    let cli = dir.join("node_modules/@mobilenext/mobile-mcp/lib/index.js");
    if !cli.is_file() {
        bail!(
            "the mobile-mcp peer is not installed (`{}` is missing)\nhint: npm install --no-save --prefix bench/peers/mobile-mcp (scripts/setup --dev does it)",
            cli.display()
        );
    }
    Ok(cli)
}

/// The version of the mobilecli npm package the peer drives Android through, for the report.
pub fn mobilecli_version(dir: &Path) -> String {
    installed_version(dir, "mobilecli")
}

/// The peer's HOME, where mobilecli keeps its daemon's socket and pid file.
fn home(config: &PeerConfig) -> PathBuf {
    config.work_dir.join("home")
}

/// The daemon mobilecli starts under the peer's HOME, stopped on drop (if it was started).
#[derive(Debug)]
pub struct MobilecliDaemon {
    pid_file: PathBuf,
}

impl MobilecliDaemon {
    pub fn new(config: &PeerConfig) -> Self {
        Self {
            pid_file: home(config).join(".mobilecli/daemon.pid"),
        }
    }

    /// The daemon's pid, when its pid file (`{"pid":N,"version":…}`) names a running
    /// mobilecli daemon.
    fn pid(&self) -> Option<u32> {
        let record: Value = serde_json::from_slice(&std::fs::read(&self.pid_file).ok()?).ok()?;
        let pid = u32::try_from(record["pid"].as_u64()?).ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline);
        (cmdline.contains("mobilecli") && cmdline.contains("daemon")).then_some(pid)
    }
}

impl Drop for MobilecliDaemon {
    fn drop(&mut self) {
        let Some(pid) = self.pid() else {
            return;
        };
        let Some(process) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return;
        };
        let _ = rustix::process::kill_process(process, rustix::process::Signal::TERM);
        let deadline = Instant::now() + DAEMON_STOP_GRACE;
        while paddock_process::is_running(pid) {
            if Instant::now() >= deadline {
                let _ = rustix::process::kill_process(process, rustix::process::Signal::KILL);
                return;
            }
            std::thread::sleep(DAEMON_POLL);
        }
    }
}

/// Starts the peer on stdio and completes the MCP handshake; returns the client and the
/// server's `serverInfo`.
pub async fn start(config: &PeerConfig) -> anyhow::Result<(StdioMcpClient, Value)> {
    let cli = check_installed(&config.dir)?;
    let home = home(config);
    let android_home = config.work_dir.join("android-sdk");
    let tools = android_home.join("platform-tools");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&tools)?;
    let adb_link = tools.join("adb");
    if std::fs::symlink_metadata(&adb_link).is_err() {
        std::os::unix::fs::symlink(&config.adb, &adb_link)
            .with_context(|| format!("linking `{}`", adb_link.display()))?;
    }
    let mut env: Vec<(OsString, OsString)> = INHERITED_ENV
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| ((*name).into(), value)))
        .collect();
    env.extend(
        [
            ("HOME", home.into_os_string()),
            ("ANDROID_HOME", android_home.into_os_string()),
            ("ADB_SERVER_SOCKET", config.adb_server_socket.clone().into()),
            // Its telemetry posts every tool call to the network, which is no part of what
            // is measured (and not reachable from every machine).
            ("MOBILEMCP_DISABLE_TELEMETRY", "1".into()),
        ]
        .map(|(name, value)| (OsString::from(name), value)),
    );
    if config.legacy_robot {
        env.push(("MOBILEMCP_LEGACY_ROBOT".into(), "1".into()));
    }
    let spec = ChildSpec {
        program: config.node.clone(),
        args: vec![cli.into_os_string(), "--stdio".into()],
        env,
        current_dir: Some(config.work_dir.clone()),
        ..ChildSpec::default()
    };
    let mut client = StdioMcpClient::start(spec).map_err(|error| {
        let not_found = error
            .downcast_ref::<paddock_process::SpawnError>()
            .is_some_and(paddock_process::SpawnError::is_not_found);
        let hint = if not_found {
            "\nhint: apt-get install nodejs npm, or pass --node"
        } else {
            ""
        };
        anyhow::anyhow!("{error:#}{hint}")
    })?;
    let server_info = client
        .initialize()
        .await
        .with_context(|| format!("mobile-mcp; its stderr:\n{}", client.stderr_tail()))?;
    Ok((client, server_info))
}
