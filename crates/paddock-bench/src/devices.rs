//! `paddock-bench devices`: Paddock's web devices next to Playwright MCP in the same run. Warm
//! acquisition (`getWeb`) against a cold launch (`provisionDevice` with no warm pool), and
//! `observe` (with and without a screenshot) against Playwright MCP's `browser_snapshot` and
//! `browser_take_screenshot` on the fixture app's big table page, with the ratios.
//!
//! These are latencies of one request at a time, not throughput: each request goes on a fresh
//! loopback connection and is timed from connect to the last byte of the answer. Every answer,
//! timed or not, is checked to be a success with the expected content.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use paddock_client::SecretString;
use paddock_testkit::fixture::FixtureApp;
use serde_json::json;

use crate::daemon::{PrivateDaemon, paddock_binary};
use crate::mcp::verdict;
use crate::mcp_client::{Image, McpClient, ToolAnswer};
use crate::playwright_peer::{self, PeerConfig, PlaywrightPeer};
use crate::pool::{check_bound, wait_for_pool, wait_for_warm_pool};
use crate::probe::Target;
use crate::smoke::{self, Mode};

mod real_web;

/// Warm devices the measured daemon keeps.
const WEB_WARM: usize = 3;
/// Warm devices the daemon of a smoke run keeps: one Chromium is enough to check the answers.
const SMOKE_WEB_WARM: usize = 1;
/// Texts the table page's observation must show: its heading and the first row's email.
const EXPECTED_HEADING: &str = "Accounts";
const EXPECTED_CELL: &str = "user1@example.com";
/// How long Playwright MCP may take to close its browser before it is killed.
const PEER_STOP_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DevicesArgs {
    /// Timed iterations of each warm measurement.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    iterations: u32,
    /// Timed cold launches.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    cold_iterations: u32,
    /// Untimed warm-up iterations before each measurement (cold launches get at most one).
    #[arg(long, default_value_t = 3)]
    warmup: u32,
    /// Rows of the fixture table page both servers observe.
    #[arg(long, default_value_t = 400)]
    rows: u32,
    /// The paddock binary (default: beside this one).
    #[arg(long)]
    paddock: Option<PathBuf>,
    /// The Chromium both Paddock and Playwright MCP drive.
    #[arg(long, default_value = "/usr/bin/chromium")]
    chromium: PathBuf,
    /// The Playwright MCP peer (default: `bench/peers/playwright-mcp` of this checkout).
    #[arg(long)]
    playwright_dir: Option<PathBuf>,
    /// Runs of the list-app scenario on each server (the median is reported).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    scenario_runs: u32,
    /// The node binary that runs the peer.
    #[arg(long, default_value = "node")]
    node: PathBuf,
}

/// Request latencies of one measurement.
#[derive(Debug, Clone, Default)]
pub struct Latency {
    samples: Vec<Duration>,
}

impl Latency {
    pub fn push(&mut self, sample: Duration) {
        self.samples.push(sample);
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// The nearest-rank percentile `p` (0 < p ≤ 100) in milliseconds; 0 without samples.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
        sorted
            .get(rank.clamp(1, sorted.len().max(1)) - 1)
            .map_or(0.0, |sample| sample.as_secs_f64() * 1000.0)
    }

    pub fn p50(&self) -> f64 {
        self.percentile_ms(50.0)
    }

    pub fn p90(&self) -> f64 {
        self.percentile_ms(90.0)
    }

    pub fn p99(&self) -> f64 {
        self.percentile_ms(99.0)
    }
}

/// What one kind of answer carried: text characters and the image, if any.
#[derive(Debug, Clone, Default)]
struct AnswerSize {
    chars: usize,
    image: Option<Image>,
}

impl AnswerSize {
    fn of(answer: &ToolAnswer) -> Self {
        Self {
            chars: answer.text().chars().count(),
            image: answer.image(),
        }
    }

