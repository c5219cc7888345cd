//! `paddock agent …`: run coding-agent CLIs through the agent driver and print normalised
//! events (text for people, `--json` NDJSON for programs).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use paddock_agents::{
    AgentConfig, AgentDriverSdk, AgentEvent, BackendId, Command, HostConfig, Launch, Mode, Model,
    OpenRequest, PermissionDecision, Receipt, Session, StopRequest, TurnOutcome,
};
use std::sync::Arc;

use paddock_agents::{BrokerCredentials, ModelApi};
use paddock_client::{ClientEnv, DaemonPaths};
use paddock_credentials::{
    CredentialBroker, CredentialBrokerConfig, KeySource, UpstreamConfig, UpstreamTrust,
};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Run one prompt and print the events until its turn completes.
    Run {
        #[command(flatten)]
        common: CommonArgs,
        /// The prompt.
        prompt: String,
    },
    /// A conversation: each stdin line is sent as a command; events are printed as they come.
    Chat {
        #[command(flatten)]
        common: CommonArgs,
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
    /// store and $SSL_CERT_FILE / $SSL_CERT_DIR), or http for a local gateway. Default:
    /// $PADDOCK_ANTHROPIC_UPSTREAM for backends that call the Anthropic API (claude, pi),
    /// $PADDOCK_OPENAI_UPSTREAM for those that call OpenAI's (codex, opencode).
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Where the real API key comes from: `env:VAR`, `file:PATH` (0600) or `keychain:SERVICE`.
    /// It stays in this process; the agent gets a voucher. Default: env:ANTHROPIC_API_KEY or
    /// env:OPENAI_API_KEY, by the backend's API.
    #[arg(long = "key-from", value_parser = parse_key_source)]
    key_from: Option<KeySource>,
}

/// What the chosen backend's model API needs from this command.
struct ApiChoice {
    api: ModelApi,
    upstream_env: &'static str,
    /// The vendor's public endpoint, for the hint when no upstream is given.
    public_url: &'static str,
    key_from: KeySource,
}

fn api_choice(common: &CommonArgs, sdk: &AgentDriverSdk) -> anyhow::Result<Option<ApiChoice>> {
    let Some(api) = sdk.model_api(common.backend) else {
        return Ok(None);
    };
    let (upstream_env, public_url, key_env) = match api {
        ModelApi::AnthropicMessages => (
            "PADDOCK_ANTHROPIC_UPSTREAM",
            "https://api.anthropic.com",
            "env:ANTHROPIC_API_KEY",
        ),
        ModelApi::OpenAiResponses | ModelApi::OpenAiChat => (
            "PADDOCK_OPENAI_UPSTREAM",
            "https://api.openai.com",
            "env:OPENAI_API_KEY",
        ),
    };
    let key_from = match &common.key_from {
        Some(source) => source.clone(),
        None => KeySource::parse(key_env).map_err(|error| anyhow::anyhow!("{error}"))?,
    };
    Ok(Some(ApiChoice {
        api,
        upstream_env,
        public_url,
        key_from,
    }))
}

fn parse_key_source(text: &str) -> Result<KeySource, String> {
    KeySource::parse(text).map_err(|error| error.to_string())
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

/// An in-process credential broker for this command: the agent gets a voucher for its model
/// API's upstream, the real key stays here.
async fn credentials(
    common: &CommonArgs,
    choice: &ApiChoice,
) -> anyhow::Result<Arc<dyn paddock_agents::LaunchCredentials>> {
    let upstream = common
        .upstream
        .clone()
        .or_else(|| std::env::var(choice.upstream_env).ok().filter(|url| !url.is_empty()))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the agent needs a model API to reach through the credential proxy\nhint: pass `--upstream {}` (or set {}) and keep the key in `--key-from`",
                choice.public_url,
                choice.upstream_env
            )
        })?;
    let key = choice
        .key_from
        .read(crate::hardening::key_var_os)
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    let (name, header, scheme) = choice.api.upstream_auth();
    let broker = CredentialBroker::start(CredentialBrokerConfig {
        upstreams: vec![UpstreamConfig {
            name: name.into(),
            url: upstream,
            credential: key,
            header: header.into(),
            scheme: scheme.map(str::to_owned),
        }],
        trust: UpstreamTrust::from_env(),
        ..CredentialBrokerConfig::default()
    })
    .await
    .context("could not start the credential proxy")?;
    Ok(Arc::new(BrokerCredentials::single(
        Arc::new(broker),
        choice.api,
    )))
}

