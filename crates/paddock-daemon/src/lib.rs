//! The daemon's composition root: it owns the startup sequence, the control socket, the PID
//! record and the token file, and the orderly shutdown. Subsystems (device pool, agents, …)
//! plug in through [`Subsystem`].

pub mod agents;
pub mod bots;
pub mod control;
pub mod credentials;
pub mod devices;
pub mod files;
pub mod fleet;
pub mod fleet_inbox;
pub mod launcher;
pub mod lock;
pub mod mcp;
pub mod pii;
pub mod run;
pub mod runner;
pub mod services;
pub mod stdio_proxy;
pub mod subsystem;
pub mod tasks;

pub use run::{DaemonConfig, FaultInjection, McpOptions, RunOutcome, run};
pub use subsystem::Subsystem;
