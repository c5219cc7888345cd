//! `paddock-bench android`: Paddock's Android devices next to mobile-mcp in the same run, on
//! the same fake Android 11 phone (the testkit's) behind the same private adb server. Paddock's
//! `observe` and `tapOn` (at a point, and on a ref), over HTTP and over stdio (`paddock mcp`,
//! the transport mobile-mcp speaks), against mobile-mcp's `mobile_list_elements_on_screen` and
//! `mobile_click_on_screen_at_coordinates`, with the ratios. mobile-mcp runs twice: as it comes
//! (through mobilecli, which on this fake phone falls back to `uiautomator dump` on every
//! listing after failing to install its device server, the phone having no `mv`) and with its
//! legacy robot (adb commands of its own, `uiautomator dump` too), the like-for-like comparison
//! of the two servers' own work. Then the same operations again
//! with a service time per adb command on the phone, and how many commands each sends: that
//! count times a real phone's latency per command is what a real phone adds.
//!
//! These are latencies of one request at a time, the servers taking turns within each round so
//! that drift on a busy machine affects all alike. Every answer, timed or not, is checked.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use paddock_process::ChildSpec;
use paddock_testkit::android::{AdbServer, FakeAndroid, FakeAndroidConfig};
use serde_json::{Value, json};

use crate::daemon::{PrivateDaemon, paddock_binary};
use crate::devices::{Latency, paddock_client};
use crate::mcp::verdict;
use crate::mcp_client::McpClient;
use crate::mobile_mcp_peer::{self, MobilecliDaemon, PeerConfig};
use crate::smoke::{self, Mode};
use crate::stdio_client::StdioMcpClient;

/// The Paddock session both of its transports use: one device, one session.
const SESSION: &str = "bench-android";
/// The fake phone's notes app, whose sign-in screen both servers observe.
const NOTES_APP: &str = "com.example.notes";
/// The Username field, where every tap lands: tapping it again changes nothing.
const USERNAME_ID: &str = "com.example.notes:id/username";
const USERNAME_LABEL: &str = "Username";
/// Text every observation of the sign-in screen shows.
const EXPECTED_TEXT: &str = "Sign in";
/// The fake phone's screen while the sign-in form is in front.
const SIGN_IN_SCREEN: &str = "notes-login";
/// How long the daemon may take to list the phone.
const DEVICE_TIMEOUT: Duration = Duration::from_secs(30);
const DEVICE_POLL: Duration = Duration::from_millis(50);
/// How long a stdio server may take to exit once its stdin closed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Warm-up rounds of the pass with a service time (its operations are already warm).
const DELAYED_WARMUP: u32 = 2;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AndroidArgs {
    /// Timed rounds; each round calls every measured operation once.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    iterations: u32,
    /// Untimed warm-up rounds before the measurement.
    #[arg(long, default_value_t = 10)]
    warmup: u32,
    /// Service time per adb command on the fake phone in a second pass (0: no second pass).
    #[arg(long, default_value_t = 20)]
    device_delay_ms: u64,
    /// Timed rounds of the second pass.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    delayed_iterations: u32,
    /// The paddock binary (default: beside this one).
    #[arg(long)]
    paddock: Option<PathBuf>,
    /// The mobile-mcp peer (default: `bench/peers/mobile-mcp` of this checkout).
    #[arg(long)]
    mobile_mcp_dir: Option<PathBuf>,
    /// The node binary that runs the peer.
    #[arg(long, default_value = "node")]
    node: PathBuf,
}

/// One measured operation on one server, in the order of a round and of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    ObserveHttp,
    ObserveStdio,
    PeerList,
    TapPointHttp,
    TapPointStdio,
    TapRefHttp,
    TapRefStdio,
    PeerTapPoint,
    PeerTapRef,
    LegacyList,
    LegacyTapPoint,
}

const ROWS: [Row; 11] = [
    Row::ObserveHttp,
    Row::ObserveStdio,
    Row::PeerList,
    Row::TapPointHttp,
    Row::TapPointStdio,
    Row::TapRefHttp,
    Row::TapRefStdio,
    Row::PeerTapPoint,
    Row::PeerTapRef,
    Row::LegacyList,
    Row::LegacyTapPoint,
];

