//! The process lane: one CLI child in its own process group, strict `\n`-delimited JSON lines
//! in both directions, bounded stderr, and SIGINT → SIGTERM → SIGKILL when stopping.

use std::process::ExitStatus;
use std::time::Duration;

use paddock_process::{ChildSpec, ManagedChild};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

/// The longest stdout line accepted; longer lines end the lane with an error.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// What the lane reports to the session.
#[derive(Debug)]
pub enum LaneOutput {
    Line(String),
    /// A protocol violation (an oversized line); the lane is being torn down.
    Broken(String),
    Exited(Option<ExitStatus>),
}

pub struct ProcessLane {
    child: Option<ManagedChild>,
    stdin: Option<ChildStdin>,
    pid: u32,
}

impl ProcessLane {
    /// Spawns `spec` and forwards stdout lines and the exit to `output`.
    pub fn spawn(
        mut spec: ChildSpec,
        output: mpsc::UnboundedSender<LaneOutput>,
    ) -> Result<Self, paddock_process::SpawnError> {
        spec.stdin = true;
        spec.stdout = true;
        let mut child = ManagedChild::spawn(spec, None)?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let pid = child.pid();
        let exited = child.exited();
        tokio::spawn(async move {
            if let Some(stdout) = stdout {
                let mut reader = BufReader::new(stdout);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    // Split on `\n` only: JSON strings may contain U+2028/2029, which are not
                    // line breaks here.
                    match (&mut reader)
                        .take(MAX_LINE as u64 + 1)
                        .read_until(b'\n', &mut line)
                        .await
                    {
                        Ok(0) => break,
                        Ok(_) if line.len() > MAX_LINE => {
                            let _ = output.send(LaneOutput::Broken(format!(
                                "a stdout line exceeded {MAX_LINE} bytes"
                            )));
                            break;
                        }
                        Ok(_) => {
                            let text =
                                String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line));
                            let text = text.strip_suffix('\r').unwrap_or(&text);
                            if !text.trim().is_empty()
                                && output.send(LaneOutput::Line(text.to_owned())).is_err()
                            {
                                break;
                            }
                        }
                        Err(_) => break,
                    }
                }
            }
            let status = exited.await;
            let _ = output.send(LaneOutput::Exited(status));
        });
        Ok(Self {
            child: Some(child),
            stdin,
            pid,
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Writes one line (a `\n` is appended).
    pub async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin is closed")
        })?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        stdin.write_all(&bytes).await?;
        stdin.flush().await
    }

    pub fn stderr_tail(&self) -> String {
        self.child
            .as_ref()
            .map(ManagedChild::stderr_tail)
            .unwrap_or_default()
    }

    /// Ends the child: close stdin and SIGINT; SIGTERM at half of `force_after`; SIGKILL at
    /// `force_after`. Returns the exit status and whether force was needed.
    pub async fn stop(&mut self, force_after: Duration) -> (Option<ExitStatus>, bool) {
        self.stdin = None;
        let Some(child) = self.child.take() else {
            return (None, false);
        };
        let exited = child.exited();
        tokio::pin!(exited);
        child.signal_group(rustix::process::Signal::INT);
        if let Ok(status) = tokio::time::timeout(force_after / 2, &mut exited).await {
            return (status, false);
        }
        child.signal_group(rustix::process::Signal::TERM);
        if let Ok(status) = tokio::time::timeout(force_after / 2, &mut exited).await {
            return (status, true);
        }
        // Dropping the child kills the whole group and reaps it.
        drop(child);
        (exited.await, true)
    }

    /// The exit status once known, after a crash.
    pub async fn reap(&mut self) -> Option<ExitStatus> {
        self.stdin = None;
        let child = self.child.take()?;
        let exited = child.exited();
        drop(child);
        exited.await
    }
}

impl std::fmt::Debug for ProcessLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessLane")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

use tokio::io::AsyncReadExt as _;
