//! `paddock sandbox-exec`: confines this process with Landlock and execs the program, which
//! inherits the confinement. The agent driver puts it in front of every sandboxed agent
//! launch; the policy itself lives in `paddock_process::sandbox`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use paddock_process::sandbox::{self, SandboxPolicy};

/// Exit code when the program could not be executed (as `env` and shells use it).
const EXIT_CANNOT_EXECUTE: u8 = 126;
/// Exit code when the program does not exist.
const EXIT_NOT_FOUND: u8 = 127;

#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// Allow reading files and listing directories beneath PATH (repeatable).
    #[arg(long = "read", value_name = "PATH")]
    read: Vec<PathBuf>,
    /// Allow reading and executing beneath PATH (repeatable).
    #[arg(long = "exec", value_name = "PATH")]
    exec: Vec<PathBuf>,
    /// Allow everything beneath PATH: read, execute, create, write, remove (repeatable).
    #[arg(long = "write", value_name = "PATH")]
    write: Vec<PathBuf>,
    /// Allow connecting to unix sockets beneath PATH; only kernels with Landlock ABI 9 or later
    /// restrict connecting at all (repeatable).
    #[arg(long = "connect", value_name = "PATH")]
    connect: Vec<PathBuf>,
    /// When the kernel has no Landlock, run the program unconfined instead of failing.
    #[arg(long)]
    allow_unconfined: bool,
    /// The program to run confined, and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    command: Vec<OsString>,
}

/// Confines this process and execs the program; returns only when either step failed. Runs
/// before the async runtime starts: Landlock confines the calling thread, and `exec` keeps
/// only that one.
pub fn run(args: SandboxExecArgs) -> ExitCode {
    let SandboxExecArgs {
        read,
        exec,
        write,
        connect,
        allow_unconfined,
        command,
    } = args;
    let Some((program, program_args)) = command.split_first() else {
        eprintln!("error: no program to run after `--`");
        return ExitCode::from(2);
    };
    let policy = SandboxPolicy {
        read,
        exec,
        write,
        connect,
    };
    match sandbox::confine_self(&policy) {
        Ok(confinement) => {
            if !confinement.fully_enforced {
                tracing::warn!(
                    abi = confinement.abi,
                    "the kernel enforces only part of the sandbox"
                );
            }
            tracing::debug!(
                abi = confinement.abi,
                skipped = ?confinement.skipped,
                "sandbox applied"
            );
        }
        Err(error) if error.is_unavailable() && allow_unconfined => {
            tracing::warn!(%error, "running unconfined (--allow-unconfined)");
        }
        Err(error) => {
            let unavailable = error.is_unavailable();
            eprintln!("error: {:#}", anyhow::Error::new(error));
            if unavailable {
                eprintln!(
                    "hint: Landlock needs Linux 5.13 or later with `landlock` in the `lsm=` boot parameter; pass `--allow-unconfined` to run the program without it"
                );
            }
            return ExitCode::FAILURE;
        }
    }
    let error = std::process::Command::new(program)
        .args(program_args)
        .exec();
    eprintln!(
        "error: could not run `{}`: {error}",
        PathBuf::from(program).display()
    );
    if error.kind() == std::io::ErrorKind::NotFound {
        ExitCode::from(EXIT_NOT_FOUND)
    } else {
        ExitCode::from(EXIT_CANNOT_EXECUTE)
    }
}