/// The variables that may hold the real key for this command (the `--key-from` variable, else
/// both vendors' default ones), to be taken out of the process environment before anything
/// runs.
pub fn key_variables(command: &AgentCommand) -> Vec<String> {
    let common = match command {
        AgentCommand::Run { common, .. } | AgentCommand::Chat { common } => common,
        AgentCommand::Probe { .. } => return Vec::new(),
    };
    match &common.key_from {
        Some(source) => source.env_var().map(str::to_owned).into_iter().collect(),
        None => vec!["ANTHROPIC_API_KEY".to_owned(), "OPENAI_API_KEY".to_owned()],
    }
}

pub async fn run(command: AgentCommand) -> anyhow::Result<ExitCode> {
    match command {
        AgentCommand::Probe { json } => probe(json).await,
        AgentCommand::Run { common, prompt } => {
            let session = open(&common).await?;
            let mut events = session.events().context("event stream")?;
            let receipt = session.start(Command::user("c1", prompt)).await;
            if let Receipt::Rejected { reason } = receipt {
                anyhow::bail!("the agent refused the prompt: {reason}");
            }
            let mut ok = false;
            while let Some(event) = events.recv().await {
                print_event(&event, common.json)?;
                answer_permissions(&session, &event, common.permissions).await;
                if let AgentEvent::TurnCompleted { outcome, .. } = &event {
                    ok = *outcome == TurnOutcome::Completed;
                    break;
                }
            }
            let facts = session.stop(stop_request()).await;
            if !common.json && !matches!(facts.reason, paddock_agents::CloseReason::Stopped { .. })
            {
                eprintln!("the agent exited unexpectedly ({:?})", facts.exit_status);
            }
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        AgentCommand::Chat { common } => chat(common).await,
    }
}

fn stop_request() -> StopRequest {
    StopRequest {
        reason: "paddock agent finished".into(),
        force_after: Duration::from_secs(10),
    }
}

async fn open(common: &CommonArgs) -> anyhow::Result<Session> {
    let working_directory = match &common.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    let sdk = AgentDriverSdk::new(host());
    let choice = api_choice(common, &sdk)?;
    let mut env = Vec::new();
    for name in &common.pass_env {
        if choice
            .as_ref()
            .is_some_and(|choice| choice.key_from.env_var() == Some(name.as_str()))
        {
            anyhow::bail!(
                "`--pass-env {name}` would hand the agent the real key; it gets a voucher instead"
            );
        }
        if let Ok(value) = std::env::var(name) {
            env.push((name.clone(), value));
        }
    }
    let launch_id = format!(
        "cli-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    );
    let request = OpenRequest {
        backend: common.backend,
        launch: Launch {
            working_directory,
            instructions: None,
            launch_id,
        },
        config: AgentConfig {
            model: common.model.clone().map_or(Model::Default, Model::Named),
            mode: match common.mode {
                ModeArg::Default => Mode::Default,
                ModeArg::AcceptEdits => Mode::AcceptEdits,
                ModeArg::Plan => Mode::Plan,
                ModeArg::BypassPermissions => Mode::BypassPermissions,
            },
        },
        env,
    };
    let sdk = match &choice {
        Some(choice) => {
            AgentDriverSdk::new(host().with_credentials(credentials(common, choice).await?))
        }
        None => sdk,
    };
    sdk.open(request).await.map_err(|error| {
        anyhow::anyhow!("{error}\nhint: `paddock agent probe` shows which backends are installed")
    })
}

async fn answer_permissions(session: &Session, event: &AgentEvent, permissions: Permissions) {
    if let AgentEvent::PermissionRequested { request_id, .. } = event {
        let decision = match permissions {
            Permissions::Allow => PermissionDecision::Allow,
            Permissions::Deny => PermissionDecision::Deny {
                message: "denied by `paddock agent --permissions deny`".into(),
            },
        };
        let _ = session.answer_permission(request_id, decision).await;
    }
}

async fn chat(common: CommonArgs) -> anyhow::Result<ExitCode> {
    let session = open(&common).await?;
    let mut events = session.events().context("event stream")?;
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
                    let command = Command::user(format!("c{sent}"), line);
                    let receipt = if sent == 1 { session.start(command).await } else { session.send(command).await };
                    match receipt {
                        Receipt::Queued { position } if !common.json => eprintln!("(queued, position {position})"),
                        Receipt::Rejected { reason } => {
                            eprintln!("rejected: {reason}");
                            completed += 1;
                        }
                        _ => {}
                    }
                }
            },
            event = events.recv() => match event {
                None => break,
                Some(event) => {
                    print_event(&event, common.json)?;
                    answer_permissions(&session, &event, common.permissions).await;
                    if matches!(event, AgentEvent::TurnCompleted { .. } | AgentEvent::CommandFailed { .. }) {
                        completed += 1;
                    }
                }
            },
        }
    }
    session.stop(stop_request()).await;
    Ok(ExitCode::SUCCESS)
}

