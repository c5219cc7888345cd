//! Where a daemon's files live. Its token, PID record, control socket and instance lock sit in
//! one per-user *runtime directory* R that nobody else can write — `$XDG_RUNTIME_DIR/paddock`
//! when `XDG_RUNTIME_DIR` is set, else `/tmp/paddock-<uid>` — and share the stem
//! `daemon<isolationSuffix>`, so that daemons launched with different `PADDOCK_AUX_SOCKET_DIR`
//! values never see each other's files. `PADDOCK_AUX_SOCKET_DIR`, when set, decides the suffix
//! and holds the socket and lock; `PADDOCK_DAEMON_TOKEN_FILE_PATH` moves the token file.
//!
//! The daemon creates and verifies these directories on every start (see [`crate::private`]),
//! and clients verify them on every connect: this one rule is shared by both sides.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::env::ClientEnv;
use paddock_secrets::private::{PrivateDirError, ensure_private_dir, ensure_safe_parent};

/// Environment variable that isolates a daemon: sockets live there, and the suffix of every
/// daemon file name derives from its absolute path.
pub const AUX_SOCKET_DIR_VAR: &str = "PADDOCK_AUX_SOCKET_DIR";
/// Environment variable that overrides the token file's path; a relative value resolves against
/// the launch directory.
pub const TOKEN_FILE_PATH_VAR: &str = "PADDOCK_DAEMON_TOKEN_FILE_PATH";
/// Client-only environment variable holding the token itself; it wins over file discovery.
pub const HTTP_TOKEN_VAR: &str = "PADDOCK_DAEMON_HTTP_TOKEN";
/// Environment variable that overrides the state directory.
pub const STATE_DIR_VAR: &str = "PADDOCK_STATE_DIR";
/// The per-user runtime directory of the freedesktop base-directory spec.
pub const XDG_RUNTIME_DIR_VAR: &str = "XDG_RUNTIME_DIR";

/// Every path of one daemon instance, resolved from a launch environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonPaths {
    pub isolation_suffix: String,
    /// The per-user runtime directory R (0700, ours): token, PID record, and — without
    /// `PADDOCK_AUX_SOCKET_DIR` — socket and lock.
    pub runtime_dir: PathBuf,
    /// Where the socket and the lock live: `PADDOCK_AUX_SOCKET_DIR` when set, else R.
    pub socket_dir: PathBuf,
    pub token_file: PathBuf,
    /// True when `PADDOCK_DAEMON_TOKEN_FILE_PATH` chose the token file's place.
    pub token_file_overridden: bool,
    pub pid_file: PathBuf,
    /// The control socket.
    pub socket: PathBuf,
    /// The instance lock, beside the control socket.
    pub lock_file: PathBuf,
    pub state_dir: PathBuf,
}

impl DaemonPaths {
    /// Resolves the paths for the current user.
    pub fn resolve(env: &ClientEnv) -> Self {
        Self::resolve_for_uid(env, current_uid())
    }

    /// Resolves the paths for `uid` (the default runtime directory embeds the uid).
    pub fn resolve_for_uid(env: &ClientEnv, uid: u32) -> Self {
        let aux_dir = env
            .var(AUX_SOCKET_DIR_VAR)
            .map(|dir| normalize(&env.absolute(Path::new(dir))));
        let isolation_suffix = aux_dir
            .as_deref()
            .map(isolation_suffix_for)
            .unwrap_or_default();
        let runtime_dir = runtime_dir(env, uid);
        let stem = format!("daemon{isolation_suffix}");
        let (token_file, token_file_overridden) = match env.var(TOKEN_FILE_PATH_VAR) {
            Some(path) => (normalize(&env.absolute(Path::new(path))), true),
            None => (runtime_dir.join(format!("{stem}.token")), false),
        };
        let socket_dir = aux_dir.unwrap_or_else(|| runtime_dir.clone());
        Self {
            token_file,
            token_file_overridden,
            pid_file: runtime_dir.join(format!("{stem}.pid")),
            socket: socket_dir.join(format!("{stem}.sock")),
            lock_file: socket_dir.join(format!("{stem}.lock")),
            state_dir: state_dir(env),
            isolation_suffix,
            runtime_dir,
            socket_dir,
        }
    }

    /// For the daemon at startup: creates the runtime and socket directories 0700 where
    /// missing and verifies that both are ours, 0700 and not symlinks, and that the token file's
    /// directory is safe. Never loosens or takes over an existing directory.
    pub fn prepare_daemon_dirs(&self) -> Result<(), PrivateDirError> {
        ensure_private_dir(&self.runtime_dir)?;
        ensure_private_dir(&self.socket_dir)?;
        if let Some(parent) = self.token_file.parent()
            && parent != self.runtime_dir
        {
            ensure_safe_parent(parent)?;
        }
        Ok(())
    }
}

/// The runtime directory R: `$XDG_RUNTIME_DIR/paddock`, else `/tmp/paddock-<uid>` (POSIX), or
/// `%LOCALAPPDATA%\paddock` (Windows).
#[cfg(unix)]
pub fn runtime_dir(env: &ClientEnv, uid: u32) -> PathBuf {
    match env.var(XDG_RUNTIME_DIR_VAR) {
        Some(dir) => normalize(&env.absolute(Path::new(dir))).join("paddock"),
        None => PathBuf::from(format!("/tmp/paddock-{uid}")),
    }
}

