//! Files on a web device: uploads into file inputs (or a file chooser the page opened) from
//! files on the daemon's machine, and the downloads of the session.
//!
//! Downloads go to the device's own directory, named by Chromium with a GUID
//! (`Browser.setDownloadBehavior` `allowAndName`), so no name or path a page suggests ever
//! reaches the filesystem; the suggested name is only a label. A download over the size limit
//! is canceled and its file removed. The directory is emptied at every reset.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tracing::debug;

use super::{CALL_TIMEOUT, PAGE_JS, WebDevice, cdp_error};
use crate::device::{DeviceError, Target};

/// The largest download kept, unless [`DOWNLOAD_LIMIT_ENV`] says otherwise.
pub const DEFAULT_DOWNLOAD_LIMIT_BYTES: u64 = 100 * 1024 * 1024;
/// Overrides the download limit (in bytes), read when a device launches.
pub const DOWNLOAD_LIMIT_ENV: &str = "PADDOCK_WEB_DOWNLOAD_LIMIT_BYTES";
/// The largest file `uploadFile` sends.
pub const UPLOAD_LIMIT_BYTES: u64 = 100 * 1024 * 1024;
/// The most files one `uploadFile` sends.
pub const MAX_UPLOAD_FILES: usize = 32;
/// The most downloads a session lists; older finished ones are forgotten (and deleted).
pub const MAX_DOWNLOADS: usize = 100;

/// Where a device's downloads go and how large one may be.
#[derive(Debug)]
pub(super) struct FilesConfig {
    pub(super) dir: PathBuf,
    pub(super) limit: u64,
}

impl FilesConfig {
    /// The downloads directory inside the device's own directory, and the limit from the
    /// environment.
    pub(super) fn new(device_dir: &Path) -> Self {
        let limit = std::env::var(DOWNLOAD_LIMIT_ENV)
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .filter(|limit| *limit > 0)
            .unwrap_or(DEFAULT_DOWNLOAD_LIMIT_BYTES);
        Self {
            dir: device_dir.join("downloads"),
            limit,
        }
    }
}

/// Where a download stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownloadState {
    InProgress,
    Completed,
    /// With why: `too large`, or as the browser said.
    Canceled(String),
}

impl std::fmt::Display for DownloadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InProgress => f.write_str("in progress"),
            Self::Completed => f.write_str("completed"),
            Self::Canceled(reason) => write!(f, "canceled: {reason}"),
        }
    }
}

/// One download as `files list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadInfo {
    /// The page's suggested file name, made unique within the session.
    pub name: String,
    pub size: u64,
    pub state: DownloadState,
    pub url: String,
}

#[derive(Debug, Clone)]
struct Download {
    guid: String,
    info: DownloadInfo,
}

/// The session's downloads, and the file chooser a page opened.
#[derive(Debug, Default)]
pub(super) struct FilesState {
    downloads: Vec<Download>,
    /// The session and `backendNodeId` of the file input whose chooser the page opened last.
    chooser: Option<(String, i64)>,
}

/// Why an upload path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadPathError {
    #[error("`{path}` does not exist on the daemon's machine")]
    Missing { path: String },
    #[error("`{path}` is not a regular file (a directory, device or socket); give a file")]
    NotAFile { path: String },
    #[error("`{path}` is {size} bytes, over the upload limit of {limit} bytes")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("`{path}` could not be read: {reason}")]
    Unreadable { path: String, reason: String },
}

impl From<UploadPathError> for DeviceError {
    fn from(error: UploadPathError) -> Self {
        match error {
            UploadPathError::Missing { .. } => Self::NotFound(error.to_string()),
            _ => Self::InvalidInput(error.to_string()),
        }
    }
}

/// Checks each path: an existing regular file (symlinks resolved) of at most `limit` bytes.
/// Answers the resolved paths.
pub fn check_upload_paths(paths: &[String], limit: u64) -> Result<Vec<PathBuf>, UploadPathError> {
    paths
        .iter()
        .map(|path| {
            let resolved = std::fs::canonicalize(path).map_err(|error| {
                if error.kind() == std::io::ErrorKind::NotFound {
                    UploadPathError::Missing { path: path.clone() }
                } else {
                    UploadPathError::Unreadable {
                        path: path.clone(),
                        reason: error.to_string(),
                    }
                }
            })?;
            let metadata =
                std::fs::metadata(&resolved).map_err(|error| UploadPathError::Unreadable {
                    path: path.clone(),
                    reason: error.to_string(),
                })?;
            if !metadata.is_file() {
                return Err(UploadPathError::NotAFile { path: path.clone() });
            }
            if metadata.len() > limit {
                return Err(UploadPathError::TooLarge {
                    path: path.clone(),
                    size: metadata.len(),
                    limit,
                });
            }
            Ok(resolved)
        })
        .collect()
}

