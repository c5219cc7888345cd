//! The daemon's startup sequence, main loop and shutdown, in the order the spec fixes:
//! token generated in memory → loopback listener bound → PID record written with the port →
//! device discovery and session rehydration → token file published → ready.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use base64::Engine as _;
use paddock_client::control::{DaemonState, StatusResult};
use paddock_client::{ClientEnv, DaemonPaths, PidRecord, SecretString};
use paddock_credentials::{CredentialBroker, CredentialBrokerConfig, UpstreamTrust};

use crate::agents::AgentsHost;
use crate::bots::BotsHost;
use paddock_ingress::{BoundIngress, IngressConfig};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};
use tracing::{error, info, warn};

use paddock_devices::{Pool, PoolConfig};
use paddock_store::Store;
use paddock_tools::discovery::SelectionInput;
use paddock_tools::{
    Policy, PolicyProfile, ProcessOptions, Registry, RegistryConfig, StartupSelection,
    StderrAuditSink,
};

use crate::control::{ControlHandler as _, bind_control_socket, serve_control};
use crate::devices::PoolSubsystem;
use crate::files;
use crate::lock::{InstanceLock, LockAttempt};
use crate::mcp::McpHost;
use crate::pii::PiiHost;
use crate::services::{ControlServices, DaemonFacts};
use crate::subsystem::{BoxFuture, Subsystem};

/// How long a failed daemon keeps answering `503 Daemon startup failed` before it exits, so
/// that held requests and status callers can learn why.
const FAILED_LINGER: Duration = Duration::from_secs(1);

/// MCP settings of the daemon.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// The policy profile every local caller gets (the owner's default is `full`).
    pub policy: PolicyProfile,
    /// Startup discovery defaults from the environment and the command line.
    pub selection: SelectionInput,
    /// `--debug`: registers tools that need it.
    pub debug: bool,
    /// How long a socket session with a client-chosen id keeps its device after its last
    /// connection closes, for the client to reconnect (zero releases at once).
    pub session_grace: Duration,
    /// `--tool-call-recording`: every session records its tool calls, for `exportPlan`.
    pub tool_call_recording: bool,
    /// A task keeps a screenshot with every this many tool calls (0: only at its end).
    pub task_screenshot_every: u64,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            policy: PolicyProfile::Full,
            selection: SelectionInput::default(),
            debug: false,
            session_grace: Duration::from_secs(60),
            tool_call_recording: false,
            task_screenshot_every: crate::tasks::TaskOptions::default().screenshot_every,
        }
    }
}

/// Everything the daemon needs to run.
pub struct DaemonConfig {
    /// The launch environment: paths resolve against it.
    pub env: ClientEnv,
    pub ingress: IngressConfig,
    pub mcp: McpOptions,
    /// The device pool's settings.
    pub devices: PoolConfig,
    /// How long in-flight HTTP requests may take to finish during shutdown.
    pub drain_timeout: Duration,
    pub subsystems: Vec<Arc<dyn Subsystem>>,
}

