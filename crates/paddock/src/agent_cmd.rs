//! `paddock agent …`: coding-agent CLIs hosted by the daemon. `run` and `chat` open a session
//! on the daemon (starting it when none runs) and follow its events; `start` leaves it running
//! and prints its id; `attach`, `list`, `send` and `stop` work on running sessions. Events are
//! printed as text for people or, with `--json`, as NDJSON for programs. `probe` looks at the
//! installed backends from this process.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use paddock_agents::{AgentDriverSdk, BackendId, HostConfig};
use paddock_client::config::{ModelApiKind, PaddockConfig, UpstreamRequest, resolve_upstream};
use paddock_client::control::{
    AgentKey, AgentSummary, AgentUpstream, AgentsClosed, AgentsEvents, AgentsEventsParams,
    AgentsList, AgentsOpen, AgentsOpenParams, AgentsSend, AgentsSendParams, AgentsSendResult,
    AgentsStop, AgentsStopParams, ControlClient, ControlClientError, SensitiveText, StreamItem,
};
use paddock_client::{ClientEnv, DaemonPaths};
use paddock_credentials::KeySource;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;

use crate::logging::LogArgs;

/// How long one control request may take (opening includes launching the CLI).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Run one prompt on a hosted agent, print its events until the turn completes, stop it.
    Run {
        #[command(flatten)]
        common: CommonArgs,
        /// The prompt.
        prompt: String,
    },
    /// A conversation: each stdin line is sent as a message; events are printed as they come.
    Chat {
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Start a hosted agent that keeps running after this command exits; prints its session
    /// id as the last word of stdout.
    Start {
        #[command(flatten)]
        common: CommonArgs,
        /// A first message (optional).
        prompt: Option<String>,
    },
    /// Print a hosted agent's events from the beginning (or `--from`), following until it
    /// closes.
    Attach {
        /// The session id.
        id: String,
        /// The first event sequence number to print.
        #[arg(long, default_value_t = 1)]
        from: u64,
        /// Print events as NDJSON on stdout, each with its `seq`.
        #[arg(long)]
        json: bool,
    },
    /// The daemon's hosted agents.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Send a message to a hosted agent (queued behind its running turn).
    Send {
        /// The session id.
        id: String,
        /// The message.
        text: String,
    },
    /// Stop a hosted agent.
    Stop {
        /// The session id.
        id: String,
    },
    /// Every backend: installed or not, version and capabilities.
    Probe {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Permissions {
    /// Answer every permission request with allow.
    Allow,
    /// Answer every permission request with deny.
    Deny,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Default,
    AcceptEdits,
    Plan,
    BypassPermissions,
}

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// The agent runtime.
    #[arg(long, default_value = "claude", value_parser = parse_backend)]
    backend: BackendId,
    /// The working directory (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print events as NDJSON on stdout.
    #[arg(long)]
    json: bool,
    /// The model (default: the runtime's).
    #[arg(long)]
    model: Option<String>,
    /// The runtime's permission mode.
    #[arg(long, value_enum, default_value_t = ModeArg::Default)]
    mode: ModeArg,
    /// How to answer permission requests.
    #[arg(long, value_enum, default_value_t = Permissions::Deny)]
    permissions: Permissions,
    /// Pass this variable from the current environment to the agent (repeatable). Nothing else
    /// is inherited beyond PATH, locale and user names.
    #[arg(long = "pass-env", value_name = "NAME")]
    pass_env: Vec<String>,
    /// The model API the agent reaches through Paddock's key-swapping proxy: an https URL such
    /// as https://api.anthropic.com (certificates checked against Mozilla's roots, the system
    /// store and $SSL_CERT_FILE / $SSL_CERT_DIR), or http for a local gateway. Default, in
    /// order: $PADDOCK_ANTHROPIC_UPSTREAM / $PADDOCK_OPENAI_UPSTREAM, the config file,
    /// $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL, the vendor's public API.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Where the real API key comes from: `env:VAR`, `file:PATH` (0600) or `keychain:SERVICE`.
    /// A variable's value is handed to the daemon for this launch only (memory, never a
    /// file); a file or keychain entry is read by the daemon. The agent gets a voucher.
    /// Default: the config file's `key`, else $ANTHROPIC_API_KEY ($ANTHROPIC_AUTH_TOKEN as a
    /// bearer) or $OPENAI_API_KEY, by the backend's API.
    #[arg(long = "key-from", value_parser = parse_key_source)]
    key_from: Option<String>,
    /// The bot the session works for.
    #[arg(long)]
    bot: Option<String>,
    #[command(flatten)]
    sandbox: SandboxArgs,
}

/// One agent's sandbox, over the daemon's (`[agents]` in the config file).
#[derive(Debug, Clone, Args)]
pub struct SandboxArgs {
    /// `landlock` or `off` for this agent (default: the daemon's setting).
    #[arg(long = "sandbox", value_name = "MODE", value_parser = ["landlock", "off"])]
    sandbox_mode: Option<String>,
    /// A path the agent may also read (repeatable).
    #[arg(long = "sandbox-read", value_name = "PATH")]
    sandbox_read: Vec<PathBuf>,
    /// A path it may also read and execute, e.g. a toolchain (repeatable).
    #[arg(long = "sandbox-exec", value_name = "PATH")]
    sandbox_exec: Vec<PathBuf>,
    /// A path it may also read and write (repeatable).
    #[arg(long = "sandbox-write", value_name = "PATH")]
    sandbox_write: Vec<PathBuf>,
}

impl SandboxArgs {
    /// The wire form, with paths made absolute; `None` when nothing was asked.
    pub fn to_wire(&self) -> anyhow::Result<Option<paddock_client::control::AgentSandbox>> {
        if self.sandbox_mode.is_none()
            && self.sandbox_read.is_empty()
            && self.sandbox_exec.is_empty()
            && self.sandbox_write.is_empty()
        {
            return Ok(None);
        }
        let absolute = |paths: &[PathBuf]| -> anyhow::Result<Vec<PathBuf>> {
            paths
                .iter()
                .map(|path| Ok(std::path::absolute(path)?))
                .collect()
        };
        Ok(Some(paddock_client::control::AgentSandbox {
            mode: self.sandbox_mode.clone(),
            read: absolute(&self.sandbox_read)?,
            exec: absolute(&self.sandbox_exec)?,
            write: absolute(&self.sandbox_write)?,
        }))
    }
}

/// Checks a `--key-from` value and keeps it as written (the config module resolves it).
fn parse_key_source(text: &str) -> Result<String, String> {
    KeySource::parse(text)
        .map(|_| text.to_owned())
        .map_err(|error| error.to_string())
}

fn parse_backend(text: &str) -> Result<BackendId, String> {
    BackendId::parse(text).ok_or_else(|| {
        format!("unknown backend `{text}`; known: claude, codex, opencode, pi, cursor")
    })
}

fn host() -> HostConfig {
    let paths = DaemonPaths::resolve(&ClientEnv::from_process());
    let mut host = HostConfig::new(paths.state_dir.join("agents"));
    host.paddock_command = std::env::current_exe().ok();
    host
}

/// The vendors' own key variables, which may hold a real key.
const VENDOR_KEY_VARIABLES: [&str; 3] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
];

