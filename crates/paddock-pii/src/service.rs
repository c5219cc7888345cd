//! `PiiService`: the operations the daemon exposes (`paddock pii list|add|enable|disable|
//! delete|test|redact`) and the run every outgoing send goes through.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{PiiError, PluginError};
use crate::filter::{DefaultFilter, Redacted, redact_defaults_within};
use crate::pipeline::{Entry, EntryKind, Plugin};
use crate::plugin::{PluginLimits, PluginRunner, compile};
use crate::store::{BotId, PipelineStore, now_rfc3339};

/// The playground's limit on input and on output, in UTF-8 bytes.
pub const PLAYGROUND_LIMIT_BYTES: usize = 1024;

/// Where pipelines live and how plugins are limited.
#[derive(Debug, Clone)]
pub struct PiiConfig {
    /// The daemon's state directory.
    pub state_dir: PathBuf,
    /// This machine's id (a path component under `<stateDir>/daemons/`).
    pub machine_id: String,
    /// Limits for each plugin run.
    pub limits: PluginLimits,
    /// How long the default filters of one run may take together
    /// ([`DEFAULT_FILTERS_TIME`](crate::filter::DEFAULT_FILTERS_TIME) is a sane choice).
    pub default_filters_time: Duration,
}

/// What kind of filter an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterKind {
    /// One of the five built-in filters.
    Default(DefaultFilter),
    /// An added plugin.
    Plugin {
        /// What the plugin does, as given when it was added.
        description: String,
        /// When it was added, RFC 3339 UTC.
        created_at: String,
    },
}

/// One filter of a pipeline, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterInfo {
    /// The id used by enable, disable, delete and in `triggered_filters`.
    pub id: String,
    /// Whether runs use it.
    pub enabled: bool,
    /// Default or plugin.
    pub kind: FilterKind,
}

/// A bot's pipeline, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineView {
    /// The configuration revision (changes with every management change).
    pub revision: u64,
    /// The filters in pipeline order.
    pub filters: Vec<FilterInfo>,
}

/// The PII pipelines of one machine's bots.
#[derive(Debug)]
pub struct PiiService {
    store: PipelineStore,
    plugins: PluginRunner,
    default_filters_time: Duration,
}

fn info(entry: &Entry) -> FilterInfo {
    let kind = match &entry.kind {
        EntryKind::Default(filter) => FilterKind::Default(*filter),
        EntryKind::Plugin(plugin) => FilterKind::Plugin {
            description: plugin.description.clone(),
            created_at: plugin.created_at.clone(),
        },
    };
    FilterInfo {
        id: entry.id.clone(),
        enabled: entry.enabled,
        kind,
    }
}

impl PiiService {
    /// A service over `<state_dir>/daemons/<machine_id>/`.
    pub fn new(config: PiiConfig) -> Result<PiiService, PiiError> {
        Ok(PiiService {
            store: PipelineStore::new(&config.state_dir, &config.machine_id)?,
            plugins: PluginRunner::new(config.limits),
            default_filters_time: config.default_filters_time,
        })
    }

    /// The store, for callers that need paths or snapshots.
    pub fn store(&self) -> &PipelineStore {
        &self.store
    }

    /// The bot's filters in order.
    pub fn list(&self, bot: &BotId) -> Result<PipelineView, PiiError> {
        let pipeline = self.store.pipeline(bot)?;
        Ok(PipelineView {
            revision: pipeline.revision(),
            filters: pipeline.entries.iter().map(info).collect(),
        })
    }

    /// Appends a plugin filter, enabled, with a fresh id. The source is compiled and checked
    /// first; a rejected source changes nothing.
    pub fn add(
        &self,
        bot: &BotId,
        source: &str,
        description: &str,
    ) -> Result<FilterInfo, PiiError> {
        let description = description.trim();
        if description.is_empty()
            || description.chars().count() > 200
            || description.contains(['\n', '\r'])
        {
            return Err(PluginError::InvalidDescription.into());
        }
        // Compile outside the bot's write lock: it is the slow part.
        let compiled = compile(source)?;
        let plugin = Arc::new(Plugin {
            description: description.to_owned(),
            source: source.to_owned(),
            created_at: now_rfc3339(),
            compiled,
        });
        self.store.update(bot, move |pipeline| {
            let mut number = pipeline.next_plugin_number.max(1);
            let id = loop {
                let candidate = format!("plugin-{number}");
                number += 1;
                if !pipeline.entries.iter().any(|entry| entry.id == candidate) {
                    break candidate;
                }
            };
            pipeline.next_plugin_number = number;
            let entry = Entry {
                id,
                enabled: true,
                kind: EntryKind::Plugin(plugin),
            };
            let listed = info(&entry);
            pipeline.entries.push(entry);
            Ok(listed)
        })
    }

    /// Enables or disables a filter (default or plugin).
    pub fn set_enabled(&self, bot: &BotId, filter_id: &str, enabled: bool) -> Result<(), PiiError> {
        self.store.update(bot, |pipeline| {
            let entry = pipeline
                .entries
                .iter_mut()
                .find(|entry| entry.id == filter_id)
                .ok_or_else(|| unknown(bot, filter_id))?;
            entry.enabled = enabled;
            Ok(())
        })
    }

    /// Deletes a filter. Deleted defaults stay deleted; nothing brings them back implicitly.
    pub fn delete(&self, bot: &BotId, filter_id: &str) -> Result<(), PiiError> {
        self.store.update(bot, |pipeline| {
            let index = pipeline
                .entries
                .iter()
                .position(|entry| entry.id == filter_id)
                .ok_or_else(|| unknown(bot, filter_id))?;
            pipeline.entries.remove(index);
            Ok(())
        })
    }

    /// Runs the bot's pipeline over an outgoing text. An error means the text must not be sent.
    pub fn run(&self, bot: &BotId, text: &str) -> Result<Redacted, PiiError> {
        self.store
            .pipeline(bot)?
            .run(text, &self.plugins, self.default_filters_time)
    }

    /// The playground: the same run, with input and output each limited to
    /// [`PLAYGROUND_LIMIT_BYTES`]. Nothing is stored.
    pub fn test(&self, bot: &BotId, text: &str) -> Result<Redacted, PiiError> {
        if text.len() > PLAYGROUND_LIMIT_BYTES {
            return Err(PiiError::PlaygroundInputTooLarge {
                len: text.len(),
                limit: PLAYGROUND_LIMIT_BYTES,
            });
        }
        let redacted = self.run(bot, text)?;
        if redacted.text.len() > PLAYGROUND_LIMIT_BYTES {
            return Err(PiiError::PlaygroundOutputTooLarge {
                len: redacted.text.len(),
                limit: PLAYGROUND_LIMIT_BYTES,
            });
        }
        Ok(redacted)
    }

    /// The five default filters, independent of any bot, within the configured time.
    pub fn redact_defaults(&self, text: &str) -> Result<Redacted, PiiError> {
        redact_defaults_within(text, self.default_filters_time)
    }
}

fn unknown(bot: &BotId, filter_id: &str) -> PiiError {
    PiiError::UnknownFilter {
        bot: bot.to_string(),
        filter: filter_id.to_owned(),
    }
}
