//! The token file and the PID record, published with `paddock_secrets::file` (an exclusive 0600
//! temporary file renamed into place, so a reader sees either the previous content or the
//! complete new one, never a partial file), and the token file's removal at shutdown.

use std::fs;
use std::io;
use std::path::Path;

use paddock_client::SecretString;
pub use paddock_secrets::file::{create_private_dir, write_private as publish_private};

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

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

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
