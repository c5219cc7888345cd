//! Writing private files: mode 0600 from the first byte, never partially visible. The token
//! file, the PID record, the machine id, PII pipelines and voucher files are all written here.

use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::path::Path;

/// Creates `dir` (and missing parents) with mode 0700 where supported; an existing directory is
/// left as it is.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Writes `contents` to `path` atomically with mode 0600: an exclusive 0600 temporary file in
/// the same directory is written, synced and renamed over `path`, and the directory is synced,
/// so a reader sees the previous content or the complete new one, and a crash loses neither. A
/// missing parent is created 0700.
pub fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let (parent, temp) = write_temp(path, contents)?;
    let renamed = rename_into_place(&temp, path).and_then(|()| sync_dir(&parent));
    if renamed.is_err() {
        let _ = fs::remove_file(&temp);
    }
    renamed
}

/// Like [`write_private`], but only if `path` does not exist yet: the temporary file is
/// hard-linked into place, so an existing file (or a symlink planted there) is never replaced
/// and no reader sees a partial file. Fails with `AlreadyExists` when `path` exists.
pub fn write_private_new(path: &Path, contents: &[u8]) -> io::Result<()> {
    let (parent, temp) = write_temp(path, contents)?;
    let linked = fs::hard_link(&temp, path).and_then(|()| sync_dir(&parent));
    let _ = fs::remove_file(&temp);
    linked
}

/// Writes `contents` to a fresh, exclusive 0600 file beside `path` and syncs it.
fn write_temp(
    path: &Path,
    contents: &[u8],
) -> io::Result<(std::path::PathBuf, std::path::PathBuf)> {
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    create_private_dir(&parent)?;
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "paddock".to_owned());
    let mut attempt = 0u32;
    let (temp, mut file) = loop {
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
    if let Err(error) = file.write_all(contents).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = fs::remove_file(&temp);
        return Err(error);
    }
    Ok((parent, temp))
}

fn open_exclusive(path: &Path) -> io::Result<fs::File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)
}

/// Makes a rename or link in `dir` durable.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(windows)]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn rename_into_place(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)
}

/// Windows: a rename can fail transiently while another process has the target open. Retry
/// only while the public file is unchanged since publication began; if another writer
/// published meanwhile, fail without overwriting it.
#[cfg(windows)]
fn rename_into_place(from: &Path, to: &Path) -> io::Result<()> {
    let before = fs::read(to).ok();
    let mut delay = std::time::Duration::from_millis(10);
    for _ in 0..8 {
        match fs::rename(from, to) {
            Ok(()) => return Ok(()),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ResourceBusy
                ) =>
            {
                std::thread::sleep(delay);
                delay *= 2;
                if fs::read(to).ok() != before {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        "another writer published the file during the retry",
                    ));
                }
            }
            Err(error) => return Err(error),
        }
    }
    fs::rename(from, to)
}

fn random_suffix() -> String {
    let mut bytes = [0u8; 6];
    // A failure of the OS RNG leaves zeros; create_new then still prevents a clash.
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path)
            .map(|metadata| metadata.permissions().mode() & 0o777)
            .unwrap_or(0)
    }

    #[test]
    fn writes_0600_in_a_new_0700_dir_and_replaces_atomically() {
        let root = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let path = root.path().join("a/b/token");
        write_private(&path, b"x").unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&root.path().join("a/b")), 0o700);
        write_private(&path, b"y").unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(fs::read(&path).ok().as_deref(), Some(&b"y"[..]));
        // No temporary file is left behind.
        assert_eq!(
            fs::read_dir(root.path().join("a/b"))
                .map(Iterator::count)
                .ok(),
            Some(1)
        );
    }

    #[test]
    fn new_files_never_replace_what_exists() {
        let root = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let path = root.path().join("id");
        write_private_new(&path, b"first").unwrap_or_else(|error| panic!("{error}"));
        let again = write_private_new(&path, b"second");
        assert_eq!(
            again.map_err(|error| error.kind()),
            Err(io::ErrorKind::AlreadyExists)
        );
        assert_eq!(fs::read(&path).ok().as_deref(), Some(&b"first"[..]));
        assert_eq!(mode(&path), 0o600);
        let link = root.path().join("planted");
        std::os::unix::fs::symlink(root.path().join("elsewhere"), &link)
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(write_private_new(&link, b"x").is_err());
        assert!(!root.path().join("elsewhere").exists());
        assert_eq!(fs::read_dir(root.path()).map(Iterator::count).ok(), Some(2));
    }
}