impl Row {
    fn label(self) -> &'static str {
        match self {
            Self::ObserveHttp => "paddock observe (http)",
            Self::ObserveStdio => "paddock observe (stdio)",
            Self::PeerList => "mobile-mcp list_elements_on_screen",
            Self::TapPointHttp => "paddock tapOn {x,y} (http)",
            Self::TapPointStdio => "paddock tapOn {x,y} (stdio)",
            Self::TapRefHttp => "paddock tapOn {ref} (http)",
            Self::TapRefStdio => "paddock tapOn {ref} (stdio)",
            Self::PeerTapPoint => "mobile-mcp click_on_screen {x,y}",
            Self::PeerTapRef => "mobile-mcp click_on_screen {ref}",
            Self::LegacyList => "mobile-mcp legacy list_elements",
            Self::LegacyTapPoint => "mobile-mcp legacy click {x,y}",
        }
    }

    fn is_tap(self) -> bool {
        !matches!(
            self,
            Self::ObserveHttp | Self::ObserveStdio | Self::PeerList | Self::LegacyList
        )
    }

    fn index(self) -> usize {
        ROWS.iter().position(|row| *row == self).unwrap_or(0)
    }
}

/// Where the taps land: the Username field's centre and ref, as each server names them.
#[derive(Debug, Clone)]
struct Targets {
    /// In Paddock's units (dp on Android).
    paddock_point: (f64, f64),
    paddock_ref: String,
    /// In pixels, from mobile-mcp's list (the legacy robot's shows the same bounds).
    peer_point: (i64, i64),
    peer_ref: String,
}

/// The four connections, all to the same phone.
struct Servers {
    http: McpClient,
    stdio: StdioMcpClient,
    peer: StdioMcpClient,
    /// mobile-mcp with `MOBILEMCP_LEGACY_ROBOT=1`.
    legacy: StdioMcpClient,
    serial: String,
    targets: Targets,
}

/// One answered call: its latency, the adb commands the phone received meanwhile, the text.
struct Sample {
    elapsed: Duration,
    commands: Vec<String>,
    text: String,
}

/// The samples of one row.
#[derive(Debug, Default, Clone)]
struct Measurement {
    latency: Latency,
    commands: Vec<usize>,
    chars: usize,
    /// The commands of the first timed call, for the report.
    example: Vec<String>,
}

impl Measurement {
    fn record(&mut self, sample: Sample) {
        self.latency.push(sample.elapsed);
        self.commands.push(sample.commands.len());
        self.chars = sample.text.chars().count();
        if self.example.is_empty() {
            self.example = sample.commands;
        }
    }

    /// The median count of adb commands per call.
    fn median_commands(&self) -> usize {
        let mut counts = self.commands.clone();
        counts.sort_unstable();
        counts.get(counts.len() / 2).copied().unwrap_or(0)
    }

    /// `n`, or `min-max` when calls differed.
    fn describe_commands(&self) -> String {
        let min = self.commands.iter().min().copied().unwrap_or(0);
        let max = self.commands.iter().max().copied().unwrap_or(0);
        if min == max {
            min.to_string()
        } else {
            format!("{min}-{max}")
        }
    }
}

pub(crate) async fn run(args: AndroidArgs, mode: Mode) -> anyhow::Result<()> {
    let paddock = paddock_binary(args.paddock.clone())?;
    let peer_dir = args
        .mobile_mcp_dir
        .clone()
        .unwrap_or_else(mobile_mcp_peer::default_dir);
    // A missing peer installation fails before anything starts, in a smoke run too: it checks
    // both servers.
    mobile_mcp_peer::check_installed(&peer_dir)?;
    // Short names: mobilecli's daemon socket lives in here, and a socket path has at most 107
    // bytes.
    let work = tempfile::Builder::new().prefix("pb-android-").tempdir()?;

    progress("starting the adb server, the fake phone and the daemon");
    let adb = AdbServer::start()?;
    let phone = FakeAndroid::start(FakeAndroidConfig::default())?;
    adb.connect(&phone)?;
    let daemon = start_daemon(&paddock, &adb)?;
    let peer_config = PeerConfig {
        node: args.node.clone(),
        dir: peer_dir,
        adb: adb.adb_binary().to_path_buf(),
        adb_server_socket: adb.socket_env(),
        work_dir: work.path().join("peer"),
        legacy_robot: false,
    };
    let legacy_config = PeerConfig {
        work_dir: work.path().join("legacy"),
        legacy_robot: true,
        ..peer_config.clone()
    };
    // Declared before the peers start: dropped after them, on every way out. The legacy robot
    // starts mobilecli's daemon too (to list iOS simulators).
    let mobilecli_daemons = [
        MobilecliDaemon::new(&peer_config),
        MobilecliDaemon::new(&legacy_config),
    ];
    let (mut servers, server_info) =
        connect(&paddock, &daemon, &phone, [&peer_config, &legacy_config]).await?;

    let outcome = if mode.is_smoke() {
        smoke(&mut servers, &phone).await
    } else {
        measure_and_report(
            &mut servers,
            &phone,
            &args,
            &peer_config,
            &server_info,
            &adb,
        )
        .await
    };
    // The clients go first (their sessions end), then the daemon, the phone, the adb server.
    let Servers {
        stdio,
        peer,
        legacy,
        ..
    } = servers;
    stdio.stop(STOP_GRACE).await;
    peer.stop(STOP_GRACE).await;
    legacy.stop(STOP_GRACE).await;
    drop(mobilecli_daemons);
    drop(daemon);
    drop(phone);
    drop(adb);
    outcome
}

