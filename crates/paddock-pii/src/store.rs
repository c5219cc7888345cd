//! Per-bot pipelines on disk and in memory.
//!
//! Each bot's pipeline lives at `<stateDir>/daemons/<machineId>/<botId>/pii/pipelines.json`.
//! The store reads a bot's file once, on first use, compiles its plugins and keeps the
//! result (or the reason it is unusable) for the life of the process: sends never reread
//! JSON or recompile. A management change writes the whole file atomically (a private temp
//! file renamed over the old one) and only then swaps in the new snapshot for that bot. A
//! file edited by hand is seen after a restart. A bot whose file is unusable gets a typed
//! error; every other bot is unaffected.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use arc_swap::ArcSwap;
use serde::{Deserialize, Serialize};

use crate::error::PiiError;
use crate::filter::DefaultFilter;
use crate::pipeline::{Entry, EntryKind, Pipeline, Plugin};
use crate::plugin::compile;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The version of the default filters' rules recorded with each default entry. Saved
/// pipelines keep the version they were installed with; a later build that changes a default
/// filter's rules bumps this and decides explicitly what older entries mean.
const DEFAULT_RULES_VERSION: u32 = 1;

/// A validated bot or machine id: safe as one path component.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BotId(String);

impl BotId {
    /// Checks `id`: 1–128 ASCII letters, digits, `.`, `_`, `-`, and not `.` or `..`.
    pub fn new(id: &str) -> Result<BotId, PiiError> {
        validate_component(id, "bot id").map(|()| BotId(id.to_owned()))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for BotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn validate_component(id: &str, what: &'static str) -> Result<(), PiiError> {
    let ok = (1..=128).contains(&id.len())
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(PiiError::InvalidId {
            what,
            value: id.to_owned(),
        })
    }
}

// ---- the file format ----------------------------------------------------------------------

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileV1 {
    schema_version: u32,
    revision: u64,
    next_plugin_number: u64,
    filters: Vec<FileEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
enum FileEntry {
    #[serde(rename_all = "camelCase")]
    Default {
        id: String,
        rules_version: u32,
        enabled: bool,
    },
    #[serde(rename_all = "camelCase")]
    Plugin {
        id: String,
        description: String,
        source: String,
        enabled: bool,
        created_at: String,
    },
}

fn to_file(pipeline: &Pipeline) -> FileV1 {
    let filters = pipeline
        .entries
        .iter()
        .map(|entry| match &entry.kind {
            EntryKind::Default(_) => FileEntry::Default {
                id: entry.id.clone(),
                rules_version: DEFAULT_RULES_VERSION,
                enabled: entry.enabled,
            },
            EntryKind::Plugin(plugin) => FileEntry::Plugin {
                id: entry.id.clone(),
                description: plugin.description.clone(),
                source: plugin.source.clone(),
                enabled: entry.enabled,
                created_at: plugin.created_at.clone(),
            },
        })
        .collect();
    FileV1 {
        schema_version: SCHEMA_VERSION,
        revision: pipeline.revision,
        next_plugin_number: pipeline.next_plugin_number,
        filters,
    }
}

/// Why a file was refused; never quotes its content (plugin sources and descriptions stay
/// out of logs).
fn from_file(bytes: &[u8]) -> Result<Pipeline, String> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(describe_json_error)?;
    match value
        .get("schemaVersion")
        .and_then(serde_json::Value::as_u64)
    {
        Some(version) if version == u64::from(SCHEMA_VERSION) => {}
        Some(version) => {
            return Err(format!(
                "schema version `{version}` is not supported (this build reads `{SCHEMA_VERSION}`)"
            ));
        }
        None => return Err("`schemaVersion` is missing".to_owned()),
    }
    let file: FileV1 = serde_json::from_value(value).map_err(describe_json_error)?;
    let mut entries = Vec::with_capacity(file.filters.len());
    for (index, entry) in file.filters.into_iter().enumerate() {
        let entry = match entry {
            FileEntry::Default {
                id,
                rules_version,
                enabled,
            } => {
                let filter = DefaultFilter::from_id(&id)
                    .ok_or_else(|| format!("filter {index}: unknown default filter `{id}`"))?;
                if rules_version != DEFAULT_RULES_VERSION {
                    return Err(format!(
                        "filter `{id}`: rules version `{rules_version}` is not supported"
                    ));
                }
                Entry {
                    id,
                    enabled,
                    kind: EntryKind::Default(filter),
                }
            }
            FileEntry::Plugin {
                id,
                description,
                source,
                enabled,
                created_at,
            } => {
                validate_component(&id, "filter id")
                    .map_err(|_| format!("filter {index}: invalid plugin id"))?;
                let compiled =
                    compile(&source).map_err(|error| format!("plugin `{id}`: {error}"))?;
                Entry {
                    id,
                    enabled,
                    kind: EntryKind::Plugin(Arc::new(Plugin {
                        description,
                        source,
                        created_at,
                        compiled,
                    })),
                }
            }
        };
        if entries
            .iter()
            .any(|existing: &Entry| existing.id == entry.id)
        {
            return Err(format!("filter id `{}` appears twice", entry.id));
        }
        entries.push(entry);
    }
    Ok(Pipeline {
        entries,
        revision: file.revision,
        next_plugin_number: file.next_plugin_number,
    })
}

fn describe_json_error(error: serde_json::Error) -> String {
    use serde_json::error::Category;
    let kind = match error.classify() {
        Category::Io => "could not be read",
        Category::Syntax => "is not valid JSON",
        Category::Data => "does not match the pipelines schema",
        Category::Eof => "ends early",
    };
    if error.line() > 0 {
        format!(
            "the file {kind} (line {}, column {})",
            error.line(),
            error.column()
        )
    } else {
        format!("the file {kind}")
    }
}

// ---- the store ----------------------------------------------------------------------------

/// A bot's pipeline as loaded: ready, or unusable with the reason.
#[derive(Debug)]
enum Loaded {
    Ready(Arc<Pipeline>),
    Unusable { path: PathBuf, reason: String },
}

#[derive(Debug, Default)]
struct Slot {
    snapshot: OnceLock<ArcSwap<Loaded>>,
    /// Serialises management changes to this bot (read, modify, write, swap). Runs never
    /// take it.
    write: Mutex<()>,
}

/// Every bot's pipeline for one machine.
#[derive(Debug)]
pub struct PipelineStore {
    root: PathBuf,
    slots: RwLock<HashMap<BotId, Arc<Slot>>>,
}

impl PipelineStore {
    /// A store for `<state_dir>/daemons/<machine_id>/`. Nothing is read until a bot is used.
    pub fn new(state_dir: &Path, machine_id: &str) -> Result<PipelineStore, PiiError> {
        validate_component(machine_id, "machine id")?;
        Ok(PipelineStore {
            root: state_dir.join("daemons").join(machine_id),
            slots: RwLock::new(HashMap::new()),
        })
    }

