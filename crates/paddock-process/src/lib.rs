//! The one way Paddock starts child processes (Chromium, adb, agent CLIs): each child leads its
//! own process group so that it and everything it forks can be signalled together, is killed
//! with its group when dropped, and has its stderr captured into a bounded ring buffer (recent
//! output for error messages) while lines are offered to a watcher (for "listening on …" lines).
//! A child may also inherit chosen file descriptors under chosen numbers (Chromium's
//! `--remote-debugging-pipe` reads fd 3 and writes fd 4); nothing else is inherited.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use command_fds::{CommandFdExt as _, FdMapping};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, watch};

mod output;
pub mod sandbox;

pub use output::{Output, RunError, STDOUT_CAPACITY, output, output_fed};

/// How many bytes of stderr are kept.
pub const STDERR_CAPACITY: usize = 64 * 1024;

/// True when `pid` is a zombie: it has exited and only its parent's bookkeeping is left.
pub fn is_zombie(pid: u32) -> bool {
    stat_after_name(pid).is_some_and(|rest| rest.trim_start().starts_with('Z'))
}

/// The parent of `pid`, while `pid` exists (zombies included).
pub fn parent_pid(pid: u32) -> Option<u32> {
    // After the name come the state and then the parent's pid.
    stat_after_name(pid)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `/proc/<pid>/stat` after the command name, which is in parentheses and may contain spaces
/// and parentheses of its own (so the last `)` ends it).
fn stat_after_name(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').map(|(_, rest)| rest.to_owned())
}

/// True while `pid` exists and has not exited (a zombie does not count).
pub fn is_running(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid)
}

