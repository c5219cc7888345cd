//! `paddock daemon join`, `paddock daemon reconnect` and `daemon start --id`: the daemon's
//! lifecycle towards a fleet server (spec 004, "Daemon lifecycle commands"). Tokens are read
//! from stdin or a file, never from the command line.

use std::io::{BufRead as _, IsTerminal as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use paddock_client::{DaemonPaths, SecretString};
use paddock_daemon::fleet::{self, FleetError};
use paddock_daemon::launcher::{self, StopReport};

use crate::daemon_cmd::StartArgs;
use crate::logging::LogArgs;

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The server's URL: `https://HOST[:PORT]`, or `http://` for a server on loopback.
    #[arg(long)]
    server: String,
    /// Read the pairing token from this file instead of stdin.
    #[arg(long)]
    token_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReconnectArgs {
    /// This machine's id in the fleet (as `join` printed it).
    #[arg(long, value_name = "MACHINE_ID")]
    id: String,
    /// The server's URL (default: the one this machine joined).
    #[arg(long)]
    server: Option<String>,
    /// Read the reconnect token from this file instead of stdin.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Seconds to wait for the running daemon to stop.
    #[arg(long = "timeout", default_value_t = 10)]
    timeout_secs: u64,
}

fn read_token(file: Option<&Path>, what: &str) -> anyhow::Result<SecretString> {
    let text = match file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("could not read the {what} from `{}`", path.display()))?,
        None => {
            if std::io::stdin().is_terminal() {
                eprint!("paste the {what}: ");
            }
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .with_context(|| format!("could not read the {what} from stdin"))?;
            line
        }
    };
    let token = text.trim();
    anyhow::ensure!(
        token.starts_with("pdk_pt_"),
        "that is not a {what} (they start with `pdk_pt_`)\nhint: `paddock server pair` prints one on the server"
    );
    Ok(SecretString::new(token))
}

fn tls() -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let trust = paddock_credentials::UpstreamTrust::from_env();
    Ok(Arc::new(
        paddock_credentials::tls_client_config(&trust, true)
            .context("could not load the trusted certificate authorities")?,
    ))
}

pub async fn join(paths: &DaemonPaths, args: JoinArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&paths.state_dir).ok();
    if let Some((link, _)) = fleet::load(&paths.state_dir).map_err(anyhow::Error::msg)? {
        eprintln!(
            "error: this daemon already joined `{}` as machine `{}`",
            link.server, link.machine_id
        );
        eprintln!(
            "hint: to give it a new key, mint a reconnect token with `paddock server pair --reconnect {}` and run `paddock daemon reconnect --id {}`",
            link.machine_id, link.machine_id
        );
        return Ok(ExitCode::FAILURE);
    }
    let token = read_token(args.token_file.as_deref(), "pairing token")?;
    let answer = fleet::activate(&args.server, &token, &tls()?).await?;
    paddock_client::private::ensure_private_dir(&paths.state_dir)
        .context("the daemon's state directory is not safe to use")?;
    let link = fleet::save(&paths.state_dir, &args.server, &answer)?;
    println!("{}", link.machine_id);
    eprintln!(
        "joined `{}` as machine `{}` ({}); the daemon keeps a control connection to it (a running daemon connects within seconds)",
        link.server, link.machine_id, link.name
    );
    Ok(ExitCode::SUCCESS)
}

/// Whether the stored link names machine `id`; says why not on stderr.
pub fn id_matches(paths: &DaemonPaths, id: Option<&str>) -> anyhow::Result<bool> {
    let Some(id) = id else { return Ok(true) };
    match fleet::load(&paths.state_dir).map_err(anyhow::Error::msg)? {
        Some((link, _)) if link.machine_id == id => Ok(true),
        Some((link, _)) => {
            eprintln!(
                "error: this daemon is machine `{}` of `{}`, not `{id}`",
                link.machine_id, link.server
            );
            Ok(false)
        }
        None => {
            eprintln!(
                "error: this daemon has not joined a fleet server, so it is no machine `{id}`"
            );
            eprintln!(
                "hint: `paddock daemon join --server URL` with a token from `paddock server pair`"
            );
            Ok(false)
        }
    }
}

