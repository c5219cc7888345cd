//! The agents subsystem: coding-agent CLIs hosted by the daemon. It owns the daemon's one
//! credential broker (every launch's voucher is minted there, so `credentials/list` shows it),
//! opens sessions through `paddock-agents`, numbers each session's events and keeps them so a
//! client can re-attach from any sequence number, and answers the `agents/*` control methods.
//! Sessions outlive the connection that opened them and end with the daemon: at shutdown each
//! is stopped through the contract, bounded.
//!
//! Each launch reaches its model API through an upstream of its own on the broker, holding the
//! key for that launch only (handed over by the caller, or read by the daemon from a file or
//! the keychain); the upstream and its key are dropped when the session closes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use paddock_agents::{
    AgentConfig, AgentDriverSdk, AgentEvent, BackendId, BrokerCredentials, CloseReason,
    ClosedFacts, Command, HostConfig, Launch, McpServer, Mode, Model, ModelApi, OpenRequest,
    PermissionDecision, Receipt, Session, SessionState, StopRequest, ToolAccess, TurnOutcome,
};
use paddock_client::ClientEnv;
use paddock_client::config::{ModelApiKind, PaddockConfig, UpstreamRequest, resolve_upstream};
use paddock_client::control::{
    AgentEventFrame, AgentKey, AgentSummary, AgentUpstream, AgentsClosed, AgentsEventsParams,
    AgentsListResult, AgentsOpenParams, AgentsOpenResult, AgentsSendParams, AgentsSendResult,
    AgentsSessionParams, AgentsStopParams, ControlError, ErrorCode, SensitiveText,
};
use paddock_credentials::{CredentialBroker, KeySource, UpstreamConfig};
use paddock_secrets::SecretString;
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::{info, warn};

/// The variable that tells a session's `paddock` command where the control socket is.
pub const CONTROL_SOCKET_VAR: &str = "PADDOCK_CONTROL_SOCKET";
/// The variable that names a session's bot.
pub const BOT_VAR: &str = "PADDOCK_BOT_ID";

/// Events kept per session for re-attaching; older ones are dropped (and a client asking for
/// them is told how many it missed).
const MAX_KEPT_EVENTS: usize = 20_000;
/// Closed sessions kept for `agents/list`, `agents/snapshot` and `agents/events`.
const MAX_CLOSED_KEPT: usize = 64;
/// How long a stop waits for the CLI before its process group is killed, by default.
const DEFAULT_FORCE_AFTER: Duration = Duration::from_secs(10);
/// How long a daemon shutdown waits for its agents, each stopped with a shorter grace.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The daemon's hosted agents. Cheap to clone.
#[derive(Clone)]
pub struct AgentsHost {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AgentsHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentsHost")
            .field("boot", &self.inner.boot)
            .finish_non_exhaustive()
    }
}

struct Inner {
    broker: CredentialBroker,
    host: HostConfig,
    /// Part of every session id: an id from an earlier daemon run is recognised as such.
    boot: String,
    next: AtomicU64,
    sessions: Mutex<BTreeMap<String, Arc<Hosted>>>,
    shutting_down: AtomicBool,
    /// The daemon's own environment, for requests that name no upstream.
    env: ClientEnv,
    /// The control socket, given to every session's environment.
    socket: Option<PathBuf>,
    /// The sandbox a launch that asks for `landlock` gets when the daemon's own is off.
    sandbox_default: paddock_agents::sandbox::SandboxConfig,
    /// The fleet server's agent data plane, once the daemon has one: a bot's launch on a
    /// joined daemon reaches it through the proxy with its voucher.
    fleet: std::sync::OnceLock<crate::fleet_inbox::FleetInbox>,
}

/// What a launch gets beyond an `agents/open` request: the daemon's own launches (a task's
/// agent) add MCP servers, narrow the agent to them, and name the task they work for.
#[derive(Debug, Clone, Default)]
pub struct LaunchExtras {
    pub mcp_servers: Vec<McpServer>,
    pub tools: ToolAccess,
    /// The task this session works for: its voucher may then open that task's MCP connection.
    pub task: Option<String>,
}

/// Who a voucher speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identified {
    pub session: String,
    pub bot: String,
    pub task: Option<String>,
}