    fn describe(&self) -> String {
        match &self.image {
            Some(image) => format!(
                "{} chars + {} {:.1} KiB{}",
                self.chars,
                image.mime,
                image.len as f64 / 1024.0,
                image
                    .dimensions
                    .map(|(width, height)| format!(" {width}x{height}"))
                    .unwrap_or_default()
            ),
            None => format!("{} chars", self.chars),
        }
    }
}

#[derive(Debug, Default)]
struct Measurement {
    latency: Latency,
    size: AnswerSize,
}

impl Measurement {
    fn record(&mut self, answer: &ToolAnswer) {
        self.latency.push(answer.elapsed);
        self.size = AnswerSize::of(answer);
    }
}

/// The four page measurements, taken in alternation.
#[derive(Debug, Default)]
struct PageMeasurements {
    observe: Measurement,
    observe_screenshot: Measurement,
    /// Paddock's `screenshot`.
    paddock_screenshot: Measurement,
    snapshot: Measurement,
    screenshot: Measurement,
}

pub(crate) async fn run(args: DevicesArgs, mode: Mode) -> anyhow::Result<()> {
    let paddock = paddock_binary(args.paddock.clone())?;
    if mode.is_smoke() {
        return smoke(&paddock, args);
    }
    let work = tempfile::tempdir()?;
    let peer_config = PeerConfig {
        node: args.node.clone(),
        dir: args
            .playwright_dir
            .clone()
            .unwrap_or_else(playwright_peer::default_dir),
        chromium: args.chromium.clone(),
        work_dir: work.path().to_path_buf(),
    };
    // A missing peer installation should fail before anything starts.
    PlaywrightPeer::check_installed(&peer_config)?;
    let fixture = FixtureApp::start()?;
    let table_url = fixture.url(&format!("/table?rows={}", args.rows));
    let cold_warmup = args.warmup.min(1);

    progress(&format!(
        "cold launches: {} + {cold_warmup} warm-up, daemon with --web-warm 0",
        args.cold_iterations
    ));
    let cold = measure_cold(&paddock, &args, cold_warmup)?;

    let daemon = start_daemon(&paddock, &args, WEB_WARM)?;
    let mut paddock_mcp = paddock_client(&daemon)?;
    progress(&format!(
        "warm acquisitions: {} + {} warm-up, daemon with --web-warm {WEB_WARM}",
        args.iterations, args.warmup
    ));
    let warm = measure_warm(&mut paddock_mcp, &args, WEB_WARM)?;

    progress("starting Playwright MCP");
    let peer = PlaywrightPeer::start(&peer_config).await?;
    let mut playwright = McpClient::new(peer.address(), &peer.url(), None)?;
    let server_info = playwright
        .initialize()
        .with_context(|| format!("Playwright MCP; its stderr:\n{}", peer.stderr_tail()))?;
    progress(&format!(
        "page observations: {} + {} warm-up each, alternating",
        args.iterations, args.warmup
    ));
    let pages = measure_pages(&mut paddock_mcp, Some(&mut playwright), &table_url, &args)?;
    progress("the frames page");
    let frames = real_web::measure_frames(
        &mut paddock_mcp,
        Some(&mut playwright),
        &fixture.url("/frames"),
        args.iterations,
        args.warmup,
    )?;
    progress("the list-app scenario");
    let todo_url = fixture.url("/todo");
    let mut paddock_costs = Vec::new();
    let mut playwright_costs = Vec::new();
    for _ in 0..args.scenario_runs {
        paddock_costs.push(real_web::paddock_scenario(&mut paddock_mcp, &todo_url)?);
        playwright_costs.push(real_web::playwright_scenario(&mut playwright, &todo_url)?);
    }

    println!(
        "devices: Paddock web devices vs Playwright MCP {} ({} {}), same run; Chromium `{}`, Pixel 7 emulation on both",
        playwright_peer::version(&peer_config.dir),
        server_info["name"].as_str().unwrap_or("server"),
        server_info["version"].as_str().unwrap_or("?"),
        args.chromium.display()
    );
    println!(
        "one request at a time on fresh loopback connections; {} iterations ({} for cold launches) after {} warm-up; page {}",
        args.iterations,
        args.cold_iterations,
        args.warmup,
        table_url.rsplit_once('/').map_or("", |(_, page)| page)
    );
    println!();
    println!(
        "{:<36} {:>10} {:>10} {:>5}  answer",
        "measurement", "p50 ms", "p90 ms", "n"
    );
    let row = |name: &str, latency: &Latency, size: Option<&AnswerSize>| {
        println!(
            "{name:<36} {:>10.2} {:>10.2} {:>5}  {}",
            latency.p50(),
            latency.p90(),
            latency.len(),
            size.map(AnswerSize::describe).unwrap_or_default()
        );
    };
    row("paddock getWeb (warm)", &warm, None);
    row("paddock provisionDevice (cold)", &cold, None);
    row(
        "paddock observe",
        &pages.observe.latency,
        Some(&pages.observe.size),
    );
    row(
        "paddock observe+screenshot",
        &pages.observe_screenshot.latency,
        Some(&pages.observe_screenshot.size),
    );
    row(
        "playwright browser_snapshot",
        &pages.snapshot.latency,
        Some(&pages.snapshot.size),
    );
    row(
        "playwright browser_take_screenshot",
        &pages.screenshot.latency,
        Some(&pages.screenshot.size),
    );
    row(
        "paddock screenshot",
        &pages.paddock_screenshot.latency,
        Some(&pages.paddock_screenshot.size),
    );
    row(
        "paddock observe (frames page)",
        &frames.observe.latency,
        Some(&frames.observe.size),
    );
    row(
        "playwright browser_snapshot (frames)",
        &frames.snapshot.latency,
        Some(&frames.snapshot.size),
    );
    println!();
    let cold_over_warm = cold.p50() / warm.p50();
    let snapshot_ratio = pages.snapshot.latency.p50() / pages.observe.latency.p50();
    let snapshot_ratio_p90 = pages.snapshot.latency.p90() / pages.observe.latency.p90();
    let screenshot_ratio = pages.screenshot.latency.p50() / pages.observe_screenshot.latency.p50();
    let screenshot_ratio_p90 =
        pages.screenshot.latency.p90() / pages.observe_screenshot.latency.p90();
    // One observe with a screenshot gives what Playwright needs two calls for.
    let both_ratio = (pages.snapshot.latency.p50() + pages.screenshot.latency.p50())
        / pages.observe_screenshot.latency.p50();
    let chars_ratio = pages.observe.size.chars as f64 / pages.snapshot.size.chars as f64;
    println!(
        "paddock getWeb (warm) p50:                            {:>8.2} ms (goal <= 20 ms: {})",
        warm.p50(),
        verdict(warm.p50() <= 20.0)
    );
    println!("cold/warm acquisition p50:                            {cold_over_warm:>8.1}x");
    println!(
        "playwright/paddock browser_snapshot vs observe p50:   {snapshot_ratio:>8.2}x (p90 {snapshot_ratio_p90:.2}x; goal >= 2x: {})",
        verdict(snapshot_ratio >= 2.0)
    );
    println!(
        "playwright/paddock screenshot vs observe+screenshot:  {screenshot_ratio:>8.2}x (p90 {screenshot_ratio_p90:.2}x; goal >= 2x: {})",
        verdict(screenshot_ratio >= 2.0)
    );
    println!(
        "playwright snapshot+screenshot vs observe+screenshot: {both_ratio:>8.2}x (same information in one call; goal >= 3x: {})",
        verdict(both_ratio >= 3.0)
    );
    println!(
        "paddock observe chars / playwright snapshot chars:    {chars_ratio:>8.3}  ({} / {}; goal <= 0.3: {})",
        pages.observe.size.chars,
        pages.snapshot.size.chars,
        verdict(chars_ratio <= 0.3)
    );
    let shot_ratio = pages.paddock_screenshot.latency.p50() / pages.screenshot.latency.p50();
    println!(
        "paddock/playwright screenshot p50:                    {shot_ratio:>8.2}x (p90 {:.2}x; goal <= 0.8x: {})",
        pages.paddock_screenshot.latency.p90() / pages.screenshot.latency.p90(),
        verdict(shot_ratio <= 0.8)
    );
    let frames_ratio = frames.snapshot.latency.p50() / frames.observe.latency.p50();
    let frames_chars = frames.observe.size.chars as f64 / frames.snapshot.size.chars as f64;
    println!(
        "frames page: playwright snapshot / paddock observe:   {frames_ratio:>8.2}x (p90 {:.2}x; goal >= 4x: {})",
        frames.snapshot.latency.p90() / frames.observe.latency.p90(),
        verdict(frames_ratio >= 4.0)
    );
    println!(
        "frames page: paddock chars / playwright chars:        {frames_chars:>8.3}  ({} / {}; goal <= 0.3: {})",
        frames.observe.size.chars,
        frames.snapshot.size.chars,
        verdict(frames_chars <= 0.3)
    );
    let median = |costs: &mut Vec<real_web::ScenarioCost>| {
        costs.sort_by_key(|cost| cost.wall);
        costs[costs.len() / 2]
    };
    let (ours, theirs) = (median(&mut paddock_costs), median(&mut playwright_costs));
    let scenario_chars = ours.chars as f64 / theirs.chars as f64;
    println!(
        "list-app scenario, characters read:                   {scenario_chars:>8.3}  (paddock {} in {} calls / playwright {} in {} calls; goal <= 0.4: {})",
        ours.chars,
        ours.calls,
        theirs.chars,
        theirs.calls,
        verdict(scenario_chars <= 0.4)
    );
    println!(
        "list-app scenario, wall time (median of {}):           {:>8.2}x  (paddock {:.0} ms / playwright {:.0} ms)",
        paddock_costs.len(),
        ours.wall.as_secs_f64() / theirs.wall.as_secs_f64(),
        ours.wall.as_secs_f64() * 1000.0,
        theirs.wall.as_secs_f64() * 1000.0
    );
    peer.stop(PEER_STOP_GRACE).await;
    drop(daemon);
    Ok(())
}

