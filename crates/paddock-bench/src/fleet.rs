//! `paddock-bench fleet`: the fleet server (`paddock server`). Two parts, in one run:
//!
//! 1. Throughput: `tools/call list_devices` with an API key, through a server that one
//!    simulated daemon holding two devices joined, under `wrk` next to the official TypeScript
//!    SDK's stateless server with the same tool (two fixed rows), same load, alternating rounds.
//! 2. Scale: N simulated daemons (tokio tasks in this process: each activates a pairing token
//!    over HTTP, opens the control WebSocket with its machine key, reports one web device and
//!    answers every command at once) joined to one server; its resident memory, and the latency
//!    of `device_action` to a daemon's device through the MCP endpoint, next to two baselines
//!    that skip the trip to the daemon (`list_devices`, and `device_action` on a device that no
//!    daemon holds, which fails after the same inventory lookup).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures_util::{SinkExt as _, StreamExt as _};
use paddock_client::SecretString;
use paddock_client::fleet::{
    ACTIVATE_PATH, ActivateRequest, ActivateResponse, CONTROL_PATH, DaemonFrame, InventoryDevice,
    ServerFrame,
};
use paddock_testkit::{RunningServer, ServerHarness};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use crate::LoadArgs;
use crate::agents_host::rss_kib;
use crate::daemon::paddock_binary;
use crate::listen::percentile;
use crate::mcp::verdict;
use crate::mcp_client::rpc_result;
use crate::node_package::installed_version;
use crate::probe::{self, Target};
use crate::smoke::{self, Mode};
use crate::ts_peer::{self, TsPeer};
use crate::wrk::{self, Script, Summary};

/// The request both servers get under load.
const LIST_DEVICES: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_devices","arguments":{}}}"#;

const MCP_HEADERS: [(&str, &str); 3] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", "2025-06-18"),
];

/// The devices of part 1's one daemon; the TypeScript peer answers with the same two ids.
const PART1_DEVICES: [&str; 2] = ["web-a", "web-b"];

/// What every answer of part 1 contains, on both servers.
const EXPECTED_TEXT: &str = "web-b";

/// "Unlimited": the edge's rate limits would otherwise answer 429 under load.
const UNLIMITED: &str = "100000000";

const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the simulated daemons may take to join and be listed.
const JOIN_TIMEOUT: Duration = Duration::from_secs(120);

/// At most this many activations at once (each is a database write).
const ACTIVATE_CONCURRENCY: usize = 16;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FleetArgs {
    #[command(flatten)]
    load: LoadArgs,
    /// The TypeScript MCP SDK peer (default: `bench/peers/ts-mcp-server` of this checkout).
    #[arg(long)]
    ts_server_dir: Option<PathBuf>,
    /// The node binary that runs the peer.
    #[arg(long, default_value = "node")]
    node: PathBuf,
    /// Simulated daemons joined to the server of part 2.
    #[arg(long, default_value_t = 200)]
    daemons: usize,
    /// Sequential calls measured per kind in part 2.
    #[arg(long, default_value_t = 2000)]
    calls: usize,
}

pub(crate) async fn run(args: FleetArgs, mode: Mode) -> anyhow::Result<()> {
    let paddock = paddock_binary(args.load.paddock.clone())?;
    if mode.is_smoke() {
        return smoke(&paddock).await;
    }
    wrk::check_installed()?;
    let ts_dir = args
        .ts_server_dir
        .clone()
        .unwrap_or_else(ts_peer::default_dir);
    throughput(&args, &paddock, &ts_dir).await?;
    println!();
    scale(&args, &paddock).await
}

// ---------------------------------------------------------------- the server

/// A `paddock server` with the policy profile `full`, rate limits out of the way, and one API
/// key of profile `full` (in a 0600 file for wrk).
struct Fleet {
    harness: ServerHarness,
    server: RunningServer,
    key: SecretString,
    key_file: PathBuf,
}