/// The JSON form of an event (wire shapes live at the edge, not in the driver).
pub fn event_json(event: &AgentEvent) -> Value {
    let mut value = match event {
        AgentEvent::SessionStarted { vendor_session_id } => {
            json!({ "vendorSessionId": vendor_session_id })
        }
        AgentEvent::CommandAccepted { command_id } => json!({ "commandId": command_id }),
        AgentEvent::CommandFailed { command_id, reason } => {
            json!({ "commandId": command_id, "reason": reason })
        }
        AgentEvent::TurnStarted { command_id } => json!({ "commandId": command_id }),
        AgentEvent::AssistantTextDelta { text }
        | AgentEvent::AssistantMessageCompleted { text } => json!({ "text": text }),
        AgentEvent::ToolCallStarted {
            call_id,
            name,
            input,
        } => json!({ "callId": call_id, "name": name, "input": input }),
        AgentEvent::ToolCallFinished {
            call_id,
            is_error,
            output,
        } => json!({ "callId": call_id, "isError": is_error, "output": output }),
        AgentEvent::PermissionRequested {
            request_id,
            tool,
            input,
        } => json!({ "requestId": request_id, "tool": tool, "input": input }),
        AgentEvent::Usage {
            input_tokens,
            output_tokens,
        } => json!({ "inputTokens": input_tokens, "outputTokens": output_tokens }),
        AgentEvent::TurnCompleted {
            command_id,
            outcome,
        } => {
            let (kind, reason) = match outcome {
                TurnOutcome::Completed => ("completed", None),
                TurnOutcome::Interrupted => ("interrupted", None),
                TurnOutcome::Failed(reason) => ("failed", Some(reason)),
            };
            json!({ "commandId": command_id, "outcome": kind, "reason": reason })
        }
        AgentEvent::Error { message } => json!({ "message": message }),
    };
    value["type"] = json!(event.kind());
    value
}

fn print_event(event: &AgentEvent, as_json: bool) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    if as_json {
        writeln!(stdout, "{}", event_json(event))?;
        return Ok(());
    }
    match event {
        AgentEvent::AssistantTextDelta { text } => {
            write!(stdout, "{text}")?;
            stdout.flush()?;
        }
        AgentEvent::AssistantMessageCompleted { .. } => writeln!(stdout)?,
        AgentEvent::ToolCallStarted { name, input, .. } => eprintln!("→ {name} {input}"),
        AgentEvent::ToolCallFinished {
            is_error, output, ..
        } => {
            eprintln!(
                "← {}{}",
                if *is_error { "error: " } else { "" },
                output.lines().next().unwrap_or_default()
            )
        }
        AgentEvent::PermissionRequested { tool, .. } => eprintln!("? permission for {tool}"),
        AgentEvent::TurnCompleted {
            command_id,
            outcome,
        } => eprintln!("[{command_id}: {outcome:?}]"),
        AgentEvent::CommandFailed { command_id, reason } => {
            eprintln!("[{command_id} failed: {reason}]")
        }
        AgentEvent::Error { message } => eprintln!("error: {message}"),
        AgentEvent::SessionStarted { .. }
        | AgentEvent::CommandAccepted { .. }
        | AgentEvent::TurnStarted { .. }
        | AgentEvent::Usage { .. } => {}
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
    Ok(ExitCode::SUCCESS)
}