/// The variables that may hold the real key for this command (the `--key-from` variable, else
/// every vendor default), to be taken out of the process environment before anything runs.
/// They stay readable to this process alone (`hardening::key_var_os`).
pub fn key_variables(command: &AgentCommand) -> Vec<String> {
    let common = match command {
        AgentCommand::Run { common, .. }
        | AgentCommand::Chat { common }
        | AgentCommand::Start { common, .. } => common,
        _ => return Vec::new(),
    };
    let mut names: Vec<String> = VENDOR_KEY_VARIABLES
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    let source = common.key_from.as_deref().map(KeySource::parse);
    if let Some(Ok(source)) = source
        && let Some(name) = source.env_var()
    {
        names.push(name.to_owned());
    }
    names
}

pub async fn run(command: AgentCommand, logging: &LogArgs) -> anyhow::Result<ExitCode> {
    match command {
        AgentCommand::Probe { json } => probe(json).await,
        AgentCommand::Run { common, prompt } => run_prompt(common, prompt, logging).await,
        AgentCommand::Chat { common } => chat(common, logging).await,
        AgentCommand::Start { common, prompt } => start(common, prompt, logging).await,
        AgentCommand::Attach { id, from, json } => attach(&id, from, json).await,
        AgentCommand::List { json } => list(json).await,
        AgentCommand::Send { id, text } => send(id, text).await,
        AgentCommand::Stop { id } => stop(&id).await,
    }
}