/// One hosted session.
struct Hosted {
    id: String,
    backend: BackendId,
    bot: String,
    task: Option<String>,
    cwd: PathBuf,
    started_at_unix_ms: u64,
    session: Session,
    /// The broker upstream holding this launch's key, if its API needs one.
    upstream: Option<String>,
    /// The broker upstream holding the bot's runner key for the fleet server, if it has one.
    fleet_upstream: Option<String>,
    /// Whether the first command was admitted (`start`), so later ones are `send`s.
    started: AtomicBool,
    next_command: AtomicU64,
    log: Mutex<EventLog>,
    /// The highest sequence number; changes wake followers.
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct EventLog {
    /// The sequence number of `events[0]`.
    first_seq: u64,
    events: std::collections::VecDeque<Value>,
    last_seq: u64,
    closed: Option<AgentsClosed>,
}

impl AgentsHost {
    /// Agents launched under `<state_dir>/agents/`, minting with `broker`. `paddock_command`
    /// is the executable put on PATH inside every session.
    pub fn new(
        broker: CredentialBroker,
        state_dir: &std::path::Path,
        paddock_command: Option<PathBuf>,
        env: ClientEnv,
        socket: Option<PathBuf>,
        agents: &paddock_client::config::AgentsConfig,
    ) -> Result<Self, ControlError> {
        let mut host = HostConfig::new(state_dir.join("agents"));
        host.paddock_command = paddock_command;
        let sandbox_default = sandbox_config(agents, socket.as_deref());
        host = configure_sandbox(host, agents, sandbox_default.clone());
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes).map_err(|error| internal(error.to_string()))?;
        let boot = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        Ok(Self {
            inner: Arc::new(Inner {
                broker,
                host,
                boot,
                next: AtomicU64::new(1),
                sessions: Mutex::new(BTreeMap::new()),
                shutting_down: AtomicBool::new(false),
                env,
                socket,
                sandbox_default,
                fleet: std::sync::OnceLock::new(),
            }),
        })
    }

    /// Gives bot launches the fleet server's agent data plane (set once, at startup).
    pub fn set_fleet(&self, fleet: crate::fleet_inbox::FleetInbox) {
        let _ = self.inner.fleet.set(fleet);
    }

    /// The broker every launch mints from.
    pub fn broker(&self) -> &CredentialBroker {
        &self.inner.broker
    }

    /// The running session of `bot`, if one is running.
    pub fn running_for_bot(&self, bot: &str) -> Option<String> {
        self.lock_sessions()
            .values()
            .find(|hosted| hosted.bot == bot && hosted.session.closed_now().is_none())
            .map(|hosted| hosted.id.clone())
    }

    /// The running session whose launch holds `voucher`: its id, bot and task.
    pub fn identify(&self, voucher: &str) -> Option<Identified> {
        let info = self.inner.broker.identify(voucher)?;
        let sessions = self.lock_sessions();
        let hosted = sessions.get(&info.launch)?;
        Some(Identified {
            session: hosted.id.clone(),
            bot: hosted.bot.clone(),
            task: hosted.task.clone(),
        })
    }

    /// Resolves once session `id` has sent its first request through the credential proxy
    /// (its model, for every backend the daemon hosts); `None` when its launch holds no voucher.
    pub fn first_proxied_request(
        &self,
        id: &str,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        self.inner.broker.first_request(id)
    }

    /// The `paddock` executable launches run (and their MCP servers start).
    pub fn paddock_command(&self) -> Option<&std::path::Path> {
        self.inner.host.paddock_command.as_deref()
    }

    /// The control socket every session's environment names.
    pub fn socket(&self) -> Option<&std::path::Path> {
        self.inner.socket.as_deref()
    }

    /// `agents/open`.
    pub async fn open(&self, params: AgentsOpenParams) -> Result<AgentsOpenResult, ControlError> {
        self.open_with(params, LaunchExtras::default()).await
    }

