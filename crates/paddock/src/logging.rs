//! Log setup: `tracing` to stderr, human-readable or JSON, never coloured when `NO_COLOR` is set
//! or stderr is not a terminal.

use std::io::IsTerminal;

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

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

pub fn init(args: &LogArgs) -> anyhow::Result<()> {
    // rmcp logs every request at info; keep it at warn unless asked for it or for everything.
    let directives = if args.log_level.contains("rmcp")
        || ["debug", "trace"].contains(&args.log_level.as_str())
    {
        args.log_level.clone()
    } else {
        format!("{},rmcp=warn", args.log_level)
    };
    let filter = EnvFilter::try_new(&directives)
        .map_err(|error| anyhow::anyhow!("invalid `--log-level` `{}`: {error}", args.log_level))?;
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let installed = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    installed.map_err(|error| anyhow::anyhow!("could not install the logger: {error}"))
}
