//! Process hardening done first thing in `main`, while the process is still single-threaded:
//! the process becomes non-dumpable before any secret enters its memory, and the variables that
//! hold a real API key are taken out of its environment.
//!
//! Non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`) means that processes of the same uid — an agent
//! the daemon launched, a child of `paddock credentials exec` — can neither read this process's
//! `/proc/<pid>/environ` or `/proc/<pid>/mem` nor ptrace it; only root can. `exec` resets the
//! flag, so children (Chromium, agent CLIs, the command under `credentials exec`) are ordinary
//! processes again: they hold only vouchers.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::OnceLock;

/// The keys `main` took out of the environment, for the command that needs them.
static TAKEN: OnceLock<TakenKeys> = OnceLock::new();

/// Makes this process non-dumpable. On Linux this cannot fail for a valid argument, so a
/// failure is reported as an error rather than ignored: the protection is a promise.
#[cfg(target_os = "linux")]
pub fn make_non_dumpable() -> std::io::Result<()> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
pub fn make_non_dumpable() -> std::io::Result<()> {
    Ok(())
}

/// Variables holding real keys, taken out of the process environment at startup so that no
/// child can inherit them, whatever way it is spawned. Lookups of a key variable go through
/// [`TakenKeys::var_os`].
#[derive(Default)]
pub struct TakenKeys {
    taken: BTreeMap<String, OsString>,
}

impl std::fmt::Debug for TakenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.taken.keys()).finish()
    }
}

impl TakenKeys {
    /// Removes each named variable from the process environment, keeping its value here.
    ///
    /// Must run before any other thread exists: `main` calls it before building the async
    /// runtime, so nothing can read or write the environment concurrently.
    pub fn take(names: &[String]) -> Self {
        let mut taken = BTreeMap::new();
        for name in names {
            if name.is_empty() || name.contains(['=', '\0']) {
                continue;
            }
            if let Some(value) = std::env::var_os(name) {
                taken.insert(name.clone(), value);
                remove_var(name);
            }
        }
        Self { taken }
    }

    /// Records these as the process's taken keys (once; later calls are ignored).
    pub fn install(self) {
        let _ = TAKEN.set(self);
    }
}

/// A variable's value: a key taken at startup, else the process environment.
pub fn key_var_os(name: &str) -> Option<OsString> {
    TAKEN
        .get()
        .and_then(|taken| taken.taken.get(name).cloned())
        .or_else(|| std::env::var_os(name))
}

#[expect(
    unsafe_code,
    reason = "`remove_var` is unsafe in edition 2024 because another thread may read the \
              environment at the same time; it is only called from `TakenKeys::take`, which \
              `main` runs before any thread is started"
)]
fn remove_var(name: &str) {
    // SAFETY: single-threaded at this point (see `TakenKeys::take`); `name` holds no `=` or NUL.
    unsafe { std::env::remove_var(name) };
}
