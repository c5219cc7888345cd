//! `fake-android`: one fake Android device, standalone, for a fake `emulator` script.
//!
//! `fake-android [--avd NAME] [--adb-port P] [--adb PATH] [--notes-debuggable]` starts the
//! device (an emulator image running AVD `NAME` when given), prints its port on stdout and,
//! given `--adb-port`, runs `adb connect 127.0.0.1:PORT` against the adb server on port `P`.
//! It runs until SIGTERM, or until stdin closes when stdin is a pipe or socket (a null stdin,
//! as a daemon gives its children, is not watched).

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_testkit::android::{FakeAndroid, FakeAndroidConfig};

#[derive(Debug, Default)]
struct Options {
    avd: Option<String>,
    adb_port: Option<u16>,
    adb: Option<PathBuf>,
    notes_debuggable: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> anyhow::Result<Options> {
    let mut options = Options::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .with_context(|| format!("`{name}` needs a value"))
        };
        match arg.as_str() {
            "--avd" => options.avd = Some(value("--avd")?),
            "--adb-port" => {
                let port = value("--adb-port")?;
                options.adb_port = Some(
                    port.parse()
                        .with_context(|| format!("`--adb-port {port}` is not a port"))?,
                );
            }
            "--adb" => options.adb = Some(PathBuf::from(value("--adb")?)),
            "--notes-debuggable" => options.notes_debuggable = true,
            "-h" | "--help" => {
                println!(
                    "usage: fake-android [--avd NAME] [--adb-port PORT] [--adb PATH] [--notes-debuggable]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}`\nhint: run `fake-android --help`"),
        }
    }
    Ok(options)
}

/// `adb connect`, retried while the server is still starting (the emulator script may run
/// before the server answers).
fn connect(adb: &PathBuf, server_port: u16, serial: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // A `tcp:127.0.0.1:…` socket never makes the client start a server of its own.
        let output = Command::new(adb)
            .args(["connect", serial])
            .env("ADB_SERVER_SOCKET", format!("tcp:127.0.0.1:{server_port}"))
            .output()
            .with_context(|| format!("running `{} connect`", adb.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if stdout.contains(&format!("connected to {serial}")) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "`adb connect {serial}` on port {server_port} failed: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stdin_is_watchable() -> bool {
    use std::os::fd::AsFd as _;
    rustix::fs::fstat(std::io::stdin().as_fd()).is_ok_and(|stat| {
        let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
        matches!(
            kind,
            rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket
        )
    })
}

fn run() -> anyhow::Result<()> {
    let options = parse(std::env::args().skip(1))?;
    let mut config = match &options.avd {
        Some(avd) => FakeAndroidConfig::emulator(avd),
        None => FakeAndroidConfig::default(),
    };
    config.notes_debuggable = options.notes_debuggable;
    let device = FakeAndroid::start(config)?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", device.port())?;
    stdout.flush()?;
    let adb = options.adb.clone().unwrap_or_else(|| PathBuf::from("adb"));
    if let Some(server_port) = options.adb_port {
        connect(&adb, server_port, &device.serial())?;
        eprintln!(
            "fake-android: {} connected to the adb server on port {server_port}",
            device.serial()
        );
    }
    if stdin_is_watchable() {
        let mut sink = [0u8; 4096];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        if let Some(server_port) = options.adb_port {
            let _ = Command::new(&adb)
                .args(["disconnect", &device.serial()])
                .env("ADB_SERVER_SOCKET", format!("tcp:127.0.0.1:{server_port}"))
                .output();
        }
        return Ok(());
    }
    // SIGTERM's default action ends the process; until then the device serves.
    loop {
        std::thread::park();
    }
}

fn main() {
    if let Err(error) = run() {
        eprintln!("fake-android: error: {error:#}");
        std::process::exit(1);
    }
}