impl Fleet {
    fn start(paddock: &Path) -> anyhow::Result<Self> {
        let mut harness = ServerHarness::new(paddock)?;
        harness
            .set_env("PADDOCK_SERVER_POLICY_PROFILE", "full")
            .set_env("PADDOCK_SERVER_RATE_LIMIT_PER_KEY_PER_MIN", UNLIMITED)
            .set_env("PADDOCK_SERVER_RATE_LIMIT_PER_IP_PER_MIN", UNLIMITED);
        let server = harness.spawn(&[])?;
        let key = harness.create_key("bench", "full")?;
        let key_file = harness.root().join("api-key");
        write_private(&key_file, &key)?;
        Ok(Self {
            harness,
            server,
            key: SecretString::new(key),
            key_file,
        })
    }

    fn mcp_url(&self) -> String {
        format!("{}/mcp", self.server.url())
    }

    /// `paddock server pair --name NAME`, `count` times: the pairing tokens.
    fn pair(&self, count: usize) -> anyhow::Result<Vec<SecretString>> {
        (0..count)
            .map(|index| {
                let name = format!("bench-{index}");
                let output = self
                    .harness
                    .run(["server", "pair", "--name", name.as_str()])?
                    .success()?;
                let token = output.stdout().trim().to_owned();
                if !token.starts_with("pdk_pt_") {
                    bail!("`paddock server pair` printed something other than a pairing token");
                }
                Ok(SecretString::new(token))
            })
            .collect()
    }
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("create `{}`", path.display()))?;
    writeln!(file, "{text}")?;
    Ok(())
}

// ---------------------------------------------------------------- simulated daemons

/// The tiny `CallToolResult` every simulated daemon answers a command with.
fn ok_result() -> Value {
    json!({ "content": [{ "type": "text", "text": "ok" }], "isError": false })
}

/// Simulated daemons joined to one server, in tasks of this process; aborted on drop.
struct Daemons {
    tasks: JoinSet<anyhow::Result<()>>,
    /// Commands answered, over all daemons.
    answered: Arc<AtomicU64>,
}

