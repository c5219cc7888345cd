//! The daemon's PII pipelines: one `PiiService` over `<stateDir>/daemons/<machineId>/`, the
//! machine id it is keyed by, and the `pii/*` control-socket operations.
//!
//! Every operation runs on a blocking thread (plugins compile and run for up to their time
//! limit) behind a task boundary: a panic becomes an `internal` error for that request only.
//! Errors come from `paddock-pii`, whose messages never carry an original text value; nothing
//! here logs a text, a plugin source or a result.

use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use paddock_client::control::{
    ControlCall, PiiFilter, PiiFilterKind, PiiListResult, PiiRedactResult, SensitiveText,
};
use paddock_pii::{
    BotId, DEFAULT_FILTERS_TIME, FilterInfo, FilterKind, PiiConfig, PiiError, PiiService,
    PipelineView, PluginLimits, Redacted,
};
use tracing::{info, warn};

/// The machine id's file name in the state directory.
pub const MACHINE_ID_FILE: &str = "machine-id";

/// A failed `pii/*` operation: a wire error code and a message that holds no text value.
pub type PiiFailure = (&'static str, String);

/// One `pii/*` request, decoded from the control socket.
#[derive(Debug)]
pub enum PiiOperation {
    List {
        bot: String,
    },
    Add {
        bot: String,
        source: SensitiveText,
        description: String,
    },
    SetEnabled {
        bot: String,
        filter_id: String,
        enabled: bool,
    },
    Delete {
        bot: String,
        filter_id: String,
    },
    Test {
        bot: String,
        text: SensitiveText,
    },
    Redact {
        bot: String,
        text: SensitiveText,
    },
}

impl PiiOperation {
    /// The operation a `pii/*` control call asks for; `None` for every other method.
    pub fn from_call(call: ControlCall) -> Option<PiiOperation> {
        Some(match call {
            ControlCall::PiiList { bot } => Self::List { bot },
            ControlCall::PiiAdd {
                bot,
                source,
                description,
            } => Self::Add {
                bot,
                source,
                description,
            },
            ControlCall::PiiSetEnabled {
                bot,
                filter_id,
                enabled,
            } => Self::SetEnabled {
                bot,
                filter_id,
                enabled,
            },
            ControlCall::PiiDelete { bot, filter_id } => Self::Delete { bot, filter_id },
            ControlCall::PiiTest { bot, text } => Self::Test { bot, text },
            ControlCall::PiiRedact { bot, text } => Self::Redact { bot, text },
            _ => return None,
        })
    }

    /// The control-socket method, for errors and logs.
    fn method(&self) -> &'static str {
        match self {
            Self::List { .. } => "pii/list",
            Self::Add { .. } => "pii/add",
            Self::SetEnabled { .. } => "pii/setEnabled",
            Self::Delete { .. } => "pii/delete",
            Self::Test { .. } => "pii/test",
            Self::Redact { .. } => "pii/redact",
        }
    }
}

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

    /// Performs one operation and returns its wire answer.
    pub async fn handle(&self, operation: PiiOperation) -> Result<serde_json::Value, PiiFailure> {
        let service = self.service.clone().map_err(|reason| {
            (
                "pii_unavailable",
                format!(
                    "PII pipelines are unavailable: {reason}; fix or remove the file and restart the daemon"
                ),
            )
        })?;
        let method = operation.method();
        match tokio::task::spawn_blocking(move || perform(&service, operation)).await {
            Ok(answer) => answer,
            Err(_) => {
                // The panic payload is not logged: it could quote the text being filtered.
                warn!(method, "a PII operation panicked; the daemon continues");
                Err((
                    "internal",
                    format!("`{method}` failed unexpectedly; nothing was changed or sent"),
                ))
            }
        }
    }
}

fn perform(service: &PiiService, operation: PiiOperation) -> Result<serde_json::Value, PiiFailure> {
    match operation {
        PiiOperation::List { bot } => {
            let bot = bot_id(&bot)?;
            let view = service.list(&bot).map_err(failure)?;
            to_json(&list_result(&bot, view))
        }
        PiiOperation::Add {
            bot,
            source,
            description,
        } => {
            let bot = bot_id(&bot)?;
            let added = service
                .add(&bot, source.expose(), &description)
                .map_err(failure)?;
            info!(bot = %bot, filter = %added.id, "PII plugin filter added");
            to_json(&filter(&added))
        }
        PiiOperation::SetEnabled {
            bot,
            filter_id,
            enabled,
        } => {
            let bot = bot_id(&bot)?;
            service
                .set_enabled(&bot, &filter_id, enabled)
                .map_err(failure)?;
            info!(bot = %bot, filter = %filter_id, enabled, "PII filter switched");
            let view = service.list(&bot).map_err(failure)?;
            to_json(&list_result(&bot, view))
        }
        PiiOperation::Delete { bot, filter_id } => {
            let bot = bot_id(&bot)?;
            service.delete(&bot, &filter_id).map_err(failure)?;
            info!(bot = %bot, filter = %filter_id, "PII filter deleted");
            let view = service.list(&bot).map_err(failure)?;
            to_json(&list_result(&bot, view))
        }
        PiiOperation::Test { bot, text } => {
            let bot = bot_id(&bot)?;
            let redacted = service.test(&bot, text.expose()).map_err(failure)?;
            to_json(&redact_result(redacted))
        }
        PiiOperation::Redact { bot, text } => {
            let bot = bot_id(&bot)?;
            let redacted = service.run(&bot, text.expose()).map_err(failure)?;
            to_json(&redact_result(redacted))
        }
    }
}

fn bot_id(bot: &str) -> Result<BotId, PiiFailure> {
    BotId::new(bot).map_err(failure)
}

/// The wire code of a `PiiError`; its message is safe to show (it names bots, filters, paths
/// and kinds of failure, never a text value).
fn failure(error: PiiError) -> PiiFailure {
    let code = if error.is_invalid_input() {
        "invalid_params"
    } else if error.is_not_found() {
        "not_found"
    } else if error.is_corrupt_pipeline() {
        "corrupt_pipeline"
    } else if error.is_filter_failure() {
        "filter_failed"
    } else {
        "internal"
    };
    (code, error.to_string())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, PiiFailure> {
    serde_json::to_value(value).map_err(|error| ("internal", error.to_string()))
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

/// Writes `content` to `path` unless the file exists: a private temporary file hard-linked
/// into place, so no reader ever sees a partial id and an existing id is never replaced.
fn publish_once(path: &Path, content: &str) -> io::Result<()> {
    let parent = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    crate::files::create_private_dir(&parent)?;
    let temp = parent.join(format!(".{MACHINE_ID_FILE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    crate::files::publish_private(&temp, format!("{content}\n").as_bytes())?;
    let linked = match std::fs::hard_link(&temp, path) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    };
    let _ = std::fs::remove_file(&temp);
    linked
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
            .handle(PiiOperation::List {
                bot: "helper".into(),
            })
            .await;
        assert!(
            matches!(&answer, Err(("pii_unavailable", message)) if message.contains("machine-id")),
            "{answer:?}"
        );
    }
}
