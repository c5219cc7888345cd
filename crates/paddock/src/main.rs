//! The `paddock` command: clap definitions and glue. The work happens in the library crates.

mod agent_cmd;
mod bot_cmd;
mod credentials_cmd;
mod daemon_cmd;
mod devices_cmd;
mod fleet_cmd;
mod hardening;
mod logging;
mod mcp_client;
mod mcp_cmd;
mod pii_cmd;
mod plan_cmd;
mod sandbox_cmd;
mod server_cmd;
mod task_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Paddock keeps devices and coding agents ready for AI work and serves them over MCP.
#[derive(Debug, Parser)]
#[command(name = "paddock", version, about)]
struct Cli {
    #[command(flatten)]
    logging: logging::LogArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start, stop and inspect the per-user daemon.
    #[command(subcommand)]
    Daemon(daemon_cmd::DaemonCommand),
    /// Serve MCP on stdin/stdout, forwarding to the daemon (started if needed). For MCP clients:
    /// `claude mcp add paddock -- paddock mcp`.
    Mcp(mcp_cmd::McpArgs),
    /// List the device pool and its sessions, or warm more devices.
    Devices(devices_cmd::DevicesArgs),
    /// Run a command with a voucher instead of a real API key; list or revoke vouchers.
    Credentials(credentials_cmd::CredentialsArgs),
    /// Run coding-agent CLIs through Paddock's agent driver (`run`, `chat`, `probe`).
    #[command(subcommand)]
    Agent(agent_cmd::AgentCommand),
    /// A bot's PII filters: list and add (agent sessions), enable, disable, delete and test
    /// (the owner), redact text on stdin (scripts).
    Pii(pii_cmd::PiiArgs),
    /// Bots (the owner's): define them, message them, read their outbox.
    #[command(subcommand)]
    Bot(bot_cmd::BotCommand),
    /// Inside an agent session: pull and acknowledge the bot's inbox.
    #[command(subcommand)]
    Inbox(bot_cmd::InboxCommand),
    /// Inside an agent session: send a message (freshness guard, then PII filters).
    #[command(subcommand)]
    Message(bot_cmd::MessageCommand),
    /// Replay a plan (from `exportPlan`) on a fresh web device: `paddock plan run FILE`.
    #[command(subcommand)]
    Plan(plan_cmd::PlanCommand),
    /// Tasks: hand a goal to an agent that works a device of its own, follow, list, show,
    /// stop and message them, fetch their screenshots (the daemon's task tools).
    #[command(subcommand)]
    Task(task_cmd::TaskCommand),
    /// The fleet server: API-key MCP for remote clients over the daemons that joined it; its
    /// API keys and pairing tokens.
    Server(server_cmd::ServerArgs),
    /// Run a program confined by Landlock to the given paths (the agent driver's wrapper).
    #[command(hide = true)]
    SandboxExec(sandbox_cmd::SandboxExecArgs),
}

/// Exit codes: 0 success, 1 failure, 2 usage error (clap), 3 daemon not running (`status`).
pub const EXIT_NOT_RUNNING: u8 = 3;

/// Connects to the daemon's control socket — as the owner (with the token), or, inside an agent
/// session (`PADDOCK_CONTROL_SOCKET` and the voucher file are set), as that session — or tells
/// the user it is not running and gives the exit code for that.
pub async fn connect_daemon()
-> anyhow::Result<Result<paddock_client::control::ControlClient, ExitCode>> {
    let socket = std::env::var_os("PADDOCK_CONTROL_SOCKET");
    let voucher_file = std::env::var_os("PADDOCK_PROXY_TOKEN_FILE");
    if let (Some(socket), Some(voucher_file)) = (socket, voucher_file) {
        let voucher = std::fs::read_to_string(&voucher_file).map_err(|error| {
            anyhow::anyhow!("could not read this session's voucher file: {error}")
        })?;
        let (client, _) = paddock_client::control::ControlClient::connect_session(
            std::path::Path::new(&socket),
            voucher.trim(),
        )
        .await?;
        return Ok(Ok(client));
    }
    let paths = paddock_client::DaemonPaths::resolve(&paddock_client::ClientEnv::from_process());
    match paddock_client::control::ControlClient::connect_owner(&paths).await {
        Ok(client) => Ok(Ok(client)),
        Err(error) if error.is_not_running() => {
            eprintln!("error: paddock daemon is not running");
            eprintln!("hint: start it with `paddock daemon start`");
            Ok(Err(ExitCode::from(EXIT_NOT_RUNNING)))
        }
        Err(error) => Err(error.into()),
    }
}

fn main() -> ExitCode {
    // A panic message can quote what a request carried (text bound for PII filters, tool
    // arguments); the default hook would print it into the daemon's log. Only the location is
    // printed unless PADDOCK_DEBUG_PANICS=1.
    let verbose_panics = std::env::var_os("PADDOCK_DEBUG_PANICS").is_some_and(|value| value == "1");
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if verbose_panics {
            default_hook(info);
        } else {
            let location = info
                .location()
                .map(|location| format!("{}:{}", location.file(), location.line()))
                .unwrap_or_else(|| "an unknown place".to_owned());
            eprintln!(
                "error: internal failure at {location} (message withheld; set PADDOCK_DEBUG_PANICS=1 to see it)"
            );
        }
    }));
    // Before any secret is read and before any thread starts (see `hardening`).
    if let Err(error) = hardening::make_non_dumpable() {
        eprintln!("error: could not make this process non-dumpable: {error}");
        return ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    let key_variables = match &cli.command {
        Command::Credentials(args) => credentials_cmd::key_variables(args),
        Command::Agent(command) => agent_cmd::key_variables(command),
        _ => Vec::new(),
    };
    hardening::TakenKeys::take(&key_variables).install();
    if let Err(error) = logging::init(&cli.logging) {
        eprintln!("error: {error:#}");
        return ExitCode::FAILURE;
    }
    // Before any thread starts: Landlock confines the calling thread, and exec keeps only it.
    let command = match cli.command {
        Command::SandboxExec(args) => return sandbox_cmd::run(args),
        command => command,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: could not start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match command {
            Command::Daemon(command) => daemon_cmd::run(command, &cli.logging).await,
            Command::Mcp(args) => mcp_cmd::run(args, &cli.logging).await,
            Command::Devices(args) => devices_cmd::run(args).await,
            Command::Credentials(args) => credentials_cmd::run(args).await,
            Command::Agent(command) => agent_cmd::run(command, &cli.logging).await,
            Command::Pii(args) => pii_cmd::run(args).await,
            Command::Bot(command) => bot_cmd::run_bot(command).await,
            Command::Inbox(command) => bot_cmd::run_inbox(command).await,
            Command::Message(command) => bot_cmd::run_message(command).await,
            Command::Plan(command) => plan_cmd::run(command).await,
            Command::Task(command) => task_cmd::run(command).await,
            Command::Server(args) => server_cmd::run(args).await,
            // Handled above, before the runtime started; run here, it would be as confined.
            Command::SandboxExec(args) => Ok(sandbox_cmd::run(args)),
        }
    });
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks over every subcommand and flag (ids, conflicts), which
    /// otherwise fire only when the command in question runs.
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory as _;
        super::Cli::command().debug_assert();
    }
}
