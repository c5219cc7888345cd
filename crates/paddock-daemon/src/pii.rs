//! The daemon's PII pipelines: one `PiiService` over `<stateDir>/daemons/<machineId>/`, the
//! machine id it is keyed by, and the `pii/*` control-socket methods, served here.
//!
//! Every operation runs on a blocking thread (plugins compile and run for up to their time
//! limit) behind a task boundary: a panic becomes an `internal` error for that request only.
//! Errors come from `paddock-pii`, whose messages never carry an original text value; nothing
//! here logs a text, a plugin source or a result.

use std::io::{self, Read as _};
use std::path::Path;
use std::sync::Arc;

use paddock_client::control::{
    ControlError, ErrorCode, Method as _, PiiAdd, PiiAddParams, PiiBotParams, PiiDelete, PiiFilter,
    PiiFilterKind, PiiFilterParams, PiiList, PiiListResult, PiiRedact, PiiRedactResult,
    PiiSetEnabled, PiiSetEnabledParams, PiiTest, PiiTextParams,
};
use paddock_pii::{
    BotId, DEFAULT_FILTERS_TIME, FilterInfo, FilterKind, PiiConfig, PiiError, PiiService,
    PipelineView, PluginLimits, Redacted,
};
use tracing::{info, warn};

/// The machine id's file name in the state directory.
pub const MACHINE_ID_FILE: &str = "machine-id";

/// The daemon's PII service, or why it could not be created (a broken `machine-id` file).
/// In the latter case the daemon still runs; every `pii/*` call answers `pii_unavailable`.
#[derive(Debug, Clone)]
pub struct PiiHost {
    service: Result<Arc<PiiService>, String>,
}

impl PiiHost {
    /// Creates the service over `<state_dir>/daemons/<machineId>/`. Reads no pipeline: each
    /// bot's file is loaded on its first use, so one bot's bad file is that bot's error only.
    pub fn open(state_dir: &Path) -> PiiHost {
        let service = machine_id(state_dir)
            .map_err(|error| format!("{error:#}"))
            .and_then(|machine_id| {
                info!(%machine_id, "PII pipelines ready");
                PiiService::new(PiiConfig {
                    state_dir: state_dir.to_path_buf(),
                    machine_id,
                    limits: PluginLimits::default(),
                    default_filters_time: DEFAULT_FILTERS_TIME,
                })
                .map(Arc::new)
                .map_err(|error| error.to_string())
            });
        if let Err(reason) = &service {
            warn!(%reason, "PII pipelines are unavailable");
        }
        PiiHost { service }
    }

    /// `pii/list`.
    pub async fn list(&self, params: PiiBotParams) -> Result<PiiListResult, ControlError> {
        self.blocking(PiiList::NAME, move |service| {
            let bot = bot_id(&params.bot)?;
            let view = service.list(&bot).map_err(failure)?;
            Ok(list_result(&bot, view))
        })
        .await
    }

    /// `pii/add`.
    pub async fn add(&self, params: PiiAddParams) -> Result<PiiFilter, ControlError> {
        self.blocking(PiiAdd::NAME, move |service| {
            let bot = bot_id(&params.bot)?;
            let added = service
                .add(&bot, params.source.expose(), &params.description)
                .map_err(failure)?;
            info!(bot = %bot, filter = %added.id, "PII plugin filter added");
            Ok(filter(&added))
        })
        .await
    }

    /// `pii/setEnabled`: answers the list after the change.
    pub async fn set_enabled(
        &self,
        params: PiiSetEnabledParams,
    ) -> Result<PiiListResult, ControlError> {
        self.blocking(PiiSetEnabled::NAME, move |service| {
            let bot = bot_id(&params.bot)?;
            service
                .set_enabled(&bot, &params.filter_id, params.enabled)
                .map_err(failure)?;
            info!(bot = %bot, filter = %params.filter_id, enabled = params.enabled, "PII filter switched");
            let view = service.list(&bot).map_err(failure)?;
            Ok(list_result(&bot, view))
        })
        .await
    }

    /// `pii/delete`: answers the list after the change.
    pub async fn delete(&self, params: PiiFilterParams) -> Result<PiiListResult, ControlError> {
        self.blocking(PiiDelete::NAME, move |service| {
            let bot = bot_id(&params.bot)?;
            service.delete(&bot, &params.filter_id).map_err(failure)?;
            info!(bot = %bot, filter = %params.filter_id, "PII filter deleted");
            let view = service.list(&bot).map_err(failure)?;
            Ok(list_result(&bot, view))
        })
        .await
    }

    /// `pii/test`: the playground.
    pub async fn test(&self, params: PiiTextParams) -> Result<PiiRedactResult, ControlError> {
        self.blocking(PiiTest::NAME, move |service| {
            let bot = bot_id(&params.bot)?;
            let redacted = service.test(&bot, params.text.expose()).map_err(failure)?;
            Ok(redact_result(redacted))
        })
        .await
    }

    /// `pii/redact`.
    pub async fn redact(&self, params: PiiTextParams) -> Result<PiiRedactResult, ControlError> {
        self.blocking(PiiRedact::NAME, move |service| {
            let bot = bot_id(&params.bot)?;
            let redacted = service.run(&bot, params.text.expose()).map_err(failure)?;
            Ok(redact_result(redacted))
        })
        .await
    }