/// A suggested file name as a label: no directories, no control characters, not empty, at
/// most 200 characters.
fn label_of(suggested: &str) -> String {
    let base = suggested
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect::<String>();
    let base = base.trim();
    if base.is_empty() || base == "." || base == ".." {
        "download".to_owned()
    } else {
        base.to_owned()
    }
}

/// `name`, or `name (2)`, `name (3)`… (before the extension) when it is taken.
fn unique_name(name: &str, taken: &[&str]) -> String {
    if !taken.contains(&name) {
        return name.to_owned();
    }
    let (stem, extension) = match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() => (stem, format!(".{extension}")),
        _ => (name, String::new()),
    };
    (2..)
        .map(|n| format!("{stem} ({n}){extension}"))
        .find(|candidate| !taken.contains(&candidate.as_str()))
        .unwrap_or_else(|| name.to_owned())
}

/// A GUID as Chromium names download files: hex digits and dashes only, so it is a plain file
/// name inside the downloads directory.
fn is_guid(text: &str) -> bool {
    !text.is_empty() && text.len() <= 64 && text.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// The MIME type of a file by its name's extension.
pub fn mime_type_of(name: &str) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map(|(_, extension)| extension.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "csv" => "text/csv",
        "txt" | "log" => "text/plain",
        "json" => "application/json",
        "html" | "htm" => "text/html",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        _ => "application/octet-stream",
    }
}

/// Empties and recreates `dir`.
fn recreate(dir: &Path) -> Result<(), DeviceError> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(DeviceError::Failed(format!(
                "could not empty the downloads directory: {error}"
            )));
        }
    }
    std::fs::create_dir_all(dir).map_err(|error| {
        DeviceError::Failed(format!("could not create the downloads directory: {error}"))
    })
}