/// Connects to the daemon, starting it when none runs (as `paddock mcp` does).
async fn connect_starting(logging: &LogArgs) -> anyhow::Result<ControlClient> {
    let paths = DaemonPaths::resolve(&ClientEnv::from_process());
    match ControlClient::connect_owner(&paths).await {
        Ok(client) => return Ok(client),
        Err(error) if !error.is_not_running() => return Err(error.into()),
        Err(_) => {}
    }
    let launch = crate::daemon_cmd::detached_launch(
        &paths,
        &crate::daemon_cmd::StartArgs::default(),
        logging,
    )?;
    paddock_daemon::launcher::start_detached(&paths, &launch)
        .await
        .context("could not start the Paddock daemon")?;
    Ok(ControlClient::connect_owner(&paths).await?)
}

/// A second connection to the daemon `client` reached, for following events.
async fn connect_again() -> anyhow::Result<ControlClient> {
    let paths = DaemonPaths::resolve(&ClientEnv::from_process());
    Ok(ControlClient::connect_owner(&paths).await?)
}

/// The daemon's answer as a user-facing error (its message carries any hint).
fn remote(error: ControlClientError) -> anyhow::Error {
    match error {
        ControlClientError::Remote(error) => anyhow::anyhow!("{}", error.message),
        error => error.into(),
    }
}

/// This process's environment with the key variables `main` took out of it put back, for
/// resolving the upstream (they never reach a child).
fn resolution_env() -> ClientEnv {
    let mut env = ClientEnv::from_process();
    for name in VENDOR_KEY_VARIABLES {
        if let Some(value) = crate::hardening::key_var_os(name) {
            env = env.with_var(name, value);
        }
    }
    env
}

/// The upstream for `api`: flags, `PADDOCK_*_UPSTREAM`, the config file, the vendor's
/// variables and defaults (see `paddock_client::config`). A key in a variable is read here and
/// handed over for this launch only; a file or keychain entry is named for the daemon to read.
fn launch_upstream(
    common: &CommonArgs,
    api: paddock_agents::ModelApi,
) -> anyhow::Result<(AgentUpstream, Option<String>)> {
    let env = resolution_env();
    let config = PaddockConfig::load(&env)?;
    let kind = match api {
        paddock_agents::ModelApi::AnthropicMessages => ModelApiKind::AnthropicMessages,
        paddock_agents::ModelApi::OpenAiResponses => ModelApiKind::OpenAiResponses,
        paddock_agents::ModelApi::OpenAiChat => ModelApiKind::OpenAiChat,
    };
    let resolved = resolve_upstream(
        &UpstreamRequest {
            api: kind,
            flag_url: common.upstream.as_deref(),
            flag_key: common.key_from.as_deref(),
        },
        &env,
        &config,
    )?;
    for skipped in &resolved.skipped {
        tracing::info!(%skipped, "upstream source passed over");
    }
    let source = KeySource::parse(&resolved.key).map_err(|error| anyhow::anyhow!("{error}"))?;
    let (key, key_var) = match source.env_var() {
        Some(name) => {
            let value = source
                .read(crate::hardening::key_var_os)
                .map_err(|error| anyhow::anyhow!("{error}"))?;
            (
                AgentKey::Value(SensitiveText::new(value.expose_secret())),
                Some(name.to_owned()),
            )
        }
        None => (AgentKey::Source(resolved.key.clone()), None),
    };
    Ok((
        AgentUpstream {
            url: resolved.url,
            header: resolved.header,
            scheme: resolved.scheme,
            key,
        },
        key_var,
    ))
}

