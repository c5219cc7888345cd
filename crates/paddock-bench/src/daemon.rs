//! The daemon a benchmark measures: the real `paddock` binary, started detached in a private
//! state and socket directory, stopped on drop.

use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use paddock_client::control::StatusResult;

/// A daemon in a private directory, stopped on drop. The directory (0700, as the daemon
/// demands of its socket directory) holds its state (`state/`), its socket and lock, and its
/// runtime directory (`run/`: token and PID record), so it never meets the user's daemon.
pub struct PrivateDaemon {
    paddock: PathBuf,
    pub dir: tempfile::TempDir,
    status: StatusResult,
}

impl PrivateDaemon {
    /// Starts a daemon with `--log-level warn` and `extra_args` (such as `--web-warm 0`).
    pub fn start(paddock: &Path, extra_args: &[&str]) -> anyhow::Result<Self> {
        Self::start_with_env(paddock, extra_args, &[], "")
    }

    /// [`Self::start`] with extra environment for the daemon (such as its PATH) and the text
    /// of its config file (never the user's own: `PADDOCK_CONFIG` names a private one).
    pub fn start_with_env(
        paddock: &Path,
        extra_args: &[&str],
        env: &[(&str, String)],
        config: &str,
    ) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("paddock-bench-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()?;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir.path().join("run"))?;
        std::fs::write(dir.path().join("config.toml"), config)?;
        let mut daemon = Self {
            paddock: paddock.to_path_buf(),
            dir,
            status: StatusResult {
                pid: 0,
                version: String::new(),
                uptime_ms: 0,
                state: paddock_client::control::DaemonState::Starting,
                http_endpoint: None,
                socket: PathBuf::new(),
            },
        };
        let mut args = vec!["daemon", "start", "--log-level", "warn"];
        args.extend_from_slice(extra_args);
        let output = daemon
            .command(&args)
            .envs(env.iter().map(|(name, value)| (*name, value.as_str())))
            .output()?;
        if !output.status.success() {
            bail!(
                "daemon start failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let status = daemon.command(&["daemon", "status", "--json"]).output()?;
        daemon.status = serde_json::from_slice(&status.stdout).context("daemon status")?;
        Ok(daemon)
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.paddock);
        command
            .args(args)
            .envs(self.client_env())
            .env_remove("PADDOCK_DAEMON_TOKEN_FILE_PATH");
        command
    }

    /// The variables that point a `paddock` command at this daemon (its state, sockets,
    /// runtime directory and config); a command must also go without
    /// `PADDOCK_DAEMON_TOKEN_FILE_PATH`.
    pub fn client_env(&self) -> Vec<(OsString, OsString)> {
        let dir = self.dir.path();
        [
            ("PADDOCK_STATE_DIR", dir.join("state")),
            ("PADDOCK_AUX_SOCKET_DIR", dir.to_path_buf()),
            ("XDG_RUNTIME_DIR", dir.join("run")),
            ("PADDOCK_CONFIG", dir.join("config.toml")),
        ]
        .into_iter()
        .map(|(name, value)| (name.into(), value.into_os_string()))
        .collect()
    }

    /// The daemon's pid.
    pub fn pid(&self) -> u32 {
        self.status.pid
    }

    /// The paths a client of this daemon uses.
    pub fn paths(&self) -> paddock_client::DaemonPaths {
        let env = paddock_client::ClientEnv::from_process()
            .with_var("PADDOCK_STATE_DIR", self.dir.path().join("state"))
            .with_var("PADDOCK_AUX_SOCKET_DIR", self.dir.path())
            .with_var("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .without_var("PADDOCK_DAEMON_TOKEN_FILE_PATH");
        paddock_client::DaemonPaths::resolve(&env)
    }

    pub fn token_file(&self) -> PathBuf {
        let env = paddock_client::ClientEnv::from_process()
            .with_var("PADDOCK_AUX_SOCKET_DIR", self.dir.path())
            .with_var("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .without_var("PADDOCK_DAEMON_TOKEN_FILE_PATH");
        paddock_client::DaemonPaths::resolve(&env).token_file
    }

    pub fn url(&self, path: &str) -> anyhow::Result<String> {
        let endpoint = self
            .status
            .http_endpoint
            .as_deref()
            .context("no endpoint")?;
        Ok(endpoint.replace("/mcp", path))
    }
}

impl Drop for PrivateDaemon {
    fn drop(&mut self) {
        let _ = self.command(&["daemon", "stop"]).output();
    }
}

pub fn paddock_binary(explicit: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path);
    }
    let exe = std::env::current_exe()?;
    let sibling = exe.with_file_name("paddock");
    if sibling.exists() {
        Ok(sibling)
    } else {
        bail!(
            "no paddock binary beside `{}`; pass --paddock",
            exe.display()
        )
    }
}