#[cfg(windows)]
pub fn runtime_dir(env: &ClientEnv, _uid: u32) -> PathBuf {
    env.var("LOCALAPPDATA")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join("paddock")
}

/// `-` and the first 12 hex digits of SHA-256 over the absolute directory path.
pub fn isolation_suffix_for(absolute_dir: &Path) -> String {
    let digest = Sha256::digest(absolute_dir.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("-{}", &hex[..12])
}

/// The state directory: `PADDOCK_STATE_DIR`, else `$XDG_STATE_HOME/paddock`, else
/// `~/.local/state/paddock`.
pub fn state_dir(env: &ClientEnv) -> PathBuf {
    if let Some(dir) = env.var(STATE_DIR_VAR) {
        return normalize(&env.absolute(Path::new(dir)));
    }
    if let Some(dir) = env.var("XDG_STATE_HOME") {
        return normalize(&env.absolute(Path::new(dir))).join("paddock");
    }
    let home = env
        .var("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| env.current_dir().to_path_buf());
    home.join(".local/state/paddock")
}

pub use paddock_secrets::current_uid;

/// Lexically normalises an absolute path (drops `.`, folds `..`) the way `path.resolve` does,
/// so that `/a/b/../c` and `/a/c` isolate to the same daemon.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_paths_have_no_suffix() {
        let env = ClientEnv::empty("/home/me").with_var("HOME", "/home/me");
        let paths = DaemonPaths::resolve_for_uid(&env, 1000);
        assert_eq!(paths.isolation_suffix, "");
        assert_eq!(paths.runtime_dir, PathBuf::from("/tmp/paddock-1000"));
        assert_eq!(
            paths.token_file,
            PathBuf::from("/tmp/paddock-1000/daemon.token")
        );
        assert_eq!(
            paths.pid_file,
            PathBuf::from("/tmp/paddock-1000/daemon.pid")
        );
        assert_eq!(paths.socket, PathBuf::from("/tmp/paddock-1000/daemon.sock"));
        assert_eq!(
            paths.lock_file,
            PathBuf::from("/tmp/paddock-1000/daemon.lock")
        );
        assert!(!paths.token_file_overridden);
        assert_eq!(
            paths.state_dir,
            PathBuf::from("/home/me/.local/state/paddock")
        );
    }

    #[test]
    fn aux_dir_sets_suffix_from_its_absolute_path() {
        let relative = ClientEnv::empty("/work").with_var(AUX_SOCKET_DIR_VAR, "./x/../sockets");
        let absolute = ClientEnv::empty("/elsewhere").with_var(AUX_SOCKET_DIR_VAR, "/work/sockets");
        let a = DaemonPaths::resolve_for_uid(&relative, 0);
        let b = DaemonPaths::resolve_for_uid(&absolute, 0);
        assert_eq!(a.isolation_suffix, b.isolation_suffix);
        assert_eq!(a.socket, b.socket);
        // SHA-256("/work/sockets") begins with these twelve hex digits.
        let expected = {
            let digest = Sha256::digest(b"/work/sockets");
            let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
            format!("-{}", &hex[..12])
        };
        assert_eq!(a.isolation_suffix, expected);
        assert_eq!(a.isolation_suffix.len(), 13);
        assert_eq!(
            a.socket,
            PathBuf::from(format!("/work/sockets/daemon{expected}.sock"))
        );
        assert_eq!(
            a.lock_file,
            PathBuf::from(format!("/work/sockets/daemon{expected}.lock"))
        );
        assert_eq!(
            a.token_file,
            PathBuf::from(format!("/tmp/paddock-0/daemon{expected}.token"))
        );
        assert_eq!(
            a.pid_file,
            PathBuf::from(format!("/tmp/paddock-0/daemon{expected}.pid"))
        );
    }

    #[test]
    fn token_override_resolves_against_launch_dir() {
        let env = ClientEnv::empty("/launch").with_var(TOKEN_FILE_PATH_VAR, "run/token");
        let paths = DaemonPaths::resolve_for_uid(&env, 5);
        assert_eq!(paths.token_file, PathBuf::from("/launch/run/token"));
        assert!(paths.token_file_overridden);
    }

    #[test]
    fn xdg_runtime_dir_holds_the_runtime_files() {
        let env = ClientEnv::empty("/c").with_var(XDG_RUNTIME_DIR_VAR, "/run/user/1000");
        let paths = DaemonPaths::resolve_for_uid(&env, 1000);
        assert_eq!(paths.runtime_dir, PathBuf::from("/run/user/1000/paddock"));
        assert_eq!(
            paths.socket,
            PathBuf::from("/run/user/1000/paddock/daemon.sock")
        );
        assert_eq!(
            paths.pid_file,
            PathBuf::from("/run/user/1000/paddock/daemon.pid")
        );
    }

    #[test]
    fn state_dir_precedence() {
        let env = ClientEnv::empty("/c")
            .with_var("HOME", "/h")
            .with_var("XDG_STATE_HOME", "/x");
        assert_eq!(state_dir(&env), PathBuf::from("/x/paddock"));
        let env = env.with_var(STATE_DIR_VAR, "s");
        assert_eq!(state_dir(&env), PathBuf::from("/c/s"));
    }
}
