//! Lifecycle commands run by the CLI against a daemon: start it detached and wait until it is
//! ready, ask for its status, and stop it (gracefully, then by force).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use paddock_client::control::{ControlClient, DaemonStop, StatusResult};
use paddock_client::pid::ProcessMismatch;
use paddock_client::{DaemonPaths, PidRecord};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::Instant;

use crate::lock::{InstanceLock, LockAttempt};

/// How long one control-socket exchange may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a waiting stop re-checks whether the daemon has gone.
const POLL_INTERVAL: Duration = Duration::from_millis(25);

/// What `start_detached` found or did.
#[derive(Debug)]
pub enum StartReport {
    Started(StatusResult),
    AlreadyRunning(StatusResult),
}

/// How to launch the detached daemon process.
#[derive(Debug, Clone)]
pub struct DetachedLaunch {
    /// The `paddock` executable.
    pub program: PathBuf,
    /// Arguments that make it run in the foreground (`daemon start --foreground …`).
    pub args: Vec<OsString>,
    /// Where the daemon's stderr (its log) is appended.
    pub log_file: PathBuf,
    /// How long to wait for the ready line.
    pub ready_timeout: Duration,
}

/// The daemon's status, or `None` when nothing answers on its control socket.
pub async fn query_status(paths: &DaemonPaths) -> anyhow::Result<Option<StatusResult>> {
    let mut client = match ControlClient::connect(&paths.socket).await {
        Ok(client) => client,
        Err(error) if error.is_not_running() => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    Ok(Some(client.status(CONTROL_TIMEOUT).await?))
}

/// Starts the daemon in the background and returns once it reports ready.
pub async fn start_detached(
    paths: &DaemonPaths,
    launch: &DetachedLaunch,
) -> anyhow::Result<StartReport> {
    if let Some(status) = query_status(paths).await? {
        return Ok(StartReport::AlreadyRunning(status));
    }
    if let Some(parent) = launch.log_file.parent() {
        crate::files::create_private_dir(parent)?;
    }
    let log = open_log(&launch.log_file)?;
    // The one child Paddock does not start through `paddock-process`: the detached daemon must
    // outlive this CLI, so it is not killed on drop, and its stderr goes to the log file rather
    // than a bounded ring. It still gets its own process group.
    let mut command = tokio::process::Command::new(&launch.program);
    command
        .args(&launch.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        // Its own process group: a Ctrl-C in the launching terminal must not reach the daemon.
        .process_group(0)
        .kill_on_drop(false);
    let mut child = command
        .spawn()
        .with_context(|| format!("could not run `{}`", launch.program.display()))?;
    let stdout = child
        .stdout
        .take()
        .context("the daemon process has no stdout pipe")?;
    let mut lines = BufReader::new(stdout).lines();
    let first_line = tokio::time::timeout(launch.ready_timeout, lines.next_line()).await;
    match first_line {
        Ok(Ok(Some(line))) => {
            let status: StatusResult = serde_json::from_str(&line)
                .with_context(|| "the daemon's ready line is not a status object".to_owned())?;
            Ok(StartReport::Started(status))
        }
        Ok(Ok(None)) | Ok(Err(_)) => {
            let exit = child.wait().await.ok();
            if exit.is_some_and(|status| status.success())
                && let Some(status) = query_status(paths).await?
            {
                // Another launcher won the race; its daemon is the one running.
                return Ok(StartReport::AlreadyRunning(status));
            }
            let tail = log_tail(&launch.log_file, 20);
            anyhow::bail!(
                "the daemon exited before it was ready ({})\n{}",
                exit.map(|status| status.to_string())
                    .unwrap_or_else(|| "unknown status".to_owned()),
                tail
            )
        }
        Err(_) => anyhow::bail!(
            "the daemon did not become ready within {:?}; its log is `{}`",
            launch.ready_timeout,
            launch.log_file.display()
        ),
    }
}

fn open_log(path: &Path) -> anyhow::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .with_context(|| format!("could not open daemon log `{}`", path.display()))
}

fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// What `stop` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReport {
    NotRunning,
    Stopped { pid: Option<u32> },
    Killed { pid: u32 },
}