    /// Opens a session as `agents/open` does, with `extras` on top.
    pub async fn open_with(
        &self,
        params: AgentsOpenParams,
        extras: LaunchExtras,
    ) -> Result<AgentsOpenResult, ControlError> {
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Err(ControlError::new(
                ErrorCode::Busy,
                "the daemon is shutting down and starts no agents",
            ));
        }
        let backend = BackendId::parse(&params.backend).ok_or_else(|| {
            invalid(format!(
                "unknown backend `{}`; known: claude, codex, opencode, pi, cursor",
                params.backend
            ))
        })?;
        if !params.cwd.is_absolute() {
            return Err(invalid(format!(
                "the working directory `{}` must be an absolute path",
                params.cwd.display()
            )));
        }
        let mode = parse_mode(params.mode.as_deref())?;
        let permissions = parse_permissions(params.permissions.as_deref())?;
        let bot = params.bot.clone().unwrap_or_else(|| "default".to_owned());
        check_bot(&bot)?;
        let id = format!(
            "agt-{}-{}",
            self.inner.boot,
            self.inner.next.fetch_add(1, Ordering::SeqCst)
        );
        let sdk = AgentDriverSdk::new(self.inner.host.clone());
        let upstream = match sdk.model_api(backend) {
            None => None,
            Some(api) => Some(self.add_launch_upstream(&id, backend, api, &params).await?),
        };
        let fleet_upstream = self.add_fleet_upstream(&id, params.bot.as_deref()).await;
        let host = match (&upstream, sdk.model_api(backend)) {
            (Some(name), Some(api)) => {
                let (anthropic_upstream, openai_upstream) = match api {
                    ModelApi::AnthropicMessages => (Some(name.clone()), None),
                    ModelApi::OpenAiResponses | ModelApi::OpenAiChat => (None, Some(name.clone())),
                };
                self.inner
                    .host
                    .clone()
                    .with_credentials(Arc::new(BrokerCredentials {
                        broker: Arc::new(self.inner.broker.clone()),
                        anthropic_upstream,
                        openai_upstream,
                        paddock_upstream: name.clone(),
                        fleet_upstream: fleet_upstream.clone(),
                    }))
            }
            _ => self.inner.host.clone(),
        };
        let host = with_launch_sandbox(host, params.sandbox.as_ref(), &self.inner.sandbox_default)?;
        let request = OpenRequest {
            backend,
            launch: Launch {
                working_directory: params.cwd.clone(),
                instructions: params.instructions.clone().map(|content| {
                    paddock_agents::Instructions {
                        format: paddock_agents::InstructionsFormat::Markdown,
                        content,
                    }
                }),
                launch_id: id.clone(),
            },
            config: AgentConfig {
                model: params.model.clone().map_or(Model::Default, Model::Named),
                mode,
                mcp_servers: extras.mcp_servers,
                tools: extras.tools,
            },
            env: {
                // The session's `paddock` command reaches this daemon with its voucher.
                let mut env = params.env.clone();
                env.retain(|(name, _)| name != CONTROL_SOCKET_VAR && name != BOT_VAR);
                if let Some(socket) = &self.inner.socket {
                    env.push((CONTROL_SOCKET_VAR.to_owned(), socket.display().to_string()));
                }
                env.push((BOT_VAR.to_owned(), bot.clone()));
                env
            },
        };
        let session = match AgentDriverSdk::new(host).open(request).await {
            Ok(session) => session,
            Err(error) => {
                for name in upstream.iter().chain(&fleet_upstream) {
                    let _ = self.inner.broker.remove_upstream(name);
                }
                let code = match error {
                    paddock_agents::OpenError::NotInstalled { .. }
                    | paddock_agents::OpenError::Unsupported { .. }
                    | paddock_agents::OpenError::UnsupportedVersion { .. } => ErrorCode::NotFound,
                    paddock_agents::OpenError::WorkingDirectory(_)
                    | paddock_agents::OpenError::InvalidMcpServer { .. }
                    | paddock_agents::OpenError::NoMcpClient { .. } => ErrorCode::InvalidParams,
                    _ => ErrorCode::Internal,
                };
                return Err(ControlError::new(
                    code,
                    format!(
                        "{error}\nhint: `paddock agent probe` shows which backends are installed"
                    ),
                ));
            }
        };
        let events = session.events();
        let (changed, _) = watch::channel(0);
        let hosted = Arc::new(Hosted {
            id: id.clone(),
            backend,
            bot,
            task: extras.task,
            cwd: params.cwd.clone(),
            started_at_unix_ms: unix_ms(SystemTime::now()),
            session,
            upstream,
            fleet_upstream,
            started: AtomicBool::new(false),
            next_command: AtomicU64::new(1),
            log: Mutex::new(EventLog {
                first_seq: 1,
                ..EventLog::default()
            }),
            changed,
        });
        self.lock_sessions().insert(id.clone(), hosted.clone());
        info!(session = %id, backend = %backend, "hosted agent opened");
        if let Some(events) = events {
            tokio::spawn(pump(self.clone(), hosted.clone(), events, permissions));
        }
        let receipt = match &params.prompt {
            Some(prompt) => Some(hosted.admit(prompt.expose()).await),
            None => None,
        };
        Ok(AgentsOpenResult {
            session: hosted.summary(&self.inner.broker).await,
            receipt,
        })
    }

    /// For a bot's launch on a joined daemon: the broker upstream that holds the bot's runner
    /// key for the fleet server's agent data plane; its name. A server that cannot be reached
    /// leaves the launch without one (the bot still works on this machine).
    async fn add_fleet_upstream(&self, id: &str, bot: Option<&str>) -> Option<String> {
        let (bot, fleet) = (bot?, self.inner.fleet.get()?);
        let (server, key) = match fleet.upstream(bot).await {
            Ok(found) => found,
            Err(crate::fleet_inbox::FleetInboxError::NotJoined) => return None,
            Err(error) => {
                warn!(bot, %error, "the launch gets no fleet data plane");
                return None;
            }
        };
        let name = format!("fleet-{id}");
        let added = self
            .inner
            .broker
            .add_upstream(UpstreamConfig {
                name: name.clone(),
                url: server,
                credential: key,
                header: "authorization".to_owned(),
                scheme: Some("Bearer".to_owned()),
            })
            .await;
        match added {
            Ok(_) => Some(name),
            Err(error) => {
                warn!(bot, %error, "the launch gets no fleet data plane");
                None
            }
        }
    }

    /// Adds the broker upstream that holds this launch's key; returns its name.
    async fn add_launch_upstream(
        &self,
        id: &str,
        backend: BackendId,
        api: ModelApi,
        params: &AgentsOpenParams,
    ) -> Result<String, ControlError> {
        let resolved;
        let upstream = match &params.upstream {
            Some(upstream) => upstream,
            None => {
                resolved = self.resolve_own_upstream(backend, api).await?;
                &resolved
            }
        };
        let credential = match &upstream.key {
            AgentKey::Value(text) => SecretString::new(text.expose()),
            AgentKey::Source(source) => {
                let source =
                    KeySource::parse(source).map_err(|error| invalid(error.to_string()))?;
                if source.env_var().is_some() {
                    return Err(invalid(
                        "the daemon does not read keys from its own environment; hand the key over as a value or name a file: or keychain: source",
                    ));
                }
                tokio::task::spawn_blocking(move || source.read(|_| None))
                    .await
                    .map_err(|error| internal(error.to_string()))?
                    .map_err(|error| invalid(error.to_string()))?
            }
        };
        let name = format!("key-{id}");
        self.inner
            .broker
            .add_upstream(UpstreamConfig {
                name: name.clone(),
                url: upstream.url.clone(),
                credential,
                header: upstream.header.clone(),
                scheme: upstream.scheme.clone(),
            })
            .await
            .map_err(|error| invalid(error.to_string()))?;
        Ok(name)
    }

    /// The upstream from the daemon's own configuration and environment, for a request that
    /// names none (the same precedence as the CLI's, without flags). A key in the daemon's
    /// environment is read here: the daemon is the user's own process.
    async fn resolve_own_upstream(
        &self,
        backend: BackendId,
        api: ModelApi,
    ) -> Result<AgentUpstream, ControlError> {
        let env = self.inner.env.clone();
        let kind = match api {
            ModelApi::AnthropicMessages => ModelApiKind::AnthropicMessages,
            ModelApi::OpenAiResponses => ModelApiKind::OpenAiResponses,
            ModelApi::OpenAiChat => ModelApiKind::OpenAiChat,
        };
        tokio::task::spawn_blocking(move || {
            let config = PaddockConfig::load(&env).map_err(|error| invalid(error.to_string()))?;
            let resolved = resolve_upstream(
                &UpstreamRequest {
                    api: kind,
                    flag_url: None,
                    flag_key: None,
                },
                &env,
                &config,
            )
            .map_err(|error| {
                invalid(format!(
                    "`{backend}` needs a model API key, and the daemon has none configured: {error}"
                ))
            })?;
            let source =
                KeySource::parse(&resolved.key).map_err(|error| invalid(error.to_string()))?;
            let key = match source.env_var() {
                Some(_) => AgentKey::Value(SensitiveText::new(
                    source
                        .read(|name| env.var(name).cloned())
                        .map_err(|error| invalid(error.to_string()))?
                        .expose_secret(),
                )),
                None => AgentKey::Source(resolved.key),
            };
            Ok(AgentUpstream {
                url: resolved.url,
                header: resolved.header,
                scheme: resolved.scheme,
                key,
            })
        })
        .await
        .map_err(|error| internal(error.to_string()))?
    }

    /// `agents/send`.
    pub async fn send(&self, params: AgentsSendParams) -> Result<AgentsSendResult, ControlError> {
        let hosted = self.find(&params.id)?;
        Ok(hosted.admit(params.text.expose()).await)
    }

    /// `agents/interrupt`.
    pub async fn interrupt(
        &self,
        params: AgentsSessionParams,
    ) -> Result<AgentSummary, ControlError> {
        let hosted = self.find(&params.id)?;
        hosted
            .session
            .interrupt()
            .await
            .map_err(|error| ControlError::new(ErrorCode::InvalidParams, error.to_string()))?;
        Ok(hosted.summary(&self.inner.broker).await)
    }

    /// `agents/stop`: stops the session and waits until it closed and its events are logged.
    pub async fn stop(&self, params: AgentsStopParams) -> Result<AgentsClosed, ControlError> {
        let hosted = self.find(&params.id)?;
        let request = StopRequest {
            reason: params
                .reason
                .unwrap_or_else(|| "stopped by the owner".to_owned()),
            force_after: params
                .force_after_ms
                .map_or(DEFAULT_FORCE_AFTER, Duration::from_millis),
        };
        hosted.session.stop(request).await;
        Ok(hosted.wait_logged_close().await)
    }

    /// `agents/snapshot`.
    pub async fn snapshot(
        &self,
        params: AgentsSessionParams,
    ) -> Result<AgentSummary, ControlError> {
        let hosted = self.find(&params.id)?;
        Ok(hosted.summary(&self.inner.broker).await)
    }

    /// `agents/list`: every session of this daemon run, oldest first.
    pub async fn list(&self) -> AgentsListResult {
        let all: Vec<Arc<Hosted>> = self.lock_sessions().values().cloned().collect();
        let mut sessions = Vec::with_capacity(all.len());
        for hosted in all {
            sessions.push(hosted.summary(&self.inner.broker).await);
        }
        sessions.sort_by_key(|summary| summary.started_at_unix_ms);
        AgentsListResult { sessions }
    }

    /// `agents/events`: a cursor over the session's events from `params.from`.
    pub fn follow(&self, params: &AgentsEventsParams) -> Result<EventCursor, ControlError> {
        let hosted = self.find(&params.id)?;
        let changed = hosted.changed.subscribe();
        Ok(EventCursor {
            hosted,
            next_seq: params.from.max(1),
            changed,
        })
    }

    /// Stops every running session through the contract, each with a short grace, all at once,
    /// and waits (bounded) for them to close. New opens are refused from here on.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let running: Vec<Arc<Hosted>> = self
            .lock_sessions()
            .values()
            .filter(|hosted| hosted.session.closed_now().is_none())
            .cloned()
            .collect();
        if running.is_empty() {
            return;
        }
        info!(sessions = running.len(), "stopping hosted agents");
        let stops = running.iter().map(|hosted| {
            hosted.session.stop(StopRequest {
                reason: "the daemon is shutting down".to_owned(),
                force_after: SHUTDOWN_GRACE,
            })
        });
        let all = futures_util::future::join_all(stops);
        if tokio::time::timeout(SHUTDOWN_GRACE * 2, all).await.is_err() {
            warn!("hosted agents did not all close in time");
        }
    }

    fn find(&self, id: &str) -> Result<Arc<Hosted>, ControlError> {
        if let Some(hosted) = self.lock_sessions().get(id) {
            return Ok(hosted.clone());
        }
        let earlier_run = id
            .strip_prefix("agt-")
            .and_then(|rest| rest.split_once('-'))
            .is_some_and(|(boot, _)| boot != self.inner.boot);
        let message = if earlier_run {
            format!(
                "agent session `{id}` belonged to an earlier run of the daemon, which has restarted since; hosted agents do not survive a restart\nhint: start a new one with `paddock agent start`"
            )
        } else {
            format!(
                "no agent session `{id}`\nhint: `paddock agent list` shows this daemon's sessions"
            )
        };
        Err(ControlError::new(ErrorCode::NotFound, message))
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Hosted>>> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// After a session closed: drop its keys and forget the oldest closed sessions.
    fn closed(&self, hosted: &Hosted) {
        for name in hosted.upstream.iter().chain(&hosted.fleet_upstream) {
            if let Err(error) = self.inner.broker.remove_upstream(name) {
                warn!(session = %hosted.id, %error, "could not remove a closed launch's upstream");
            }
        }
        let mut sessions = self.lock_sessions();
        let closed: Vec<String> = sessions
            .iter()
            .filter(|(_, hosted)| hosted.session.closed_now().is_some())
            .map(|(id, _)| id.clone())
            .collect();
        let excess = closed.len().saturating_sub(MAX_CLOSED_KEPT);
        for id in closed.iter().take(excess) {
            sessions.remove(id);
        }
    }
}