impl Daemons {
    /// Activates each token, connects each daemon and waits until every one has sent its
    /// inventory (`devices[i]` for token `i`).
    async fn join(
        address: SocketAddr,
        tokens: Vec<SecretString>,
        devices: Vec<Vec<InventoryDevice>>,
    ) -> anyhow::Result<Self> {
        let answered = Arc::new(AtomicU64::new(0));
        let activations = Arc::new(tokio::sync::Semaphore::new(ACTIVATE_CONCURRENCY));
        let (ready_tx, mut ready) = mpsc::channel::<()>(tokens.len().max(1));
        let mut tasks = JoinSet::new();
        let count = tokens.len();
        for (index, (token, devices)) in tokens.into_iter().zip(devices).enumerate() {
            let ready = ready_tx.clone();
            let answered = answered.clone();
            let activations = activations.clone();
            tasks.spawn(async move {
                let key = {
                    let _slot = activations.acquire().await?;
                    activate(address, token, index).await?
                };
                simulated_daemon(address, key, devices, ready, answered).await
            });
        }
        drop(ready_tx);
        let mut daemons = Self { tasks, answered };
        let deadline = tokio::time::Instant::now() + JOIN_TIMEOUT;
        for joined in 0..count {
            tokio::select! {
                heard = ready.recv() => {
                    if heard.is_none() {
                        bail!("a simulated daemon ended after {joined} of {count} joined: {}", daemons.first_failure().await);
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    bail!("only {joined} of {count} simulated daemons joined within {} s", JOIN_TIMEOUT.as_secs());
                }
            }
        }
        Ok(daemons)
    }

    /// Why the first daemon that ended did.
    async fn first_failure(&mut self) -> String {
        match self.tasks.join_next().await {
            Some(Ok(Err(error))) => format!("{error:#}"),
            Some(Ok(Ok(()))) => "its connection closed".to_owned(),
            Some(Err(error)) => error.to_string(),
            None => "no daemon is left".to_owned(),
        }
    }

    fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

/// `POST /api/daemon/activate` with a pairing token: the machine key.
async fn activate(
    address: SocketAddr,
    token: SecretString,
    index: usize,
) -> anyhow::Result<SecretString> {
    let request = ActivateRequest {
        token: token.expose_secret().to_owned(),
        hostname: format!("bench-host-{index}"),
        platform: "linux".to_owned(),
        arch: "x86_64".to_owned(),
    };
    let body = serde_json::to_string(&request)?;
    drop(request);
    let target = Target::parse(&format!("http://{address}{ACTIVATE_PATH}"))?;
    let response = tokio::task::spawn_blocking(move || {
        let request = probe::Request {
            method: "POST",
            headers: &[("Content-Type", "application/json")],
            body: &body,
        };
        probe::send_to(address, &target, &request, REQUEST_TIMEOUT)
    })
    .await??;
    if response.status != 200 {
        // The answer is the server's refusal text; it never echoes the token.
        bail!(
            "activation answered HTTP {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        );
    }
    let answer: ActivateResponse =
        serde_json::from_slice(&response.body).context("the activation answer")?;
    Ok(SecretString::new(answer.machine_key))
}

/// One daemon's control connection: welcome, inventory, then a `result` for every command.
async fn simulated_daemon(
    address: SocketAddr,
    key: SecretString,
    devices: Vec<InventoryDevice>,
    ready: mpsc::Sender<()>,
    answered: Arc<AtomicU64>,
) -> anyhow::Result<()> {
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let mut request = format!("ws://{address}{CONTROL_PATH}").into_client_request()?;
    let bearer = http::HeaderValue::from_str(&format!("Bearer {}", key.expose_secret()))
        .context("the machine key is not a header value")?;
    request
        .headers_mut()
        .insert(http::header::AUTHORIZATION, bearer);
    let (socket, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .map_err(|error| anyhow::anyhow!("the control connection failed: {error}"))?;
    let (mut sink, mut stream) = socket.split();
    match stream.next().await {
        Some(Ok(Message::Text(text)))
            if matches!(
                serde_json::from_str::<ServerFrame>(text.as_str()),
                Ok(ServerFrame::Welcome { .. })
            ) => {}
        other => bail!("the server did not open with a welcome frame: {other:?}"),
    }
    let inventory = serde_json::to_string(&DaemonFrame::Inventory {
        devices,
        bots: Vec::new(),
    })?;
    sink.send(Message::Text(inventory.into())).await?;
    let _ = ready.send(()).await;
    while let Some(message) = stream.next().await {
        match message? {
            Message::Text(text) => {
                if let Ok(ServerFrame::Command { id, .. }) =
                    serde_json::from_str::<ServerFrame>(text.as_str())
                {
                    let answer = DaemonFrame::Result {
                        id,
                        result: Some(ok_result()),
                        error: None,
                    };
                    sink.send(Message::Text(serde_json::to_string(&answer)?.into()))
                        .await?;
                    answered.fetch_add(1, Ordering::Relaxed);
                }
            }
            // tungstenite answers pings by itself.
            Message::Close(_) => break,
            _ => {}
        }
    }
    Ok(())
}

fn web_device(id: &str) -> InventoryDevice {
    InventoryDevice {
        id: id.to_owned(),
        platform: "web".to_owned(),
        profile: "pixel7".to_owned(),
        state: "warm".to_owned(),
    }
}

// ---------------------------------------------------------------- MCP calls

/// Stateless `tools/call`s to one MCP endpoint, each on a fresh loopback connection (like the
/// other latency benchmarks' client).
struct Caller {
    address: SocketAddr,
    target: Target,
    authorization: Option<SecretString>,
    next_id: u64,
}

impl Caller {
    fn new(url: &str, key: Option<&SecretString>) -> anyhow::Result<Self> {
        let target = Target::parse(url)?;
        let address = target
            .authority
            .parse()
            .with_context(|| format!("`{}` is not an address", target.authority))?;
        Ok(Self {
            address,
            target,
            authorization: key
                .map(|key| SecretString::new(format!("Bearer {}", key.expose_secret()))),
            next_id: 1,
        })
    }

    /// Calls `tool` and returns how long it took and its JSON-RPC result (which may be a tool
    /// error: the caller checks).
    fn call(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<(Duration, Value)> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        })
        .to_string();
        let mut headers = MCP_HEADERS.to_vec();
        if let Some(value) = &self.authorization {
            headers.push(("Authorization", value.expose_secret()));
        }
        let request = probe::Request {
            method: "POST",
            headers: &headers,
            body: &body,
        };
        let started = Instant::now();
        let response = probe::send_to(self.address, &self.target, &request, REQUEST_TIMEOUT)?;
        let elapsed = started.elapsed();
        let result = rpc_result(&response, id).with_context(|| format!("tool `{tool}`"))?;
        Ok((elapsed, result))
    }

    /// [`Self::call`] that must succeed.
    fn call_ok(&mut self, tool: &str, arguments: &Value) -> anyhow::Result<(Duration, Value)> {
        let (elapsed, result) = self.call(tool, arguments)?;
        if result["isError"] == json!(true) {
            bail!("tool `{tool}` answered with an error: {result}");
        }
        Ok((elapsed, result))
    }
}

/// The ids of the devices `list_devices` answered with, and whether all were online.
fn listed(result: &Value) -> anyhow::Result<(Vec<String>, bool)> {
    let devices = result["structuredContent"]["devices"]
        .as_array()
        .with_context(|| format!("list_devices answered without a device list: {result}"))?;
    let ids = devices
        .iter()
        .filter_map(|device| device["device_id"].as_str().map(str::to_owned))
        .collect();
    let online = devices.iter().all(|device| device["online"] == json!(true));
    Ok((ids, online))
}

/// Checks a part 1 answer: two rows, `web-a` and `web-b`.
fn check_two_rows(result: &Value) -> anyhow::Result<()> {
    let (mut ids, _) = listed(result)?;
    ids.sort();
    if ids != PART1_DEVICES {
        bail!("list_devices did not list {PART1_DEVICES:?}: {result}");
    }
    Ok(())
}

fn device_action(device_id: &str) -> Value {
    json!({ "device_id": device_id, "operation": "tap", "x": 1, "y": 1 })
}

/// Checks that `device_action` came back with the simulated daemon's `ok`.
fn check_ok_text(result: &Value) -> anyhow::Result<()> {
    let answered = result["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|block| block["text"] == json!("ok")));
    if !answered || result["isError"] == json!(true) {
        bail!("device_action did not carry the daemon's answer: {result}");
    }
    Ok(())
}

fn millis(durations: &mut [Duration]) -> Vec<f64> {
    durations.sort();
    durations
        .iter()
        .map(|duration| duration.as_secs_f64() * 1e3)
        .collect()
}

// ---------------------------------------------------------------- part 1

#[derive(Debug)]
struct Measured {
    name: &'static str,
    url: String,
    script: PathBuf,
    check_script: PathBuf,
    runs: Vec<Summary>,
}

async fn throughput(args: &FleetArgs, paddock: &Path, ts_dir: &Path) -> anyhow::Result<()> {
    // The peer first: a missing `node_modules` should fail before anything else starts.
    let ts = TsPeer::start_with_env(&args.node, ts_dir, &[("PEER_TOOL", "list_devices")])?;
    let fleet = Fleet::start(paddock)?;
    let tokens = fleet.pair(1)?;
    let _daemon = Daemons::join(
        fleet.server.address,
        tokens,
        vec![PART1_DEVICES.iter().map(|id| web_device(id)).collect()],
    )
    .await?;
    let fleet_url = fleet.mcp_url();
    // One answer of each by hand; the inventory may take a moment to be recorded.
    wait_listed(&fleet_url, &fleet.key, PART1_DEVICES.len()).await?;
    let (ts_url, key) = (ts.url(), fleet.key.clone());
    let fleet_url_probe = fleet_url.clone();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        check_two_rows(
            &Caller::new(&fleet_url_probe, Some(&key))?
                .call_ok("list_devices", &json!({}))?
                .1,
        )
        .context("paddock server")?;
        check_two_rows(
            &Caller::new(&ts_url, None)?
                .call_ok("list_devices", &json!({}))?
                .1,
        )
        .context("the TypeScript MCP peer")
    })
    .await??;

    let scripts = fleet.harness.root();
    let request = Script {
        method: Some("POST".to_owned()),
        body: Some(LIST_DEVICES.to_owned()),
        headers: MCP_HEADERS
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        ..Script::default()
    };
    let with_key = Script {
        bearer_token_file: Some(fleet.key_file.clone()),
        ..request.clone()
    };
    let checking = |script: &Script| Script {
        expect_body: Some(EXPECTED_TEXT.to_owned()),
        ..script.clone()
    };
    let mut servers = [
        Measured {
            name: "ts-sdk (node)",
            url: ts.url(),
            script: request.write(&scripts.join("ts.lua"))?,
            check_script: checking(&request).write(&scripts.join("ts-check.lua"))?,
            runs: Vec::new(),
        },
        Measured {
            name: "paddock server",
            url: fleet_url,
            script: with_key.write(&scripts.join("paddock.lua"))?,
            check_script: checking(&with_key).write(&scripts.join("paddock-check.lua"))?,
            runs: Vec::new(),
        },
    ];
    let load = wrk::Load {
        threads: args.load.threads,
        connections: args.load.connections,
        duration: Duration::from_secs(args.load.duration),
    };
    // wrk blocks this thread; the simulated daemon goes on on the other worker.
    tokio::task::block_in_place(|| -> anyhow::Result<()> {
        for server in &servers {
            let check = wrk::run(&load.check(), &server.url, Some(&server.check_script))?;
            if check.non_2xx > 0 || check.unexpected_bodies != Some(0) {
                bail!(
                    "{}: the check run got {} non-2xx answers and {} answers without both devices",
                    server.name,
                    check.non_2xx,
                    check
                        .unexpected_bodies
                        .map_or_else(|| "an unknown number of".to_owned(), |n| n.to_string())
                );
            }
        }
        for server in &servers {
            wrk::run(&load.warmup(), &server.url, Some(&server.script))?;
        }
        for _ in 0..args.load.rounds {
            for server in &mut servers {
                let summary = wrk::run(&load, &server.url, Some(&server.script))?;
                if summary.non_2xx > 0 {
                    bail!(
                        "{} answered {} non-2xx responses under load",
                        server.name,
                        summary.non_2xx
                    );
                }
                server.runs.push(summary);
            }
        }
        Ok(())
    })?;
    let ts_sdk = Summary::best(&servers[0].runs)?;
    let ours = Summary::best(&servers[1].runs)?;
    println!(
        "fleet 1: stateless tools/call `list_devices` (two devices of one joined daemon), {} connections, {} threads, {}s x {} rounds (best round)",
        args.load.connections, args.load.threads, args.load.duration, args.load.rounds
    );
    println!(
        "peer: @modelcontextprotocol/sdk {} stateless Streamable HTTP with JSON responses (no auth), the same tool answering two fixed rows; paddock server with an API key (profile full, SQLite)",
        installed_version(ts_dir, "@modelcontextprotocol/sdk")
    );
    wrk::print_table(&[(servers[0].name, &ts_sdk), (servers[1].name, &ours)]);
    let ratio = ours.requests_per_sec / ts_sdk.requests_per_sec;
    println!(
        "ratio paddock/ts-sdk throughput: {ratio:>7.2}x  (goal >= 20x: {})",
        verdict(ratio >= 20.0)
    );
    println!(
        "paddock p99:                     {:>7.3} ms (goal < 10 ms: {})",
        ours.p99_ms,
        verdict(ours.p99_ms < 10.0)
    );
    Ok(())
}

/// Polls `list_devices` until it lists `count` online devices.
async fn wait_listed(url: &str, key: &SecretString, count: usize) -> anyhow::Result<()> {
    let mut caller = Caller::new(url, Some(key))?;
    let deadline = Instant::now() + JOIN_TIMEOUT;
    loop {
        let (_, result) =
            tokio::task::block_in_place(|| caller.call_ok("list_devices", &json!({})))?;
        let (ids, online) = listed(&result)?;
        if ids.len() == count && online {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "the server listed {} devices (all online: {online}) instead of {count} within {} s",
                ids.len(),
                JOIN_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------- part 2

async fn scale(args: &FleetArgs, paddock: &Path) -> anyhow::Result<()> {
    let count = args.daemons.max(1);
    let fleet = Fleet::start(paddock)?;
    let idle_kib = rss_kib(fleet.server.pid)?;
    let started = Instant::now();
    let tokens = tokio::task::block_in_place(|| fleet.pair(count))?;
    let pairing = started.elapsed();
    let ids: Vec<String> = (0..count).map(|index| format!("web-{index}")).collect();
    let started = Instant::now();
    let daemons = Daemons::join(
        fleet.server.address,
        tokens,
        ids.iter().map(|id| vec![web_device(id)]).collect(),
    )
    .await?;
    let url = fleet.mcp_url();
    wait_listed(&url, &fleet.key, count).await?;
    let joining = started.elapsed();
    let joined_kib = rss_kib(fleet.server.pid)?;

    let calls = args.calls.max(1);
    let key = fleet.key.clone();
    let ids_for_calls = ids.clone();
    let (mut action, mut listing, mut unknown) = tokio::task::spawn_blocking(
        move || -> anyhow::Result<(Vec<Duration>, Vec<Duration>, Vec<Duration>)> {
            let mut caller = Caller::new(&url, Some(&key))?;
            // Warm up: every daemon answers once.
            for id in &ids_for_calls {
                check_ok_text(&caller.call_ok("device_action", &device_action(id))?.1)?;
            }
            let (mut action, mut listing, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
            // Interleaved, so that drift affects the three alike.
            for index in 0..calls {
                let id = &ids_for_calls[index % ids_for_calls.len()];
                let (elapsed, result) = caller.call_ok("device_action", &device_action(id))?;
                check_ok_text(&result)?;
                action.push(elapsed);
                let (elapsed, result) = caller.call_ok("list_devices", &json!({}))?;
                if listed(&result)?.0.len() != ids_for_calls.len() {
                    bail!("list_devices lost devices under load: {result}");
                }
                listing.push(elapsed);
                let (elapsed, result) =
                    caller.call("device_action", &device_action("no-such-device"))?;
                if result["isError"] != json!(true) {
                    bail!("device_action on an unknown device did not fail: {result}");
                }
                unknown.push(elapsed);
            }
            Ok((action, listing, unknown))
        },
    )
    .await??;
    let answered = daemons.answered();
    let after_kib = rss_kib(fleet.server.pid)?;
    let (action, listing, unknown) = (
        millis(&mut action),
        millis(&mut listing),
        millis(&mut unknown),
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "fleet 2: {count} simulated daemons (tasks of this process: activate over HTTP, control WebSocket, one web device each, answer every command at once) joined to one paddock server (SQLite)"
    );
    println!(
        "`paddock server pair` x {count}: {:.2} s ({:.1} ms each, a process start and a database write each); activate + connect + inventory listed: {:.2} s",
        pairing.as_secs_f64(),
        pairing.as_secs_f64() * 1e3 / count as f64,
        joining.as_secs_f64()
    );
    println!(
        "server RSS: {:.1} MiB idle, {:.1} MiB with {count} connected ({:.1} KiB per daemon), {:.1} MiB after the calls (goal <= 150 MiB with 200: {})",
        mib(idle_kib),
        mib(joined_kib),
        joined_kib.saturating_sub(idle_kib) as f64 / count as f64,
        mib(after_kib),
        verdict(mib(joined_kib.max(after_kib)) <= 150.0)
    );
    println!(
        "{calls} sequential calls of each kind, interleaved, each on a fresh loopback connection with the API key; {answered} commands answered by the daemons"
    );
    let row = |name: &str, values: &[f64]| {
        println!(
            "  {name:<52} p50 {:>7.3} ms  p99 {:>7.3} ms",
            percentile(values, 0.5),
            percentile(values, 0.99)
        );
    };
    row("device_action tap x/y -> a daemon and back", &action);
    row("list_devices (no daemon trip)", &listing);
    row(
        "device_action on an unknown device (fails at lookup)",
        &unknown,
    );
    let action_p99 = percentile(&action, 0.99);
    println!(
        "device_action p99: {action_p99:.3} ms (goal <= 5 ms: {})",
        verdict(action_p99 <= 5.0)
    );
    println!(
        "the hub's own round trip (command frame out, result frame back), approximated: device_action p50 - unknown-device p50 = {:.3} ms; device_action p50 - list_devices p50 = {:.3} ms",
        percentile(&action, 0.5) - percentile(&unknown, 0.5),
        percentile(&action, 0.5) - percentile(&listing, 0.5)
    );
    drop(daemons);
    Ok(())
}

// ---------------------------------------------------------------- smoke

/// Each part once, tiny: one daemon with two devices and `list_devices` through the server;
/// three daemons joined, and one `device_action` to each answered by its daemon.
async fn smoke(paddock: &Path) -> anyhow::Result<()> {
    let fleet = Fleet::start(paddock)?;
    let url = fleet.mcp_url();
    let mut tokens = fleet.pair(4)?;
    let rest = tokens.split_off(1);
    let first = Daemons::join(
        fleet.server.address,
        tokens,
        vec![PART1_DEVICES.iter().map(|id| web_device(id)).collect()],
    )
    .await?;
    wait_listed(&url, &fleet.key, PART1_DEVICES.len()).await?;
    let key = fleet.key.clone();
    let probe_url = url.clone();
    tokio::task::spawn_blocking(move || {
        check_two_rows(
            &Caller::new(&probe_url, Some(&key))?
                .call_ok("list_devices", &json!({}))?
                .1,
        )
    })
    .await??;
    let ids: Vec<String> = (0..rest.len())
        .map(|index| format!("web-{index}"))
        .collect();
    let others = Daemons::join(
        fleet.server.address,
        rest,
        ids.iter().map(|id| vec![web_device(id)]).collect(),
    )
    .await?;
    wait_listed(&url, &fleet.key, PART1_DEVICES.len() + ids.len()).await?;
    let key = fleet.key.clone();
    let called = ids.clone();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let mut caller = Caller::new(&url, Some(&key))?;
        for id in &called {
            check_ok_text(&caller.call_ok("device_action", &device_action(id))?.1)?;
        }
        Ok(())
    })
    .await??;
    if others.answered() != ids.len() as u64 || first.answered() != 0 {
        bail!(
            "the daemons answered {} commands instead of {}",
            others.answered() + first.answered(),
            ids.len()
        );
    }
    rss_kib(fleet.server.pid)?;
    smoke::passed(
        "fleet",
        &format!(
            "list_devices through the server listed a joined daemon's two devices; {} more simulated daemons joined and each answered a device_action",
            ids.len()
        ),
    );
    Ok(())
}