/// `agents/open` parameters for `common`: the working directory, the model, the mode, the
/// passed environment and, when the backend calls a model API, its upstream and key.
fn open_params(common: &CommonArgs, prompt: Option<String>) -> anyhow::Result<AgentsOpenParams> {
    let cwd = match &common.cwd {
        Some(dir) => std::path::absolute(dir)
            .with_context(|| format!("working directory `{}`", dir.display()))?,
        None => std::env::current_dir()?,
    };
    let api = AgentDriverSdk::new(host()).model_api(common.backend);
    let upstream = api.map(|api| launch_upstream(common, api)).transpose()?;
    let key_var = upstream.as_ref().and_then(|(_, var)| var.clone());
    let mut env = Vec::new();
    for name in &common.pass_env {
        if key_var.as_deref() == Some(name.as_str())
            || VENDOR_KEY_VARIABLES.contains(&name.as_str())
        {
            anyhow::bail!(
                "`--pass-env {name}` would hand the agent the real key; it gets a voucher instead"
            );
        }
        if let Ok(value) = std::env::var(name) {
            env.push((name.clone(), value));
        }
    }
    let mode = match common.mode {
        ModeArg::Default => "default",
        ModeArg::AcceptEdits => "acceptEdits",
        ModeArg::Plan => "plan",
        ModeArg::BypassPermissions => "bypassPermissions",
    };
    let permissions = match common.permissions {
        Permissions::Allow => "allow",
        Permissions::Deny => "deny",
    };
    Ok(AgentsOpenParams {
        backend: common.backend.as_str().to_owned(),
        cwd,
        model: common.model.clone(),
        mode: Some(mode.to_owned()),
        instructions: None,
        env,
        bot: common.bot.clone(),
        permissions: Some(permissions.to_owned()),
        upstream: upstream.map(|(upstream, _)| upstream),
        prompt: prompt.map(SensitiveText::new),
        sandbox: common.sandbox.to_wire()?,
    })
}

fn stop_params(id: &str) -> AgentsStopParams {
    AgentsStopParams {
        id: id.to_owned(),
        reason: Some("paddock agent finished".to_owned()),
        force_after_ms: Some(10_000),
    }
}

/// Opens a hosted session; a prompt the agent refuses stops it again.
async fn open(
    client: &mut ControlClient,
    params: AgentsOpenParams,
) -> anyhow::Result<AgentSummary> {
    let opened = client
        .request::<AgentsOpen>(params, REQUEST_TIMEOUT)
        .await
        .map_err(remote)?;
    if let Some(AgentsSendResult {
        reason: Some(reason),
        ..
    }) = &opened.receipt
    {
        let _ = client
            .request::<AgentsStop>(stop_params(&opened.session.id), REQUEST_TIMEOUT)
            .await;
        anyhow::bail!("the agent refused the prompt: {reason}");
    }
    Ok(opened.session)
}

