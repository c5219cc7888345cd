//! `paddock daemon …`: start (detached or in the foreground), stop, restart, status.

use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use paddock_client::control::StatusResult;
use paddock_client::{ClientEnv, DaemonPaths};
use paddock_daemon::launcher::{self, DetachedLaunch, StartReport, StopReport};
use std::path::PathBuf;

use paddock_daemon::{DaemonConfig, FaultInjection, McpOptions, RunOutcome};
use paddock_devices::android::adb::ServerAddress;
use paddock_devices::pool::AndroidPoolConfig;
use paddock_devices::web::ChromiumConfig;
use paddock_devices::{AppConfig, PoolConfig, WebPoolConfig};
use paddock_ingress::IngressConfig;
use paddock_tools::PolicyProfile;
use paddock_tools::discovery::SelectionInput;

use crate::logging::{LogArgs, LogFormat};

#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Start the daemon in the background and wait until it is ready (or report the running one).
    Start(StartArgs),
    /// Stop the daemon gracefully; force it after the timeout.
    Stop(StopArgs),
    /// Stop the daemon, then start it again.
    Restart {
        #[command(flatten)]
        stop: StopArgs,
        #[command(flatten)]
        start: StartArgs,
    },
    /// Join a fleet server (`paddock server`) with a pairing token from `paddock server pair`,
    /// read from stdin or `--token-file` (never the command line).
    Join(crate::fleet_cmd::JoinArgs),
    /// Give this joined machine a new machine key with a reconnect token
    /// (`paddock server pair --reconnect MACHINE_ID`), restarting the daemon with it.
    Reconnect(crate::fleet_cmd::ReconnectArgs),
    /// Report whether the daemon runs, and its pid, version, uptime, state and endpoints.
    Status {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Args)]
pub struct StartArgs {
    /// Run in this process instead of detaching; logs go to stderr.
    #[arg(long)]
    foreground: bool,
    /// Start only if this daemon is joined to a fleet server as this machine id (the id
    /// `paddock daemon join` printed); the stored machine key is reused, not rotated.
    #[arg(long, value_name = "MACHINE_ID")]
    pub id: Option<String>,
    /// Loopback HTTP port (0 picks a free port).
    #[arg(long, default_value_t = 0, env = "PADDOCK_PORT")]
    port: u16,
    /// How long HTTP requests that arrive during startup are held before a 503, in milliseconds.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    startup_hold_ms: u64,
    /// How long a detached start waits for the daemon to become ready, in seconds.
    #[arg(long, default_value_t = 60)]
    ready_timeout_secs: u64,
    /// Policy profile for local callers: `readonly`, `no-commerce` or `full` (the owner's default).
    #[arg(long, env = "PADDOCK_POLICY_PROFILE", default_value = "full")]
    policy: PolicyProfile,
    /// List this tool in discovery by default (repeatable; exact name). Wins over
    /// `PADDOCK_ENABLED_TOOLS`/`PADDOCK_DISABLED_TOOLS`.
    #[arg(long = "enable-tool", value_name = "TOOL")]
    enable_tool: Vec<String>,
    /// Omit this tool from discovery by default (repeatable; exact name).
    #[arg(long = "disable-tool", value_name = "TOOL")]
    disable_tool: Vec<String>,
    /// Register tools that need `--debug` (such as `daemonInfo`).
    #[arg(long)]
    debug: bool,
    /// The Chromium executable for web devices.
    #[arg(long, env = "PADDOCK_CHROMIUM", default_value = "/usr/bin/chromium")]
    chromium: PathBuf,
    /// How many web devices to keep warm.
    #[arg(long, env = "PADDOCK_WEB_WARM", default_value_t = 2)]
    web_warm: usize,
    /// The default emulation profile of web devices: `pixel7`, `iphone15` or `desktop`.
    #[arg(long, env = "PADDOCK_WEB_PROFILE", default_value = "pixel7", value_parser = ["pixel7", "iphone15", "desktop"])]
    web_profile: String,
    /// A web app `launchApp` can open, as `ID=URL` (repeatable; also `PADDOCK_WEB_APPS`, comma-separated).
    #[arg(long = "web-app", value_name = "ID=URL", value_parser = parse_app)]
    web_app: Vec<AppConfig>,
    /// Seconds without a device call after which a session's device is released.
    #[arg(long, env = "PADDOCK_DEVICE_IDLE_TIMEOUT_SECS", default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    device_idle_timeout_secs: u64,
    /// Seconds a `paddock mcp --session-id` session keeps its device after its process exits,
    /// for the client to reconnect; 0 releases it at once.
    #[arg(long, env = "PADDOCK_SESSION_GRACE_SECS", default_value_t = 60)]
    session_grace_secs: u64,
    /// Android devices: `connect` follows the adb server at `ADB_SERVER_SOCKET` (or
    /// `ANDROID_ADB_SERVER_ADDRESS`/`_PORT`, else 127.0.0.1:5037), `start` first starts that
    /// server with `adb start-server`, `off` ignores Android.
    #[arg(long, env = "PADDOCK_ANDROID_ADB", value_enum, default_value_t = AndroidAdb::Connect)]
    android_adb: AndroidAdb,
    /// Record every session's device tool calls, so `exportPlan {sessionUuid}` can turn them
    /// into a replayable plan (a task's calls are always recorded).
    #[arg(long, env = "PADDOCK_TOOL_CALL_RECORDING")]
    tool_call_recording: bool,
    /// A task keeps a downscaled screenshot with every this many tool calls that act on its
    /// device, and one at its end; 0 keeps only the last.
    #[arg(long, env = "PADDOCK_TASK_SCREENSHOT_EVERY", default_value_t = 5)]
    task_screenshot_every: u64,
    /// Leave the apps a session launched running when its Android device is released
    /// (by default they are force-stopped).
    #[arg(long, env = "PADDOCK_ANDROID_KEEP_APPS")]
    android_keep_apps: bool,
}

