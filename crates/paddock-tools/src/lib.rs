//! Paddock's MCP tool core. It knows no transport and no auth scheme: a transport builds a
//! [`ToolCtx`] (who is calling, under which policy, in which session, against which backend)
//! and gets an rmcp server for one request or connection from [`Registry::server`].
//!
//! Everything a client can observe about the tool surface is decided here: which tools exist
//! ([`catalog`]; each tool is defined beside its handler in `tools/`), which a policy allows
//! ([`policy`]), which are advertised in `tools/list` ([`discovery`]), how errors read
//! ([`error`]) and what is audited ([`audit`]).

pub mod audit;
pub mod auth;
pub mod backend;
pub mod catalog;
pub mod direct;
pub mod discovery;
pub mod error;
pub mod fleet;
pub mod plan;
pub mod policy;
pub mod protocol;
pub mod recording;
pub mod render;
pub mod resources;
pub mod server;
pub mod session;
pub mod tasks;
mod tools;
mod web_storage;

pub use audit::{AuditSink, StderrAuditSink, ToolCallEvent};
pub use auth::{AuthContext, AuthKind};
pub use backend::Backend;
pub use discovery::{ProcessOptions, StartupSelection};
pub use error::{ToolError, ToolErrorCode};
pub use fleet::FleetBackend;
pub use policy::{Policy, PolicyProfile};
pub use server::{Registry, RegistryConfig, ToolCtx};
pub use session::SessionKey;
pub use tasks::{CallRecorder, TaskBackend};
pub use tools::tasks::{DEFAULT_MAX_STEPS, DEFAULT_TIMEOUT_SECS};