/// Every measured operation once on Paddock alone (no Playwright MCP): a cold
/// `provisionDevice`, a warm `getWeb`, and `observe` with and without a screenshot on the
/// table page, whose heading and first row it must show. The same functions as the measurement
/// do the work, so their checks are the smoke run's checks.
fn smoke(paddock: &Path, args: DevicesArgs) -> anyhow::Result<()> {
    let args = DevicesArgs {
        iterations: 1,
        cold_iterations: 1,
        warmup: 0,
        ..args
    };
    let fixture = FixtureApp::start()?;
    let table_url = fixture.url(&format!("/table?rows={}", args.rows));
    measure_cold(paddock, &args, 0)?;
    let daemon = start_daemon(paddock, &args, SMOKE_WEB_WARM)?;
    let mut client = paddock_client(&daemon)?;
    measure_warm(&mut client, &args, SMOKE_WEB_WARM)?;
    let pages = measure_pages(&mut client, None, &table_url, &args)?;
    real_web::measure_frames(&mut client, None, &fixture.url("/frames"), 1, 0)?;
    real_web::paddock_scenario(&mut client, &fixture.url("/todo"))?;
    drop(daemon);
    let image = pages
        .observe_screenshot
        .size
        .image
        .as_ref()
        .map_or_else(|| "none".to_owned(), |image| image.mime.clone());
    smoke::passed(
        "devices",
        &format!(
            "provisionDevice launched a device cold, getWeb acquired a warm one, observe returned the page's text (`{EXPECTED_HEADING}`, `{EXPECTED_CELL}`) and observe+screenshot a screenshot ({image}), the frames page showed its cross-site frame, and the list-app scenario ended with the edited list"
        ),
    );
    Ok(())
}