impl std::fmt::Debug for DaemonConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonConfig")
            .field("ingress", &self.ingress)
            .field("drain_timeout", &self.drain_timeout)
            .field(
                "subsystems",
                &self.subsystems.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// How a daemon run ended.
#[derive(Debug)]
pub enum RunOutcome {
    /// Served, then stopped on request or signal.
    Stopped,
    /// Another daemon with the same isolation suffix holds the lock.
    AlreadyRunning,
    /// A startup step failed; the daemon answered 503 and exited.
    StartupFailed(anyhow::Error),
}

/// Delays and failures injected through `PADDOCK_DEBUG_*` variables, so that clients' hold,
/// retry and shutdown handling can be exercised against a real daemon. Off unless set.
#[derive(Debug, Clone, Default)]
pub struct FaultInjection {
    pub startup_delay: Duration,
    pub fail_startup: bool,
    pub shutdown_delay: Duration,
    /// Every device boot waits this long first (see `PoolConfig::boot_delay`).
    pub device_boot_delay: Duration,
}

impl FaultInjection {
    pub const STARTUP_DELAY_VAR: &str = "PADDOCK_DEBUG_STARTUP_DELAY_MS";
    pub const FAIL_STARTUP_VAR: &str = "PADDOCK_DEBUG_FAIL_STARTUP";
    pub const SHUTDOWN_DELAY_VAR: &str = "PADDOCK_DEBUG_SHUTDOWN_DELAY_MS";
    pub const DEVICE_BOOT_DELAY_VAR: &str = "PADDOCK_DEBUG_DEVICE_BOOT_DELAY_MS";

    pub fn from_env(env: &ClientEnv) -> anyhow::Result<Option<Self>> {
        let millis = |name: &str| -> anyhow::Result<Duration> {
            match env.var(name) {
                None => Ok(Duration::ZERO),
                Some(value) => value
                    .to_str()
                    .and_then(|text| text.parse::<u64>().ok())
                    .map(Duration::from_millis)
                    .with_context(|| format!("`{name}` must be a whole number of milliseconds")),
            }
        };
        let faults = Self {
            startup_delay: millis(Self::STARTUP_DELAY_VAR)?,
            fail_startup: env.var(Self::FAIL_STARTUP_VAR).is_some_and(|v| v == "1"),
            shutdown_delay: millis(Self::SHUTDOWN_DELAY_VAR)?,
            device_boot_delay: millis(Self::DEVICE_BOOT_DELAY_VAR)?,
        };
        let active = !faults.startup_delay.is_zero()
            || faults.fail_startup
            || !faults.shutdown_delay.is_zero()
            || !faults.device_boot_delay.is_zero();
        Ok(active.then_some(faults))
    }
}

impl Subsystem for FaultInjection {
    fn name(&self) -> &'static str {
        "fault-injection"
    }

    fn discover_devices(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            tokio::time::sleep(self.startup_delay).await;
            if self.fail_startup {
                anyhow::bail!("startup failure injected by `{}`", Self::FAIL_STARTUP_VAR);
            }
            Ok(())
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(self.shutdown_delay))
    }
}

/// Generates a fresh token: 32 random bytes, base64url without padding (256 bits).
pub fn generate_token() -> anyhow::Result<SecretString> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|error| anyhow::anyhow!("OS random source: {error}"))?;
    Ok(SecretString::new(
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
    ))
}

