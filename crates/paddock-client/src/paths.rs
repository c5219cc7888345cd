//! Where a daemon's files live: token, PID record, control socket and lock, all sharing one stem
//! `paddock-daemon-<uid><isolationSuffix>` so that daemons launched with different
//! `PADDOCK_AUX_SOCKET_DIR` values never see each other's files.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::env::ClientEnv;

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

/// Every path of one daemon instance, resolved from a launch environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonPaths {
    pub isolation_suffix: String,
    pub token_file: PathBuf,
    pub pid_file: PathBuf,
    /// The control socket: in `PADDOCK_AUX_SOCKET_DIR` when set, else beside the token.
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

    /// Resolves the paths for `uid` (POSIX names embed the uid).
    pub fn resolve_for_uid(env: &ClientEnv, uid: u32) -> Self {
        let aux_dir = env
            .var(AUX_SOCKET_DIR_VAR)
            .map(|dir| normalize(&env.absolute(Path::new(dir))));
        let isolation_suffix = aux_dir
            .as_deref()
            .map(isolation_suffix_for)
            .unwrap_or_default();
        let files_dir = default_files_dir(env);
        let stem = file_stem(uid, &isolation_suffix);
        let token_file = match env.var(TOKEN_FILE_PATH_VAR) {
            Some(path) => normalize(&env.absolute(Path::new(path))),
            None => files_dir.join(format!("{stem}.token")),
        };
        let socket_dir = aux_dir.unwrap_or_else(|| files_dir.clone());
        Self {
            token_file,
            pid_file: files_dir.join(format!("{stem}.pid")),
            socket: socket_dir.join(format!("{stem}.sock")),
            lock_file: socket_dir.join(format!("{stem}.lock")),
            state_dir: state_dir(env),
            isolation_suffix,
        }
    }
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

#[cfg(unix)]
fn file_stem(uid: u32, suffix: &str) -> String {
    format!("paddock-daemon-{uid}{suffix}")
}

#[cfg(windows)]
fn file_stem(_uid: u32, suffix: &str) -> String {
    format!("daemon{suffix}")
}

#[cfg(unix)]
fn default_files_dir(_env: &ClientEnv) -> PathBuf {
    PathBuf::from("/tmp")
}

#[cfg(windows)]
fn default_files_dir(env: &ClientEnv) -> PathBuf {
    env.var("LOCALAPPDATA")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join("paddock")
}

#[cfg(unix)]
pub fn current_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[cfg(windows)]
pub fn current_uid() -> u32 {
    0
}

/// Lexically normalises an absolute path (drops `.`, folds `..`) the way `path.resolve` does,
/// so that `/a/b/../c` and `/a/c` isolate to the same daemon.
fn normalize(path: &Path) -> PathBuf {
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
        assert_eq!(
            paths.token_file,
            PathBuf::from("/tmp/paddock-daemon-1000.token")
        );
        assert_eq!(
            paths.pid_file,
            PathBuf::from("/tmp/paddock-daemon-1000.pid")
        );
        assert_eq!(paths.socket, PathBuf::from("/tmp/paddock-daemon-1000.sock"));
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
            PathBuf::from(format!("/work/sockets/paddock-daemon-0{expected}.sock"))
        );
        assert_eq!(
            a.token_file,
            PathBuf::from(format!("/tmp/paddock-daemon-0{expected}.token"))
        );
    }

    #[test]
    fn token_override_resolves_against_launch_dir() {
        let env = ClientEnv::empty("/launch").with_var(TOKEN_FILE_PATH_VAR, "run/token");
        let paths = DaemonPaths::resolve_for_uid(&env, 5);
        assert_eq!(paths.token_file, PathBuf::from("/launch/run/token"));
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
