//! [`ServerHarness`]: the real `paddock server` in a private state directory, on a free
//! loopback port, with its own database; dropping it stops every server it started.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::{CommandOutput, DEADLINE, wait_until};

/// A private world for fleet-server tests.
#[derive(Debug)]
pub struct ServerHarness {
    binary: PathBuf,
    root: tempfile::TempDir,
    vars: Vec<(String, OsString)>,
    children: Vec<Child>,
}

/// A server the harness started.
#[derive(Debug, Clone)]
pub struct RunningServer {
    pub pid: u32,
    /// It serves HTTPS (`PADDOCK_SERVER_TLS_CERT`).
    pub tls: bool,
    /// `127.0.0.1:PORT`.
    pub address: std::net::SocketAddr,
    pub log: PathBuf,
}

impl RunningServer {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }

    /// Everything the server wrote to stderr so far (logs and audit lines).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl ServerHarness {
    /// A harness for `binary` (pass `env!("CARGO_BIN_EXE_paddock")`); its database is SQLite
    /// in the private state directory until a test sets `PADDOCK_SERVER_DATABASE`.
    pub fn new(binary: impl Into<PathBuf>) -> anyhow::Result<Self> {
        let root = tempfile::Builder::new()
            .prefix("paddock-server-test-")
            .tempdir()?;
        let home = root.path().join("home");
        std::fs::create_dir_all(&home)?;
        let mut vars: Vec<(String, OsString)> = Vec::new();
        for name in ["PATH", "LANG", "TMPDIR"] {
            if let Some(value) = std::env::var_os(name) {
                vars.push((name.to_owned(), value));
            }
        }
        vars.push(("HOME".to_owned(), home.into()));
        vars.push((
            "PADDOCK_SERVER_STATE_DIR".to_owned(),
            root.path().join("server-state").into(),
        ));
        vars.push(("NO_COLOR".to_owned(), "1".into()));
        Ok(Self {
            binary: binary.into(),
            root,
            vars,
            children: Vec::new(),
        })
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn set_env(&mut self, name: &str, value: impl Into<OsString>) -> &mut Self {
        self.vars.retain(|(existing, _)| existing != name);
        self.vars.push((name.to_owned(), value.into()));
        self
    }

    /// A `paddock` command with the harness's environment and nothing else.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = Command::new(&self.binary);
        command
            .args(args)
            .env_clear()
            .envs(self.vars.iter().map(|(name, value)| (name, value)))
            .current_dir(self.root.path())
            .stdin(Stdio::null());
        command
    }

    /// Runs `paddock args…` to completion.
    pub fn run<I, S>(&self, args: I) -> anyhow::Result<CommandOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        CommandOutput::of(self.command(args))
    }

    /// Runs `paddock args…` to completion with `env` on top of the harness's environment (an
    /// owner's `PADDOCK_API_KEY`, say).
    pub fn run_with_env<I, S>(&self, args: I, env: &[(&str, &str)]) -> anyhow::Result<CommandOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = self.command(args);
        command.envs(env.iter().copied());
        CommandOutput::of(command)
    }

    /// `paddock server pair extra…` (`--name N`, `--reconnect MACHINE_ID`): the token it printed.
    pub fn pair_token(&self, extra: &[&str]) -> anyhow::Result<String> {
        let mut args = vec!["server", "pair"];
        args.extend_from_slice(extra);
        let token = self.run(args)?.success()?.stdout().trim().to_owned();
        anyhow::ensure!(
            token.starts_with("pdk_pt_"),
            "not a pairing token: `{token}`"
        );
        Ok(token)
    }

    /// `paddock server keys create --name NAME --profile PROFILE`: the key it printed.
    pub fn create_key(&self, name: &str, profile: &str) -> anyhow::Result<String> {
        let output = self
            .run([
                "server",
                "keys",
                "create",
                "--name",
                name,
                "--profile",
                profile,
            ])?
            .success()?;
        let key = output.stdout().trim().to_owned();
        anyhow::ensure!(key.starts_with("pdk_sk_"), "not a key: `{key}`");
        Ok(key)
    }

    /// Starts `paddock server --listen 127.0.0.1:0 extra…` and waits for its listening line.
    pub fn spawn(&mut self, extra: &[&str]) -> anyhow::Result<RunningServer> {
        let log = self
            .root
            .path()
            .join(format!("server-{}.log", self.children.len()));
        let mut command = self.command(["server", "--listen", "127.0.0.1:0"]);
        command
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        let description = format!("{command:?}");
        let mut child = command.spawn().with_context(|| description.clone())?;
        let pid = child.id();
        let found = wait_until(DEADLINE, || {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(Err(status));
            }
            let text = std::fs::read_to_string(&log).ok()?;
            text.lines()
                .find_map(|line| {
                    let url = line.strip_prefix("paddock server listening on ")?;
                    let (tls, address) = match url.strip_prefix("https://") {
                        Some(address) => (true, address),
                        None => (false, url.strip_prefix("http://")?),
                    };
                    Some((tls, address.trim().parse().ok()?))
                })
                .map(Ok)
        });
        self.children.push(child);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        match found {
            Ok(Ok((tls, address))) => Ok(RunningServer {
                pid,
                tls,
                address,
                log,
            }),
            Ok(Err(status)) => bail!("{description} exited with {status}\n{text}"),
            Err(error) => Err(error.context(format!("{description} never listened\n{text}"))),
        }
    }

    /// Stops the server `pid` (SIGTERM, then SIGKILL after 5 s) and waits for it.
    pub fn stop(&mut self, pid: u32) {
        if let Some(child) = self.children.iter_mut().find(|child| child.id() == pid) {
            stop_child(child);
        }
    }
}

fn stop_child(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        crate::signal(child.id(), rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
    }
    let _ = child.wait();
}

impl Drop for ServerHarness {
    fn drop(&mut self) {
        for child in &mut self.children {
            stop_child(child);
        }
    }
}