/// Every measured operation once on both servers, with the same checks as the measurement.
async fn smoke(servers: &mut Servers, phone: &FakeAndroid) -> anyhow::Result<()> {
    let mut taps = Vec::new();
    for row in ROWS {
        let sample = call(servers, phone, row).await?;
        if row.is_tap() {
            taps.extend(
                sample
                    .commands
                    .into_iter()
                    .filter(|command| command.starts_with("input tap")),
            );
        }
    }
    taps.dedup();
    smoke::passed(
        "android",
        &format!(
            "paddock observe (http and stdio) and mobile-mcp's element list (mobilecli and legacy robot) showed the sign-in screen (`{EXPECTED_TEXT}`); paddock tapOn at a point and on a ref and mobile-mcp's click at a point and on a ref (legacy: at a point) answered and reached the phone ({})",
            taps.join(", ")
        ),
    );
    Ok(())
}

async fn measure_and_report(
    servers: &mut Servers,
    phone: &FakeAndroid,
    args: &AndroidArgs,
    peer_config: &PeerConfig,
    server_info: &ServerInfo,
    adb: &AdbServer,
) -> anyhow::Result<()> {
    progress(&format!(
        "{} rounds + {} warm-up, the phone answering at once",
        args.iterations, args.warmup
    ));
    let instant = measure(servers, phone, args.warmup, args.iterations).await?;
    let delay = Duration::from_millis(args.device_delay_ms);
    let delayed = if delay.is_zero() {
        None
    } else {
        progress(&format!(
            "{} rounds + {DELAYED_WARMUP} warm-up, {} ms per adb command",
            args.delayed_iterations, args.device_delay_ms
        ));
        phone.set_delay(delay);
        let delayed = measure(servers, phone, DELAYED_WARMUP, args.delayed_iterations).await;
        phone.set_delay(Duration::ZERO);
        Some(delayed?)
    };

    let adb_version = adb
        .adb(&["version"])
        .ok()
        .and_then(|output| {
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .next()
                .and_then(|line| line.strip_prefix("Android Debug Bridge version "))
                .map(|version| format!("adb {version}"))
        })
        .unwrap_or_else(|| "adb".to_owned());
    let (tap_x, tap_y) = servers.targets.peer_point;
    println!(
        "android: {} vs {} (@mobilenext/mobile-mcp {}; through mobilecli {}, and with its legacy robot, MOBILEMCP_LEGACY_ROBOT=1), same run; one fake Android 11 phone (Pixel 4a, 1080x2340 at 440 dpi) behind one private adb server ({adb_version})",
        server_info.paddock,
        server_info.peer,
        mobile_mcp_peer::version(&peer_config.dir),
        mobile_mcp_peer::mobilecli_version(&peer_config.dir),
    );
    println!(
        "one request at a time, the servers taking turns; {} rounds after {} warm-up; the notes app's sign-in screen, every tap on its Username field (pixel {tap_x},{tap_y}); mobile-mcp on stdio",
        args.iterations, args.warmup
    );
    println!();
    println!(
        "{:<36} {:>9} {:>9} {:>5} {:>9}  answer",
        "measurement", "p50 ms", "p99 ms", "n", "adb cmds"
    );
    for row in ROWS {
        let measurement = &instant[row.index()];
        println!(
            "{:<36} {:>9.2} {:>9.2} {:>5} {:>9}  {} chars",
            row.label(),
            measurement.latency.p50(),
            measurement.latency.p99(),
            measurement.latency.len(),
            measurement.describe_commands(),
            measurement.chars
        );
    }
    let at = |row: Row| &instant[row.index()];
    // tapOn answers with the new observation; mobile-mcp needs a second call for it.
    let click_and_list = |click: Row, list: Row| {
        (
            at(click).latency.p50() + at(list).latency.p50(),
            at(click).latency.p99() + at(list).latency.p99(),
            at(click).median_commands() + at(list).median_commands(),
        )
    };
    let sums = [
        (
            "mobile-mcp click {x,y} + list",
            click_and_list(Row::PeerTapPoint, Row::PeerList),
        ),
        (
            "mobile-mcp legacy click + list",
            click_and_list(Row::LegacyTapPoint, Row::LegacyList),
        ),
    ];
    for (label, (p50, p99, commands)) in sums {
        println!(
            "{label:<36} {p50:>9.2} {p99:>9.2} {:>5} {commands:>9}  (two calls: what tapOn answers with)",
            at(Row::PeerTapPoint).latency.len(),
        );
    }
    println!();
    println!("adb commands per call, as the phone received them:");
    for row in ROWS {
        println!(
            "  {:<36} {}",
            row.label(),
            summarize_commands(&at(row).example)
        );
    }
    println!();
    let line = |name: &str, paddock: (f64, f64), peer: (f64, f64), note: &str| {
        let (p50, p99) = (paddock.0 / peer.0, paddock.1 / peer.1);
        println!(
            "{name:<64} {p50:>6.3}x (p99 {p99:.3}x; {note}goal <= 0.5: {})",
            verdict(p50 <= 0.5)
        );
    };
    let latency = |row: Row| (at(row).latency.p50(), at(row).latency.p99());
    let comparisons = [
        (
            "observe vs list_elements (stdio)",
            Row::ObserveStdio,
            Row::PeerList,
        ),
        (
            "observe vs list_elements (http)",
            Row::ObserveHttp,
            Row::PeerList,
        ),
        (
            "legacy observe vs list_elements (stdio)",
            Row::ObserveStdio,
            Row::LegacyList,
        ),
        (
            "tapOn {x,y} vs click {x,y} (stdio)",
            Row::TapPointStdio,
            Row::PeerTapPoint,
        ),
        (
            "tapOn {x,y} vs click {x,y} (http)",
            Row::TapPointHttp,
            Row::PeerTapPoint,
        ),
        (
            "legacy tapOn {x,y} vs click {x,y} (stdio)",
            Row::TapPointStdio,
            Row::LegacyTapPoint,
        ),
        (
            "tapOn {ref} vs click {ref} (stdio)",
            Row::TapRefStdio,
            Row::PeerTapRef,
        ),
        (
            "tapOn {ref} vs click {ref} (http)",
            Row::TapRefHttp,
            Row::PeerTapRef,
        ),
    ];
    for (name, paddock, peer) in comparisons {
        line(
            &format!("paddock/mobile-mcp {name} p50:"),
            latency(paddock),
            latency(peer),
            "",
        );
    }
    for (name, (label, (p50, p99, _))) in [
        "tapOn {x,y} vs click + list (stdio)",
        "legacy tapOn {x,y} vs click + list (stdio)",
    ]
    .into_iter()
    .zip(sums)
    {
        line(
            &format!("paddock/mobile-mcp {name} p50:"),
            latency(Row::TapPointStdio),
            (p50, p99),
            &format!("vs {label}: same information; "),
        );
    }
    for (name, list) in [
        ("mobile-mcp list chars", Row::PeerList),
        ("mobile-mcp legacy list chars", Row::LegacyList),
    ] {
        let chars = at(Row::ObserveStdio).chars as f64 / at(list).chars as f64;
        println!(
            "{:<64} {chars:>6.3}  ({} / {}; goal <= 0.5: {})",
            format!("paddock observe chars / {name}:"),
            at(Row::ObserveStdio).chars,
            at(list).chars,
            verdict(chars <= 0.5)
        );
    }

    if let Some(delayed) = delayed {
        let delay_ms = args.device_delay_ms as f64;
        println!();
        println!(
            "with {} ms per adb command on the phone ({} rounds after {DELAYED_WARMUP} warm-up): added = p50 - p50 at 0 ms; in series = added / {} ms, the commands on the call's critical path (a server may run some at once); beyond = p50 - cmds x {} ms",
            args.device_delay_ms,
            args.delayed_iterations,
            args.device_delay_ms,
            args.device_delay_ms
        );
        println!(
            "{:<36} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9}",
            "measurement",
            "adb cmds",
            "p50 0ms",
            format!("p50 {}ms", args.device_delay_ms),
            "added",
            "in series",
            format!("cmds x {}", args.device_delay_ms),
            "beyond"
        );
        for row in ROWS {
            let slow = &delayed[row.index()];
            let fast = at(row);
            let service = slow.median_commands() as f64 * delay_ms;
            let added = slow.latency.p50() - fast.latency.p50();
            println!(
                "{:<36} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.1} {:>11.0} {:>9.2}",
                row.label(),
                slow.describe_commands(),
                fast.latency.p50(),
                slow.latency.p50(),
                added,
                added / delay_ms,
                service,
                slow.latency.p50() - service
            );
        }
    }
    Ok(())
}

