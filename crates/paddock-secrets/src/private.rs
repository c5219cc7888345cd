//! Checks that keep another user's files out of Paddock's way. A *private directory* is a real
//! directory (never a symlink) owned by the current uid with mode 0700; a *private file* is a
//! regular file owned by the current uid that nobody else may read or write. The daemon checks
//! its runtime directory on every start and clients check it on every connect, so a file that
//! another user planted in a world-writable place is refused instead of trusted.

use std::io;
use std::path::{Path, PathBuf};

use crate::current_uid;

/// Why a directory is not private. Each refusal names the directory and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    #[error("directory `{path}` does not exist")]
    Missing { path: PathBuf },
    #[error(
        "`{path}` is a symlink; Paddock's runtime directories must be real directories (remove it)"
    )]
    Symlink { path: PathBuf },
    #[error("`{path}` is not a directory")]
    NotADirectory { path: PathBuf },
    #[error(
        "directory `{path}` belongs to uid {owner}, not to you (uid {expected}); another user may have created it to intercept Paddock — remove it (as its owner or root), or point `XDG_RUNTIME_DIR` at a directory of your own"
    )]
    WrongOwner {
        path: PathBuf,
        owner: u32,
        expected: u32,
    },
    #[error("directory `{path}` has mode {mode:04o}; it must be 0700 (run `chmod 700 {path}`)")]
    InsecureMode { path: PathBuf, mode: u32 },
    #[error("could not create directory `{path}`")]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("could not inspect `{path}`")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl PrivateDirError {
    /// True when the directory does not exist (nothing was planted, nothing runs).
    pub fn is_missing(&self) -> bool {
        matches!(self, Self::Missing { .. })
    }
}

/// Why a file is not private. None of the variants carries the file's contents.
#[derive(Debug, thiserror::Error)]
pub enum PrivateFileError {
    #[error("`{path}` does not exist")]
    NotFound { path: PathBuf },
    #[error("`{path}` is a symlink; refusing to follow it")]
    Symlink { path: PathBuf },
    #[error("`{path}` is not a regular file")]
    NotRegularFile { path: PathBuf },
    #[error(
        "`{path}` belongs to uid {owner}, not to you (uid {expected}); another user may have planted it"
    )]
    WrongOwner {
        path: PathBuf,
        owner: u32,
        expected: u32,
    },
    #[error("`{path}` has mode {mode:04o}; it must be 0600")]
    InsecureMode { path: PathBuf, mode: u32 },
    #[error("could not open `{path}`")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// A real directory (not a symlink) owned by the current uid, or why not; `Ok(None)` when
