//! Test-only harness. [`DaemonHarness`] runs the real `paddock` binary in a private temporary
//! state directory with its own `PADDOCK_AUX_SOCKET_DIR` and a scrubbed environment, so tests
//! never touch the user's daemon and run in parallel; dropping it stops whatever it started.
//! [`RawRequest`] writes HTTP/1.1 by hand, because the ingress tests must send Host and Origin
//! values that ordinary clients never produce. [`tls::TestCa`] makes a certificate authority at
//! test time for servers that speak TLS (the scripted model server can). [`android`] is a fake
//! Android 11 phone that the real adb server connects to, with a private adb server per test.
//! [`tasks`] reads a daemon-hosted task from outside: its ending, trajectory and device.

pub mod android;
pub mod clients;
pub mod fixture;
pub mod http;
pub mod mcp;
pub mod model;
pub mod other_user;
pub mod postgres;
pub mod procfs;
pub mod server;
pub mod tasks;
pub mod tls;

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_client::control::StatusResult;
use paddock_client::{ClientEnv, DaemonPaths, PidRecord};

pub use http::{RawRequest, RawResponse};
pub use mcp::{McpHttp, McpStdio};
pub use other_user::OtherUser;
pub use postgres::PgCluster;
pub use server::{RunningServer, ServerHarness};

/// How long harness waits allow before failing a test.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A private world for one test: state dir, socket dir, launch dir and environment.
#[derive(Debug)]
pub struct DaemonHarness {
    binary: PathBuf,
    root: tempfile::TempDir,
    vars: Vec<(String, OsString)>,
    launch_dir: PathBuf,
    children: Vec<Child>,
    /// Runs every command as this user (through `setpriv`) instead of the test's own.
    user: Option<OtherUser>,
}

impl DaemonHarness {
    /// A harness for `binary` (pass `env!("CARGO_BIN_EXE_paddock")`).
    pub fn new(binary: impl Into<PathBuf>) -> anyhow::Result<Self> {
        let root = tempfile::Builder::new().prefix("paddock-test-").tempdir()?;
        let state = root.path().join("state");
        let aux = root.path().join("aux");
        let home = root.path().join("home");
        let launch_dir = root.path().join("launch");
        let runtime = root.path().join("run");
        for dir in [&aux, &home, &launch_dir, &runtime] {
            std::fs::create_dir_all(dir)?;
        }
        // The daemon refuses a socket directory anybody else could write to.
        for dir in [&aux, &runtime] {
            std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        }
        let mut vars: Vec<(String, OsString)> = Vec::new();
        for name in ["PATH", "LANG", "TMPDIR"] {
            if let Some(value) = std::env::var_os(name) {
                vars.push((name.to_owned(), value));
            }
        }
        vars.push(("HOME".to_owned(), home.into()));
        vars.push(("PADDOCK_STATE_DIR".to_owned(), state.into()));
        vars.push(("PADDOCK_AUX_SOCKET_DIR".to_owned(), aux.into()));
        // The runtime directory (token, PID record) is private to the test too.
        vars.push(("XDG_RUNTIME_DIR".to_owned(), runtime.into()));
        vars.push(("NO_COLOR".to_owned(), "1".into()));
        // No warm Chromium unless a test asks for devices.
        vars.push(("PADDOCK_WEB_WARM".to_owned(), "0".into()));
        // No adb server unless a test brings its own (`with_adb_server`): the user's phones on
        // 127.0.0.1:5037 are not the test's.
        vars.push(("PADDOCK_ANDROID_ADB".to_owned(), "off".into()));
        Ok(Self {
            binary: binary.into(),
            root,
            vars,
            launch_dir,
            children: Vec::new(),
            user: None,
        })
    }

    /// A harness whose commands all run as `user` (the `paddock-test` account): its private
    /// directories belong to that user and the binary is run from a place the user can reach.
    /// The paths it resolves are that user's; files in them are that user's, so read them with
    /// the user's commands, not with this process's checked readers.
    pub fn new_as(binary: impl Into<PathBuf>, user: &OtherUser) -> anyhow::Result<Self> {
        let mut harness = Self::new(binary)?;
        user.chown(harness.root.path(), true)?;
        // After the chown, which must not reach the binary's inode through a hard link.
        let bin_dir = harness.root.path().join("bin");
        std::fs::create_dir(&bin_dir)?;
        harness.binary = reachable_binary(&harness.binary, &bin_dir)?;
        harness.user = Some(user.clone());
        Ok(harness)
    }