/// The reconnect of spec 004: take replacement ownership (one reconnect at a time), stop only
/// the daemon the saved PID record names, activate, and start again — with the new key on
/// success, with the old one when the server clearly refused (nothing changed; only if it was
/// running), and not at all when the answer was ambiguous (the old key may be revoked already).
pub async fn reconnect(
    paths: &DaemonPaths,
    args: ReconnectArgs,
    logging: &LogArgs,
) -> anyhow::Result<ExitCode> {
    let Some((link, _)) = fleet::load(&paths.state_dir).map_err(anyhow::Error::msg)? else {
        eprintln!("error: this daemon has not joined a fleet server");
        eprintln!("hint: `paddock daemon join --server URL`");
        return Ok(ExitCode::FAILURE);
    };
    if link.machine_id != args.id {
        eprintln!(
            "error: this daemon is machine `{}`, not `{}`",
            link.machine_id, args.id
        );
        return Ok(ExitCode::FAILURE);
    }
    let token = read_token(args.token_file.as_deref(), "reconnect token")?;
    let server = args.server.unwrap_or_else(|| link.server.clone());
    let _ownership = match Ownership::take(&paths.state_dir)? {
        Some(ownership) => ownership,
        None => {
            eprintln!("error: another `paddock daemon reconnect` is under way for this daemon");
            return Ok(ExitCode::FAILURE);
        }
    };
    let was_running = !matches!(
        launcher::stop(paths, Duration::from_secs(args.timeout_secs)).await?,
        StopReport::NotRunning
    );
    let start = StartArgs::from_env(Some(link.machine_id.clone()))?;
    match fleet::activate(&server, &token, &tls()?).await {
        Ok(answer) => {
            fleet::save(&paths.state_dir, &server, &answer)?;
            eprintln!(
                "machine `{}` has a new key; the old one no longer works",
                answer.machine_id
            );
            // Reconnecting is for running: the daemon starts with the new key even when an
            // earlier, ambiguous attempt left it stopped.
            crate::daemon_cmd::start_detached(paths, &start, logging).await
        }
        Err(error @ FleetError::Refused { .. }) => {
            eprintln!("error: {error}");
            eprintln!("the machine keeps its current key");
            if was_running {
                crate::daemon_cmd::start_detached(paths, &start, logging).await?;
            }
            Ok(ExitCode::FAILURE)
        }
        Err(error) if error.is_ambiguous() => {
            eprintln!("error: {error}");
            eprintln!("the daemon stays stopped: the server may have replaced the old key already");
            eprintln!(
                "hint: mint a new reconnect token with `paddock server pair --reconnect {}` and run this again",
                link.machine_id
            );
            Ok(ExitCode::FAILURE)
        }
        Err(error) => Err(error.into()),
    }
}

/// The replacement ownership of a reconnect: an exclusively created file in the state
/// directory, removed when the reconnect ends.
struct Ownership {
    path: PathBuf,
}

impl Ownership {
    fn take(state_dir: &Path) -> anyhow::Result<Option<Self>> {
        let path = state_dir.join("fleet-reconnect.lock");
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                use std::io::Write as _;
                let _ = writeln!(file, "{}", std::process::id());
                Ok(Some(Self { path }))
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                // A reconnect that died leaves its file: its pid tells.
                let holder = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|text| text.trim().parse::<i32>().ok());
                let alive = holder.is_some_and(|pid| {
                    rustix::process::Pid::from_raw(pid)
                        .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
                });
                if alive {
                    return Ok(None);
                }
                std::fs::remove_file(&path).ok();
                Self::take(state_dir)
            }
            Err(error) => {
                Err(error).with_context(|| format!("could not create `{}`", path.display()))
            }
        }
    }
}

impl Drop for Ownership {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