/// nothing is at `path`. Returns its mode bits.
#[cfg(unix)]
fn owned_dir_mode(path: &Path) -> Result<Option<u32>, PrivateDirError> {
    use std::os::unix::fs::MetadataExt;

    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(PrivateDirError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let file_type = metadata.file_type();
    if file_type.is_symlink() {
        return Err(PrivateDirError::Symlink {
            path: path.to_path_buf(),
        });
    }
    if !file_type.is_dir() {
        return Err(PrivateDirError::NotADirectory {
            path: path.to_path_buf(),
        });
    }
    let expected = current_uid();
    if metadata.uid() != expected {
        return Err(PrivateDirError::WrongOwner {
            path: path.to_path_buf(),
            owner: metadata.uid(),
            expected,
        });
    }
    Ok(Some(metadata.mode() & 0o7777))
}

/// Checks that `path` is a private directory, without creating anything (`lstat`, so a symlink
/// is seen as one).
#[cfg(unix)]
pub fn check_private_dir(path: &Path) -> Result<(), PrivateDirError> {
    match owned_dir_mode(path)? {
        None => Err(PrivateDirError::Missing {
            path: path.to_path_buf(),
        }),
        Some(0o700) => Ok(()),
        Some(mode) => Err(PrivateDirError::InsecureMode {
            path: path.to_path_buf(),
            mode,
        }),
    }
}

#[cfg(windows)]
pub fn check_private_dir(path: &Path) -> Result<(), PrivateDirError> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(PrivateDirError::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(PrivateDirError::NotADirectory {
            path: path.to_path_buf(),
        }),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Err(PrivateDirError::Missing {
            path: path.to_path_buf(),
        }),
        Err(source) => Err(PrivateDirError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Creates `path` with mode 0700 when it is missing (missing parents too, each 0700), then
/// checks that it is a private directory. An existing directory is never loosened or taken
/// over: if it is not private, that is the error.
pub fn ensure_private_dir(path: &Path) -> Result<(), PrivateDirError> {
    match check_private_dir(path) {
        Err(error) if error.is_missing() => {}
        other => return other,
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(path)
        .map_err(|source| PrivateDirError::Create {
            path: path.to_path_buf(),
            source,
        })?;
    // The umask may have narrowed the mode further (it cannot widen it); a 0700 directory is
    // what every later check expects, so set it exactly.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).map_err(
            |source| PrivateDirError::Create {
                path: path.to_path_buf(),
                source,
            },
        )?;
    }
    check_private_dir(path)
}

/// Checks a directory that will hold a private file whose path the user chose (the token file
/// override): it must be a real directory owned by the current uid that nobody else may write
/// to — otherwise another user could plant or replace the file. A missing directory is created
/// as a private one.
#[cfg(unix)]
pub fn ensure_safe_parent(path: &Path) -> Result<(), PrivateDirError> {
    match owned_dir_mode(path)? {
        None => ensure_private_dir(path),
        Some(mode) if mode & 0o022 != 0 => Err(PrivateDirError::InsecureMode {
            path: path.to_path_buf(),
            mode,
        }),
        Some(_) => Ok(()),
    }
}

#[cfg(windows)]
pub fn ensure_safe_parent(path: &Path) -> Result<(), PrivateDirError> {
    match check_private_dir(path) {
        Err(error) if error.is_missing() => ensure_private_dir(path),
        other => other,
    }
}

/// Opens `path` for reading after checking, on the open descriptor, that it is a private
/// file: no symlink is followed, and a swap between the check and the read cannot smuggle in
/// another file. A FIFO planted at the path does not block the open.
#[cfg(unix)]
pub fn open_private_file(path: &Path) -> Result<std::fs::File, PrivateFileError> {
    use rustix::fs::{Mode, OFlags};

    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => {
            return Err(PrivateFileError::NotFound {
                path: path.to_path_buf(),
            });
        }
        Err(rustix::io::Errno::LOOP) => {
            return Err(PrivateFileError::Symlink {
                path: path.to_path_buf(),
            });
        }
        Err(errno) => {
            return Err(PrivateFileError::Io {
                path: path.to_path_buf(),
                source: errno.into(),
            });
        }
    };
    let file = std::fs::File::from(fd);
    check_private_fd(&file, path)?;
    Ok(file)
}

/// Checks an open file: regular, owned by the current uid, mode 0600 (no bits for anyone else).
#[cfg(unix)]
pub fn check_private_fd(file: &std::fs::File, path: &Path) -> Result<(), PrivateFileError> {
    use rustix::fs::FileType;

    let stat = rustix::fs::fstat(file).map_err(|errno| PrivateFileError::Io {
        path: path.to_path_buf(),
        source: errno.into(),
    })?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(PrivateFileError::NotRegularFile {
            path: path.to_path_buf(),
        });
    }
    let expected = current_uid();
    if stat.st_uid != expected {
        return Err(PrivateFileError::WrongOwner {
            path: path.to_path_buf(),
            owner: stat.st_uid,
            expected,
        });
    }
    let mode = stat.st_mode & 0o7777;
    if mode != 0o600 {
        return Err(PrivateFileError::InsecureMode {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(windows)]
pub fn open_private_file(path: &Path) -> Result<std::fs::File, PrivateFileError> {
    let metadata = std::fs::symlink_metadata(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => PrivateFileError::NotFound {
            path: path.to_path_buf(),
        },
        _ => PrivateFileError::Io {
            path: path.to_path_buf(),
            source,
        },
    })?;
    if metadata.file_type().is_symlink() {
        return Err(PrivateFileError::Symlink {
            path: path.to_path_buf(),
        });
    }
    if !metadata.is_file() {
        return Err(PrivateFileError::NotRegularFile {
            path: path.to_path_buf(),
        });
    }
    std::fs::File::open(path).map_err(|source| PrivateFileError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn temp_dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"))
    }

    #[test]
    fn creates_and_accepts_a_private_dir() {
        let root = temp_dir();
        let dir = root.path().join("a/b");
        ensure_private_dir(&dir).unwrap_or_else(|error| panic!("{error}"));
        let mode = std::fs::metadata(&dir)
            .map(|metadata| metadata.permissions().mode() & 0o7777)
            .unwrap_or(0);
        assert_eq!(mode, 0o700);
        // Idempotent.
        ensure_private_dir(&dir).unwrap_or_else(|error| panic!("{error}"));
    }

    #[test]
    fn refuses_loose_symlinked_and_non_directories() {
        let root = temp_dir();
        let loose = root.path().join("loose");
        std::fs::create_dir(&loose).unwrap_or_else(|error| panic!("{error}"));
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o777))
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(matches!(
            ensure_private_dir(&loose),
            Err(PrivateDirError::InsecureMode { mode: 0o777, .. })
        ));
        // Never loosened or repaired behind the user's back.
        let mode = std::fs::metadata(&loose)
            .map(|metadata| metadata.permissions().mode() & 0o7777)
            .unwrap_or(0);
        assert_eq!(mode, 0o777);

        let target = root.path().join("target");
        ensure_private_dir(&target).unwrap_or_else(|error| panic!("{error}"));
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap_or_else(|error| panic!("{error}"));
        assert!(matches!(
            check_private_dir(&link),
            Err(PrivateDirError::Symlink { .. })
        ));

        let file = root.path().join("file");
        std::fs::write(&file, b"x").unwrap_or_else(|error| panic!("{error}"));
        assert!(matches!(
            check_private_dir(&file),
            Err(PrivateDirError::NotADirectory { .. })
        ));
        assert!(check_private_dir(&root.path().join("missing")).is_err_and(|e| e.is_missing()));
    }

    #[test]
    fn safe_parent_allows_a_home_like_dir_but_not_a_shared_one() {
        let root = temp_dir();
        let home = root.path().join("home");
        std::fs::create_dir(&home).unwrap_or_else(|error| panic!("{error}"));
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|error| panic!("{error}"));
        ensure_safe_parent(&home).unwrap_or_else(|error| panic!("{error}"));
        let shared = root.path().join("shared");
        std::fs::create_dir(&shared).unwrap_or_else(|error| panic!("{error}"));
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777))
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(matches!(
            ensure_safe_parent(&shared),
            Err(PrivateDirError::InsecureMode { mode: 0o1777, .. })
        ));
        let fresh = root.path().join("fresh/dir");
        ensure_safe_parent(&fresh).unwrap_or_else(|error| panic!("{error}"));
        check_private_dir(&fresh).unwrap_or_else(|error| panic!("{error}"));
    }

    #[test]
    fn private_files_must_be_0600() {
        let root = temp_dir();
        let path = root.path().join("f");
        std::fs::write(&path, b"x").unwrap_or_else(|error| panic!("{error}"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(matches!(
            open_private_file(&path),
            Err(PrivateFileError::InsecureMode { mode: 0o644, .. })
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(open_private_file(&path).is_ok());
    }
}