/// `initialize`'s `serverInfo` of each side, for the report.
struct ServerInfo {
    paddock: String,
    peer: String,
}

fn describe_server(info: &Value) -> String {
    format!(
        "{} {}",
        info["name"].as_str().unwrap_or("server"),
        info["version"].as_str().unwrap_or("?")
    )
}

/// `warmup + iterations` rounds of every row, in turn; the warm-up rounds are not recorded.
async fn measure(
    servers: &mut Servers,
    phone: &FakeAndroid,
    warmup: u32,
    iterations: u32,
) -> anyhow::Result<Vec<Measurement>> {
    let mut measurements = vec![Measurement::default(); ROWS.len()];
    for round in 0..warmup + iterations {
        for row in ROWS {
            let sample = call(servers, phone, row).await?;
            if round >= warmup {
                measurements[row.index()].record(sample);
            }
        }
    }
    Ok(measurements)
}

/// One call of `row`, checked: an observation shows the sign-in screen, a tap reached the
/// phone as an `input tap` and left the sign-in screen in front.
async fn call(servers: &mut Servers, phone: &FakeAndroid, row: Row) -> anyhow::Result<Sample> {
    let targets = &servers.targets;
    let device = json!({ "device": servers.serial });
    let (paddock_x, paddock_y) = targets.paddock_point;
    let (peer_x, peer_y) = targets.peer_point;
    let before = phone.command_count();
    let answer = match row {
        Row::ObserveHttp => servers
            .http
            .call_tool("observe", &json!({}), Some(SESSION))?,
        Row::ObserveStdio => servers.stdio.call_tool("observe", &json!({})).await?,
        Row::PeerList => {
            servers
                .peer
                .call_tool("mobile_list_elements_on_screen", &device)
                .await?
        }
        Row::TapPointHttp => servers.http.call_tool(
            "tapOn",
            &json!({ "x": paddock_x, "y": paddock_y }),
            Some(SESSION),
        )?,
        Row::TapPointStdio => {
            servers
                .stdio
                .call_tool("tapOn", &json!({ "x": paddock_x, "y": paddock_y }))
                .await?
        }
        Row::TapRefHttp => servers.http.call_tool(
            "tapOn",
            &json!({ "ref": targets.paddock_ref }),
            Some(SESSION),
        )?,
        Row::TapRefStdio => {
            servers
                .stdio
                .call_tool("tapOn", &json!({ "ref": targets.paddock_ref }))
                .await?
        }
        Row::PeerTapPoint => {
            servers
                .peer
                .call_tool(
                    "mobile_click_on_screen_at_coordinates",
                    &json!({ "device": servers.serial, "x": peer_x, "y": peer_y }),
                )
                .await?
        }
        Row::PeerTapRef => {
            servers
                .peer
                .call_tool(
                    "mobile_click_on_screen_at_coordinates",
                    &json!({ "device": servers.serial, "ref": targets.peer_ref }),
                )
                .await?
        }
        Row::LegacyList => {
            servers
                .legacy
                .call_tool("mobile_list_elements_on_screen", &device)
                .await?
        }
        Row::LegacyTapPoint => {
            servers
                .legacy
                .call_tool(
                    "mobile_click_on_screen_at_coordinates",
                    &json!({ "device": servers.serial, "x": peer_x, "y": peer_y }),
                )
                .await?
        }
    };
    let commands: Vec<String> = phone.commands().split_off(before);
    let text = answer.text();
    check(row, &text, &commands, &phone.screen()).with_context(|| row.label())?;
    Ok(Sample {
        elapsed: answer.elapsed,
        commands,
        text,
    })
}