/// Runs the daemon until it is stopped. `on_ready` runs once the token is published.
pub async fn run(
    config: DaemonConfig,
    on_ready: impl FnOnce(&StatusResult),
) -> anyhow::Result<RunOutcome> {
    raise_open_file_limit();
    let paths = DaemonPaths::resolve(&config.env);
    paths
        .prepare_daemon_dirs()
        .context("the daemon's runtime directory is not safe to use")?;
    files::create_private_dir(&paths.state_dir).with_context(|| {
        format!(
            "could not create state directory `{}`",
            paths.state_dir.display()
        )
    })?;
    let lock = match InstanceLock::try_acquire(&paths.lock_file)
        .with_context(|| format!("could not open lock file `{}`", paths.lock_file.display()))?
    {
        LockAttempt::Acquired(lock) => lock,
        LockAttempt::HeldElsewhere => return Ok(RunOutcome::AlreadyRunning),
    };
    let started = Instant::now();
    let (mcp, pool, store) = build_mcp(&config, &paths, started)?;
    // The one broker: the agents subsystem adds an upstream per launch (it listens nowhere
    // until then) and mints every launch's voucher here.
    let credentials = CredentialBroker::start(CredentialBrokerConfig {
        trust: UpstreamTrust::default().with_env(|name| config.env.var(name).cloned()),
        ..CredentialBrokerConfig::default()
    })
    .await
    .context("could not start the credential broker")?;
    // The config file's agent timing; a file that does not parse fails the start, naming it.
    let file = paddock_client::config::PaddockConfig::load(&config.env)
        .context("the config file is not valid")?;
    let timing = crate::runner::Timing {
        idle_stop: file
            .agents
            .idle_stop
            .unwrap_or(crate::runner::DEFAULT_IDLE_STOP),
        stall_after: file
            .agents
            .stall_after
            .unwrap_or(crate::runner::DEFAULT_STALL_AFTER),
    };
    let agents = AgentsHost::new(
        credentials.clone(),
        &paths.state_dir,
        std::env::current_exe().ok(),
        config.env.clone(),
        Some(paths.socket.clone()),
        &file.agents,
    )
    .map_err(|error| anyhow::anyhow!("{error}"))?;
    // Reads no pipeline yet: each bot's file is loaded on first use, so a bad file is that
    // bot's error and never stops the daemon.
    let tasks = crate::tasks::TaskHost::new(
        store.clone(),
        pool.clone(),
        agents.clone(),
        mcp.owner_subject().to_owned(),
        &paths.state_dir,
        crate::tasks::TaskOptions {
            record_sessions: config.mcp.tool_call_recording,
            screenshot_every: config.mcp.task_screenshot_every,
            ..crate::tasks::TaskOptions::default()
        },
    )
    .context("could not open the task host")?;
    let recorder = tasks.session_recorder();
    let mcp = Arc::new(mcp.with_tasks(Arc::new(tasks.clone()), recorder));
    let pii = PiiHost::open(&paths.state_dir);
    let fleet_tls = fleet_tls(&config).context("could not set up TLS for the fleet link")?;
    let fleet_inbox =
        crate::fleet_inbox::FleetInbox::new(paths.state_dir.clone(), fleet_tls.clone());
    agents.set_fleet(fleet_inbox.clone());
    let mut subsystems: Vec<Arc<dyn Subsystem>> = vec![Arc::new(PoolSubsystem(pool.clone()))];
    subsystems.extend(config.subsystems.iter().cloned());

    // 1. The token exists only in memory until startup finishes.
    let token = generate_token()?;
    let (state_tx, state_rx) = watch::channel(DaemonState::Starting);

    // 2. Bind the listener. A failure here leaves any existing token file untouched.
    let ingress = BoundIngress::bind(&config.ingress, token.clone(), state_rx.clone())
        .await
        .context("could not start the HTTP ingress")?;
    let port = ingress.port();
    let http_endpoint = format!("http://127.0.0.1:{port}/mcp");
    let control_listener = bind_control_socket(&paths.socket)
        .with_context(|| format!("could not bind control socket `{}`", paths.socket.display()))?;

    // 3. The PID record makes the port discoverable before the token is published.
    let pid = std::process::id();
    // Start time and command line let `daemon stop` tell this process from a later one that
    // reuses its pid.
    let facts = paddock_client::pid::ProcessFacts::current()
        .context("could not read this process's own /proc entry")?;
    let record = PidRecord {
        pid,
        start_ticks: Some(facts.start_ticks),
        cmdline: facts.cmdline,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        http_port: Some(port),
        socket: paths.socket.clone(),
        started_at_unix_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0),
    };
    files::publish_private(&paths.pid_file, &record.to_json_bytes())
        .with_context(|| format!("could not write PID record `{}`", paths.pid_file.display()))?;
    info!(pid, port, socket = %paths.socket.display(), "listening; starting subsystems");

    let (stop_tx, mut stop_rx) = mpsc::channel::<()>(1);
    let runtime = Arc::new(ControlServices {
        daemon: DaemonFacts {
            pid,
            started,
            state: state_rx.clone(),
            http_endpoint: http_endpoint.clone(),
            socket: paths.socket.clone(),
            stop: stop_tx,
            token: token.clone(),
        },
        pool: pool.clone(),
        mcp: mcp.clone(),
        credentials: credentials.clone(),
        pii: pii.clone(),
        agents: agents.clone(),
        bots: BotsHost::new(store, agents.clone(), pii, timing, fleet_inbox.clone()),
        tasks: tasks.clone(),
    });
    let (serve_stop_tx, serve_stop_rx) = watch::channel(false);
    let control_task = tokio::spawn(serve_control(
        control_listener,
        runtime.clone(),
        serve_stop_rx.clone(),
    ));
    let mut ingress_stop = serve_stop_rx.clone();
    let ingress_task = tokio::spawn(ingress.serve(mcp.http_router(), async move {
        let _ = ingress_stop.wait_for(|stop| *stop).await;
    }));

    let mut signals = Signals::install()?;

    // 4. Device discovery and session rehydration; a stop request or signal aborts startup.
    let startup =
        async {
            for subsystem in &subsystems {
                subsystem.discover_devices().await.with_context(|| {
                    format!("device discovery in `{}` failed", subsystem.name())
                })?;
            }
            for subsystem in &subsystems {
                subsystem.rehydrate_sessions().await.with_context(|| {
                    format!("session rehydration in `{}` failed", subsystem.name())
                })?;
            }
            // 5. Publish the token file: from here on clients can authenticate.
            files::publish_token(&paths.token_file, &token).with_context(|| {
                format!(
                    "could not publish token file `{}`",
                    paths.token_file.display()
                )
            })
        };
    let startup_result = tokio::select! {
        result = startup => Some(result),
        _ = stop_rx.recv() => None,
        _ = signals.next() => None,
    };

    let outcome = match startup_result {
        Some(Ok(())) => {
            state_tx.send_replace(DaemonState::Ready);
            info!(endpoint = %http_endpoint, "ready");
            let fleet_link = tokio::spawn(
                crate::fleet::FleetLinkHost {
                    state_dir: paths.state_dir.clone(),
                    mcp: mcp.clone(),
                    pool: pool.clone(),
                    tls: fleet_tls.clone(),
                    bots: runtime.bots.clone(),
                }
                .run(),
            );
            on_ready(&runtime.status());
            tokio::select! {
                _ = stop_rx.recv() => info!("stop requested over the control socket"),
                signal = signals.next() => info!(signal, "stop requested by signal"),
            }
            fleet_link.abort();
            RunOutcome::Stopped
        }
        Some(Err(startup_error)) => {
            error!(error = format!("{startup_error:#}"), "startup failed");
            state_tx.send_replace(DaemonState::Failed);
            tokio::time::sleep(FAILED_LINGER).await;
            RunOutcome::StartupFailed(startup_error)
        }
        None => {
            info!("stopped during startup");
            RunOutcome::Stopped
        }
    };

    // Shutdown: refuse new work, stop subsystems, drain HTTP, remove what is ours.
    if !matches!(outcome, RunOutcome::StartupFailed(_)) {
        state_tx.send_replace(DaemonState::ShuttingDown);
    }
    tasks.shutdown().await;
    agents.shutdown().await;
    for subsystem in subsystems.iter().rev() {
        subsystem.shutdown().await;
    }
    // After the agents stop: whatever still holds a voucher loses it now.
    credentials.shutdown();
    mcp.close_subscriptions();
    let _ = serve_stop_tx.send(true);
    match tokio::time::timeout(config.drain_timeout, ingress_task).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(error))) => warn!(%error, "HTTP ingress ended with an error"),
        Ok(Err(error)) => warn!(%error, "HTTP ingress task failed"),
        Err(_) => warn!("in-flight HTTP requests did not finish in time; closing them"),
    }
    let _ = control_task.await;
    mcp.flush_audit();
    cleanup_files(&paths, &token, pid);
    drop(lock);
    info!("stopped");
    Ok(outcome)
}