/// Stops the daemon: asks over the control socket (or with SIGTERM when the socket does not
/// answer), waits up to `timeout`, then sends SIGKILL and removes the files it left.
///
/// A signal only ever goes to a pid whose PID record is a private file of ours and whose live
/// process runs as our uid with the recorded start time and command line; anything else is
/// refused with an error naming the mismatch, so a stale or planted record cannot make `stop`
/// kill an unrelated process.
pub async fn stop(paths: &DaemonPaths, timeout: Duration) -> anyhow::Result<StopReport> {
    let deadline = Instant::now() + timeout;
    let record = PidRecord::read(&paths.pid_file).with_context(|| {
        format!(
            "refusing the daemon's PID record `{}`",
            paths.pid_file.display()
        )
    })?;
    let verified = record
        .as_ref()
        .map(|record| (record.pid, record.verify_process()));
    let asked = match ControlClient::connect_owner(paths).await {
        Ok(mut client) => client
            .request::<DaemonStop>((), CONTROL_TIMEOUT)
            .await
            .is_ok(),
        Err(error) if error.is_impersonation() => return Err(error.into()),
        Err(_) => false,
    };
    // The pid to wait for, and to signal if it comes to that: only a verified one.
    let pid = match &verified {
        Some((pid, Ok(()))) => Some(*pid),
        _ => None,
    };
    if !asked {
        match try_lock(paths)? {
            None => return Ok(StopReport::NotRunning),
            Some(LockAttempt::Acquired(lock)) => {
                remove_stale_files(paths);
                drop(lock);
                return Ok(StopReport::NotRunning);
            }
            Some(LockAttempt::HeldElsewhere) => match &verified {
                None => anyhow::bail!(
                    "a daemon holds `{}` but neither its control socket nor its PID record answers",
                    paths.lock_file.display()
                ),
                Some((recorded, Err(mismatch))) => anyhow::bail!(
                    "a daemon holds `{}` and its control socket does not answer, but its PID record does not match a live daemon ({mismatch}); refusing to signal pid {recorded}",
                    paths.lock_file.display()
                ),
                Some((pid, Ok(()))) => send_signal(*pid, rustix::process::Signal::TERM),
            },
        }
    }
    if wait_for_exit(paths, pid, deadline).await? {
        return Ok(StopReport::Stopped { pid });
    }
    let Some(pid) = pid else {
        anyhow::bail!(
            "the daemon did not stop within {timeout:?} and has no verifiable PID record to kill"
        );
    };
    // Checked again just before the signal: the process may have exited and its pid been
    // reused while we waited.
    if let Some(record) = &record
        && let Err(mismatch) = record.verify_process()
    {
        if matches!(mismatch, ProcessMismatch::Gone { .. }) {
            return Ok(StopReport::Stopped { pid: Some(pid) });
        }
        anyhow::bail!("refusing to SIGKILL pid {pid}: {mismatch}");
    }
    send_signal(pid, rustix::process::Signal::KILL);
    if !wait_for_exit(paths, Some(pid), Instant::now() + Duration::from_secs(5)).await? {
        anyhow::bail!("the daemon (pid {pid}) survived SIGKILL");
    }
    Ok(StopReport::Killed { pid })
}

/// Takes the instance lock without waiting; `None` when its directory does not exist (no daemon
/// with these paths ever ran).
fn try_lock(paths: &DaemonPaths) -> anyhow::Result<Option<LockAttempt>> {
    match InstanceLock::try_acquire(&paths.lock_file) {
        Ok(attempt) => Ok(Some(attempt)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(anyhow::Error::new(error).context(format!(
            "refusing lock file `{}`",
            paths.lock_file.display()
        ))),
    }
}

/// Waits until the daemon process `pid` has gone (or, without a pid, until the instance lock
/// is free), then removes what it left behind unless another daemon already took over.
/// Returns false at the deadline.
async fn wait_for_exit(
    paths: &DaemonPaths,
    pid: Option<u32>,
    deadline: Instant,
) -> anyhow::Result<bool> {
    loop {
        let gone = match pid {
            Some(pid) => !process_exists(pid),
            None => !matches!(try_lock(paths)?, Some(LockAttempt::HeldElsewhere)),
        };
        if gone {
            // The kernel releases a killed process's lock as it tears the process down, a
            // moment after the process stops counting as alive; wait for that briefly. A
            // successor that a client such as `paddock mcp` started meanwhile keeps the lock,
            // and its files are not leftovers.
            let settle = Instant::now() + Duration::from_secs(2);
            loop {
                match try_lock(paths)? {
                    Some(LockAttempt::Acquired(lock)) => {
                        let still_ours = PidRecord::read(&paths.pid_file)
                            .ok()
                            .flatten()
                            .is_none_or(|record| Some(record.pid) == pid || pid.is_none());
                        if still_ours {
                            remove_stale_files(paths);
                        }
                        drop(lock);
                        break;
                    }
                    None => break,
                    Some(LockAttempt::HeldElsewhere) => {}
                }
                if Instant::now() >= settle {
                    break;
                }
                tokio::time::sleep(POLL_INTERVAL).await;
            }
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// True while a process with `pid` exists (signal 0 probes without delivering anything). A
/// zombie has exited: only its parent's bookkeeping is left.
fn process_exists(pid: u32) -> bool {
    if paddock_process::is_zombie(pid) {
        return false;
    }
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// With the lock held (no daemon runs), a PID record and a socket file are leftovers of a
/// daemon that did not clean up. The token file is left alone: only its owner may remove it,
/// and the next daemon replaces it.
fn remove_stale_files(paths: &DaemonPaths) {
    let _ = std::fs::remove_file(&paths.pid_file);
    let _ = std::fs::remove_file(&paths.socket);
}

fn send_signal(pid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, signal);
    }
}