/// How the daemon reaches Android devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AndroidAdb {
    Connect,
    Start,
    Off,
}

impl AndroidAdb {
    fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::Start => "start",
            Self::Off => "off",
        }
    }
}

/// Parses `ID=URL` (the URL must be http or https).
fn parse_app(text: &str) -> Result<AppConfig, String> {
    let (id, url) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not `ID=URL`"))?;
    let id = id.trim();
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return Err(format!(
            "app id `{id}` must be letters, digits, `-`, `_` or `.`"
        ));
    }
    let url = url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!("app `{id}`: `{url}` is not an http or https URL"));
    }
    Ok(AppConfig {
        id: id.to_owned(),
        name: id.to_owned(),
        url: url.to_owned(),
    })
}

impl StartArgs {
    /// The start settings the environment gives (`PADDOCK_*` variables, else the defaults),
    /// for a start no command line describes (a reconnect's restart), as machine `id`.
    pub(crate) fn from_env(id: Option<String>) -> anyhow::Result<Self> {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            start: StartArgs,
        }
        let mut args = <Only as clap::Parser>::try_parse_from(["paddock"])
            .map_err(|error| anyhow::anyhow!("the daemon's settings: {error}"))?
            .start;
        args.id = id;
        Ok(args)
    }
}

impl Default for StartArgs {
    fn default() -> Self {
        Self {
            foreground: false,
            id: None,
            port: 0,
            startup_hold_ms: 30_000,
            ready_timeout_secs: 60,
            policy: PolicyProfile::Full,
            enable_tool: Vec::new(),
            disable_tool: Vec::new(),
            debug: false,
            chromium: PathBuf::from("/usr/bin/chromium"),
            web_warm: 2,
            web_profile: "pixel7".to_owned(),
            web_app: Vec::new(),
            device_idle_timeout_secs: 900,
            session_grace_secs: 60,
            android_adb: AndroidAdb::Connect,
            android_keep_apps: false,
            tool_call_recording: false,
            task_screenshot_every: 5,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct StopArgs {
    /// Seconds to wait for a graceful stop before the daemon is killed.
    #[arg(long = "timeout", default_value_t = 10)]
    timeout_secs: u64,
}

pub async fn run(command: DaemonCommand, logging: &LogArgs) -> anyhow::Result<ExitCode> {
    let env = ClientEnv::from_process();
    let paths = DaemonPaths::resolve(&env);
    match command {
        DaemonCommand::Start(args)
            if args.id.is_some() && !crate::fleet_cmd::id_matches(&paths, args.id.as_deref())? =>
        {
            Ok(ExitCode::FAILURE)
        }
        DaemonCommand::Start(args) if args.foreground => run_foreground(env, &args).await,
        DaemonCommand::Start(args) => start_detached(&paths, &args, logging).await,
        DaemonCommand::Join(args) => crate::fleet_cmd::join(&paths, args).await,
        DaemonCommand::Reconnect(args) => crate::fleet_cmd::reconnect(&paths, args, logging).await,
        DaemonCommand::Stop(args) => stop(&paths, &args).await,
        DaemonCommand::Restart {
            stop: stop_args,
            start,
        } => {
            stop(&paths, &stop_args).await?;
            if start.foreground {
                run_foreground(env, &start).await
            } else {
                start_detached(&paths, &start, logging).await
            }
        }
        DaemonCommand::Status { json } => status(&paths, json).await,
    }
}

async fn run_foreground(env: ClientEnv, args: &StartArgs) -> anyhow::Result<ExitCode> {
    let mut subsystems: Vec<std::sync::Arc<dyn paddock_daemon::Subsystem>> = Vec::new();
    let mut boot_delay = Duration::ZERO;
    if let Some(faults) = FaultInjection::from_env(&env)? {
        tracing::warn!(?faults, "fault injection is active");
        boot_delay = faults.device_boot_delay;
        subsystems.push(std::sync::Arc::new(faults));
    }
    let list = |name: &str| {
        env.var(name)
            .and_then(|value| value.to_str())
            .map(paddock_tools::discovery::parse_list)
            .unwrap_or_default()
    };
    let mcp = McpOptions {
        policy: args.policy,
        selection: SelectionInput {
            env_enabled: list("PADDOCK_ENABLED_TOOLS"),
            env_disabled: list("PADDOCK_DISABLED_TOOLS"),
            cli_enabled: args.enable_tool.clone(),
            cli_disabled: args.disable_tool.clone(),
        },
        debug: args.debug,
        session_grace: Duration::from_secs(args.session_grace_secs),
        tool_call_recording: args.tool_call_recording,
        task_screenshot_every: args.task_screenshot_every,
    };
    let mut apps = args.web_app.clone();
    if let Some(list) = env.var("PADDOCK_WEB_APPS").and_then(|value| value.to_str()) {
        for item in paddock_tools::discovery::parse_list(list) {
            apps.push(
                parse_app(&item).map_err(|error| anyhow::anyhow!("PADDOCK_WEB_APPS: {error}"))?,
            );
        }
    }
    let android_server = ServerAddress::from_env(|name| {
        env.var(name)
            .and_then(|value| value.to_str())
            .map(str::to_owned)
    })
    .context("the adb server's address")?;
    if args.android_adb == AndroidAdb::Start {
        start_adb_server(&env, &android_server).await?;
    }
    let devices = PoolConfig {
        android: AndroidPoolConfig {
            enabled: args.android_adb != AndroidAdb::Off,
            server: android_server,
            stop_launched_apps: !args.android_keep_apps,
            sdk_root: ["ANDROID_HOME", "ANDROID_SDK_ROOT"]
                .iter()
                .find_map(|name| env.var(name))
                .map(PathBuf::from),
            emulator_env: [
                "PATH",
                "HOME",
                "ANDROID_HOME",
                "ANDROID_SDK_ROOT",
                "ANDROID_AVD_HOME",
                "ANDROID_EMULATOR_HOME",
                "ANDROID_USER_HOME",
                "LANG",
                "TMPDIR",
            ]
            .iter()
            .filter_map(|name| {
                env.var(name)
                    .map(|value| ((*name).into(), value.to_owned()))
            })
            .collect(),
            ..AndroidPoolConfig::default()
        },
        web: WebPoolConfig {
            chromium: ChromiumConfig {
                executable: args.chromium.clone(),
                ..ChromiumConfig::default()
            },
            warm: args.web_warm,
            profile: args.web_profile.clone(),
            apps,
        },
        idle_timeout: Duration::from_secs(args.device_idle_timeout_secs),
        boot_delay,
    };
    let config = DaemonConfig {
        env,
        mcp,
        devices,
        ingress: IngressConfig {
            port: args.port,
            startup_hold: Duration::from_millis(args.startup_hold_ms),
            ..IngressConfig::default()
        },
        drain_timeout: Duration::from_secs(5),
        subsystems,
    };
    let outcome = paddock_daemon::run(config, |status| {
        // The ready line is data: one JSON status object on stdout. A detached `start` waits
        // for it; nothing else is ever written to stdout.
        let mut stdout = std::io::stdout().lock();
        let line = serde_json::to_string(status).unwrap_or_default();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    })
    .await?;
    match outcome {
        RunOutcome::Stopped => Ok(ExitCode::SUCCESS),
        RunOutcome::AlreadyRunning => {
            eprintln!("paddock daemon is already running for this isolation suffix");
            Ok(ExitCode::SUCCESS)
        }
        RunOutcome::StartupFailed(error) => Err(error.context("daemon startup failed")),
    }
}

/// `adb start-server` for `--android-adb start`, against the same server address the pool
/// follows: `adb` from `ANDROID_HOME`/`ANDROID_SDK_ROOT`'s platform-tools, else from `PATH`.
async fn start_adb_server(env: &ClientEnv, server: &ServerAddress) -> anyhow::Result<()> {
    let sdk_adb = ["ANDROID_HOME", "ANDROID_SDK_ROOT"]
        .iter()
        .filter_map(|name| env.var(name))
        .map(|root| PathBuf::from(root).join("platform-tools").join("adb"))
        .find(|path| path.is_file());
    let program = sdk_adb.unwrap_or_else(|| PathBuf::from("adb"));
    let status = tokio::process::Command::new(&program)
        .args(["-H", &server.host, "-P", &server.port.to_string(), "start-server"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| {
            format!(
                "could not run `{} start-server`; install adb (Debian: `apt install adb`) or set ANDROID_HOME",
                program.display()
            )
        })?;
    if !status.status.success() {
        anyhow::bail!(
            "`{} start-server` failed: {}",
            program.display(),
            String::from_utf8_lossy(&status.stderr).trim()
        );
    }
    Ok(())
}

/// How to launch a detached daemon with `args`: this executable, in the foreground, with the
/// same options. Secrets are never passed as arguments.
pub fn detached_launch(
    paths: &DaemonPaths,
    args: &StartArgs,
    logging: &LogArgs,
) -> anyhow::Result<DetachedLaunch> {
    let program = std::env::current_exe().context("could not locate the paddock executable")?;
    let mut child_args: Vec<OsString> = vec![
        "daemon".into(),
        "start".into(),
        "--foreground".into(),
        "--port".into(),
        args.port.to_string().into(),
        "--startup-hold-ms".into(),
        args.startup_hold_ms.to_string().into(),
        "--log-level".into(),
        logging.log_level.clone().into(),
        "--log-format".into(),
    ];
    child_args.push(match logging.log_format {
        LogFormat::Text => "text".into(),
        LogFormat::Json => "json".into(),
    });
    child_args.extend(["--policy".into(), args.policy.as_str().into()]);
    for tool in &args.enable_tool {
        child_args.extend(["--enable-tool".into(), tool.into()]);
    }
    for tool in &args.disable_tool {
        child_args.extend(["--disable-tool".into(), tool.into()]);
    }
    if args.debug {
        child_args.push("--debug".into());
    }
    child_args.extend([
        "--chromium".into(),
        args.chromium.clone().into_os_string(),
        "--web-warm".into(),
        args.web_warm.to_string().into(),
        "--web-profile".into(),
        args.web_profile.clone().into(),
        "--device-idle-timeout-secs".into(),
        args.device_idle_timeout_secs.to_string().into(),
        "--session-grace-secs".into(),
        args.session_grace_secs.to_string().into(),
        "--android-adb".into(),
        args.android_adb.as_str().into(),
    ]);
    if args.android_keep_apps {
        child_args.push("--android-keep-apps".into());
    }
    if args.tool_call_recording {
        child_args.push("--tool-call-recording".into());
    }
    child_args.extend([
        "--task-screenshot-every".into(),
        args.task_screenshot_every.to_string().into(),
    ]);
    for app in &args.web_app {
        child_args.extend(["--web-app".into(), format!("{}={}", app.id, app.url).into()]);
    }
    Ok(DetachedLaunch {
        program,
        args: child_args,
        log_file: paths.state_dir.join("logs").join("daemon.log"),
        ready_timeout: Duration::from_secs(args.ready_timeout_secs),
    })
}

pub(crate) async fn start_detached(
    paths: &DaemonPaths,
    args: &StartArgs,
    logging: &LogArgs,
) -> anyhow::Result<ExitCode> {
    let launch = detached_launch(paths, args, logging)?;
    match launcher::start_detached(paths, &launch).await? {
        StartReport::Started(status) => {
            eprintln!(
                "paddock daemon started (pid {}); log: {}",
                status.pid,
                launch.log_file.display()
            );
            print_endpoint(&status);
        }
        StartReport::AlreadyRunning(status) => {
            eprintln!("paddock daemon is already running (pid {})", status.pid);
            print_endpoint(&status);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_endpoint(status: &StatusResult) {
    if let Some(endpoint) = &status.http_endpoint {
        println!("{endpoint}");
    }
}

async fn stop(paths: &DaemonPaths, args: &StopArgs) -> anyhow::Result<ExitCode> {
    match launcher::stop(paths, Duration::from_secs(args.timeout_secs)).await? {
        StopReport::NotRunning => eprintln!("paddock daemon is not running"),
        StopReport::Stopped { pid: Some(pid) } => eprintln!("paddock daemon stopped (pid {pid})"),
        StopReport::Stopped { pid: None } => eprintln!("paddock daemon stopped"),
        StopReport::Killed { pid } => eprintln!(
            "paddock daemon (pid {pid}) did not stop within {}s and was killed",
            args.timeout_secs
        ),
    }
    Ok(ExitCode::SUCCESS)
}

async fn status(paths: &DaemonPaths, json: bool) -> anyhow::Result<ExitCode> {
    let status = launcher::query_status(paths).await?;
    let mut stdout = std::io::stdout().lock();
    match (status, json) {
        (Some(status), true) => writeln!(stdout, "{}", serde_json::to_string(&status)?)?,
        (Some(status), false) => {
            writeln!(stdout, "paddock daemon is running")?;
            writeln!(stdout, "  pid:      {}", status.pid)?;
            writeln!(stdout, "  version:  {}", status.version)?;
            writeln!(stdout, "  uptime:   {}", format_uptime(status.uptime_ms))?;
            writeln!(stdout, "  state:    {}", status.state.as_str())?;
            if let Some(endpoint) = &status.http_endpoint {
                writeln!(stdout, "  http:     {endpoint}")?;
            }
            writeln!(stdout, "  socket:   {}", status.socket.display())?;
        }
        (None, true) => {
            writeln!(stdout, "{}", serde_json::json!({ "state": "stopped" }))?;
            return Ok(ExitCode::from(crate::EXIT_NOT_RUNNING));
        }
        (None, false) => {
            writeln!(stdout, "paddock daemon is not running")?;
            eprintln!("hint: start it with `paddock daemon start`");
            return Ok(ExitCode::from(crate::EXIT_NOT_RUNNING));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn format_uptime(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {}s", secs / 60, secs % 60),
        _ => format!("{}h {}m", secs / 3600, (secs % 3600) / 60),
    }
}
