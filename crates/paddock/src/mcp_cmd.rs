//! `paddock mcp`: the stdio MCP server a local client launches. Stdout carries JSON-RPC only.

use std::process::ExitCode;

use clap::Args;
use paddock_client::{ClientEnv, DaemonPaths};

use crate::daemon_cmd::{StartArgs, detached_launch};
use crate::logging::LogArgs;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Session id for this connection (letters, digits, `.`, `_`, `:`, `-`). Default: a fresh
    /// random id per process. Pin it to keep per-session tool choices across client restarts.
    #[arg(long, env = "PADDOCK_SESSION_ID")]
    session_id: Option<String>,
}

pub async fn run(args: McpArgs, logging: &LogArgs) -> anyhow::Result<ExitCode> {
    let env = ClientEnv::from_process();
    let paths = DaemonPaths::resolve(&env);
    let session_id = match args.session_id {
        Some(id) => id,
        None => paddock_daemon::stdio_proxy::new_session_id()?,
    };
    let launch = detached_launch(&paths, &StartArgs::default(), logging)?;
    paddock_daemon::stdio_proxy::run(&paths, &launch, &session_id).await?;
    Ok(ExitCode::SUCCESS)
}
