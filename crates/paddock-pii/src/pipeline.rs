//! A bot's pipeline in memory: its filters in order, compiled, ready to run.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use crate::error::PiiError;
use crate::filter::{DefaultFilter, DefaultsBudget, Redacted};
use crate::plugin::{CompiledPlugin, PluginRunner};

/// One filter of a pipeline.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub id: String,
    pub enabled: bool,
    pub kind: EntryKind,
}

#[derive(Debug, Clone)]
pub(crate) enum EntryKind {
    Default(DefaultFilter),
    /// Shared between snapshots: a management change copies the entry list, never recompiles
    /// an unchanged plugin.
    Plugin(Arc<Plugin>),
}

/// An installed plugin: what was stored, and its compiled form.
#[derive(Debug)]
pub(crate) struct Plugin {
    pub description: String,
    pub source: String,
    pub created_at: String,
    pub compiled: CompiledPlugin,
}

/// An immutable snapshot of one bot's pipeline. Management changes build a new snapshot and
/// swap it in; runs that already hold the old one finish with it.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub(crate) entries: Vec<Entry>,
    /// Incremented by every management change; lets a caller check which configuration it
    /// is looking at.
    pub(crate) revision: u64,
    /// The number the next added plugin's id is built from; never reused, so adding can never
    /// replace a filter, not even one deleted earlier.
    pub(crate) next_plugin_number: u64,
}

impl Pipeline {
    /// The pipeline a bot without a saved file gets: the five defaults, enabled.
    pub(crate) fn fresh() -> Pipeline {
        let entries = DefaultFilter::ALL
            .into_iter()
            .map(|filter| Entry {
                id: filter.id().to_owned(),
                enabled: true,
                kind: EntryKind::Default(filter),
            })
            .collect();
        Pipeline {
            entries,
            revision: 0,
            next_plugin_number: 1,
        }
    }

    /// The configuration revision.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Runs every enabled filter in order: the default filters together within
    /// `default_filters_time`, each plugin under its runner's limits. The first failing filter
    /// stops the run: the caller gets its id and the kind of failure, never partial output.
    pub(crate) fn run(
        &self,
        text: &str,
        plugins: &PluginRunner,
        default_filters_time: Duration,
    ) -> Result<Redacted, PiiError> {
        let mut current: Cow<'_, str> = Cow::Borrowed(text);
        let mut triggered_filters = Vec::new();
        let mut budget = DefaultsBudget::new(default_filters_time);
        for entry in self.entries.iter().filter(|entry| entry.enabled) {
            match &entry.kind {
                EntryKind::Default(filter) => {
                    if let Some(output) = budget.redact(*filter, &current)? {
                        triggered_filters.push(entry.id.clone());
                        current = Cow::Owned(output);
                    }
                }
                EntryKind::Plugin(plugin) => {
                    let output = plugins.run(&plugin.compiled, &current).map_err(|failure| {
                        PiiError::FilterFailed {
                            filter: entry.id.clone(),
                            failure,
                        }
                    })?;
                    if output.triggered {
                        triggered_filters.push(entry.id.clone());
                    }
                    current = Cow::Owned(output.text);
                }
            }
        }
        Ok(Redacted {
            text: current.into_owned(),
            triggered_filters,
        })
    }
}
