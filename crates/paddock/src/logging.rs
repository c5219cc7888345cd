//! Log setup: `tracing` to stderr, human-readable or JSON, never coloured when `NO_COLOR` is set
//! or stderr is not a terminal.

use std::io::IsTerminal;

use clap::{Args, ValueEnum};
use tracing::Level;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{FilterExt as _, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Log line format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "PADDOCK_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// Log filter: a level (`trace`…`error`) or `tracing` directives such as `paddock_ingress=debug`.
    #[arg(long, global = true, default_value = "info", env = "PADDOCK_LOG")]
    pub log_level: String,
}

/// Targets whose logging is capped whatever the user asks for, because their more verbose
/// levels write whole requests and responses (MCP tool arguments, typed passwords, text bound
/// for PII filters): rmcp logs each request and notification at info and rejected requests with
/// their messages at warn; hyper and h2 log frames at trace.
const PAYLOAD_TARGETS: [(&str, Level); 4] = [
    ("rmcp", Level::ERROR),
    ("hyper", Level::INFO),
    ("h2", Level::INFO),
    ("tower_http", Level::INFO),
];

pub fn init(args: &LogArgs) -> anyhow::Result<()> {
    let filter = EnvFilter::try_new(&args.log_level)
        .map_err(|error| anyhow::anyhow!("invalid `--log-level` `{}`: {error}", args.log_level))?;
    let cap = PAYLOAD_TARGETS.iter().fold(
        Targets::new().with_default(Level::TRACE),
        |targets, (target, level)| targets.with_target(*target, *level),
    );
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let layer = match args.log_format {
        LogFormat::Text => layer.with_filter(filter.and(cap)).boxed(),
        LogFormat::Json => layer
            .json()
            .flatten_event(true)
            .with_filter(filter.and(cap))
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .map_err(|error| anyhow::anyhow!("could not install the logger: {error}"))
}