/// Raises the soft open-file limit to the hard limit. Devices, agents and connections each
/// cost descriptors, and the common soft limit of 1024 would turn a burst of connections into
/// accept failures long before the connection caps apply.
fn raise_open_file_limit() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

    let limit = getrlimit(Resource::Nofile);
    let Some(hard) = limit.maximum else {
        // Unlimited hard limit: the kernel still caps the soft one at `nr_open`; leave it.
        return;
    };
    if limit.current == Some(hard) {
        return;
    }
    match setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: Some(hard),
        },
    ) {
        Ok(()) => info!(open_files = hard, "raised the open-file limit"),
        Err(error) => warn!(%error, "could not raise the open-file limit"),
    }
}

/// Opens the store and builds the tool registry. Configuration errors (unknown tool names,
/// conflicting defaults, an unreadable database) fail here, before anything is bound.
/// The TLS client configuration of the fleet link: the platform's and Mozilla's roots plus
/// `SSL_CERT_FILE`/`SSL_CERT_DIR`. Roots that cannot be loaded leave a configuration that
/// trusts none, so an `https://` server fails with a clear TLS error while `http://` on
/// loopback still works.
fn fleet_tls(config: &DaemonConfig) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let trust = UpstreamTrust::default().with_env(|name| config.env.var(name).cloned());
    let tls = paddock_credentials::tls_client_config(&trust, true).or_else(|error| {
        error!(%error, "the fleet link's TLS roots could not be loaded; https:// servers will fail");
        paddock_credentials::tls_client_config(&trust, false)
    })?;
    Ok(Arc::new(tls))
}

