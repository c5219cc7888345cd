//! Saved web storage states (`saveStorage`, `listStorage`, `deleteStorage`, `getWeb
//! {storage}`): one JSON file per name under `<state>/web-storage/<profile>/<name>.json`, where
//! `<profile>` is the connection profile's key in hex (so any key is one safe path segment).
//! Files are written 0600 atomically and read only when they are private files of ours
//! (`paddock-secrets`), so nothing another user planted is trusted. Cookie and storage values
//! never appear in an error.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use paddock_devices::web::data::StorageState;
use paddock_secrets::private::{PrivateFileError, ensure_private_dir, open_private_file};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ToolError, ToolErrorCode};

/// The largest storage file read back.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// The longest name.
const MAX_NAME: usize = 64;
const FORMAT_VERSION: u32 = 1;

/// Checks a storage name: `[A-Za-z0-9._-]{1,64}`, not starting with a dot.
pub(crate) fn check_name(name: &str) -> Result<(), ToolError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        Ok(())
    } else {
        Err(ToolError::invalid_input(format!(
            "`{}` is not a storage name: use 1 to {MAX_NAME} of A-Z a-z 0-9 . _ -, not starting with a dot",
            name.chars().take(80).collect::<String>()
        )))
    }
}

/// The file's shape (this crate's wire type; the device crate's [`StorageState`] is not
/// serialisable).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StorageFile {
    version: u32,
    /// Seconds since the Unix epoch.
    saved_at: u64,
    cookies: Vec<Value>,
    local_storage: BTreeMap<String, Vec<(String, String)>>,
}

/// What `listStorage` shows of one saved state (never its values).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StorageSummary {
    pub name: String,
    /// Seconds since the Unix epoch.
    pub saved_at: u64,
    pub cookies: usize,
    /// The origins whose localStorage it holds.
    pub origins: Vec<String>,
}

/// The saved states of every connection profile, under one directory.
#[derive(Debug, Clone)]
pub(crate) struct StorageStore {
    root: PathBuf,
}

fn unavailable(what: &str, error: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ToolErrorCode::Unavailable,
        format!("could not {what} the saved storage: {error}"),
    )
}

impl StorageStore {
    pub(crate) fn new(root: PathBuf) -> Self {
        Self { root }
    }

    fn profile_dir(&self, profile: &str) -> PathBuf {
        let hex: String = profile.bytes().map(|byte| format!("{byte:02x}")).collect();
        self.root.join(hex)
    }

    fn file(&self, profile: &str, name: &str) -> PathBuf {
        self.profile_dir(profile).join(format!("{name}.json"))
    }