fn progress(message: &str) {
    use std::io::IsTerminal as _;
    if std::io::stderr().is_terminal() {
        eprintln!("devices: {message}…");
    }
}

fn start_daemon(
    paddock: &Path,
    args: &DevicesArgs,
    web_warm: usize,
) -> anyhow::Result<PrivateDaemon> {
    let warm = web_warm.to_string();
    let chromium = args.chromium.to_string_lossy().into_owned();
    PrivateDaemon::start(paddock, &["--web-warm", &warm, "--chromium", &chromium])
}

/// An MCP client for the daemon, holding its token.
pub(crate) fn paddock_client(daemon: &PrivateDaemon) -> anyhow::Result<McpClient> {
    let url = daemon.url("/mcp")?;
    let address = resolve(&Target::parse(&url)?.authority)?;
    let token = paddock_client::token::read_token_file(&daemon.token_file())?;
    let authorization = SecretString::new(format!("Bearer {}", token.expose_secret()));
    McpClient::new(address, &url, Some(authorization))
}

fn resolve(authority: &str) -> anyhow::Result<SocketAddr> {
    authority
        .to_socket_addrs()
        .with_context(|| format!("resolve `{authority}`"))?
        .next()
        .with_context(|| format!("`{authority}` resolves to no address"))
}

