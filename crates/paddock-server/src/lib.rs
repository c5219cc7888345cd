//! `paddock server`, the fleet server: spec 002's policy-gated MCP surface for remote clients
//! holding an API key, over the daemons that joined it (spec 004's control plane).
//!
//! A request passes the edge first ([`limits`]: body size, deadline, rate limits; [`auth`]: the
//! credential taxonomy), then reaches the same tool core as the daemon (`paddock-tools`) with
//! the fleet catalog and a backend over the joined daemons ([`hub`]). Everything persistent is
//! behind [`store::ServerStore`]: SQLite embedded, or PostgreSQL for several replicas.

pub mod auth;
pub mod config;
pub mod credential;
pub mod http;
pub mod hub;
pub mod inbox;
pub mod limits;
pub mod store;
pub mod tls;

pub use config::{ConfigError, Flags, ServerConfig};