/// Writes `contents` to `path` as an executable (mode 0755) that can be run at once.
///
/// Writing the file here and then executing it races with every other thread's fork: a child
/// forked while this process holds the file open for writing keeps that descriptor until it
/// execs, and executing the file meanwhile fails with "Text file busy" (`ETXTBSY`). So the file
/// is written by a short-lived `/bin/sh` child and this process never holds it open.
pub fn write_executable(path: &std::path::Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("/bin/sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let written = child
        .stdin
        .take()
        .map_or(Ok(()), |mut stdin| stdin.write_all(contents));
    let output = child.wait_with_output()?;
    // A shell that could not open the file stops reading: its error says why, not the pipe's.
    if output.status.success() {
        written
    } else {
        Err(std::io::Error::other(format!(
            "writing `{}` failed: {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// The lowest descriptor a child can inherit: 0, 1 and 2 are its stdio, which
/// [`ChildSpec::stdin`] and [`ChildSpec::stdout`] decide.
pub const FIRST_INHERITABLE_FD: RawFd = 3;

/// A file descriptor the child inherits as `child_fd`.
///
/// The spec owns `fd`; spawning moves it into the child and closes Paddock's copy, so that when
/// the child exits the other end of a pipe sees end-of-file. Open `fd` close-on-exec (every
/// descriptor Rust and rustix open is, unless asked otherwise): then only this child, and only
/// under `child_fd`, ever has it.
#[derive(Debug)]
pub struct InheritedFd {
    pub fd: OwnedFd,
    /// At least [`FIRST_INHERITABLE_FD`], and different from every other inherited descriptor
    /// (spawning checks both).
    pub child_fd: RawFd,
}

/// What to run.
#[derive(Debug, Default)]
pub struct ChildSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The complete environment: nothing is inherited implicitly.
    pub env: Vec<(OsString, OsString)>,
    pub current_dir: Option<PathBuf>,
    /// Give the child a stdin pipe.
    pub stdin: bool,
    /// Give the child a stdout pipe (else stdout is discarded).
    pub stdout: bool,
    /// Descriptors the child inherits besides stdio; it inherits no others.
    pub inherit_fds: Vec<InheritedFd>,
    /// Confine the child with this Landlock ruleset, entered between fork and exec (so the
    /// program itself already runs confined, and nothing else is exec'd first).
    pub sandbox: Option<sandbox::PreparedSandbox>,
}

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("could not start `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot pass descriptors to `{program}`: {problem}")]
    InheritFd { program: String, problem: String },
}

impl SpawnError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// A running child. Dropping it kills its whole process group and reaps it.
#[derive(Debug)]
pub struct ManagedChild {
    pid: u32,
    program: String,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    exit: watch::Receiver<Option<ExitStatus>>,
    kill_tx: Option<tokio::sync::oneshot::Sender<()>>,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
}

impl ManagedChild {
    /// Starts `spec`. `stderr_lines`, when given, receives each stderr line as well.
    pub fn spawn(
        spec: ChildSpec,
        stderr_lines: Option<mpsc::UnboundedSender<String>>,
    ) -> Result<Self, SpawnError> {
        Self::start(spec, stderr_lines, false)
    }

    /// Starts `spec` as a foreground command of the caller, the way a shell runs one: stdin,
    /// stdout and stderr are the caller's own (`spec.stdin`/`spec.stdout` are ignored and no
    /// stderr is captured), and the child stays in the caller's process group, so that a
    /// terminal's job control reaches it (Ctrl-C, and reading the terminal without being
    /// stopped by SIGTTIN). For wrappers such as `paddock credentials exec`. Dropping it kills
    /// the child itself (and its own group, if it made one); grandchildren that stayed in the
    /// caller's group are left alone, as a shell would.
    pub fn spawn_foreground(spec: ChildSpec) -> Result<Self, SpawnError> {
        Self::start(spec, None, true)
    }

    fn start(
        spec: ChildSpec,
        stderr_lines: Option<mpsc::UnboundedSender<String>>,
        foreground: bool,
    ) -> Result<Self, SpawnError> {
        let program = spec.program.display().to_string();
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .env_clear()
            .envs(spec.env.iter().map(|(name, value)| (name, value)))
            .kill_on_drop(true);
        if foreground {
            command
                .stdin(Stdio::inherit())
                .stdout(Stdio::inherit())
                .stderr(Stdio::inherit());
        } else {
            command
                .stdin(if spec.stdin {
                    Stdio::piped()
                } else {
                    Stdio::null()
                })
                .stdout(if spec.stdout {
                    Stdio::piped()
                } else {
                    Stdio::null()
                })
                .stderr(Stdio::piped())
                .process_group(0);
        }
        if let Some(dir) = &spec.current_dir {
            command.current_dir(dir);
        }
        let mappings = fd_mappings(&program, spec.inherit_fds)?;
        if !mappings.is_empty() {
            // command-fds installs the `pre_exec` hook that moves each descriptor to its number
            // in the forked child (the only other hook is the sandbox's, below).
            command
                .fd_mappings(mappings)
                .map_err(|_| SpawnError::InheritFd {
                    program: program.clone(),
                    problem: "two descriptors are mapped to the same number".to_owned(),
                })?;
        }
        if let Some(prepared) = spec.sandbox {
            sandbox::confine_at_exec(&mut command, prepared);
        }
        let spawned = command.spawn();
        // The command owns the inherited descriptors: dropping it closes Paddock's copies now,
        // so the child holds the only ones and its exit shows as end-of-file on our ends.
        drop(command);
        let mut child = spawned.map_err(|source| SpawnError::Spawn {
            program: program.clone(),
            source,
        })?;
        let pid = child.id().unwrap_or(0);
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(4096)));
        if let Some(pipe) = child.stderr.take() {
            let buffer = stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut buffer) = buffer.lock() {
                        buffer.extend(line.as_bytes());
                        buffer.push_back(b'\n');
                        let excess = buffer.len().saturating_sub(STDERR_CAPACITY);
                        buffer.drain(..excess);
                    }
                    if let Some(tx) = &stderr_lines {
                        let _ = tx.send(line);
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (exit_tx, exit) = watch::channel(None);
        let (kill_tx, kill_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(reap(child, pid, exit_tx, kill_rx));
        Ok(Self {
            pid,
            program,
            stderr,
            exit,
            kill_tx: Some(kill_tx),
            stdin,
            stdout,
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn program(&self) -> &str {
        &self.program
    }

    /// The last [`STDERR_CAPACITY`] bytes of stderr, lossily decoded.
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .map(|buffer| {
                String::from_utf8_lossy(&buffer.iter().copied().collect::<Vec<_>>()).into_owned()
            })
            .unwrap_or_default()
    }

    /// The exit status once the child has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Resolves when the child exits (immediately if it has).
    pub fn exited(&self) -> impl Future<Output = Option<ExitStatus>> + Send + 'static {
        let mut exit = self.exit.clone();
        async move {
            exit.wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|status| *status)
        }
    }

    /// Sends `signal` to the child alone (a foreground child shares its caller's group).
    pub fn signal(&self, signal: rustix::process::Signal) {
        if self.exit.borrow().is_none()
            && let Some(pid) = i32::try_from(self.pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }

    /// Sends `signal` to the whole process group.
    pub fn signal_group(&self, signal: rustix::process::Signal) {
        signal_group(self.pid, signal);
    }

    /// SIGTERM to the group, SIGKILL after `grace`, then waits for the exit.
    pub async fn terminate(mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal_group(rustix::process::Signal::TERM);
        let exited = self.exited();
        if let Ok(status) = tokio::time::timeout(grace, exited).await {
            return status;
        }
        if let Some(kill) = self.kill_tx.take() {
            let _ = kill.send(());
        }
        self.exited().await
    }
}

impl Drop for ManagedChild {
    fn drop(&mut self) {
        // The group first (Chromium's renderers, an agent's tools), then the reaper kills and
        // waits for the leader so no zombie is left.
        if self.exit.borrow().is_none() {
            self.signal_group(rustix::process::Signal::KILL);
        }
        if let Some(kill) = self.kill_tx.take() {
            let _ = kill.send(());
        }
    }
}

async fn reap(
    mut child: Child,
    pid: u32,
    exit_tx: watch::Sender<Option<ExitStatus>>,
    kill_rx: tokio::sync::oneshot::Receiver<()>,
) {
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        _ = kill_rx => {
            signal_group(pid, rustix::process::Signal::KILL);
            let _ = child.start_kill();
            child.wait().await.ok()
        }
    };
    // Whatever the leader left in its group goes with it.
    signal_group(pid, rustix::process::Signal::KILL);
    let _ = exit_tx.send(status.or_else(|| Some(exit_status_unknown())));
}

/// Turns `inherited` into command-fds mappings, refusing the stdio numbers (command-fds
/// itself refuses a number mapped twice).
fn fd_mappings(program: &str, inherited: Vec<InheritedFd>) -> Result<Vec<FdMapping>, SpawnError> {
    inherited
        .into_iter()
        .map(|InheritedFd { fd, child_fd }| {
            if child_fd < FIRST_INHERITABLE_FD {
                return Err(SpawnError::InheritFd {
                    program: program.to_owned(),
                    problem: format!(
                        "descriptor {child_fd} is the child's stdio; inherited descriptors start at {FIRST_INHERITABLE_FD}"
                    ),
                });
            }
            Ok(FdMapping {
                parent_fd: fd,
                child_fd,
            })
        })
        .collect()
}

fn exit_status_unknown() -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus::from_raw(-1)
}

fn signal_group(pid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executable_written_here_runs_at_once_and_a_bad_path_is_an_error() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("tool");
        write_executable(&tool, b"#!/bin/sh\necho \"ran $1\"\n").unwrap();
        let mode = std::fs::metadata(&tool).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let ran = std::process::Command::new(&tool)
            .arg("once")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "ran once\n");
        let missing = dir.path().join("no-such-dir/tool");
        let error = write_executable(&missing, b"x").unwrap_err().to_string();
        assert!(error.contains("no-such-dir/tool"), "{error}");
    }

    /// `/bin/sh -c script` with a minimal PATH (shared with the other modules' tests).
    pub(crate) fn sh(script: &str) -> ChildSpec {
        ChildSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            ..ChildSpec::default()
        }
    }

    #[tokio::test]
    async fn captures_stderr_lines_and_exit() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let child =
            ManagedChild::spawn(sh("echo one >&2; echo two >&2; exit 3"), Some(tx)).unwrap();
        assert_eq!(rx.recv().await.as_deref(), Some("one"));
        let status = child.exited().await.unwrap();
        assert_eq!(status.code(), Some(3));
        assert!(child.stderr_tail().contains("one\ntwo\n"));
    }

    /// The child enters a ruleset prepared in the parent before it execs: the program reads
    /// and writes only what the policy names, carries `no_new_privs`, and the parent stays free.
    #[tokio::test]
    async fn a_child_enters_its_prepared_sandbox_before_exec() {
        let scratch = tempfile::tempdir().unwrap();
        let allowed = scratch.path().join("allowed");
        std::fs::create_dir(&allowed).unwrap();
        let secret = scratch.path().join("secret.txt");
        std::fs::write(&secret, "sk-outside-the-policy").unwrap();
        let policy = sandbox::SandboxPolicy {
            exec: ["/usr", "/lib", "/lib64", "/bin"]
                .map(PathBuf::from)
                .to_vec(),
            write: vec![allowed.clone(), "/dev".into()],
            read: vec!["/proc".into()],
            ..sandbox::SandboxPolicy::default()
        };
        let mut spec = sh(&format!(
            "cat {secret} >&2 || echo denied >&2; echo kept > {out}; grep NoNewPrivs /proc/self/status >&2",
            secret = secret.display(),
            out = allowed.join("out.txt").display(),
        ));
        spec.sandbox = Some(sandbox::prepare(&policy).unwrap());
        let child = ManagedChild::spawn(spec, None).unwrap();
        let status = child.exited().await.unwrap();
        let stderr = child.stderr_tail();
        assert_eq!(status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("denied"), "{stderr}");
        assert!(!stderr.contains("sk-outside-the-policy"), "{stderr}");
        assert!(stderr.contains("NoNewPrivs:\t1"), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(allowed.join("out.txt")).unwrap(),
            "kept\n"
        );
        // The parent itself is not confined.
        assert_eq!(
            std::fs::read_to_string(&secret).unwrap(),
            "sk-outside-the-policy"
        );
    }

    #[tokio::test]
    async fn the_environment_is_explicit() {
        let mut spec = sh("echo \"[$HOME]\" >&2");
        spec.env.push(("HOME".into(), "/nowhere".into()));
        let child = ManagedChild::spawn(spec, None).unwrap();
        child.exited().await;
        assert!(child.stderr_tail().contains("[/nowhere]"));
    }

    #[tokio::test]
    async fn dropping_kills_the_whole_group() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let child = ManagedChild::spawn(sh("sleep 600 & echo $! >&2; wait"), Some(tx)).unwrap();
        let grandchild: u32 = rx.recv().await.unwrap().trim().parse().unwrap();
        let leader = child.pid();
        let exited = child.exited();
        drop(child);
        exited.await;
        // Both are gone (not even zombies once reaped by us or by init).
        for _ in 0..200 {
            if !is_running(grandchild) && !is_running(leader) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("process group survived the drop");
    }

    #[tokio::test]
    async fn a_foreground_child_shares_stdio_and_the_process_group() {
        // The child writes its process group (field 5 of /proc/<pid>/stat) to a file.
        let dir = std::env::temp_dir().join(format!("paddock-process-fg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("pgid");
        let spec = sh(&format!(
            "cut -d' ' -f5 /proc/$$/stat > {}; exit 5",
            out.display()
        ));
        let child = ManagedChild::spawn_foreground(spec).unwrap();
        assert!(child.stdin.is_none() && child.stdout.is_none());
        let status = child.exited().await.unwrap();
        assert_eq!(status.code(), Some(5));
        let pgid: i32 = std::fs::read_to_string(&out)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(pgid, rustix::process::getpgrp().as_raw_nonzero().get());
        assert_eq!(child.stderr_tail(), "");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_child_names_its_parent() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let child = ManagedChild::spawn(sh("echo ready >&2; exec sleep 600"), Some(tx)).unwrap();
        assert_eq!(rx.recv().await.as_deref(), Some("ready"));
        assert_eq!(parent_pid(child.pid()), Some(std::process::id()));
        assert!(is_running(child.pid()) && !is_zombie(child.pid()));
        assert_eq!(parent_pid(u32::MAX), None);
    }

    #[tokio::test]
    async fn a_missing_program_is_a_typed_error() {
        let spec = ChildSpec {
            program: "/nonexistent/program".into(),
            ..ChildSpec::default()
        };
        let error = ManagedChild::spawn(spec, None).unwrap_err();
        assert!(error.is_not_found());
        assert!(error.to_string().contains("/nonexistent/program"));
    }

    fn cloexec_pipe() -> (OwnedFd, OwnedFd) {
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap()
    }

    fn pipe_inode(fd: &OwnedFd) -> u64 {
        rustix::fs::fstat(fd).unwrap().st_ino
    }

    /// The child's `ls -l /proc/self/fd` lines, as `N -> target`.
    async fn fd_listing(spec: ChildSpec) -> Vec<String> {
        use tokio::io::AsyncReadExt as _;
        let mut spec = spec;
        spec.stdout = true;
        let mut child = ManagedChild::spawn(spec, None).unwrap();
        let mut listing = String::new();
        let mut stdout = child.stdout.take().unwrap();
        stdout.read_to_string(&mut listing).await.unwrap();
        child.exited().await;
        listing
            .lines()
            .filter_map(|line| {
                let (left, target) = line.split_once(" -> ")?;
                Some(format!("{} -> {target}", left.split_whitespace().last()?))
            })
            .collect()
    }

    #[tokio::test]
    async fn inherited_fds_reach_the_child_under_their_numbers_and_close_here() {
        let (commands_read, commands_write) = cloexec_pipe();
        let (replies_read, replies_write) = cloexec_pipe();
        let mut spec = sh("cat <&3 >&4");
        spec.inherit_fds = vec![
            InheritedFd {
                fd: commands_read,
                child_fd: 3,
            },
            InheritedFd {
                fd: replies_write,
                child_fd: 4,
            },
        ];
        let child = ManagedChild::spawn(spec, None).unwrap();
        let echoed = tokio::task::spawn_blocking(move || {
            use std::io::{Read as _, Write as _};
            let mut commands = std::fs::File::from(commands_write);
            commands.write_all(b"hello\0").unwrap();
            drop(commands);
            // End-of-file comes only once no copy of the child's write end is left here.
            let mut replies = Vec::new();
            std::fs::File::from(replies_read)
                .read_to_end(&mut replies)
                .unwrap();
            replies
        });
        let echoed = tokio::time::timeout(Duration::from_secs(20), echoed)
            .await
            .expect("no end-of-file: the parent kept a copy of the child's end")
            .unwrap();
        assert_eq!(echoed, b"hello\0");
        assert_eq!(
            child.exited().await.and_then(|status| status.code()),
            Some(0)
        );
    }

    #[tokio::test]
    async fn inherited_fds_go_to_their_child_only_and_only_under_their_number() {
        let (read_end, write_end) = cloexec_pipe();
        let pipe = format!("pipe:[{}]", pipe_inode(&read_end));
        let listing = sh("ls -l /proc/self/fd");
        let unrelated = fd_listing(listing).await;
        assert!(
            !unrelated.iter().any(|line| line.ends_with(&pipe)),
            "a child that was given nothing inherited {pipe}: {unrelated:?}"
        );
        let mut mapped = sh("ls -l /proc/self/fd");
        mapped.inherit_fds = vec![InheritedFd {
            fd: read_end,
            child_fd: 7,
        }];
        let lines = fd_listing(mapped).await;
        let holding: Vec<&String> = lines.iter().filter(|line| line.ends_with(&pipe)).collect();
        assert_eq!(holding, [&format!("7 -> {pipe}")], "{lines:?}");
        drop(write_end);
    }

    #[tokio::test]
    async fn stdio_numbers_and_doubled_numbers_are_typed_errors() {
        let (read_end, write_end) = cloexec_pipe();
        let mut spec = sh("exit 0");
        spec.inherit_fds = vec![InheritedFd {
            fd: read_end,
            child_fd: 2,
        }];
        let error = ManagedChild::spawn(spec, None).unwrap_err();
        assert!(matches!(error, SpawnError::InheritFd { .. }), "{error:?}");
        assert!(error.to_string().contains("descriptor 2"), "{error}");

        let (other_read, _other_write) = cloexec_pipe();
        let mut spec = sh("exit 0");
        spec.inherit_fds = vec![
            InheritedFd {
                fd: write_end,
                child_fd: 3,
            },
            InheritedFd {
                fd: other_read,
                child_fd: 3,
            },
        ];
        let error = ManagedChild::spawn(spec, None).unwrap_err();
        assert!(
            error.to_string().contains("same number") && error.to_string().contains("/bin/sh"),
            "{error}"
        );
    }
}