/// `provisionDevice {"platform":"web","boot":true}` on a daemon without a warm pool, so that
/// every call launches Chromium; each device is released and gone before the next launch.
fn measure_cold(paddock: &Path, args: &DevicesArgs, warmup: u32) -> anyhow::Result<Latency> {
    let daemon = start_daemon(paddock, args, 0)?;
    let mut client = paddock_client(&daemon)?;
    let mut latency = Latency::default();
    for iteration in 0..warmup + args.cold_iterations {
        let session = format!("bench-cold-{iteration}");
        let answer = client.call_tool(
            "provisionDevice",
            &json!({ "platform": "web", "boot": true }),
            Some(&session),
        )?;
        check_bound(&answer, &session).context("provisionDevice")?;
        client.call_tool("releaseDevice", &json!({}), Some(&session))?;
        wait_for_pool(&mut client, "no device left", |devices| devices.is_empty())?;
        if iteration >= warmup {
            latency.push(answer.elapsed);
        }
    }
    Ok(latency)
}

/// `getWeb` with a fresh session each time, once the pool is settled: `web_warm` devices warm
/// and none resetting. The release and the pool's refill are untimed.
fn measure_warm(
    client: &mut McpClient,
    args: &DevicesArgs,
    web_warm: usize,
) -> anyhow::Result<Latency> {
    let mut latency = Latency::default();
    for iteration in 0..args.warmup + args.iterations {
        wait_for_warm_pool(client, web_warm)?;
        let session = format!("bench-warm-{iteration}");
        let answer = client.call_tool("getWeb", &json!({}), Some(&session))?;
        check_bound(&answer, &session).context("getWeb")?;
        if answer.structured()["newlyAcquired"] != json!(true) {
            bail!(
                "getWeb did not acquire a new device for a fresh session: {}",
                answer.result
            );
        }
        client.call_tool("releaseDevice", &json!({}), Some(&session))?;
        if iteration >= args.warmup {
            latency.push(answer.elapsed);
        }
    }
    Ok(latency)
}