/// Confines launches with Landlock unless the config says `sandbox = "off"`: by default where
/// the kernel supports it (else one info line says launches run unconfined); when the config
/// asks for `landlock` on a kernel without it, every launch fails with a typed error.
fn configure_sandbox(
    host: HostConfig,
    agents: &paddock_client::config::AgentsConfig,
    sandbox: paddock_agents::sandbox::SandboxConfig,
) -> HostConfig {
    use paddock_client::config::SandboxMode;
    let support = paddock_process::sandbox::status();
    let available = matches!(
        support,
        paddock_process::sandbox::SandboxSupport::Available { .. }
    );
    match agents.sandbox {
        Some(SandboxMode::Off) => {
            info!(
                "agent sandbox is off (config `sandbox = \"off\"`): agent launches can read every file you can"
            );
            host
        }
        Some(SandboxMode::Landlock) => host.with_sandbox(sandbox),
        None if available => {
            info!(?support, "agent launches are confined with Landlock");
            host.with_sandbox(sandbox)
        }
        None => {
            info!(
                ?support,
                "Landlock is not available on this kernel: agent launches run unconfined"
            );
            host
        }
    }
}

/// The sandbox every launch gets: the config file's widening, and the control socket's
/// directory connectable.
fn sandbox_config(
    agents: &paddock_client::config::AgentsConfig,
    socket: Option<&std::path::Path>,
) -> paddock_agents::sandbox::SandboxConfig {
    paddock_agents::sandbox::SandboxConfig {
        extra_read: agents.sandbox_read.clone(),
        extra_exec: agents.sandbox_exec.clone(),
        extra_write: agents.sandbox_write.clone(),
        connect: socket
            .and_then(std::path::Path::parent)
            .map(|dir| vec![dir.to_path_buf()])
            .unwrap_or_default(),
        allow_unconfined: false,
    }
}

