//! `paddock credentials`: `exec` runs a command that holds only a voucher (an in-process
//! broker and proxy swap in the real key); `list` and `revoke` manage the daemon's vouchers.
//!
//! There is deliberately no flag that takes a key: argv is readable by every local user.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use paddock_client::control::{
    ControlClientError, CredentialsList, CredentialsRevoke, CredentialsRevokeParams, ErrorCode,
};
use paddock_client::{ClientEnv, DaemonPaths};
use paddock_credentials::{
    Capabilities, CredentialBroker, CredentialBrokerConfig, Grant, KeySource, LaunchEnvSpec,
    UpstreamConfig, UpstreamTrust, VendorEnv,
};
use paddock_process::{ChildSpec, ManagedChild};
use rustix::process::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tracing::debug;

/// The one upstream of `credentials exec`.
const UPSTREAM: &str = "upstream";

#[derive(Debug, Args)]
pub struct CredentialsArgs {
    #[command(subcommand)]
    command: CredentialsCommand,
}

#[derive(Debug, Subcommand)]
enum CredentialsCommand {
    /// Run a command that reaches UPSTREAM through a local key-swapping proxy with a voucher;
    /// the real key stays in this process and out of the command's environment.
    Exec(ExecArgs),
    /// List the daemon's live vouchers: id, launch, capabilities, age (never values).
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a voucher of the daemon (or every voucher of a launch); its holder's next request
    /// is refused and its open streams are cut.
    #[command(group = clap::ArgGroup::new("target").required(true))]
    Revoke {
        /// The voucher id (`v-…`, from `paddock credentials list`).
        #[arg(group = "target")]
        id: Option<String>,
        /// Revoke every voucher of this launch instead.
        #[arg(long, group = "target")]
        launch: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The upstream API, `https://host[:port][/base]` (certificates checked against Mozilla's
    /// roots, the system store and $SSL_CERT_FILE / $SSL_CERT_DIR), or `http://` for a local
    /// gateway.
    #[arg(long, value_name = "URL")]
    upstream: String,
    /// Where the real key is: `env:VAR` (removed from the command's environment), `file:PATH`
    /// (mode 0600) or `keychain:SERVICE` (where the OS has one).
    #[arg(long, value_name = "SOURCE", value_parser = parse_key_source)]
    key_from: KeySource,
    /// The header that carries the key upstream: `authorization`, `x-api-key`, …
    #[arg(long, value_name = "NAME")]
    header: String,
    /// Written before the key in that header, as in `Authorization: Bearer <key>`.
    #[arg(long, value_name = "SCHEME")]
    scheme: Option<String>,
    /// Set this variable to the proxy's URL in the command's environment
    /// (`ANTHROPIC_BASE_URL` for Claude Code).
    #[arg(long, value_name = "NAME")]
    base_url_env: Option<String>,
    /// Set this variable to the voucher in the command's environment (`ANTHROPIC_API_KEY`).
    #[arg(long, value_name = "NAME")]
    voucher_env: Option<String>,
    /// What the command may call: `"METHOD /path-prefix"` (`*` for any method); repeatable.
    #[arg(long = "allow", value_name = "GRANT", required = true)]
    allow: Vec<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

fn parse_key_source(text: &str) -> Result<KeySource, String> {
    KeySource::parse(text).map_err(|error| error.to_string())
}

/// The variables that hold the real key for this command, to be taken out of the process
/// environment before anything runs.
pub fn key_variables(args: &CredentialsArgs) -> Vec<String> {
    match &args.command {
        CredentialsCommand::Exec(exec) => exec
            .key_from
            .env_var()
            .map(str::to_owned)
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

pub async fn run(args: CredentialsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CredentialsCommand::Exec(exec_args) => exec(exec_args).await,
        CredentialsCommand::List { json } => list(json).await,
        CredentialsCommand::Revoke { id, launch } => revoke(id, launch).await,
    }
}

async fn exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let key = match args.key_from.read(crate::hardening::key_var_os) {
        Ok(key) => key,
        Err(error) => {
            eprintln!("error: {error}");
            eprintln!(
                "hint: export the key in a variable (`--key-from env:VAR`) or put it in a file only you can read (`--key-from file:PATH`, chmod 600)"
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    let capabilities = Capabilities::new(
        args.allow
            .iter()
            .map(|text| Grant::parse(UPSTREAM, text))
            .collect::<Result<Vec<_>, _>>()?,
    );
    let broker = CredentialBroker::start(CredentialBrokerConfig {
        upstreams: vec![UpstreamConfig {
            name: UPSTREAM.to_owned(),
            url: args.upstream.clone(),
            credential: key.clone(),
            header: args.header.clone(),
            scheme: args.scheme.clone(),
        }],
        trust: UpstreamTrust::from_env(),
        ..CredentialBrokerConfig::default()
    })
    .await
    .context("could not start the credential proxy")?;

    let launch = format!("exec-{}", std::process::id());
    let dir = DaemonPaths::resolve(&ClientEnv::from_process())
        .state_dir
        .join("credentials")
        .join(&launch);
    let outcome = run_child(&args, &broker, capabilities, &key, &launch, &dir).await;
    // The voucher dies with the command, whatever happened.
    broker.revoke_launch(&launch);
    broker.shutdown();
    if let Err(error) = std::fs::remove_dir_all(&dir)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        debug!(%error, dir = %dir.display(), "could not remove the launch directory");
    }
    outcome
}

async fn run_child(
    args: &ExecArgs,
    broker: &CredentialBroker,
    capabilities: Capabilities,
    key: &paddock_client::SecretString,
    launch: &str,
    dir: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    let voucher = broker.mint_for_launch(launch, capabilities, dir)?;
    let launch_env = broker.launch_env(
        &voucher,
        &LaunchEnvSpec {
            proxy_upstream: UPSTREAM.to_owned(),
            vendors: vec![VendorEnv {
                upstream: UPSTREAM.to_owned(),
                base_url_var: args.base_url_env.clone(),
                base_path: String::new(),
                key_var: args.voucher_env.clone(),
            }],
        },
    )?;
    let replaced: HashSet<OsString> = launch_env.names().map(OsString::from).collect();
    let key_bytes = key.expose_secret().as_bytes();
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    for (name, value) in std::env::vars_os() {
        let is_key_var = args.key_from.env_var().is_some_and(|var| name == var);
        // Whatever variable holds the key (the source, or a copy under another name) stays
        // behind: the command must not be able to read it.
        let holds_key = value
            .as_bytes()
            .windows(key_bytes.len())
            .any(|window| window == key_bytes);
        if is_key_var || holds_key {
            debug!(variable = %name.to_string_lossy(), "withheld from the command: it holds the key");
            continue;
        }
        if !replaced.contains(&name) {
            env.push((name, value));
        }
    }
    env.extend(launch_env.expose_vars());

    let Some((program, rest)) = args.command.split_first() else {
        anyhow::bail!("no command given after `--`");
    };
    let spec = ChildSpec {
        program: program.into(),
        args: rest.to_vec(),
        env,
        ..ChildSpec::default()
    };
    let child = match ManagedChild::spawn_foreground(spec) {
        Ok(child) => child,
        Err(error) => {
            eprintln!("error: {error}");
            if error.is_not_found() {
                eprintln!("hint: check the command's name and your PATH");
            }
            return Ok(ExitCode::from(127));
        }
    };
    debug!(pid = child.pid(), voucher = %voucher.id, "command started");
    let status = wait_forwarding_signals(&child).await?;
    Ok(exit_code(status))
}

/// Waits for the child. Ctrl-C reaches it from the terminal (it shares our process group), so
/// SIGINT only keeps this process alive until the child has exited; SIGTERM and SIGHUP, which
/// are aimed at us, are passed on.
async fn wait_forwarding_signals(
    child: &ManagedChild,
) -> anyhow::Result<Option<std::process::ExitStatus>> {
    let mut interrupt = signal(SignalKind::interrupt()).context("could not handle SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("could not handle SIGTERM")?;
    let mut hangup = signal(SignalKind::hangup()).context("could not handle SIGHUP")?;
    let exited = child.exited();
    tokio::pin!(exited);
    loop {
        tokio::select! {
            status = &mut exited => return Ok(status),
            _ = interrupt.recv() => {}
            _ = terminate.recv() => child.signal(Signal::TERM),
            _ = hangup.recv() => child.signal(Signal::HUP),
        }
    }
}

/// The child's code, or 128 + the signal that ended it (the shell's convention).
fn exit_code(status: Option<std::process::ExitStatus>) -> ExitCode {
    let code = match status {
        Some(status) => match (status.code(), status.signal()) {
            (Some(code), _) => code,
            (None, Some(signal)) => 128 + signal,
            (None, None) => 1,
        },
        None => 1,
    };
    ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1))
}

async fn list(json: bool) -> anyhow::Result<ExitCode> {
    let mut client = match crate::connect_daemon().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let listing = client
        .request::<CredentialsList>((), Duration::from_secs(10))
        .await
        .context("listing vouchers")?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string(&listing)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if listing.vouchers.is_empty() {
        writeln!(stdout, "no live vouchers")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        stdout,
        "{:<16} {:<24} {:>8}  CAPABILITIES",
        "ID", "LAUNCH", "AGE"
    )?;
    for voucher in &listing.vouchers {
        let capabilities: Vec<String> = voucher
            .capabilities
            .iter()
            .map(|grant| format!("{}: {} {}", grant.upstream, grant.method, grant.path_prefix))
            .collect();
        writeln!(
            stdout,
            "{:<16} {:<24} {:>8}  {}",
            voucher.id,
            voucher.launch,
            age(voucher.age_ms),
            capabilities.join("; ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn age(millis: u64) -> String {
    let seconds = millis / 1000;
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

async fn revoke(id: Option<String>, launch: Option<String>) -> anyhow::Result<ExitCode> {
    let mut client = match crate::connect_daemon().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let result = client
        .request::<CredentialsRevoke>(
            CredentialsRevokeParams { id, launch },
            Duration::from_secs(10),
        )
        .await;
    let result = match result {
        Ok(result) => result,
        Err(ControlClientError::Remote(error)) => {
            eprintln!("error: {}", error.message);
            if error.code == ErrorCode::NotFound {
                eprintln!("hint: `paddock credentials list` shows the live vouchers");
            }
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => return Err(error).context("revoking"),
    };
    let mut stdout = std::io::stdout().lock();
    for voucher in &result.revoked {
        writeln!(stdout, "revoked {} (launch {})", voucher.id, voucher.launch)?;
    }
    Ok(ExitCode::SUCCESS)
}
