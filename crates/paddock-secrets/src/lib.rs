//! Secrets that redact and files that stay private, shared by the daemon, its clients, the
//! credential broker and the PII store: [`SecretString`] (a string whose `Debug` and `Display`
//! say `[redacted]`), [`file`] (0600 files written atomically) and [`private`] (checks that a
//! directory or file is ours and nobody else's, so that nothing another user planted is
//! trusted).

pub mod file;
pub mod private;
pub mod secret;

pub use secret::SecretString;

/// The current user's uid (0 on Windows, where files carry no POSIX owner).
#[cfg(unix)]
pub fn current_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[cfg(windows)]
pub fn current_uid() -> u32 {
    0
}
