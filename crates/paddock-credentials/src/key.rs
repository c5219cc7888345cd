//! Where the host's key comes from. Never argv: any local user can read another process's
//! command line (`ps`, `/proc/<pid>/cmdline`), so the only sources are an environment
//! variable, a file only its owner can read, or the OS keychain where there is one.

use std::ffi::OsString;
use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use paddock_secrets::SecretString;

/// The largest key file read; keys are short, and a huge file is a mistake.
const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;

/// A place to read a key from. Parsed from `env:VAR`, `file:PATH` or `keychain:SERVICE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Env(String),
    File(PathBuf),
    Keychain(String),
}

/// Why a key could not be read. Messages name the source, never the value.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "invalid key source `{0}`: use `env:VAR`, `file:PATH` (a 0600 file) or `keychain:SERVICE`"
    )]
    InvalidSource(String),
    #[error("environment variable `{0}` is not set")]
    EnvMissing(String),
    #[error("environment variable `{0}` is not valid UTF-8")]
    EnvNotUnicode(String),
    #[error("could not read key file `{}`", path.display())]
    FileUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "key file `{}` has mode {mode:04o}: other users may read it; run `chmod 600` on it",
        path.display()
    )]
    FileTooOpen { path: PathBuf, mode: u32 },
    #[error("key file `{}` belongs to uid {owner}, not to you (uid {uid})", path.display())]
    FileNotOwned { path: PathBuf, owner: u32, uid: u32 },
    #[error("key file `{}` is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("key file `{}` is larger than 64 KiB; it should hold only the key", path.display())]
    FileTooLarge { path: PathBuf },
    #[error("the key from {source_name} is empty")]
    Empty { source_name: String },
    #[error(
        "the key from {source_name} holds control characters or non-ASCII text; keys travel in HTTP headers"
    )]
    NotHeaderSafe { source_name: String },
    #[error(
        "the OS keychain is not available on {platform}: use `env:VAR` or `file:PATH` (a 0600 file)"
    )]
    KeychainUnavailable { platform: &'static str },
}

impl KeySource {
    /// Parses `env:VAR`, `file:PATH` or `keychain:SERVICE`.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let invalid = || KeyError::InvalidSource(text.to_owned());
        let (kind, rest) = text.split_once(':').ok_or_else(invalid)?;
        if rest.is_empty() {
            return Err(invalid());
        }
        match kind {
            "env" => Ok(Self::Env(rest.to_owned())),
            "file" => Ok(Self::File(PathBuf::from(rest))),
            "keychain" => Ok(Self::Keychain(rest.to_owned())),
            _ => Err(invalid()),
        }
    }

    /// Reads the key. `env` is looked up with `lookup` (the process environment in the CLI, a
    /// map in tests); a relative file path resolves against the current directory.
    pub fn read(
        &self,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<SecretString, KeyError> {
        let raw = match self {
            Self::Env(name) => {
                let value = lookup(name).ok_or_else(|| KeyError::EnvMissing(name.clone()))?;
                value
                    .into_string()
                    .map_err(|_| KeyError::EnvNotUnicode(name.clone()))?
            }
            Self::File(path) => read_private_file(path)?,
            Self::Keychain(_) => {
                return Err(KeyError::KeychainUnavailable {
                    platform: std::env::consts::OS,
                });
            }
        };
        // A trailing newline is what `echo key > file` leaves; it is never part of a key.
        let key = raw.trim_end_matches(['\n', '\r']);
        if key.is_empty() {
            return Err(KeyError::Empty {
                source_name: self.to_string(),
            });
        }
        if !key
            .bytes()
            .all(|byte| byte.is_ascii_graphic() || byte == b' ')
        {
            return Err(KeyError::NotHeaderSafe {
                source_name: self.to_string(),
            });
        }
        Ok(SecretString::new(key))
    }

    /// The environment variable that held the key, which a child must not inherit.
    pub fn env_var(&self) -> Option<&str> {
        match self {
            Self::Env(name) => Some(name),
            _ => None,
        }
    }
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env(name) => write!(f, "`env:{name}`"),
            Self::File(path) => write!(f, "`file:{}`", path.display()),
            Self::Keychain(service) => write!(f, "`keychain:{service}`"),
        }
    }
}

