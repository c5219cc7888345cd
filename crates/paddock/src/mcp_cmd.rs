//! `paddock mcp`: the stdio MCP server a local client launches. Stdout carries JSON-RPC only.

use std::process::ExitCode;

use clap::Args;
use paddock_client::control::McpConnectParams;
use paddock_client::{ClientEnv, DaemonPaths};
use paddock_daemon::stdio_proxy::Dial;

use crate::daemon_cmd::{StartArgs, detached_launch};
use crate::logging::LogArgs;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Session id for this connection (letters, digits, `.`, `_`, `:`, `-`). Default: a fresh
    /// random id per process, whose device is released when the process exits. Pin it to keep
    /// per-session tool choices across client restarts, and the session's device across a
    /// reconnect within the daemon's `--session-grace-secs` (a client that starts one
    /// `paddock mcp` per call needs it).
    #[arg(long, env = "PADDOCK_SESSION_ID")]
    session_id: Option<String>,
}

pub async fn run(args: McpArgs, logging: &LogArgs) -> anyhow::Result<ExitCode> {
    let env = ClientEnv::from_process();
    let paths = DaemonPaths::resolve(&env);
    // A client-chosen id can come back after its process exits (a one-shot client that starts
    // `paddock mcp` per call): the daemon keeps its device for the grace period.
    let session = match args.session_id {
        Some(session_id) => McpConnectParams {
            session_id,
            reconnectable: true,
        },
        None => McpConnectParams {
            session_id: paddock_daemon::stdio_proxy::new_session_id()?,
            reconnectable: false,
        },
    };
    // Inside a task's agent the launch's voucher is the only credential: that connection is
    // bound to the task's device, and no daemon is ever started from here.
    let socket = std::env::var_os("PADDOCK_CONTROL_SOCKET").map(std::path::PathBuf::from);
    let voucher_file = std::env::var_os("PADDOCK_PROXY_TOKEN_FILE").map(std::path::PathBuf::from);
    if let (Some(socket), Some(voucher_file)) = (&socket, &voucher_file) {
        let dial = Dial::Voucher {
            socket,
            voucher_file,
        };
        paddock_daemon::stdio_proxy::run(&dial, &session).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let launch = detached_launch(&paths, &StartArgs::default(), logging)?;
    let dial = Dial::Owner {
        paths: &paths,
        launch: &launch,
    };
    paddock_daemon::stdio_proxy::run(&dial, &session).await?;
    Ok(ExitCode::SUCCESS)
}