    /// Saves `state` as `name` for `profile`, replacing an earlier one of that name.
    pub(crate) fn save(
        &self,
        profile: &str,
        name: &str,
        state: &StorageState,
    ) -> Result<StorageSummary, ToolError> {
        check_name(name)?;
        let dir = self.profile_dir(profile);
        ensure_private_dir(&self.root).map_err(|error| unavailable("save", error))?;
        ensure_private_dir(&dir).map_err(|error| unavailable("save", error))?;
        let file = StorageFile {
            version: FORMAT_VERSION,
            saved_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs()),
            cookies: state.cookies.clone(),
            local_storage: state.local_storage.clone(),
        };
        let bytes = serde_json::to_vec(&file)
            .map_err(|_| ToolError::internal("could not encode the storage state"))?;
        paddock_secrets::file::write_private(&self.file(profile, name), &bytes)
            .map_err(|error| unavailable("save", error))?;
        Ok(summary(name, &file))
    }

    fn read(&self, profile: &str, name: &str) -> Result<StorageFile, ToolError> {
        check_name(name)?;
        let path = self.file(profile, name);
        let opened = open_private_file(&path);
        let file = match opened {
            Ok(file) => file,
            Err(PrivateFileError::NotFound { .. }) => {
                return Err(ToolError::not_found(format!(
                    "no saved storage `{name}`; see listStorage, or save one with saveStorage"
                )));
            }
            Err(error) => return Err(unavailable("read", error)),
        };
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| unavailable("read", error))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(unavailable(
                "read",
                format!("`{}` is over {MAX_FILE_BYTES} bytes", path.display()),
            ));
        }
        // serde's message could quote a value, so say only where the file is.
        serde_json::from_slice::<StorageFile>(&bytes).map_err(|_| {
            unavailable(
                "read",
                format!(
                    "`{}` is not a storage file; delete it with deleteStorage",
                    path.display()
                ),
            )
        })
    }

    /// The state saved as `name` for `profile`.
    pub(crate) fn load(&self, profile: &str, name: &str) -> Result<StorageState, ToolError> {
        let file = self.read(profile, name)?;
        Ok(StorageState {
            cookies: file.cookies,
            local_storage: file.local_storage,
        })
    }

    /// `profile`'s saved states, by name.
    pub(crate) fn list(&self, profile: &str) -> Result<Vec<StorageSummary>, ToolError> {
        let dir = self.profile_dir(profile);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(unavailable("list", error)),
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let stem = name.strip_suffix(".json")?.to_owned();
                check_name(&stem).is_ok().then_some(stem)
            })
            .collect();
        names.sort();
        Ok(names
            .into_iter()
            .filter_map(|name| {
                self.read(profile, &name)
                    .ok()
                    .map(|file| summary(&name, &file))
            })
            .collect())
    }

    /// Deletes `profile`'s state `name`.
    pub(crate) fn delete(&self, profile: &str, name: &str) -> Result<(), ToolError> {
        check_name(name)?;
        match std::fs::remove_file(self.file(profile, name)) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Err(
                ToolError::not_found(format!("no saved storage `{name}`; see listStorage")),
            ),
            Err(error) => Err(unavailable("delete", error)),
        }
    }
}

fn summary(name: &str, file: &StorageFile) -> StorageSummary {
    StorageSummary {
        name: name.to_owned(),
        saved_at: file.saved_at,
        cookies: file.cookies.len(),
        origins: file.local_storage.keys().cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["a", "login", "my.site-2_x", &"x".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "a/b", "..", "a b", &"x".repeat(65), "é"] {
            let error = check_name(bad).unwrap_err();
            assert_eq!(error.code, ToolErrorCode::InvalidInput, "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_may_read_or_a_symlink_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let store = StorageStore::new(dir.path().join("web-storage"));
        store
            .save("owner:uid:1", "site", &StorageState::default())
            .unwrap();
        let path = store.file("owner:uid:1", "site");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = store.load("owner:uid:1", "site").unwrap_err();
        assert_eq!(error.code, ToolErrorCode::Unavailable, "{error}");
        assert!(error.message.contains("0600"), "{error}");
        std::fs::remove_file(&path).unwrap();
        let elsewhere = dir.path().join("planted.json");
        std::fs::write(&elsewhere, b"{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let error = store.load("owner:uid:1", "site").unwrap_err();
        assert!(error.message.contains("symlink"), "{error}");
    }

    #[test]
    fn a_saved_state_round_trips_as_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = StorageStore::new(dir.path().join("web-storage"));
        let state = StorageState {
            cookies: vec![serde_json::json!({ "name": "sid", "value": "v1" })],
            local_storage: BTreeMap::from([(
                "http://127.0.0.1:1".to_owned(),
                vec![("k".to_owned(), "v".to_owned())],
            )]),
        };
        store.save("owner:uid:1", "site", &state).unwrap();
        assert_eq!(store.load("owner:uid:1", "site").unwrap(), state);
        assert_eq!(
            store.load("owner:uid:2", "site").unwrap_err().code,
            ToolErrorCode::NotFound
        );
        let listed = store.list("owner:uid:1").unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].cookies, 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(store.file("owner:uid:1", "site"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        store.delete("owner:uid:1", "site").unwrap();
        assert_eq!(
            store.delete("owner:uid:1", "site").unwrap_err().code,
            ToolErrorCode::NotFound
        );
    }
}