/// Reads `path` after checking, on the open handle (so a swapped symlink cannot slip past),
/// that it is a regular file of ours that nobody else can read or write.
fn read_private_file(path: &Path) -> Result<String, KeyError> {
    use std::os::unix::fs::MetadataExt as _;

    let unreadable = |source| KeyError::FileUnreadable {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let metadata = file.metadata().map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(KeyError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let uid = paddock_secrets::current_uid();
    if metadata.uid() != uid {
        return Err(KeyError::FileNotOwned {
            path: path.to_path_buf(),
            owner: metadata.uid(),
            uid,
        });
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyError::FileTooOpen {
            path: path.to_path_buf(),
            mode,
        });
    }
    if metadata.len() > MAX_KEY_FILE_BYTES {
        return Err(KeyError::FileTooLarge {
            path: path.to_path_buf(),
        });
    }
    let mut text = String::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn no_env(_: &str) -> Option<OsString> {
        None
    }

    #[test]
    fn parses_the_three_sources() {
        assert_eq!(
            KeySource::parse("env:API_KEY").unwrap(),
            KeySource::Env("API_KEY".into())
        );
        assert_eq!(
            KeySource::parse("file:/a/b").unwrap(),
            KeySource::File("/a/b".into())
        );
        assert_eq!(
            KeySource::parse("keychain:svc").unwrap(),
            KeySource::Keychain("svc".into())
        );
        for bad in ["API_KEY", "env:", "argv:x", "sk-live-123"] {
            let error = KeySource::parse(bad).unwrap_err();
            assert!(error.to_string().contains(&format!("`{bad}`")));
        }
    }

    #[test]
    fn env_keys_lose_a_trailing_newline() {
        let key = KeySource::Env("K".into())
            .read(|name| (name == "K").then(|| "sk-123\n".into()))
            .unwrap();
        assert_eq!(key.expose_secret(), "sk-123");
        let missing = KeySource::Env("K".into()).read(no_env).unwrap_err();
        assert!(missing.to_string().contains("`K`"));
    }

    #[test]
    fn key_files_must_be_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "sk-file-secret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = KeySource::File(path.clone()).read(no_env).unwrap_err();
        assert!(matches!(error, KeyError::FileTooOpen { mode: 0o644, .. }));
        assert!(error.to_string().contains("chmod 600"));
        assert!(!error.to_string().contains("sk-file-secret"));

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let key = KeySource::File(path).read(no_env).unwrap();
        assert_eq!(key.expose_secret(), "sk-file-secret");

        let error = KeySource::File(dir.path().to_path_buf())
            .read(no_env)
            .unwrap_err();
        assert!(matches!(error, KeyError::NotAFile { .. }));
    }

    #[test]
    fn keys_that_cannot_travel_in_a_header_are_refused_without_echoing_them() {
        let error = KeySource::Env("K".into())
            .read(|_| Some("sk-bad\r\nX-Evil: 1".into()))
            .unwrap_err();
        assert!(matches!(error, KeyError::NotHeaderSafe { .. }));
        assert!(!error.to_string().contains("sk-bad"));
        let error = KeySource::Env("K".into())
            .read(|_| Some("\n".into()))
            .unwrap_err();
        assert!(matches!(error, KeyError::Empty { .. }));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_keychain_is_not_available_on_linux() {
        let error = KeySource::Keychain("paddock".into())
            .read(no_env)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the OS keychain is not available on linux: use `env:VAR` or `file:PATH` (a 0600 file)"
        );
    }
}