    /// Puts the agent CLIs that `scripts/setup --dev` pins (`tests/agents/node_modules/.bin`:
    /// Claude Code, Codex, OpenCode, Pi) first on the PATH of every command and of the daemons
    /// they start. Fails, saying how to install them, when they are missing.
    pub fn with_agent_clis(&mut self) -> anyhow::Result<&mut Self> {
        let bin =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules/.bin");
        anyhow::ensure!(
            bin.join("claude").exists(),
            "the agent CLIs are not installed in `{}`\nhint: run `scripts/setup --dev`",
            bin.display()
        );
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Ok(self.set_env("PATH", path))
    }

    /// Points every daemon the harness starts at the adb server `socket` (`tcp:HOST:PORT`, the
    /// form of `ADB_SERVER_SOCKET`) and turns its Android platform on.
    pub fn with_adb_server(&mut self, socket: &str) -> &mut Self {
        self.set_env("ADB_SERVER_SOCKET", socket);
        self.set_env("PADDOCK_ANDROID_ADB", "connect")
    }

    /// The HOME every command runs with (private to the test).
    pub fn home(&self) -> PathBuf {
        self.vars
            .iter()
            .find(|(name, _)| name == "HOME")
            .map(|(_, value)| PathBuf::from(value))
            .unwrap_or_else(|| self.root.path().join("home"))
    }