/// One launch's sandbox: the daemon's, switched on or off and widened by the request.
fn with_launch_sandbox(
    mut host: HostConfig,
    request: Option<&paddock_client::control::AgentSandbox>,
    default: &paddock_agents::sandbox::SandboxConfig,
) -> Result<HostConfig, ControlError> {
    let Some(request) = request else {
        return Ok(host);
    };
    match request.mode.as_deref() {
        None => {}
        Some("off") => {
            if !(request.read.is_empty() && request.exec.is_empty() && request.write.is_empty()) {
                return Err(invalid("a sandbox that is off takes no paths"));
            }
            info!("this agent launch runs without the sandbox, as its request asks");
            host.sandbox = None;
            return Ok(host);
        }
        Some("landlock") if host.sandbox.is_none() => host.sandbox = Some(default.clone()),
        Some("landlock") => {}
        Some(other) => {
            return Err(invalid(format!(
                "unknown sandbox mode `{other}`; use `landlock` or `off`"
            )));
        }
    }
    for path in request
        .read
        .iter()
        .chain(&request.exec)
        .chain(&request.write)
    {
        if !path.is_absolute() {
            return Err(invalid(format!(
                "sandbox path `{}` must be absolute",
                path.display()
            )));
        }
    }
    if let Some(sandbox) = host.sandbox.as_mut() {
        sandbox.extra_read.extend(request.read.iter().cloned());
        sandbox.extra_exec.extend(request.exec.iter().cloned());
        sandbox.extra_write.extend(request.write.iter().cloned());
    }
    Ok(host)
}

