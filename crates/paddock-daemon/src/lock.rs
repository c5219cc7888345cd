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
    /// Takes the lock without waiting.
    pub fn try_acquire(path: &Path) -> io::Result<LockAttempt> {
        if let Some(parent) = path.parent() {
            crate::files::create_private_dir(parent)?;
        }
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