async fn run_prompt(
    common: CommonArgs,
    prompt: String,
    logging: &LogArgs,
) -> anyhow::Result<ExitCode> {
    let params = open_params(&common, Some(prompt))?;
    let mut client = connect_starting(logging).await?;
    let session = open(&mut client, params).await?;
    let mut follower = connect_again().await?;
    let mut stream = follower
        .stream::<AgentsEvents>(AgentsEventsParams {
            id: session.id.clone(),
            from: 1,
        })
        .await?;
    let mut completed = false;
    let mut closed_early = None;
    loop {
        match stream.next().await.map_err(remote)? {
            StreamItem::Event(frame) => {
                let event = &frame["event"];
                print_event(event, common.json)?;
                let first = event["commandId"] == "c1";
                if first && event["type"] == "turn_completed" {
                    completed = event["outcome"] == "completed";
                    break;
                }
                if first && event["type"] == "command_failed" {
                    break;
                }
            }
            StreamItem::Done(closed) => {
                closed_early = Some(closed);
                break;
            }
        }
    }
    drop(follower);
    let closed = match closed_early {
        Some(closed) => closed,
        None => client
            .request::<AgentsStop>(stop_params(&session.id), REQUEST_TIMEOUT)
            .await
            .map_err(remote)?,
    };
    if !common.json && closed.reason == "crashed" {
        eprintln!("the agent exited unexpectedly ({})", closed_text(&closed));
    }
    Ok(if completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn start(
    common: CommonArgs,
    prompt: Option<String>,
    logging: &LogArgs,
) -> anyhow::Result<ExitCode> {
    let params = open_params(&common, prompt)?;
    let mut client = connect_starting(logging).await?;
    let session = open(&mut client, params).await?;
    if common.json {
        println!("{}", serde_json::to_string(&session)?);
    } else {
        eprintln!(
            "started {} agent (pid {}); follow it with `paddock agent attach {}`",
            session.backend,
            session
                .pid
                .map_or_else(|| "-".to_owned(), |pid| pid.to_string()),
            session.id
        );
        println!("{}", session.id);
    }
    Ok(ExitCode::SUCCESS)
}

async fn attach(id: &str, from: u64, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = match crate::connect_daemon().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let mut stream = client
        .stream::<AgentsEvents>(AgentsEventsParams {
            id: id.to_owned(),
            from,
        })
        .await?;
    loop {
        match stream.next().await.map_err(remote)? {
            StreamItem::Event(frame) => {
                if json {
                    let mut line = frame["event"].clone();
                    line["seq"] = frame["seq"].clone();
                    println!("{line}");
                } else {
                    print_event(&frame["event"], false)?;
                }
            }
            StreamItem::Done(closed) => {
                if json {
                    println!("{}", json!({ "type": "closed", "closed": closed }));
                } else {
                    eprintln!("[session closed: {}]", closed_text(&closed));
                }
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}

async fn list(json: bool) -> anyhow::Result<ExitCode> {
    let mut client = match crate::connect_daemon().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let list = client
        .request::<AgentsList>((), REQUEST_TIMEOUT)
        .await
        .map_err(remote)?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        stdout,
        "{:<16} {:<9} {:<9} {:<8} {:<8} {:<14} CWD",
        "ID", "BACKEND", "STATE", "PID", "EVENTS", "VOUCHER"
    )?;
    for session in &list.sessions {
        writeln!(
            stdout,
            "{:<16} {:<9} {:<9} {:<8} {:<8} {:<14} {}",
            session.id,
            session.backend,
            session.state,
            session
                .pid
                .map_or_else(|| "-".to_owned(), |pid| pid.to_string()),
            session.last_seq,
            session.voucher.as_deref().unwrap_or("-"),
            session.cwd.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn send(id: String, text: String) -> anyhow::Result<ExitCode> {
    let mut client = match crate::connect_daemon().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let receipt = client
        .request::<AgentsSend>(
            AgentsSendParams {
                id,
                text: SensitiveText::new(text),
            },
            REQUEST_TIMEOUT,
        )
        .await
        .map_err(remote)?;
    match (&receipt.position, &receipt.reason) {
        (_, Some(reason)) => {
            eprintln!("rejected: {reason}");
            return Ok(ExitCode::FAILURE);
        }
        (Some(position), None) => println!("{} queued (position {position})", receipt.command_id),
        (None, None) => println!("{} {}", receipt.command_id, receipt.receipt),
    }
    Ok(ExitCode::SUCCESS)
}

async fn stop(id: &str) -> anyhow::Result<ExitCode> {
    let mut client = match crate::connect_daemon().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let closed = client
        .request::<AgentsStop>(
            AgentsStopParams {
                id: id.to_owned(),
                reason: None,
                force_after_ms: None,
            },
            REQUEST_TIMEOUT,
        )
        .await
        .map_err(remote)?;
    println!("{id} {}", closed_text(&closed));
    Ok(ExitCode::SUCCESS)
}

fn closed_text(closed: &AgentsClosed) -> String {
    let mut text = closed.reason.clone();
    if closed.forced {
        text.push_str(", killed after the grace period");
    }
    if let Some(code) = closed.exit_code {
        text.push_str(&format!(", exit code {code}"));
    }
    text
}

async fn chat(common: CommonArgs, logging: &LogArgs) -> anyhow::Result<ExitCode> {
    let params = open_params(&common, None)?;
    let mut client = connect_starting(logging).await?;
    let session = open(&mut client, params).await?;
    let mut follower = connect_again().await?;
    let mut stream = follower
        .stream::<AgentsEvents>(AgentsEventsParams {
            id: session.id.clone(),
            from: 1,
        })
        .await?;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut sent = 0usize;
    let mut completed = 0usize;
    let mut stdin_open = true;
    loop {
        if !stdin_open && completed >= sent {
            break;
        }
        tokio::select! {
            line = lines.next_line(), if stdin_open => match line? {
                None => stdin_open = false,
                Some(line) if line.trim().is_empty() => {}
                Some(line) => {
                    sent += 1;
                    let receipt = client
                        .request::<AgentsSend>(
                            AgentsSendParams { id: session.id.clone(), text: SensitiveText::new(line) },
                            REQUEST_TIMEOUT,
                        )
                        .await
                        .map_err(remote)?;
                    match (receipt.position, receipt.reason) {
                        (Some(position), None) if !common.json => eprintln!("(queued, position {position})"),
                        (_, Some(reason)) => {
                            eprintln!("rejected: {reason}");
                            completed += 1;
                        }
                        _ => {}
                    }
                }
            },
            item = stream.next() => match item.map_err(remote)? {
                StreamItem::Done(_) => break,
                StreamItem::Event(frame) => {
                    let event = &frame["event"];
                    print_event(event, common.json)?;
                    if event["type"] == "turn_completed" || event["type"] == "command_failed" {
                        completed += 1;
                    }
                }
            },
        }
    }
    drop(follower);
    client
        .request::<AgentsStop>(stop_params(&session.id), REQUEST_TIMEOUT)
        .await
        .map_err(remote)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints one event: as its JSON line, or as text for people (assistant text on stdout, the
/// rest on stderr).
fn print_event(event: &Value, as_json: bool) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    if as_json {
        writeln!(stdout, "{event}")?;
        return Ok(());
    }
    let text = |name: &str| event[name].as_str().unwrap_or_default().to_owned();
    match event["type"].as_str().unwrap_or_default() {
        "assistant_text_delta" => {
            write!(stdout, "{}", text("text"))?;
            stdout.flush()?;
        }
        "assistant_message_completed" => writeln!(stdout)?,
        "tool_call_started" => eprintln!("→ {} {}", text("name"), event["input"]),
        "tool_call_finished" => eprintln!(
            "← {}{}",
            if event["isError"] == true {
                "error: "
            } else {
                ""
            },
            text("output").lines().next().unwrap_or_default()
        ),
        "permission_requested" => eprintln!("? permission for {}", text("tool")),
        "turn_completed" => {
            let outcome = match event["outcome"].as_str() {
                Some("completed") => "Completed".to_owned(),
                Some("interrupted") => "Interrupted".to_owned(),
                _ => format!("Failed({:?})", text("reason")),
            };
            eprintln!("[{}: {outcome}]", text("commandId"));
        }
        "command_failed" => eprintln!("[{} failed: {}]", text("commandId"), text("reason")),
        "error" => eprintln!("error: {}", text("message")),
        "events_dropped" => eprintln!("({} older events are no longer kept)", event["count"]),
        _ => {}
    }
    Ok(())
}

async fn probe(json: bool) -> anyhow::Result<ExitCode> {
    let sdk = AgentDriverSdk::new(host());
    let mut probes = Vec::new();
    for backend in BackendId::ALL {
        probes.push(sdk.probe(backend).await);
    }
    let mut stdout = std::io::stdout().lock();
    if !json {
        writeln!(
            stdout,
            "{:<9} {:<10} {:<10} {:<36} PROBLEM",
            "BACKEND", "STATUS", "VERSION", "LIFETIME/TRANSPORT/MID-TURN"
        )?;
    }
    for probe in &probes {
        let capabilities = format!(
            "{}/{}/{}",
            probe.capabilities.lifetime.as_str(),
            probe.capabilities.transport.as_str(),
            probe.capabilities.mid_turn_delivery.as_str()
        );
        if json {
            writeln!(
                stdout,
                "{}",
                json!({
                    "backend": probe.backend.as_str(),
                    "installed": probe.installed,
                    "program": probe.program,
                    "version": probe.version,
                    "lifetime": probe.capabilities.lifetime.as_str(),
                    "transport": probe.capabilities.transport.as_str(),
                    "midTurnDelivery": probe.capabilities.mid_turn_delivery.as_str(),
                    "problem": probe.problem,
                })
            )?;
        } else {
            writeln!(
                stdout,
                "{:<9} {:<10} {:<10} {:<36} {}",
                probe.backend.as_str(),
                if probe.installed {
                    "installed"
                } else {
                    "missing"
                },
                probe.version.as_deref().unwrap_or("-"),
                capabilities,
                probe.problem.as_deref().unwrap_or("")
            )?;
        }
    }
    // Whether agent launches can be confined here (Landlock).
    let support = paddock_agents::sandbox::support();
    if json {
        writeln!(
            stdout,
            "{}",
            json!({
                "sandbox": {
                    "kind": "landlock",
                    "available": support.is_available(),
                    "abi": support.abi(),
                    "problem": (!support.is_available()).then(|| support.to_string()),
                }
            })
        )?;
    } else if support.is_available() {
        writeln!(stdout, "sandbox: available ({support})")?;
    } else {
        writeln!(
            stdout,
            "sandbox: unavailable ({support}); agent launches cannot be confined"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
