//! `paddock devices`: the pool and its sessions; `paddock devices warm N` boots more.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use paddock_client::control::{DevicesList, DevicesWarm, DevicesWarmParams};

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
        /// Android: boot the emulator of this AVD (needs the Android emulator, found through
        /// ANDROID_HOME or ANDROID_SDK_ROOT).
        #[arg(long)]
        avd: Option<String>,
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
                .request::<DevicesList>((), Duration::from_secs(10))
                .await
                .context("listing devices")?;
            let mut stdout = std::io::stdout().lock();
            if args.json {
                writeln!(stdout, "{}", serde_json::to_string(&listing)?)?;
                return Ok(ExitCode::SUCCESS);
            }
            if listing.devices.is_empty() {
                writeln!(
                    stdout,
                    "no devices (default profile {})",
                    listing.default_profile
                )?;
                return Ok(ExitCode::SUCCESS);
            }
            writeln!(
                stdout,
                "{:<16} PLATFORM PROFILE    STATE      {:<38} PID",
                "ID", "SESSION"
            )?;
            for device in &listing.devices {
                writeln!(
                    stdout,
                    "{:<16} {:<8} {:<10} {:<10} {:<38} {}",
                    device.id,
                    device.platform,
                    device.profile,
                    device.state,
                    device.session.as_deref().unwrap_or("-"),
                    device
                        .pid
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
            avd,
        }) => {
            eprintln!("booting {count} {platform} device(s)…");
            let result = client
                .request_with_progress::<DevicesWarm>(
                    DevicesWarmParams {
                        count,
                        platform,
                        profile,
                        avd,
                    },
                    Duration::from_secs(320 * count.max(1) as u64),
                    |message| eprintln!("  {message}"),
                )
                .await
                .context("warming devices")?;
            let mut stdout = std::io::stdout().lock();
            if args.json {
                writeln!(stdout, "{}", serde_json::to_string(&result)?)?;
            } else {
                for id in &result.warmed {
                    writeln!(stdout, "{id}")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