/// Both servers on the same page: Paddock's `observe` (with and without a screenshot) and
/// Playwright MCP's `browser_snapshot` and `browser_take_screenshot`, alternating so that drift
/// on a busy machine affects all four alike. Without `playwright`, Paddock's alone.
fn measure_pages(
    paddock: &mut McpClient,
    mut playwright: Option<&mut McpClient>,
    url: &str,
    args: &DevicesArgs,
) -> anyhow::Result<PageMeasurements> {
    let session = "bench-observe";
    let acquired = paddock.call_tool("getWeb", &json!({}), Some(session))?;
    check_bound(&acquired, session).context("getWeb")?;
    paddock
        .call_tool("openLink", &json!({ "url": url }), Some(session))
        .context("paddock openLink")?;
    if let Some(playwright) = playwright.as_deref_mut() {
        playwright
            .call_tool("browser_navigate", &json!({ "url": url }), None)
            .context("playwright browser_navigate")?;
    }

    let observe = json!({});
    let observe_screenshot = json!({ "screenshot": true });
    let empty = json!({});
    let mut pages = PageMeasurements::default();
    for iteration in 0..args.warmup + args.iterations {
        let timed = iteration >= args.warmup;
        let answer = paddock.call_tool("observe", &observe, Some(session))?;
        check_observation(&answer, &[EXPECTED_HEADING, EXPECTED_CELL], false)
            .context("paddock observe")?;
        if timed {
            pages.observe.record(&answer);
        }
        if let Some(playwright) = playwright.as_deref_mut() {
            let answer = playwright.call_tool("browser_snapshot", &empty, None)?;
            check_observation(&answer, &[EXPECTED_CELL], false)
                .context("playwright browser_snapshot")?;
            if timed {
                pages.snapshot.record(&answer);
            }
        }
        let answer = paddock.call_tool("observe", &observe_screenshot, Some(session))?;
        check_observation(&answer, &[EXPECTED_HEADING, EXPECTED_CELL], true)
            .context("paddock observe with a screenshot")?;
        if timed {
            pages.observe_screenshot.record(&answer);
        }
        let answer = paddock.call_tool("screenshot", &empty, Some(session))?;
        check_observation(&answer, &[], true).context("paddock screenshot")?;
        if timed {
            pages.paddock_screenshot.record(&answer);
        }
        if let Some(playwright) = playwright.as_deref_mut() {
            let answer = playwright.call_tool("browser_take_screenshot", &empty, None)?;
            check_observation(&answer, &[], true).context("playwright browser_take_screenshot")?;
            if timed {
                pages.screenshot.record(&answer);
            }
        }
    }
    paddock.call_tool("releaseDevice", &json!({}), Some(session))?;
    Ok(pages)
}

/// The answer's text contains every expected string and, when asked, an image.
fn check_observation(answer: &ToolAnswer, expected: &[&str], image: bool) -> anyhow::Result<()> {
    let text = answer.text();
    let missing: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|needle| !text.contains(needle))
        .collect();
    if !missing.is_empty() {
        let excerpt: String = text.chars().take(600).collect();
        bail!(
            "the answer lacks {}; its text begins: {excerpt}",
            missing
                .iter()
                .map(|needle| format!("`{needle}`"))
                .collect::<Vec<_>>()
                .join(" and ")
        );
    }
    if image && answer.image().is_none_or(|image| image.len == 0) {
        bail!("the answer has no image");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn latency(millis: &[u64]) -> Latency {
        let mut latency = Latency::default();
        for &ms in millis {
            latency.push(Duration::from_millis(ms));
        }
        latency
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let ten = latency(&[10, 1, 9, 2, 8, 3, 7, 4, 6, 5]);
        assert_eq!(ten.p50(), 5.0);
        assert_eq!(ten.p90(), 9.0);
        assert_eq!(ten.percentile_ms(100.0), 10.0);
        let one = latency(&[7]);
        assert_eq!(one.p50(), 7.0);
        assert_eq!(one.p90(), 7.0);
        assert_eq!(Latency::default().p50(), 0.0);
    }

    fn answer(result: Value) -> ToolAnswer {
        ToolAnswer {
            elapsed: Duration::ZERO,
            result,
        }
    }

    #[test]
    fn checks_observations() {
        let table = answer(json!({ "content": [
            { "type": "text", "text": "h1 \"Accounts\"\ncell \"user1@example.com\"" },
            { "type": "image", "mimeType": "image/jpeg", "data": "AAAA" },
        ] }));
        check_observation(&table, &[EXPECTED_HEADING, EXPECTED_CELL], true).unwrap();
        let error_page = answer(json!({ "content": [
            { "type": "text", "text": "h1 \"Not found\"" },
        ] }));
        let error = check_observation(&error_page, &[EXPECTED_HEADING, EXPECTED_CELL], false)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`Accounts` and `user1@example.com`"),
            "{error}"
        );
        assert!(check_observation(&error_page, &[], true).is_err());
    }
}
