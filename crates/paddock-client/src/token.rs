//! Reading the daemon's HTTP bearer token from its file, refusing anything another user could
//! have planted or read.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::env::ClientEnv;
use crate::paths::{DaemonPaths, HTTP_TOKEN_VAR};
use paddock_secrets::SecretString;
use paddock_secrets::private::PrivateFileError;

/// The largest token file we read; a real one holds 43 characters.
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// Why the token could not be read. Each refusal is its own variant so that a client can tell
/// the user exactly what to fix; none of them carries the token.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error(
        "daemon token file `{path}` does not exist; is the daemon running with this environment? (`paddock daemon status`)"
    )]
    NotFound { path: PathBuf },
    #[error("daemon token file `{path}` is a symlink; refusing to follow it")]
    Symlink { path: PathBuf },
    #[error("daemon token file `{path}` is not a regular file")]
    NotRegularFile { path: PathBuf },
    #[error(
        "daemon token file `{path}` is owned by uid {owner}, not by the current uid {expected}"
    )]
    WrongOwner {
        path: PathBuf,
        owner: u32,
        expected: u32,
    },
    #[error("daemon token file `{path}` has mode {mode:04o}; it must be 0600")]
    InsecureMode { path: PathBuf, mode: u32 },
    #[error("daemon token file `{path}` is larger than {MAX_TOKEN_FILE_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("daemon token file `{path}` is not valid UTF-8")]
    NotUtf8 { path: PathBuf },
    #[error("daemon token file `{path}` is empty")]
    Empty { path: PathBuf },
    #[error("`{HTTP_TOKEN_VAR}` is set but is not valid UTF-8")]
    OverrideNotUtf8,
    #[error("could not read daemon token file `{path}`")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl TokenFileError {
    /// True when the file is simply absent (the daemon is not running or not yet published).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }
}

/// The daemon's token as a client launched with `env` must use it: `PADDOCK_DAEMON_HTTP_TOKEN`
/// when set, otherwise the discovered token file.
pub fn read_daemon_http_token(env: &ClientEnv) -> Result<SecretString, TokenFileError> {
    if let Some(value) = env.var(HTTP_TOKEN_VAR) {
        let value = value.to_str().ok_or(TokenFileError::OverrideNotUtf8)?;
        return Ok(SecretString::new(value.trim()));
    }
    read_token_file(&DaemonPaths::resolve(env).token_file)
}

/// Reads and trims a token file after checking it is a regular 0600 file of the current user.
/// The file is opened without following symlinks and checked through the open descriptor, so a
/// swap between check and read cannot smuggle in another file.
pub fn read_token_file(path: &Path) -> Result<SecretString, TokenFileError> {
    let mut file = open_checked(path)?;
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| TokenFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(TokenFileError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| TokenFileError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenFileError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(SecretString::new(token))
}

/// Opens the token file through the shared private-file check.
fn open_checked(path: &Path) -> Result<std::fs::File, TokenFileError> {
    paddock_secrets::private::open_private_file(path).map_err(TokenFileError::from)
}

impl From<PrivateFileError> for TokenFileError {
    fn from(error: PrivateFileError) -> Self {
        match error {
            PrivateFileError::NotFound { path } => Self::NotFound { path },
            PrivateFileError::Symlink { path } => Self::Symlink { path },
            PrivateFileError::NotRegularFile { path } => Self::NotRegularFile { path },
            PrivateFileError::WrongOwner {
                path,
                owner,
                expected,
            } => Self::WrongOwner {
                path,
                owner,
                expected,
            },
            PrivateFileError::InsecureMode { path, mode } => Self::InsecureMode { path, mode },
            PrivateFileError::Io { path, source } => Self::Io { path, source },
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn write_token(dir: &Path, name: &str, content: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap_or_else(|error| panic!("write {path:?}: {error}"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|error| panic!("chmod {path:?}: {error}"));
        path
    }

    fn temp_dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"))
    }

    #[test]
    fn reads_and_trims_a_good_file() {
        let dir = temp_dir();
        let path = write_token(dir.path(), "t", "  tok-123\n", 0o600);
        let token = read_token_file(&path).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(token.expose_secret(), "tok-123");
    }

    #[test]
    fn refusals_are_distinct() {
        let dir = temp_dir();
        let good = write_token(dir.path(), "good", "tok", 0o600);
        let loose = write_token(dir.path(), "loose", "tok", 0o644);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&good, &link).unwrap_or_else(|error| panic!("{error}"));
        let empty = write_token(dir.path(), "empty", " \n", 0o600);
        let binary = dir.path().join("binary");
        std::fs::write(&binary, [0xff, 0xfe]).unwrap_or_else(|error| panic!("{error}"));
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o600))
            .unwrap_or_else(|error| panic!("{error}"));
        let big = write_token(dir.path(), "big", &"x".repeat(5000), 0o600);

        assert!(matches!(
            read_token_file(&loose),
            Err(TokenFileError::InsecureMode { mode: 0o644, .. })
        ));
        assert!(matches!(
            read_token_file(&link),
            Err(TokenFileError::Symlink { .. })
        ));
        assert!(matches!(
            read_token_file(dir.path()),
            Err(TokenFileError::NotRegularFile { .. })
        ));
        assert!(matches!(
            read_token_file(&dir.path().join("missing")),
            Err(TokenFileError::NotFound { .. })
        ));
        assert!(matches!(
            read_token_file(&empty),
            Err(TokenFileError::Empty { .. })
        ));
        assert!(matches!(
            read_token_file(&binary),
            Err(TokenFileError::NotUtf8 { .. })
        ));
        assert!(matches!(
            read_token_file(&big),
            Err(TokenFileError::TooLarge { .. })
        ));
    }

    #[test]
    fn wrong_owner_is_refused_when_we_can_arrange_it() {
        let dir = temp_dir();
        let path = write_token(dir.path(), "other", "tok", 0o600);
        // Only root can give a file away; elsewhere this rule is covered by review alone.
        if crate::paths::current_uid() == 0 {
            rustix::fs::chown(&path, Some(rustix::process::Uid::from_raw(65534)), None)
                .unwrap_or_else(|error| panic!("chown: {error}"));
            assert!(matches!(
                read_token_file(&path),
                Err(TokenFileError::WrongOwner { owner: 65534, .. })
            ));
        }
    }

    #[test]
    fn env_override_wins_and_errors_never_show_the_token() {
        let env = ClientEnv::empty("/").with_var(HTTP_TOKEN_VAR, " from-env ");
        let token = read_daemon_http_token(&env).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(token.expose_secret(), "from-env");
        let dir = temp_dir();
        let path = write_token(dir.path(), "loose", "super-secret-token", 0o644);
        let message = format!(
            "{:?} {}",
            read_token_file(&path).err(),
            read_token_file(&path)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        );
        assert!(!message.contains("super-secret-token"));
    }
}