    /// Where `bot`'s pipeline is stored.
    pub fn path(&self, bot: &BotId) -> PathBuf {
        self.root
            .join(bot.as_str())
            .join("pii")
            .join("pipelines.json")
    }

    fn slot(&self, bot: &BotId) -> Arc<Slot> {
        if let Some(slot) = self
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(bot)
        {
            return Arc::clone(slot);
        }
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(slots.entry(bot.clone()).or_default())
    }

    fn loaded(&self, bot: &BotId, slot: &Slot) -> Arc<Loaded> {
        slot.snapshot
            .get_or_init(|| ArcSwap::from_pointee(self.load(bot)))
            .load_full()
    }

    fn load(&self, bot: &BotId) -> Loaded {
        let path = self.path(bot);
        match fs::read(&path) {
            Ok(bytes) => match from_file(&bytes) {
                Ok(pipeline) => Loaded::Ready(Arc::new(pipeline)),
                Err(reason) => Loaded::Unusable { path, reason },
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Loaded::Ready(Arc::new(Pipeline::fresh()))
            }
            Err(error) => Loaded::Unusable {
                path,
                reason: format!("it could not be read ({})", error.kind()),
            },
        }
    }

    /// The current snapshot of `bot`'s pipeline.
    pub fn pipeline(&self, bot: &BotId) -> Result<Arc<Pipeline>, PiiError> {
        let slot = self.slot(bot);
        ready(bot, &self.loaded(bot, &slot))
    }

    /// Applies `change` to a copy of `bot`'s pipeline, writes it, and swaps it in. If
    /// `change` or the write fails, the old snapshot stays.
    pub(crate) fn update<T>(
        &self,
        bot: &BotId,
        change: impl FnOnce(&mut Pipeline) -> Result<T, PiiError>,
    ) -> Result<T, PiiError> {
        let slot = self.slot(bot);
        let _guard = slot.write.lock().unwrap_or_else(PoisonError::into_inner);
        let current = ready(bot, &self.loaded(bot, &slot))?;
        let mut next = Pipeline::clone(&current);
        let result = change(&mut next)?;
        next.revision += 1;
        self.write(bot, &next)?;
        if let Some(snapshot) = slot.snapshot.get() {
            snapshot.store(Arc::new(Loaded::Ready(Arc::new(next))));
        }
        Ok(result)
    }

    fn write(&self, bot: &BotId, pipeline: &Pipeline) -> Result<(), PiiError> {
        let path = self.path(bot);
        let mut json =
            serde_json::to_vec_pretty(&to_file(pipeline)).map_err(|error| PiiError::Io {
                action: "encode",
                path: path.clone(),
                source: error.into(),
            })?;
        json.push(b'\n');
        // An exclusive 0600 temporary file, synced and renamed over the old one, the directory
        // synced: a reader sees the old pipeline or the new one, and a crash loses neither.
        paddock_secrets::file::write_private(&path, &json).map_err(|source| PiiError::Io {
            action: "replace",
            path,
            source,
        })
    }
}

fn ready(bot: &BotId, loaded: &Loaded) -> Result<Arc<Pipeline>, PiiError> {
    match loaded {
        Loaded::Ready(pipeline) => Ok(Arc::clone(pipeline)),
        Loaded::Unusable { path, reason } => Err(PiiError::CorruptPipeline {
            bot: bot.to_string(),
            path: path.clone(),
            reason: reason.clone(),
        }),
    }
}

/// Now as RFC 3339 UTC (`2026-11-03T12:04:05Z`), computed from the Unix clock with the
/// civil-from-days algorithm, so the crate needs no date library for one timestamp.
pub(crate) fn now_rfc3339() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let days = seconds / 86_400;
    let rem = seconds % 86_400;
    let (hour, minute, second) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Howard Hinnant's days-to-civil for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_path_safe() {
        assert!(BotId::new("bot-1.a_b").is_ok());
        for bad in ["", ".", "..", "a/b", "a\\b", "ä", &"x".repeat(129)] {
            assert!(BotId::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn timestamp_shape() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 20);
        assert!(now.starts_with("20"));
        assert!(now.ends_with('Z'));
    }

    #[test]
    fn file_round_trip() {
        let pipeline = Pipeline::fresh();
        let json = serde_json::to_vec(&to_file(&pipeline)).unwrap();
        let back = from_file(&json).unwrap();
        assert_eq!(back.entries.len(), 5);
        assert!(from_file(b"{").is_err());
        assert!(
            from_file(br#"{"schemaVersion": 9}"#)
                .unwrap_err()
                .contains("`9`")
        );
    }
}