    /// Runs `work` on a blocking thread behind a task boundary: a panic becomes an `internal`
    /// error for this request only (its payload is not logged: it could quote the text).
    async fn blocking<T: Send + 'static>(
        &self,
        method: &'static str,
        work: impl FnOnce(&PiiService) -> Result<T, ControlError> + Send + 'static,
    ) -> Result<T, ControlError> {
        let service = self.service.clone().map_err(|reason| {
            ControlError::new(
                ErrorCode::PiiUnavailable,
                format!(
                    "PII pipelines are unavailable: {reason}; fix or remove the file and restart the daemon"
                ),
            )
        })?;
        match tokio::task::spawn_blocking(move || work(&service)).await {
            Ok(answer) => answer,
            Err(_) => {
                warn!(method, "a PII operation panicked; the daemon continues");
                Err(ControlError::new(
                    ErrorCode::Internal,
                    format!("`{method}` failed unexpectedly; nothing was changed or sent"),
                ))
            }
        }
    }
}

fn bot_id(bot: &str) -> Result<BotId, ControlError> {
    BotId::new(bot).map_err(failure)
}

/// The wire code of a `PiiError`; its message is safe to show (it names bots, filters, paths
/// and kinds of failure, never a text value).
fn failure(error: PiiError) -> ControlError {
    let code = if error.is_invalid_input() {
        ErrorCode::InvalidParams
    } else if error.is_not_found() {
        ErrorCode::NotFound
    } else if error.is_corrupt_pipeline() {
        ErrorCode::CorruptPipeline
    } else if error.is_filter_failure() {
        ErrorCode::FilterFailed
    } else {
        ErrorCode::Internal
    };
    ControlError::new(code, error.to_string())
}

fn list_result(bot: &BotId, view: PipelineView) -> PiiListResult {
    PiiListResult {
        bot: bot.to_string(),
        revision: view.revision,
        filters: view.filters.iter().map(filter).collect(),
    }
}

fn filter(info: &FilterInfo) -> PiiFilter {
    let (kind, description, created_at) = match &info.kind {
        FilterKind::Default(default) => (PiiFilterKind::Default, default.name().to_owned(), None),
        FilterKind::Plugin {
            description,
            created_at,
        } => (
            PiiFilterKind::Plugin,
            description.clone(),
            Some(created_at.clone()),
        ),
    };
    PiiFilter {
        id: info.id.clone(),
        enabled: info.enabled,
        kind,
        description,
        created_at,
    }
}

/// The wire shape of a run's result (also what `paddock pii redact --defaults` prints).
pub fn redact_result(redacted: Redacted) -> PiiRedactResult {
    PiiRedactResult {
        text: redacted.text,
        triggered_filters: redacted.triggered_filters,
    }
}

/// This machine's id: `<stateDir>/machine-id`, created once with 16 random hex digits (mode
/// 0600) and read ever after, so pipelines stay where they are across restarts.
pub fn machine_id(state_dir: &Path) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let path = state_dir.join(MACHINE_ID_FILE);
    match read_machine_id(&path) {
        Ok(id) => return Ok(id),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error).with_context(|| format!("could not read `{}`", path.display()));
        }
    }
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|error| anyhow::anyhow!("OS random source: {error}"))?;
    let fresh: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    publish_once(&path, &fresh)
        .with_context(|| format!("could not create `{}`", path.display()))?;
    // Another daemon (another isolation suffix, same state directory) may have won the race:
    // whatever the file now holds is the id.
    read_machine_id(&path).with_context(|| format!("could not read `{}`", path.display()))
}

fn read_machine_id(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(256)
        .read_to_string(&mut text)?;
    let id = text.trim();
    let valid = (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'));
    if valid {
        Ok(id.to_owned())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the machine id must be 1–64 ASCII letters, digits, `-`, `_` or `.`",
        ))
    }
}

/// Writes `content` to `path` unless the file exists (complete or not at all, and an existing
/// id is never replaced).
fn publish_once(path: &Path, content: &str) -> io::Result<()> {
    match paddock_secrets::file::write_private_new(path, format!("{content}\n").as_bytes()) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn machine_id_is_created_once_private_and_kept() {
        let root = tempfile::tempdir().unwrap();
        let first = machine_id(root.path()).unwrap();
        assert_eq!(first.len(), 16);
        assert!(first.bytes().all(|byte| byte.is_ascii_hexdigit()));
        let path = root.path().join(MACHINE_ID_FILE);
        let mode = std::fs::metadata(&path)
            .map(|meta| meta.permissions().mode() & 0o777)
            .ok();
        assert_eq!(mode, Some(0o600));
        let again = machine_id(root.path()).unwrap();
        assert_eq!(first, again);
        // Only the id file is left behind.
        let names: Vec<String> = std::fs::read_dir(root.path())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, vec![MACHINE_ID_FILE.to_owned()]);
    }

    #[test]
    fn a_broken_machine_id_is_an_error_not_a_new_id() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join(MACHINE_ID_FILE);
        std::fs::write(&path, "../escape\n").unwrap();
        let error = machine_id(root.path())
            .err()
            .map(|error| format!("{error:#}"));
        assert!(
            error
                .as_deref()
                .is_some_and(|text| text.contains("machine-id")),
            "{error:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).ok().as_deref(),
            Some("../escape\n")
        );
    }

    #[tokio::test]
    async fn a_broken_machine_id_leaves_pii_unavailable_with_a_typed_error() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join(MACHINE_ID_FILE), "bad/id").unwrap();
        let host = PiiHost::open(root.path());
        let answer = host
            .list(PiiBotParams {
                bot: "helper".into(),
            })
            .await;
        assert!(
            matches!(&answer, Err(ControlError { code: ErrorCode::PiiUnavailable, message }) if message.contains("machine-id")),
            "{answer:?}"
        );
    }
}
