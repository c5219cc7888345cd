//! PII filters for text that leaves the machine: five default filters, per-bot pipelines
//! persisted under the state directory, and plugin filters in a QuickJS sandbox.
//!
//! `paddock-pii` knows nothing of MCP, HTTP or the CLI; the daemon calls [`PiiService`].
//! The pieces, from the bottom up:
//! - [`finding`]: what a detector reports and how findings become markers;
//! - `normalise`: the ASCII view of full-width forms and zero-width characters that the
//!   detectors scan, and the way back to the original offsets;
//! - `detect`: the five detectors (keys, e-mail, ID numbers, phone numbers, cards);
//! - [`filter`]: the default filters and [`redact_defaults`];
//! - [`plugin`]: compiling and sandboxing plugin filters;
//! - [`pipeline`] and [`store`]: per-bot snapshots, loading and atomic saving;
//! - [`service`]: the operations the daemon exposes.

mod checksum;
mod detect;
pub mod error;
pub mod filter;
pub mod finding;
mod normalise;
pub mod pipeline;
pub mod plugin;
mod scan;
pub mod service;
pub mod store;

pub use error::{FilterFailure, PiiError, PluginError};
pub use filter::{
    DEFAULT_FILTERS_TIME, DefaultFilter, Redacted, default_findings, redact_defaults,
    redact_defaults_within,
};
pub use finding::{Category, Finding};
pub use pipeline::Pipeline;
pub use plugin::PluginLimits;
pub use service::{
    FilterInfo, FilterKind, PLAYGROUND_LIMIT_BYTES, PiiConfig, PiiService, PipelineView,
};
pub use store::{BotId, PipelineStore};
