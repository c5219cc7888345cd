//! Short-lived children whose output is the point (`program --version`): run one to its exit
//! through [`ManagedChild`], with a deadline, and collect what it printed.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt as _};
use tokio::process::ChildStdout;
use tokio::sync::mpsc;

use crate::{ChildSpec, ManagedChild, SpawnError};

/// How many bytes of stdout [`output`] keeps; the rest is read and dropped, so that a chatty
/// child never blocks on a full pipe.
pub const STDOUT_CAPACITY: usize = 64 * 1024;

/// What a child printed before it exited.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: ExitStatus,
    /// The first [`STDOUT_CAPACITY`] bytes of stdout.
    pub stdout: Vec<u8>,
    /// The last [`STDERR_CAPACITY`](crate::STDERR_CAPACITY) bytes of stderr, lossily decoded.
    pub stderr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("`{program}` did not exit within {}s", within.as_secs_f32())]
    TimedOut { program: String, within: Duration },
}

impl RunError {
    pub fn is_timed_out(&self) -> bool {
        matches!(self, Self::TimedOut { .. })
    }
}

/// Runs `spec` (its `stdout` set, its `stdin` as given) until it exits and both of its output
/// pipes are closed, for at most `within`. On the deadline the child's whole process group is
/// killed and [`RunError::TimedOut`] returned.
pub async fn output(spec: ChildSpec, within: Duration) -> Result<Output, RunError> {
    output_fed(spec, None, within).await
}

/// [`output`] with `input` written to the child's stdin, which is then closed (a child that
/// stops reading early loses the rest, as in a shell pipe).
pub async fn output_fed(
    mut spec: ChildSpec,
    input: Option<Vec<u8>>,
    within: Duration,
) -> Result<Output, RunError> {
    spec.stdout = true;
    spec.stdin |= input.is_some();
    // The stderr watcher's sender is dropped when the capture task reaches end of file; once
    // the channel is closed the captured tail is complete.
    let (stderr_tx, mut stderr_lines) = mpsc::unbounded_channel();
    let mut child = ManagedChild::spawn(spec, Some(stderr_tx))?;
    let stdout = child.stdout.take();
    // Without input, a requested stdin stays open until the child is done, as before.
    let stdin = input.as_ref().and_then(|_| child.stdin.take());
    let exited = child.exited();
    let collected = tokio::time::timeout(within, async move {
        let stderr_closed = async { while stderr_lines.recv().await.is_some() {} };
        let fed = async move {
            if let (Some(mut stdin), Some(input)) = (stdin, input) {
                let _ = stdin.write_all(&input).await;
            }
        };
        let (stdout, (), status, ()) =
            tokio::join!(read_bounded(stdout), stderr_closed, exited, fed);
        (stdout, status)
    })
    .await;
    match collected {
        Ok((stdout, status)) => Ok(Output {
            // The reaper always reports a status; a missing one means it was torn down with
            // the runtime, and no exit code is known.
            status: status.unwrap_or_else(crate::exit_status_unknown),
            stdout,
            stderr: child.stderr_tail(),
        }),
        // Dropping `child` kills its group.
        Err(_) => Err(RunError::TimedOut {
            program: child.program().to_owned(),
            within,
        }),
    }
}

/// Reads `stdout` to its end, keeping the first [`STDOUT_CAPACITY`] bytes.
async fn read_bounded(stdout: Option<ChildStdout>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut stdout) = stdout else {
        return kept;
    };
    let mut chunk = [0u8; 8192];
    while let Ok(read) = stdout.read(&mut chunk).await {
        if read == 0 {
            break;
        }
        let room = STDOUT_CAPACITY.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..read.min(room)]);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::sh;

    #[tokio::test]
    async fn collects_stdout_stderr_and_the_status() {
        let output = output(
            sh("echo out; echo err >&2; echo \"[$HOME]\"; exit 4"),
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        assert_eq!(output.status.code(), Some(4));
        assert_eq!(String::from_utf8_lossy(&output.stdout), "out\n[]\n");
        assert_eq!(output.stderr, "err\n");
    }

    #[tokio::test]
    async fn fed_input_reaches_stdin_which_then_closes() {
        let output = output_fed(
            sh("read first; echo \"[$first]\"; cat | wc -l"),
            Some(b"hello\ntwo\nthree\n".to_vec()),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            stdout.split_whitespace().collect::<Vec<_>>(),
            ["[hello]", "2"]
        );
    }

    #[tokio::test]
    async fn stdout_is_bounded_and_drained() {
        // Four times the capacity: the child must not block on a full pipe.
        let output = output(
            sh("head -c 262144 /dev/zero; echo done >&2"),
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        assert!(output.status.success());
        assert_eq!(output.stdout.len(), STDOUT_CAPACITY);
        assert_eq!(output.stderr, "done\n");
    }

    #[tokio::test]
    async fn a_child_past_its_deadline_is_killed() {
        let pid_file =
            std::env::temp_dir().join(format!("paddock-process-output-{}", std::process::id()));
        let script = format!("echo $$ > {}; exec sleep 600", pid_file.display());
        let error = output(sh(&script), Duration::from_millis(500))
            .await
            .unwrap_err();
        assert!(error.is_timed_out(), "{error}");
        assert!(error.to_string().contains("/bin/sh"), "{error}");
        let pid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let _ = std::fs::remove_file(&pid_file);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while crate::is_running(pid) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the timed-out child {pid} is still running"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let spec = ChildSpec {
            program: "/nonexistent/program".into(),
            ..ChildSpec::default()
        };
        let error = output(spec, Duration::from_secs(1)).await.unwrap_err();
        assert!(matches!(&error, RunError::Spawn(spawn) if spawn.is_not_found()));
    }
}
