//! Errors. None of them carries message text or a detected value: a failing filter is named,
//! and the kind of failure is described, nothing more.

use std::path::PathBuf;
use std::time::Duration;

/// Why an enabled filter blocked a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterFailure {
    /// The plugin threw an exception (its message is discarded: it may quote the text).
    #[error("it threw an exception")]
    Threw,
    /// The plugin returned something other than `{ text: string, triggered: boolean }` or a
    /// string.
    #[error("it returned an invalid result ({reason})")]
    InvalidResult {
        /// What was wrong with the result.
        reason: &'static str,
    },
    /// The run exceeded its time limit.
    #[error("it exceeded its time limit of {} ms", limit.as_millis())]
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
    /// The run executed more promise jobs than allowed.
    #[error("it ran more than {limit} promise jobs")]
    JobLimit {
        /// The limit.
        limit: usize,
    },
    /// The run exceeded its memory limit.
    #[error("it exceeded its memory limit of {limit_bytes} bytes")]
    MemoryLimit {
        /// The limit.
        limit_bytes: usize,
    },
    /// The run recursed too deeply.
    #[error("it overflowed its stack")]
    StackOverflow,
    /// The output was larger than allowed.
    #[error("its output of {len} bytes exceeds the limit of {limit} bytes")]
    OutputTooLarge {
        /// Output size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The JavaScript engine could not be started (out of memory on the host) or its thread
    /// ended without an answer.
    #[error("the sandbox could not be started or stopped unexpectedly")]
    Engine,
    /// Too many earlier runs outlived their time limit and are still winding down, so no new
    /// run was started.
    #[error(
        "the sandbox is still stopping {lingering} earlier runs that exceeded their time limit; try again shortly"
    )]
    SandboxBusy {
        /// Runs still winding down.
        lingering: usize,
    },
}

/// Why a plugin source was rejected when it was added or loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// The source is empty.
    #[error("the plugin source is empty")]
    Empty,
    /// The source is too large.
    #[error("the plugin source is {len} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// Source size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The source does not parse as TypeScript or JavaScript.
    #[error("the plugin source does not parse: {message}")]
    Syntax {
        /// The parser's first diagnostic.
        message: String,
    },
    /// The source uses something the sandbox does not provide.
    #[error(
        "plugins cannot use {what}: they get no modules, filesystem, process, environment or network"
    )]
    Forbidden {
        /// The construct.
        what: &'static str,
    },
    /// The source has no `export default`.
    #[error(
        "the plugin source has no `export default`; export a function `(text) => ({{ text, triggered }})`"
    )]
    NoDefaultExport,
    /// The description is empty, too long or spans lines.
    #[error("the description must be 1–200 characters on one line")]
    InvalidDescription,
}

/// Errors of the PII pipelines.
#[derive(Debug, thiserror::Error)]
pub enum PiiError {
    /// A bot or machine id that cannot name a directory safely.
    #[error(
        "{what} `{value}` is not valid: use 1–128 ASCII letters, digits, `.`, `_` or `-` (not `.` or `..`)"
    )]
    InvalidId {
        /// "bot id" or "machine id".
        what: &'static str,
        /// The id as given.
        value: String,
    },
    /// A bot's `pipelines.json` could not be read or understood. Only that bot is affected.
    #[error(
        "pipelines of bot `{bot}` at `{path}` are unusable: {reason}; fix or remove the file and restart the daemon"
    )]
    CorruptPipeline {
        /// The bot.
        bot: String,
        /// The file.
        path: PathBuf,
        /// What is wrong (position and kind of the problem, never file content).
        reason: String,
    },
    /// Writing a bot's `pipelines.json` failed; the previous pipeline stays in force.
    #[error("could not {action} `{path}`: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An enabled filter failed, so the text must not be sent.
    #[error("filter `{filter}` failed: {failure}; the text was blocked")]
    FilterFailed {
        /// The filter's id.
        filter: String,
        /// What went wrong.
        failure: FilterFailure,
    },
    /// The bot has no filter with this id.
    #[error("bot `{bot}` has no filter `{filter}`; list its filters to see their ids")]
    UnknownFilter {
        /// The bot.
        bot: String,
        /// The id asked for.
        filter: String,
    },
    /// A plugin was rejected.
    #[error("plugin rejected: {0}")]
    InvalidPlugin(#[from] PluginError),
    /// Playground input over 1024 bytes.
    #[error("playground input is {len} bytes; the limit is {limit} UTF-8 bytes")]
    PlaygroundInputTooLarge {
        /// Input size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// Playground output over 1024 bytes; no partial output is returned.
    #[error(
        "playground output is {len} bytes; the limit is {limit} UTF-8 bytes, so no output is shown"
    )]
    PlaygroundOutputTooLarge {
        /// Output size.
        len: usize,
        /// The limit.
        limit: usize,
    },
}

impl PiiError {
    /// An enabled filter failed and the send must be blocked.
    pub fn is_filter_failure(&self) -> bool {
        matches!(self, PiiError::FilterFailed { .. })
    }

    /// The bot's stored pipeline is unusable until it is fixed and the daemon restarts.
    pub fn is_corrupt_pipeline(&self) -> bool {
        matches!(self, PiiError::CorruptPipeline { .. })
    }

    /// The caller asked for something that does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, PiiError::UnknownFilter { .. })
    }

    /// The caller's input was rejected (ids, plugin source, playground size).
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            PiiError::InvalidId { .. }
                | PiiError::InvalidPlugin(_)
                | PiiError::PlaygroundInputTooLarge { .. }
                | PiiError::PlaygroundOutputTooLarge { .. }
        )
    }
}