/// Reads a session's events into its log, answers permission requests by the session's
/// policy, and records how it closed.
async fn pump(
    agents: AgentsHost,
    hosted: Arc<Hosted>,
    mut events: tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
    permissions: Permissions,
) {
    while let Some(event) = events.recv().await {
        if let AgentEvent::PermissionRequested { request_id, .. } = &event {
            let decision = match permissions {
                Permissions::Allow => PermissionDecision::Allow,
                Permissions::Deny => PermissionDecision::Deny {
                    message: "denied by the session's permission policy".to_owned(),
                },
            };
            let _ = hosted.session.answer_permission(request_id, decision).await;
        }
        hosted.push(event_json(&event));
    }
    let facts = hosted.session.closed().await;
    hosted.close(&facts);
    info!(session = %hosted.id, reason = ?facts.reason, "hosted agent closed");
    agents.closed(&hosted);
}

impl Hosted {
    /// The next command: the first is admitted with `start`, later ones with `send`.
    async fn admit(&self, text: &str) -> AgentsSendResult {
        let command_id = format!("c{}", self.next_command.fetch_add(1, Ordering::SeqCst));
        let command = Command::user(command_id.clone(), text);
        let receipt = if self.started.swap(true, Ordering::SeqCst) {
            self.session.send(command).await
        } else {
            self.session.start(command).await
        };
        let (receipt, position, reason) = match receipt {
            Receipt::Accepted => ("accepted", None, None),
            Receipt::Queued { position } => ("queued", Some(position), None),
            Receipt::Rejected { reason } => ("rejected", None, Some(reason)),
        };
        AgentsSendResult {
            command_id,
            receipt: receipt.to_owned(),
            position,
            reason,
        }
    }