    /// Configures the Anthropic upstream the way a user does: `key` in a 0600 key file and
    /// `[upstreams.anthropic]` naming `url` and that file in `config.toml`, both under the
    /// user's default config directory (`~/.config/paddock`), after the `[agents]` lines in
    /// `agents`. Returns the key file.
    pub fn write_anthropic_config(
        &self,
        url: &str,
        key: &str,
        agents: &str,
    ) -> anyhow::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = self.home().join(".config/paddock");
        std::fs::create_dir_all(&dir)?;
        let key_file = dir.join("anthropic.key");
        std::fs::write(&key_file, key)?;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600))?;
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "[agents]\n{agents}\n[upstreams.anthropic]\nurl = \"{url}\"\nkey = \"file:~/.config/paddock/anthropic.key\"\n"
            ),
        )?;
        Ok(key_file)
    }

    /// Sets (or replaces) an environment variable for every command the harness runs.
    pub fn set_env(&mut self, name: &str, value: impl Into<OsString>) -> &mut Self {
        self.vars.retain(|(existing, _)| existing != name);
        self.vars.push((name.to_owned(), value.into()));
        self
    }

    pub fn remove_env(&mut self, name: &str) -> &mut Self {
        self.vars.retain(|(existing, _)| existing != name);
        self
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The directory commands are launched in.
    pub fn launch_dir(&self) -> &Path {
        &self.launch_dir
    }

    /// The environment as a client launched beside the daemon sees it.
    pub fn client_env(&self) -> ClientEnv {
        self.vars
            .iter()
            .fold(ClientEnv::empty(&self.launch_dir), |env, (name, value)| {
                env.with_var(name.clone(), value.clone())
            })
    }

    /// The harness's environment variables, for running other programs beside the daemon.
    pub fn client_env_vars(&self) -> Vec<(String, OsString)> {
        self.vars.clone()
    }

    pub fn paths(&self) -> DaemonPaths {
        DaemonPaths::resolve(&self.client_env())
    }

    /// Creates the daemon's runtime directory (0700) ahead of the daemon, for tests that place a
    /// file in it before any daemon ran.
    pub fn ensure_runtime_dir(&self) -> anyhow::Result<PathBuf> {
        let dir = self.paths().runtime_dir;
        paddock_client::private::ensure_private_dir(&dir)?;
        Ok(dir)
    }

    /// A `paddock` command with the harness's environment and nothing else.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = match &self.user {
            Some(user) => {
                let mut command = user.command(&self.binary);
                command.args(args);
                command
            }
            None => {
                let mut command = Command::new(&self.binary);
                command.args(args);
                command
            }
        };
        command
            .env_clear()
            .envs(self.vars.iter().map(|(name, value)| (name, value)))
            .current_dir(&self.launch_dir)
            .stdin(Stdio::null());
        command
    }

    /// Runs `paddock args…` to completion.
    /// `paddock bot add BOT --backend claude --cwd CWD [--permissions allow]`. Claude Code
    /// refuses to skip permissions as root (CI runs as root), so a bot whose agent must act
    /// gets `allow`: every request is asked and answered by the session's policy.
    pub fn add_claude_bot(&self, bot: &str, cwd: &Path, allow: bool) -> anyhow::Result<()> {
        let cwd = cwd.to_str().context("the working directory is not UTF-8")?;
        let mut args = vec!["bot", "add", bot, "--backend", "claude", "--cwd", cwd];
        if allow {
            args.extend(["--permissions", "allow"]);
        }
        self.run(args)?.success().map(drop)
    }

    /// What a detached daemon of this harness logged so far (`<state>/logs/daemon.log`).
    pub fn detached_log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("state/logs/daemon.log")).unwrap_or_default()
    }

    pub fn run<I, S>(&self, args: I) -> anyhow::Result<CommandOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        CommandOutput::of(self.command(args))
    }

    /// Runs `paddock args…` to completion with `input` on stdin.
    pub fn run_with_stdin<I, S>(&self, args: I, input: &[u8]) -> anyhow::Result<CommandOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.run_with_stdin_until(args, input, None)
    }

    /// [`run_with_stdin`](Self::run_with_stdin) with a hang deadline: a command still running
    /// after `within` is killed and the call fails. The deadline is there to catch a hang, so
    /// pass a generous one.
    pub fn run_with_stdin_within<I, S>(
        &self,
        args: I,
        input: &[u8],
        within: Duration,
    ) -> anyhow::Result<CommandOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.run_with_stdin_until(args, input, Some(Instant::now() + within))
    }

    fn run_with_stdin_until<I, S>(
        &self,
        args: I,
        input: &[u8],
        deadline: Option<Instant>,
    ) -> anyhow::Result<CommandOutput>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        use std::io::Write as _;
        let mut command = self.command(args);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let description = format!("{command:?}");
        let mut child = command.spawn().with_context(|| description.clone())?;
        let mut stdin = child.stdin.take().context("child stdin")?;
        let input = input.to_vec();
        // A command that fails before reading stdin closes the pipe: not the caller's failure.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let output = collect_output(child, &description, deadline)?;
        let _ = writer.join();
        Ok(CommandOutput {
            description,
            output,
        })
    }

    /// `paddock daemon start` (detached); returns the ready status.
    pub fn start_detached(&self, extra: &[&str]) -> anyhow::Result<StatusResult> {
        let mut args = vec!["daemon", "start"];
        args.extend_from_slice(extra);
        let output = self.run(args)?.success()?;
        self.status(&output)
    }

    fn status(&self, context: &CommandOutput) -> anyhow::Result<StatusResult> {
        let status = self.run(["daemon", "status", "--json"])?.success()?;
        serde_json::from_str(status.stdout().trim())
            .with_context(|| format!("status after {context}"))
    }

    /// Starts `paddock daemon start --foreground extra…` as a child; stderr goes to a file.
    pub fn spawn_foreground(&mut self, extra: &[&str]) -> anyhow::Result<ForegroundDaemon> {
        let log = self
            .root
            .path()
            .join(format!("daemon-{}.log", self.children.len()));
        let mut command = self.command(["daemon", "start", "--foreground"]);
        command
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log)?);
        let description = format!("{command:?}");
        let mut child = command.spawn().with_context(|| description.clone())?;
        let stdout = child.stdout.take().context("child stdout")?;
        let pid = child.id();
        self.children.push(child);
        Ok(ForegroundDaemon {
            pid,
            log,
            ready_lines: spawn_line_reader(stdout),
            description,
        })
    }

    /// Waits until the daemon's PID record names an HTTP port (the listener is bound).
    pub fn wait_for_port(&self) -> anyhow::Result<u16> {
        let pid_file = self.paths().pid_file;
        wait_until(DEADLINE, || {
            PidRecord::read(&pid_file)
                .ok()
                .flatten()
                .and_then(|record| record.http_port)
        })
        .with_context(|| format!("no port in {}", pid_file.display()))
    }

    /// Reads the published token file.
    pub fn token(&self) -> anyhow::Result<String> {
        let path = self.paths().token_file;
        Ok(paddock_client::token::read_token_file(&path)?
            .expose_secret()
            .to_owned())
    }

    /// Waits for a child started with [`spawn_foreground`] to exit.
    pub fn wait_child(
        &mut self,
        pid: u32,
        within: Duration,
    ) -> anyhow::Result<std::process::ExitStatus> {
        let index = self
            .children
            .iter()
            .position(|child| child.id() == pid)
            .context("no such child")?;
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.children[index].try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                bail!("child {pid} did not exit within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for DaemonHarness {
    fn drop(&mut self) {
        // A detached daemon is stopped through the CLI; foreground children are terminated,
        // then killed, so no process outlives the test.
        let _ = self.run(["daemon", "stop", "--timeout", "5"]);
        for child in &mut self.children {
            if let Ok(None) = child.try_wait() {
                signal(child.id(), rustix::process::Signal::TERM);
                let deadline = Instant::now() + Duration::from_secs(5);
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A daemon running in the foreground as a child of the test.
#[derive(Debug)]
pub struct ForegroundDaemon {
    pub pid: u32,
    log: PathBuf,
    ready_lines: mpsc::Receiver<String>,
    description: String,
}

impl ForegroundDaemon {
    /// Waits for the ready line (a JSON status object on stdout).
    pub fn wait_ready(&self) -> anyhow::Result<StatusResult> {
        let line = self.ready_lines.recv_timeout(DEADLINE).map_err(|_| {
            anyhow::anyhow!(
                "{} never became ready\n{}",
                self.description,
                self.log_text()
            )
        })?;
        serde_json::from_str(&line).with_context(|| format!("ready line `{line}`"))
    }

    /// Everything the daemon wrote to stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn terminate(&self) {
        signal(self.pid, rustix::process::Signal::TERM);
    }
}

/// The result of a finished command, printed whole when a check fails.
#[derive(Debug)]
pub struct CommandOutput {
    description: String,
    pub output: Output,
}

impl CommandOutput {
    /// Runs `command` to completion.
    pub(crate) fn of(mut command: Command) -> anyhow::Result<Self> {
        let description = format!("{command:?}");
        let output = command.output().with_context(|| description.clone())?;
        Ok(Self {
            description,
            output,
        })
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    /// Fails unless the command exited 0.
    pub fn success(self) -> anyhow::Result<Self> {
        if self.output.status.success() {
            Ok(self)
        } else {
            bail!("command failed: {self}")
        }
    }
}

impl std::fmt::Display for CommandOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\nstatus: {}\n--- stdout\n{}\n--- stderr\n{}",
            self.description,
            self.output.status,
            self.stdout(),
            self.stderr()
        )
    }
}

/// `binary` itself when another user can execute it where it is (every directory above it
/// searchable by others), else a hard link (or copy) of it in `dir`. A CI checkout under
/// `/root` is not reachable by another user.
fn reachable_binary(binary: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;

    let reachable = binary.ancestors().skip(1).all(|dir| {
        std::fs::metadata(dir).is_ok_and(|metadata| metadata.permissions().mode() & 0o001 != 0)
    }) && std::fs::metadata(binary)
        .is_ok_and(|metadata| metadata.permissions().mode() & 0o005 == 0o005);
    if reachable {
        return Ok(binary.to_path_buf());
    }
    let name = binary.file_name().context("binary has no file name")?;
    let reachable = dir.join(name);
    if std::fs::hard_link(binary, &reachable).is_err() {
        // Copied by `cp`, not here: a copy this process held open for writing could be
        // inherited by another thread's fork and make running it fail with "Text file busy".
        let copied = std::process::Command::new("cp")
            .arg("--")
            .arg(binary)
            .arg(&reachable)
            .status()
            .with_context(|| format!("copying {}", binary.display()))?;
        anyhow::ensure!(
            copied.success(),
            "copying {} failed: {copied}",
            binary.display()
        );
        std::fs::set_permissions(&reachable, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(reachable)
}

/// Waits for `child` (its stdout and stderr piped) and collects both outputs, draining them
/// while it runs so that a full pipe never stalls it. With a `deadline`, a child still running
/// then is killed and the call fails: the deadline is there to catch a hang.
pub(crate) fn collect_output(
    mut child: Child,
    description: &str,
    deadline: Option<Instant>,
) -> anyhow::Result<Output> {
    use std::io::Read as _;
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = match deadline {
        None => child.wait().with_context(|| description.to_owned())?,
        Some(deadline) => loop {
            if let Some(status) = child.try_wait().with_context(|| description.to_owned())? {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("{description} did not exit in time: it hangs");
            }
            std::thread::sleep(Duration::from_millis(5));
        },
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// The loopback HTTP port of a daemon's status (`http://127.0.0.1:PORT/mcp`).
pub fn http_port(status: &StatusResult) -> anyhow::Result<u16> {
    status
        .http_endpoint
        .as_deref()
        .and_then(|url| url.strip_prefix("http://127.0.0.1:"))
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .and_then(|port| port.parse().ok())
        .with_context(|| format!("no loopback port in {status:?}"))
}

/// Polls `probe` until it yields a value or `within` passes.
pub fn wait_until<T>(within: Duration, mut probe: impl FnMut() -> Option<T>) -> anyhow::Result<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = probe() {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("condition not met within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// True while a process with `pid` exists.
/// Fails if any file under `dir` (recursively) contains one of `secrets`, quoting the text
/// before the first hit; otherwise, how many files were read.
pub fn no_file_contains(dir: &Path, secrets: &[&str]) -> anyhow::Result<usize> {
    let mut pending = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            files += 1;
            let text = String::from_utf8_lossy(&bytes);
            for secret in secrets {
                if let Some(at) = text.find(secret) {
                    let mut start = at.saturating_sub(200);
                    while !text.is_char_boundary(start) {
                        start -= 1;
                    }
                    anyhow::bail!("`{secret}` is in {}: …{}", path.display(), &text[start..at]);
                }
            }
        }
    }
    Ok(files)
}

pub fn process_alive(pid: u32) -> bool {
    paddock_process::is_running(pid)
}

pub(crate) fn signal(pid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

fn spawn_line_reader(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}
