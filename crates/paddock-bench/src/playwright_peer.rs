//! The Playwright MCP peer (`bench/peers/playwright-mcp`): Microsoft's MCP server for browser
//! automation, run under node with the system Chromium for the length of a benchmark.

use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_process::{ChildSpec, ManagedChild};

use crate::node_package::installed_version;

/// How long node may take to load Playwright and listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(200);
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The device Playwright emulates: the same phone as Paddock's default `pixel7` profile.
pub const DEVICE: &str = "Pixel 7";

/// Variables the peer inherits; nothing else of this process's environment (such as a
/// `PADDOCK_DAEMON_HTTP_TOKEN`) reaches it.
const INHERITED_ENV: [&str; 7] = ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"];

/// The peer's directory in this repository, as of the build.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers/playwright-mcp")
}

/// The installed `@playwright/mcp` version, for the report.
pub fn version(dir: &Path) -> String {
    installed_version(dir, "@playwright/mcp")
}

/// What to run.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub node: PathBuf,
    pub dir: PathBuf,
    pub chromium: PathBuf,
    /// The working directory: Playwright MCP's workspace root and output directory, where it
    /// writes snapshot and screenshot files.
    pub work_dir: PathBuf,
}

/// A running peer; dropping it kills node and the browser it launched (one process group).
#[derive(Debug)]
pub struct PlaywrightPeer {
    child: ManagedChild,
    port: u16,
    /// The address that accepted a connection: `localhost` may resolve to several.
    address: SocketAddr,
}

impl PlaywrightPeer {
    /// Checks the installation before anything else starts.
    pub fn check_installed(config: &PeerConfig) -> anyhow::Result<PathBuf> {
        let cli = config.dir.join("node_modules/@playwright/mcp/cli.js");
        if !config.dir.join("package.json").is_file() {
            bail!(
                "no Playwright MCP peer at `{}`\nhint: pass --playwright-dir <bench/peers/playwright-mcp>",
                config.dir.display()
            );
        }
        if !cli.is_file() {
            bail!(
                "the Playwright MCP peer is not installed (`{}` is missing)\nhint: npm ci --prefix bench/peers/playwright-mcp",
                cli.display()
            );
        }
        if !config.chromium.is_file() {
            bail!(
                "no Chromium at `{}`\nhint: apt-get install chromium, or pass --chromium",
                config.chromium.display()
            );
        }
        Ok(cli)
    }

    /// Starts the peer on a free port and waits until it accepts connections. Its browser
    /// starts with the first tool call.
    pub async fn start(config: &PeerConfig) -> anyhow::Result<Self> {
        let cli = Self::check_installed(config)?;
        let port = free_port()?;
        let mut args: Vec<OsString> = vec![cli.into()];
        args.extend(
            [
                "--port",
                &port.to_string(),
                "--headless",
                "--isolated",
                "--no-sandbox",
                "--device",
                DEVICE,
            ]
            .map(OsString::from),
        );
        args.push("--executable-path".into());
        args.push(config.chromium.clone().into());
        args.push("--output-dir".into());
        args.push(config.work_dir.join("output").into());
        let env = INHERITED_ENV
            .iter()
            .filter_map(|name| std::env::var_os(name).map(|value| ((*name).into(), value)))
            .collect();
        let spec = ChildSpec {
            program: config.node.clone(),
            args,
            env,
            current_dir: Some(config.work_dir.clone()),
            ..ChildSpec::default()
        };
        let child = ManagedChild::spawn(spec, None).map_err(|error| {
            let hint = if error.is_not_found() {
                "\nhint: apt-get install nodejs npm, or pass --node"
            } else {
                ""
            };
            anyhow::anyhow!("{error}{hint}")
        })?;
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(address) = accepting_address(port) {
                return Ok(Self {
                    child,
                    port,
                    address,
                });
            }
            if let Some(status) = child.exit_status() {
                bail!(
                    "the Playwright MCP peer exited ({status}) before listening; its stderr:\n{}",
                    child.stderr_tail()
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "the Playwright MCP peer did not listen on port {port} within {}s; its stderr:\n{}",
                    START_TIMEOUT.as_secs(),
                    child.stderr_tail()
                );
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// The endpoint URL; the peer only accepts `Host: localhost:PORT`.
    pub fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.port)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Asks node to close its browser and exit (SIGTERM), and kills the group after `grace`.
    /// Dropping the peer kills at once; the browser, in a process group of its own, then exits
    /// when its pipe to node closes.
    pub async fn stop(self, grace: Duration) {
        let _ = self.child.terminate(grace).await;
    }

    /// The last lines of the peer's stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        self.child.stderr_tail()
    }
}

/// A port that was free a moment ago: the peer takes a port number, not a listener.
fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).context("find a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The first address of `localhost:port` that accepts a connection.
fn accepting_address(port: u16) -> Option<SocketAddr> {
    ("localhost", port)
        .to_socket_addrs()
        .ok()?
        .find(|address| TcpStream::connect_timeout(address, CONNECT_ATTEMPT_TIMEOUT).is_ok())
}