    fn log(&self) -> std::sync::MutexGuard<'_, EventLog> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, event: Value) {
        let seq = {
            let mut log = self.log();
            log.last_seq += 1;
            log.events.push_back(event);
            if log.events.len() > MAX_KEPT_EVENTS {
                log.events.pop_front();
                log.first_seq += 1;
            }
            log.last_seq
        };
        self.changed.send_replace(seq);
    }

    fn close(&self, facts: &ClosedFacts) {
        let (reason, detail, forced) = match &facts.reason {
            CloseReason::Stopped { reason, forced } => {
                let kind = if reason == "the daemon is shutting down" {
                    "daemon_shutdown"
                } else {
                    "stopped"
                };
                (kind, Some(reason.clone()), *forced)
            }
            CloseReason::Crashed => ("crashed", None, false),
        };
        let seq = {
            let mut log = self.log();
            log.closed = Some(AgentsClosed {
                id: self.id.clone(),
                reason: reason.to_owned(),
                detail,
                forced,
                exit_code: facts.exit_status.and_then(|status| status.code()),
                failed_commands: facts.failed_commands.clone(),
                last_seq: log.last_seq,
            });
            log.last_seq
        };
        self.changed.send_replace(seq);
    }

    /// Waits until the pump has logged the close (it follows the session's own close).
    async fn wait_logged_close(&self) -> AgentsClosed {
        let mut changed = self.changed.subscribe();
        loop {
            if let Some(closed) = self.log().closed.clone() {
                return closed;
            }
            if changed.changed().await.is_err() {
                // The pump is gone without a close: report what the session says.
                let facts = self.session.closed().await;
                self.close(&facts);
            }
        }
    }

    async fn summary(&self, broker: &CredentialBroker) -> AgentSummary {
        let snapshot = self.session.snapshot().await;
        let state = match snapshot.state {
            SessionState::Ready => "ready",
            SessionState::Idle => "idle",
            SessionState::Busy => "busy",
            SessionState::Stopping => "stopping",
            SessionState::Closed => "closed",
        };
        let voucher = broker
            .list()
            .into_iter()
            .find(|voucher| voucher.launch == self.id)
            .map(|voucher| voucher.id);
        AgentSummary {
            id: self.id.clone(),
            backend: self.backend.as_str().to_owned(),
            bot: self.bot.clone(),
            state: state.to_owned(),
            current_command: snapshot.current_command,
            queued: snapshot.queued,
            pid: snapshot.pid,
            cwd: self.cwd.clone(),
            voucher,
            last_seq: self.log().last_seq,
            started_at_unix_ms: self.started_at_unix_ms,
        }
    }
}