fn build_mcp(
    config: &DaemonConfig,
    paths: &DaemonPaths,
    started: Instant,
) -> anyhow::Result<(McpHost, Pool, Arc<Store>)> {
    let database = paths.state_dir.join("paddock.db");
    let store = Arc::new(Store::open(&database)?);
    let catalog = paddock_tools::catalog::builtin();
    let (startup, ignored) = StartupSelection::parse(&catalog, &config.mcp.selection)
        .context("invalid startup tool selection")?;
    for name in ignored {
        info!(
            tool = %name.name,
            layer = name.layer,
            "ignoring an always-on tool in the startup selection: it has no enable/disable state"
        );
    }
    let policy = Arc::new(Policy::for_profile(config.mcp.policy, &catalog));
    let state_dir = paths.state_dir.clone();
    let info: paddock_tools::server::InfoSource = Arc::new(move || {
        serde_json::json!({
            "pid": std::process::id(),
            "version": env!("CARGO_PKG_VERSION"),
            "uptimeMs": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "stateDir": state_dir,
        })
    });
    let pool = Pool::new(config.devices.clone(), store.clone(), new_instance_id()?);
    let registry = Registry::new(RegistryConfig {
        catalog,
        startup,
        process_options: ProcessOptions {
            debug: config.mcp.debug,
        },
        store: store.clone(),
        audit: Arc::new(StderrAuditSink::new()),
        info,
    });
    registry.set_web_storage_dir(paths.state_dir.join("web-storage"));
    info!(policy = %config.mcp.policy, debug = config.mcp.debug, "MCP tools registered");
    let host = McpHost::new(registry, policy, Arc::new(pool.clone()))
        .with_session_grace(config.mcp.session_grace);
    Ok((host, pool, store))
}

/// A fresh id for this daemon run; device bindings carry it so a restart can end them.
fn new_instance_id() -> anyhow::Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|error| anyhow::anyhow!("OS random source: {error}"))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Removes the token file (only if it is still ours), the PID record (only if it names us) and
/// the control socket.
fn cleanup_files(paths: &DaemonPaths, token: &SecretString, pid: u32) {
    if let Err(error) = files::remove_token_if_ours(&paths.token_file, token) {
        warn!(%error, path = %paths.token_file.display(), "could not remove token file");
    }
    if let Ok(Some(record)) = PidRecord::read(&paths.pid_file)
        && record.pid == pid
        && let Err(error) = std::fs::remove_file(&paths.pid_file)
    {
        warn!(%error, path = %paths.pid_file.display(), "could not remove PID record");
    }
    if let Err(error) = std::fs::remove_file(&paths.socket)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        warn!(%error, path = %paths.socket.display(), "could not remove control socket");
    }
}

/// SIGTERM and SIGINT stop the daemon; SIGHUP is ignored so that a closing terminal does not.
struct Signals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
    _hangup: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate()).context("could not handle SIGTERM")?,
            interrupt: signal(SignalKind::interrupt()).context("could not handle SIGINT")?,
            _hangup: signal(SignalKind::hangup()).context("could not handle SIGHUP")?,
        })
    }

    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        }
    }
}