fn check(row: Row, text: &str, commands: &[String], screen: &str) -> anyhow::Result<()> {
    let excerpt = || text.chars().take(600).collect::<String>();
    match row {
        Row::PeerTapPoint | Row::PeerTapRef | Row::LegacyTapPoint => {
            // mobile-mcp answers a failure it calls actionable as plain text, not as an error.
            if !text.starts_with("Clicked on") {
                bail!("the click was not done: {}", excerpt());
            }
        }
        Row::PeerList | Row::LegacyList => {
            if !(text.contains(EXPECTED_TEXT) && text.contains(USERNAME_ID)) {
                bail!(
                    "the list lacks `{EXPECTED_TEXT}` or `{USERNAME_ID}`: {}",
                    excerpt()
                );
            }
        }
        _ => {
            // After an action Paddock answers with what changed since the session's last
            // observation when that is shorter than the screen; the screen itself otherwise.
            let changes = row.is_tap()
                && (text.contains("change(s) since your last observation")
                    || text.contains("no element changed since your last observation"));
            if !changes && !text.contains(EXPECTED_TEXT) {
                bail!(
                    "the observation lacks `{EXPECTED_TEXT}`; its text begins: {}",
                    excerpt()
                );
            }
        }
    }
    if row.is_tap() {
        if !commands
            .iter()
            .any(|command| command.starts_with("input tap "))
        {
            bail!("no `input tap` reached the phone; it received {commands:?}");
        }
        if screen != SIGN_IN_SCREEN {
            bail!("the tap left `{screen}` in front instead of the sign-in screen");
        }
    }
    Ok(())
}