/// Follows one session's events in order, without gaps, from a sequence number.
pub struct EventCursor {
    hosted: Arc<Hosted>,
    next_seq: u64,
    changed: watch::Receiver<u64>,
}

impl std::fmt::Debug for EventCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventCursor")
            .field("session", &self.hosted.id)
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

/// What a cursor yields: the next event, or the close once every event was yielded.
#[derive(Debug)]
pub enum CursorItem {
    Event(AgentEventFrame),
    Closed(AgentsClosed),
}

impl EventCursor {
    pub async fn next(&mut self) -> CursorItem {
        loop {
            {
                let log = self.hosted.log();
                if self.next_seq < log.first_seq {
                    // Asked for events no longer kept: say how many, then go on from the
                    // oldest kept one.
                    let missed = log.first_seq - self.next_seq;
                    let seq = self.next_seq;
                    self.next_seq = log.first_seq;
                    return CursorItem::Event(AgentEventFrame {
                        seq,
                        event: json!({ "type": "events_dropped", "count": missed }),
                    });
                }
                if self.next_seq <= log.last_seq {
                    let index =
                        usize::try_from(self.next_seq - log.first_seq).unwrap_or(usize::MAX);
                    if let Some(event) = log.events.get(index) {
                        let frame = AgentEventFrame {
                            seq: self.next_seq,
                            event: event.clone(),
                        };
                        self.next_seq += 1;
                        return CursorItem::Event(frame);
                    }
                }
                if let Some(closed) = &log.closed {
                    return CursorItem::Closed(closed.clone());
                }
            }
            if self.changed.changed().await.is_err() {
                let facts = self.hosted.session.closed().await;
                self.hosted.close(&facts);
            }
        }
    }
}

/// How a session answers permission requests.
#[derive(Debug, Clone, Copy)]
enum Permissions {
    Allow,
    Deny,
}

fn parse_permissions(text: Option<&str>) -> Result<Permissions, ControlError> {
    match text.unwrap_or("deny") {
        "deny" => Ok(Permissions::Deny),
        "allow" => Ok(Permissions::Allow),
        other => Err(invalid(format!(
            "unknown permissions `{other}`; use `allow` or `deny`"
        ))),
    }
}

fn parse_mode(text: Option<&str>) -> Result<Mode, ControlError> {
    match text.unwrap_or("default") {
        "default" => Ok(Mode::Default),
        "acceptEdits" => Ok(Mode::AcceptEdits),
        "plan" => Ok(Mode::Plan),
        "bypassPermissions" => Ok(Mode::BypassPermissions),
        other => Err(invalid(format!(
            "unknown mode `{other}`; use default, acceptEdits, plan or bypassPermissions"
        ))),
    }
}

/// Bot ids name directories and channel refs: plain words.
pub(crate) fn check_bot(bot: &str) -> Result<(), ControlError> {
    if paddock_client::control::is_bot_id(bot) {
        Ok(())
    } else {
        Err(invalid(format!(
            "invalid bot id `{bot}`: use 1 to 64 letters, digits, `-`, `_` or `.`"
        )))
    }
}

fn invalid(message: impl Into<String>) -> ControlError {
    ControlError::new(ErrorCode::InvalidParams, message)
}

fn internal(message: impl Into<String>) -> ControlError {
    ControlError::new(ErrorCode::Internal, message)
}

fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The wire form of an event: `type` and the event's fields in camelCase.
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
