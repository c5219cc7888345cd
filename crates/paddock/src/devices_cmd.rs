//! `paddock devices`: the pool and its sessions; `paddock devices warm N` boots more.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use paddock_client::control::ControlCall;

#[derive(Debug, Args)]
pub struct DevicesArgs {
    #[command(subcommand)]
    command: Option<DevicesCommand>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum DevicesCommand {
    /// Boot N more warm devices now (progress on stderr).
    Warm {
        count: usize,
        #[arg(long, default_value = "web")]
        platform: String,
        /// Emulation profile (default: the daemon's).
        #[arg(long)]
        profile: Option<String>,
    },
}

pub async fn run(args: DevicesArgs) -> anyhow::Result<ExitCode> {
    let mut client = match crate::connect_daemon().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    match args.command {
        None => {
            let listing = client
                .call(ControlCall::DevicesList, Duration::from_secs(10))
                .await
                .context("listing devices")?;
            let mut stdout = std::io::stdout().lock();
            if args.json {
                writeln!(stdout, "{listing}")?;
                return Ok(ExitCode::SUCCESS);
            }
            let devices = listing["devices"].as_array().cloned().unwrap_or_default();
            if devices.is_empty() {
                writeln!(
                    stdout,
                    "no devices (default profile {})",
                    listing["defaultProfile"].as_str().unwrap_or("?")
                )?;
                return Ok(ExitCode::SUCCESS);
            }
            writeln!(
                stdout,
                "ID         PLATFORM PROFILE    STATE      {:<38} PID",
                "SESSION"
            )?;
            for device in devices {
                let text = |key: &str| device[key].as_str().unwrap_or("-").to_owned();
                writeln!(
                    stdout,
                    "{:<10} {:<8} {:<10} {:<10} {:<38} {}",
                    text("id"),
                    text("platform"),
                    text("profile"),
                    text("state"),
                    text("session"),
                    device["pid"]
                        .as_u64()
                        .map(|pid| pid.to_string())
                        .unwrap_or_else(|| "-".into())
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(DevicesCommand::Warm {
            count,
            platform,
            profile,
        }) => {
            eprintln!("booting {count} {platform} device(s)…");
            let result = client
                .call_with_progress(
                    ControlCall::DevicesWarm {
                        count,
                        platform,
                        profile,
                    },
                    Duration::from_secs(120 * count.max(1) as u64),
                    |message| eprintln!("  {message}"),
                )
                .await
                .context("warming devices")?;
            let ids: Vec<&str> = result["warmed"]
                .as_array()
                .map(|ids| ids.iter().filter_map(|id| id.as_str()).collect())
                .unwrap_or_default();
            let mut stdout = std::io::stdout().lock();
            if args.json {
                writeln!(stdout, "{result}")?;
            } else {
                for id in ids {
                    writeln!(stdout, "{id}")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