/// Removes a download's file (and a partial one).
fn remove_download_files(dir: &Path, guid: &str) {
    if !is_guid(guid) {
        return;
    }
    for name in [guid.to_owned(), format!("{guid}.crdownload")] {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

impl WebDevice {
    /// Sets `paths` (files on the daemon's machine) as the files of the file input `target`, or,
    /// without a target, of the file chooser the page opened last. Answers a detail line.
    pub async fn upload_files(
        &self,
        target: Option<&Target>,
        paths: &[String],
    ) -> Result<String, DeviceError> {
        if paths.is_empty() || paths.len() > MAX_UPLOAD_FILES {
            return Err(DeviceError::InvalidInput(format!(
                "give 1 to {MAX_UPLOAD_FILES} `paths`"
            )));
        }
        let files: Vec<String> = check_upload_paths(paths, UPLOAD_LIMIT_BYTES)?
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        let names = paths.join(", ");
        match target {
            Some(target) => {
                let query = match target {
                    Target::Ref(reference) => json!({ "ref": reference }),
                    Target::Id(id) => json!({ "id": id }),
                    Target::Text(text) => json!({ "text": text }),
                    Target::Point(_) => {
                        return Err(DeviceError::InvalidInput(
                            "a file input is given by `ref`, `id` or `text`, not a point".into(),
                        ));
                    }
                };
                let expression = format!(
                    "(() => {{ if (!window.__paddock) {{ {PAGE_JS} }} \
                     const el = window.__paddock.elementFor({query}); \
                     if (!el) return 'missing'; \
                     if (el.tagName !== 'INPUT' || el.type !== 'file') return 'not a file input but a ' + el.tagName.toLowerCase(); \
                     if ({many} && !el.multiple) return 'single'; \
                     return el; }})()",
                    many = files.len() > 1
                );
                let result = self
                    .call(
                        "Runtime.evaluate",
                        json!({ "expression": expression, "returnByValue": false }),
                    )
                    .await?;
                let object = result.get("result").cloned().unwrap_or(Value::Null);
                if let Some(answer) = object.get("value").and_then(Value::as_str) {
                    return Err(match answer {
                        "missing" => DeviceError::NotFound(format!(
                            "no element matches {}; observe to see what is on screen",
                            super::describe(target)
                        )),
                        "single" => DeviceError::InvalidInput(format!(
                            "{} takes one file only",
                            super::describe(target)
                        )),
                        other => DeviceError::InvalidInput(format!(
                            "{} is {other}",
                            super::describe(target)
                        )),
                    });
                }
                let Some(object_id) = object.get("objectId").and_then(Value::as_str) else {
                    return Err(DeviceError::Failed(
                        "the page did not hand out the file input".into(),
                    ));
                };
                self.call(
                    "DOM.setFileInputFiles",
                    json!({ "files": files, "objectId": object_id }),
                )
                .await?;
                Ok(format!(
                    "set the files of {}: {names}",
                    super::describe(target)
                ))
            }
            None => {
                let chooser = self.state.lock().await.files.chooser.take();
                let Some((session, node)) = chooser else {
                    return Err(DeviceError::InvalidInput(
                        "no file chooser is open; give the file input's `ref`, `id` or `text`, or tap the page's upload button first".into(),
                    ));
                };
                self.cdp
                    .call(
                        Some(&session),
                        "DOM.setFileInputFiles",
                        json!({ "files": files, "backendNodeId": node }),
                        CALL_TIMEOUT,
                    )
                    .await
                    .map_err(cdp_error)?;
                Ok(format!("answered the page's file chooser with {names}"))
            }
        }
    }

    /// The session's downloads, oldest first.
    pub async fn downloads(&self) -> Vec<DownloadInfo> {
        self.state
            .lock()
            .await
            .files
            .downloads
            .iter()
            .map(|download| download.info.clone())
            .collect()
    }

    /// The bytes of the completed download `name`, if it is at most `max_bytes`.
    pub async fn read_download(
        &self,
        name: &str,
        max_bytes: u64,
    ) -> Result<(DownloadInfo, Vec<u8>), DeviceError> {
        let download = self.find_download(name).await?;
        if download.info.state != DownloadState::Completed {
            return Err(DeviceError::InvalidInput(format!(
                "`{name}` is {}, not a completed download",
                download.info.state
            )));
        }
        if download.info.size > max_bytes {
            return Err(DeviceError::InvalidInput(format!(
                "`{name}` is {} bytes; at most {max_bytes} bytes can be returned",
                download.info.size
            )));
        }
        let path = self.files.dir.join(&download.guid);
        let bytes = tokio::fs::read(&path).await.map_err(|error| {
            DeviceError::Failed(format!("could not read the download `{name}`: {error}"))
        })?;
        Ok((download.info, bytes))
    }

    /// Deletes the download `name` (canceling it when it is still running).
    pub async fn delete_download(&self, name: &str) -> Result<(), DeviceError> {
        let download = self.find_download(name).await?;
        if download.info.state == DownloadState::InProgress {
            let context = self.state.lock().await.context_id.clone();
            let _ = self
                .cdp
                .call(
                    None,
                    "Browser.cancelDownload",
                    json!({ "guid": download.guid, "browserContextId": context }),
                    CALL_TIMEOUT,
                )
                .await;
        }
        remove_download_files(&self.files.dir, &download.guid);
        self.state
            .lock()
            .await
            .files
            .downloads
            .retain(|kept| kept.guid != download.guid);
        Ok(())
    }

    async fn find_download(&self, name: &str) -> Result<Download, DeviceError> {
        let state = self.state.lock().await;
        state
            .files
            .downloads
            .iter()
            .find(|download| download.info.name == name)
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = state
                    .files
                    .downloads
                    .iter()
                    .map(|download| download.info.name.as_str())
                    .collect();
                DeviceError::NotFound(if names.is_empty() {
                    format!("no download `{name}`: this session has downloaded nothing")
                } else {
                    format!("no download `{name}`; there are: {}", names.join(", "))
                })
            })
    }

    /// Empties the downloads directory, forgets the downloads and the chooser, and sends the
    /// context's downloads there (at launch and at every reset).
    pub(super) async fn reset_files(&self, context_id: &str) -> Result<(), DeviceError> {
        recreate(&self.files.dir)?;
        self.state.lock().await.files = FilesState::default();
        self.cdp
            .call(
                None,
                "Browser.setDownloadBehavior",
                json!({
                    "behavior": "allowAndName",
                    "browserContextId": context_id,
                    "downloadPath": self.files.dir.display().to_string(),
                    "eventsEnabled": true,
                }),
                CALL_TIMEOUT,
            )
            .await
            .map_err(cdp_error)?;
        Ok(())
    }

    async fn on_download_begin(&self, params: &Value) {
        let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
        let guid = text("guid").to_owned();
        if !is_guid(&guid) {
            return;
        }
        let mut state = self.state.lock().await;
        let files = &mut state.files;
        if files.downloads.len() >= MAX_DOWNLOADS
            && let Some(oldest) = files
                .downloads
                .iter()
                .position(|download| download.info.state != DownloadState::InProgress)
        {
            let oldest = files.downloads.remove(oldest);
            remove_download_files(&self.files.dir, &oldest.guid);
        }
        let taken: Vec<&str> = files
            .downloads
            .iter()
            .map(|download| download.info.name.as_str())
            .collect();
        let name = unique_name(&label_of(text("suggestedFilename")), &taken);
        files.downloads.push(Download {
            guid,
            info: DownloadInfo {
                name,
                size: 0,
                state: DownloadState::InProgress,
                url: text("url").chars().take(2048).collect(),
            },
        });
    }

    async fn on_download_progress(&self, params: &Value) {
        let guid = params
            .get("guid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let received = params
            .get("receivedBytes")
            .and_then(Value::as_f64)
            .unwrap_or(0.0) as u64;
        let total = params
            .get("totalBytes")
            .and_then(Value::as_f64)
            .unwrap_or(0.0) as u64;
        let progress = params
            .get("state")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut state = self.state.lock().await;
        let context = state.context_id.clone();
        let Some(download) = state
            .files
            .downloads
            .iter_mut()
            .find(|download| download.guid == guid)
        else {
            return;
        };
        if matches!(download.info.state, DownloadState::Canceled(_)) {
            return;
        }
        download.info.size = received;
        let over = received > self.files.limit || total > self.files.limit;
        if over && progress != "canceled" {
            download.info.state = DownloadState::Canceled("too large".into());
            let guid = download.guid.clone();
            drop(state);
            let _ = self
                .cdp
                .call(
                    None,
                    "Browser.cancelDownload",
                    json!({ "guid": guid, "browserContextId": context }),
                    CALL_TIMEOUT,
                )
                .await;
            remove_download_files(&self.files.dir, &guid);
            debug!(device = %self.id, limit = self.files.limit, "canceled a download over the limit");
            return;
        }
        download.info.state = match progress {
            "completed" => DownloadState::Completed,
            "canceled" => DownloadState::Canceled("by the browser".into()),
            _ => DownloadState::InProgress,
        };
    }
}

/// Follows downloads and file choosers for as long as the device lives.
pub(super) fn watch(device: &Arc<WebDevice>) {
    let mut events = device.cdp.events();
    let weak = Arc::downgrade(device);
    tokio::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            };
            let Some(device) = weak.upgrade() else {
                return;
            };
            match event.method.as_str() {
                "Browser.downloadWillBegin" => device.on_download_begin(&event.params).await,
                "Browser.downloadProgress" => device.on_download_progress(&event.params).await,
                "Page.fileChooserOpened" => {
                    let node = event.params.get("backendNodeId").and_then(Value::as_i64);
                    if let (Some(session), Some(node)) = (event.session_id, node) {
                        device.state.lock().await.files.chooser = Some((session, node));
                    }
                }
                _ => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_paths_must_be_small_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("note.txt");
        std::fs::write(&file, "hello\n").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let text = |path: &Path| path.display().to_string();
        let resolved = check_upload_paths(&[text(&link)], 100).unwrap();
        assert_eq!(resolved, vec![std::fs::canonicalize(&file).unwrap()]);
        assert!(matches!(
            check_upload_paths(&[text(dir.path())], 100),
            Err(UploadPathError::NotAFile { .. })
        ));
        assert!(matches!(
            check_upload_paths(&["/dev/null".into()], 100),
            Err(UploadPathError::NotAFile { .. })
        ));
        let missing = check_upload_paths(&[text(&dir.path().join("gone"))], 100).unwrap_err();
        assert!(matches!(missing, UploadPathError::Missing { .. }));
        assert!(DeviceError::from(missing).to_string().contains("gone"));
        let large = check_upload_paths(&[text(&file)], 3).unwrap_err();
        assert_eq!(
            large.to_string(),
            format!(
                "`{}` is 6 bytes, over the upload limit of 3 bytes",
                text(&file)
            )
        );
    }

    #[test]
    fn suggested_names_are_labels_never_paths() {
        assert_eq!(label_of("../../etc/passwd"), "passwd");
        assert_eq!(label_of("a\\b\\report.csv"), "report.csv");
        assert_eq!(label_of(".."), "download");
        assert_eq!(label_of("  "), "download");
        assert_eq!(label_of("x\u{7}y.txt"), "xy.txt");
        assert_eq!(unique_name("report.csv", &[]), "report.csv");
        assert_eq!(
            unique_name("report.csv", &["report.csv", "report (2).csv"]),
            "report (3).csv"
        );
        assert_eq!(unique_name("README", &["README"]), "README (2)");
        assert!(is_guid("0b7f1c2e-1234-4bcd-9e00-aa11bb22cc33"));
        assert!(!is_guid("../x"));
        assert!(!is_guid(""));
        assert_eq!(mime_type_of("report.CSV"), "text/csv");
        assert_eq!(mime_type_of("big.bin"), "application/octet-stream");
    }
}
