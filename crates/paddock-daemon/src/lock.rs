//! One daemon per isolation suffix: an exclusive `flock` on the lock file, held for the daemon's
//! lifetime and released by the kernel when the process dies, so a crash never wedges it.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// A held instance lock.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
    path: PathBuf,
}

/// Outcome of trying to take the lock.
#[derive(Debug)]
pub enum LockAttempt {
    Acquired(InstanceLock),
    HeldElsewhere,
}

impl InstanceLock {
    /// Takes the lock without waiting. The lock file must be a private file of ours (checked on
    /// the open descriptor): a lock file another user planted, or one anybody else may open,
    /// would let them hold our lock or watch it, so it is refused with an error that says so.
    /// The caller has already verified the directory (`DaemonPaths::prepare_daemon_dirs`).
    pub fn try_acquire(path: &Path) -> io::Result<LockAttempt> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options
                .mode(0o600)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        }
        let file = options.open(path)?;
        #[cfg(unix)]
        {
            use rustix::fs::FlockOperation;
            paddock_client::private::check_private_fd(&file, path).map_err(io::Error::other)?;
            match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) => return Ok(LockAttempt::HeldElsewhere),
                Err(errno) => return Err(errno.into()),
            }
        }
        Ok(LockAttempt::Acquired(Self {
            _file: file,
            path: path.to_path_buf(),
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
