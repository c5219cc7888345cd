//! Atomic, private file publication: the token file and the PID record.
//!
//! A file is written to an exclusive 0600 temporary file in the same directory and renamed into
//! place, so a reader sees either the previous content or the complete new one, never a partial
//! file. A missing parent directory is created with mode 0700.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use paddock_client::SecretString;

/// Writes `contents` to `path` atomically with mode 0600.
pub fn publish_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(parent)?;
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "paddock".to_owned());
    let mut attempt = 0u32;
    let (temp_path, mut file) = loop {
        let candidate = parent.join(format!(
            ".{file_name}.{}.{}.tmp",
            std::process::id(),
            random_suffix()
        ));
        match open_exclusive(&candidate) {
            Ok(file) => break (candidate, file),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    };
    let written = file
        .write_all(contents)
        .and_then(|()| file.sync_all())
        .and_then(|()| rename_into_place(&temp_path, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp_path);
    }
    written
}

/// Publishes the daemon's token file.
pub fn publish_token(path: &Path, token: &SecretString) -> io::Result<()> {
    publish_private(path, token.expose_secret().as_bytes())
}

/// Removes the token file only if it still holds `token`: another daemon may have replaced it.
/// Returns whether the file was removed.
pub fn remove_token_if_ours(path: &Path, token: &SecretString) -> io::Result<bool> {
    match fs::read(path) {
        Ok(bytes) if token.constant_time_eq(trim_ascii(&bytes)) => {
            fs::remove_file(path)?;
            Ok(true)
        }
        Ok(_) => Ok(false),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// Creates `dir` (and missing parents) with mode 0700 where supported.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn open_exclusive(path: &Path) -> io::Result<fs::File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(unix)]
fn rename_into_place(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)
}

/// Windows: a rename can fail transiently while another process has the target open. Retry
/// only while the public file is unchanged since publication began; if another daemon published
/// meanwhile, fail without overwriting it.
#[cfg(windows)]
fn rename_into_place(from: &Path, to: &Path) -> io::Result<()> {
    let before = fs::read(to).ok();
    let mut delay = std::time::Duration::from_millis(10);
    for _ in 0..8 {
        match fs::rename(from, to) {
            Ok(()) => return Ok(()),
            Err(error) if is_sharing_violation(&error) => {
                std::thread::sleep(delay);
                delay *= 2;
                if fs::read(to).ok() != before {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        "another daemon published the file during the retry",
                    ));
                }
            }
            Err(error) => return Err(error),
        }
    }
    fs::rename(from, to)
}

#[cfg(windows)]
fn is_sharing_violation(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ResourceBusy
    )
}

fn random_suffix() -> String {
    let mut bytes = [0u8; 6];
    // A failure of the OS RNG leaves zeros; create_new then still prevents a clash.
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn publishes_0600_in_a_new_0700_dir() {
        let root = tempfile::tempdir().expect("tempdir");
        let path = root.path().join("a/b/token");
        publish_private(&path, b"x").expect("publish");
        let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(root.path().join("a/b"))
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(fs::read(&path).expect("read"), b"x");
        // No temporary file is left behind.
        assert_eq!(
            fs::read_dir(root.path().join("a/b")).expect("ls").count(),
            1
        );
    }

    #[test]
    fn removes_only_its_own_token() {
        let root = tempfile::tempdir().expect("tempdir");
        let path = root.path().join("token");
        publish_token(&path, &SecretString::new("other")).expect("publish");
        assert!(!remove_token_if_ours(&path, &SecretString::new("mine")).expect("remove"));
        assert!(path.exists());
        publish_token(&path, &SecretString::new("mine")).expect("publish");
        assert!(remove_token_if_ours(&path, &SecretString::new("mine")).expect("remove"));
        assert!(!path.exists());
    }
}