/// The commands of one call in order, repeats folded (`uiautomator dump /dev/tty x2`).
fn summarize_commands(commands: &[String]) -> String {
    let mut folded: Vec<(&str, usize)> = Vec::new();
    for command in commands {
        match folded.last_mut() {
            Some((last, count)) if *last == command.as_str() => *count += 1,
            _ => folded.push((command, 1)),
        }
    }
    if folded.is_empty() {
        return "(none)".to_owned();
    }
    folded
        .iter()
        .map(|(command, count)| {
            if *count > 1 {
                format!("{command} x{count}")
            } else {
                (*command).to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn progress(message: &str) {
    use std::io::IsTerminal as _;
    if std::io::stderr().is_terminal() {
        eprintln!("android: {message}…");
    }
}

/// A daemon without web devices, following the private adb server.
fn start_daemon(paddock: &Path, adb: &AdbServer) -> anyhow::Result<PrivateDaemon> {
    PrivateDaemon::start_with_env(
        paddock,
        &["--web-warm", "0"],
        &[
            ("ADB_SERVER_SOCKET", adb.socket_env()),
            ("PADDOCK_ANDROID_ADB", "connect".to_owned()),
        ],
        "",
    )
}

/// Connects Paddock over HTTP and stdio and starts mobile-mcp; binds the phone to the
/// Paddock session, opens the notes app and finds where the taps land.
async fn connect(
    paddock: &Path,
    daemon: &PrivateDaemon,
    phone: &FakeAndroid,
    [peer_config, legacy_config]: [&PeerConfig; 2],
) -> anyhow::Result<(Servers, ServerInfo)> {
    let serial = phone.serial();
    let mut http = paddock_client(daemon)?;
    wait_for_phone(&mut http, &serial)?;
    let acquired = http.call_tool("getAndroid", &json!({}), Some(SESSION))?;
    if acquired.structured()["device"]["id"] != json!(serial) {
        bail!(
            "getAndroid did not bind the fake phone: {}",
            acquired.result
        );
    }
    http.call_tool("launchApp", &json!({ "appId": NOTES_APP }), Some(SESSION))
        .context("paddock launchApp")?;
    if phone.screen() != SIGN_IN_SCREEN {
        bail!(
            "the notes app opened `{}` instead of its sign-in screen",
            phone.screen()
        );
    }

    let mut stdio = StdioMcpClient::start(paddock_mcp_spec(paddock, daemon))
        .context("starting `paddock mcp`")?;
    let paddock_info = stdio
        .initialize()
        .await
        .with_context(|| format!("paddock mcp; its stderr:\n{}", stdio.stderr_tail()))?;
    let (mut peer, peer_info) = start_peer(peer_config, &serial).await?;
    let (mut legacy, _) = start_peer(legacy_config, &serial).await?;

    let observation = http.call_tool("observe", &json!({ "format": "json" }), Some(SESSION))?;
    let (paddock_point, paddock_ref) = paddock_target(observation.structured())?;
    let device = json!({ "device": serial });
    let listing = peer
        .call_tool("mobile_list_elements_on_screen", &device)
        .await?;
    let (peer_point, peer_ref) = peer_target(&listing.text())?;
    let peer_ref = peer_ref.with_context(|| {
        format!(
            "no ref for `{USERNAME_ID}` in mobile-mcp's list:\n{}",
            listing.text()
        )
    })?;
    let legacy_listing = legacy
        .call_tool("mobile_list_elements_on_screen", &device)
        .await?;
    let (legacy_point, _) = peer_target(&legacy_listing.text())?;
    if legacy_point != peer_point {
        bail!(
            "mobile-mcp's two robots place `{USERNAME_ID}` differently: {peer_point:?} and {legacy_point:?}"
        );
    }
    let servers = Servers {
        http,
        stdio,
        peer,
        legacy,
        serial,
        targets: Targets {
            paddock_point,
            paddock_ref,
            peer_point,
            peer_ref,
        },
    };
    let info = ServerInfo {
        paddock: describe_server(&paddock_info),
        peer: describe_server(&peer_info),
    };
    Ok((servers, info))
}

/// Starts mobile-mcp as `config` says and checks that it lists the phone.
async fn start_peer(config: &PeerConfig, serial: &str) -> anyhow::Result<(StdioMcpClient, Value)> {
    let (mut peer, info) = mobile_mcp_peer::start(config).await?;
    let listed = peer
        .call_tool("mobile_list_available_devices", &json!({}))
        .await
        .with_context(|| format!("mobile-mcp; its stderr:\n{}", peer.stderr_tail()))?;
    if !listed.text().contains(serial) {
        bail!(
            "mobile-mcp does not list the fake phone `{serial}`: {}\nits stderr:\n{}",
            listed.text(),
            peer.stderr_tail()
        );
    }
    Ok((peer, info))
}

/// `paddock mcp --session-id SESSION` against `daemon`, with only the environment it needs.
fn paddock_mcp_spec(paddock: &Path, daemon: &PrivateDaemon) -> ChildSpec {
    let mut env: Vec<(OsString, OsString)> = ["PATH", "HOME", "LANG", "TMPDIR"]
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| ((*name).into(), value)))
        .collect();
    env.extend(daemon.client_env());
    ChildSpec {
        program: paddock.to_path_buf(),
        args: ["mcp", "--session-id", SESSION]
            .map(OsString::from)
            .to_vec(),
        env,
        ..ChildSpec::default()
    }
}

/// Polls `listDevices` until the daemon lists the phone as warm.
fn wait_for_phone(client: &mut McpClient, serial: &str) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + DEVICE_TIMEOUT;
    loop {
        let listed = client.call_tool("listDevices", &json!({ "platform": "android" }), None)?;
        let warm = listed.structured()["devices"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|device| device["id"] == json!(serial) && device["state"] == "warm");
        if warm {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            bail!(
                "the daemon did not list `{serial}` as warm within {}s; it lists {}",
                DEVICE_TIMEOUT.as_secs(),
                listed.structured()
            );
        }
        std::thread::sleep(DEVICE_POLL);
    }
}

/// The Username field in Paddock's JSON observation: its centre (in its units) and its ref.
fn paddock_target(observation: &Value) -> anyhow::Result<((f64, f64), String)> {
    let element = observation["elements"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|element| element["role"] == "textbox" && element["name"] == USERNAME_LABEL)
        .with_context(|| format!("no textbox `{USERNAME_LABEL}` in {observation}"))?;
    let bounds: Vec<f64> = element["bounds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .collect();
    let [x, y, width, height] = bounds[..] else {
        bail!("the textbox has no bounds: {element}");
    };
    let reference = element["ref"]
        .as_str()
        .with_context(|| format!("the textbox has no ref: {element}"))?;
    Ok(((x + width / 2.0, y + height / 2.0), reference.to_owned()))
}

/// The Username field in mobile-mcp's text listing (`@e3 EditText … id="…" at=X,Y size=WxH`):
/// its centre in pixels and its ref (the legacy robot lists none).
fn peer_target(listing: &str) -> anyhow::Result<((i64, i64), Option<String>)> {
    let needle = format!("id=\"{USERNAME_ID}\"");
    let line = listing
        .lines()
        .find(|line| line.contains(&needle))
        .with_context(|| format!("no `{USERNAME_ID}` in mobile-mcp's list:\n{listing}"))?;
    let field = |prefix: &str, separator: char| -> Option<(i64, i64)> {
        let value = line
            .split_whitespace()
            .find_map(|word| word.strip_prefix(prefix))?;
        let (a, b) = value.split_once(separator)?;
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    let ((x, y), (width, height)) = field("at=", ',')
        .zip(field("size=", 'x'))
        .with_context(|| format!("no `at=` and `size=` in `{line}`"))?;
    let reference = line
        .split_whitespace()
        .next()
        .filter(|word| word.starts_with('@'))
        .map(str::to_owned);
    Ok(((x + width / 2, y + height / 2), reference))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_peers_target() {
        let listing = "One element per line: @ref Type text= label= name= value= id= at=x,y size=WxH [focused] [selected] [checked] [disabled]\n@e1 TextView text=\"Sign in to Notes\" at=88,300 size=904x100\n@e2 EditText label=\"Username\" id=\"com.example.notes:id/username\" at=88,600 size=904x140 focused\n";
        assert_eq!(
            peer_target(listing).unwrap(),
            ((540, 670), Some("@e2".to_owned()))
        );
        let legacy = "EditText text=\"Username\" id=\"com.example.notes:id/username\" at=55,286 size=970x132";
        assert_eq!(peer_target(legacy).unwrap(), ((540, 352), None));
        assert!(peer_target("@e1 Button text=\"Sign in\" at=1,2 size=3x4").is_err());
    }

    #[test]
    fn finds_paddocks_target() {
        let observation = json!({ "elements": [
            { "ref": "e1", "role": "button", "name": "Sign in", "bounds": [16, 300, 360, 48] },
            { "ref": "e2", "role": "textbox", "name": "Username", "bounds": [16, 200, 360, 51] },
        ] });
        assert_eq!(
            paddock_target(&observation).unwrap(),
            ((196.0, 225.5), "e2".to_owned())
        );
        assert!(paddock_target(&json!({ "elements": [] })).is_err());
    }

    #[test]
    fn folds_repeated_commands() {
        let commands = [
            "input tap 1 2",
            "uiautomator dump /dev/tty",
            "uiautomator dump /dev/tty",
        ]
        .map(str::to_owned);
        assert_eq!(
            summarize_commands(&commands),
            "input tap 1 2; uiautomator dump /dev/tty x2"
        );
        assert_eq!(summarize_commands(&[]), "(none)");
    }

    #[test]
    fn checks_answers() {
        let tapped = ["input tap 540 670".to_owned()];
        let none: [String; 0] = [];
        let cases: [(Row, &str, &[String], &str, bool); 6] = [
            (
                Row::PeerTapPoint,
                "Clicked on screen at coordinates: 540, 670",
                &tapped,
                SIGN_IN_SCREEN,
                true,
            ),
            // mobile-mcp's actionable errors are plain text.
            (
                Row::PeerTapPoint,
                "Device \"x\" not found. Please fix the issue and try again.",
                &tapped,
                SIGN_IN_SCREEN,
                false,
            ),
            (
                Row::TapPointStdio,
                "button \"Sign in\"",
                &none,
                SIGN_IN_SCREEN,
                false,
            ),
            (
                Row::TapPointStdio,
                "button \"Sign in\"",
                &tapped,
                "notes-list",
                false,
            ),
            (
                Row::ObserveHttp,
                "button \"Sign in\"",
                &none,
                SIGN_IN_SCREEN,
                true,
            ),
            (
                Row::PeerList,
                "button \"Sign in\"",
                &none,
                SIGN_IN_SCREEN,
                false,
            ),
        ];
        for (row, text, commands, screen, accepted) in cases {
            assert_eq!(
                check(row, text, commands, screen).is_ok(),
                accepted,
                "{row:?} {text}"
            );
        }
    }
}
