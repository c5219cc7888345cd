//! The daemon's side of the fleet control plane (spec 004): joining a server with a pairing
//! token, the stored link (`fleet.json` and the machine key, 0600, in the state directory), and
//! the control connection the running daemon keeps — one WebSocket to the server, with a
//! heartbeat and reconnects with exponential backoff and jitter — over which it runs the
//! server's host commands with its own tool core.
//!
//! The machine key is kept in a private file, not only in memory as spec 004 has it: a restart
//! with `--id` must reconnect without a new pairing. No OS keychain is used: a Linux server
//! has none to rely on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use paddock_client::SecretString;
use paddock_client::fleet::{
    ACTIVATE_PATH, ActivateRequest, ActivateResponse, CONTROL_PATH, DaemonFrame, FrameError,
    HostCommand, InventoryDevice, ServerFrame,
};
use paddock_devices::Pool;
use paddock_tools::SessionKey;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tracing::{debug, info, warn};

use crate::mcp::McpHost;

/// The link to a server, beside the machine key.
pub const LINK_FILE: &str = "fleet.json";
/// The machine key (`pdk_mk_…`), 0600.
pub const KEY_FILE: &str = "fleet-machine-key";
/// How long an activation may take before it counts as unanswered.
const ACTIVATE_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the daemon pings the server, and checks its inventory for changes.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// A server silent for this long is taken for gone, and the daemon reconnects.
const SILENCE_LIMIT: Duration = Duration::from_secs(45);
/// How often the inventory is compared with what the server last heard.
const INVENTORY_EVERY: Duration = Duration::from_millis(500);
/// Reconnect delays: from the first to the cap, doubling, each with ±50 % jitter.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// What `fleet.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// The server's base URL (`https://…`, or `http://…` on loopback).
    pub server: String,
    /// The machine id the server assigned (the local `machine-id` for PII paths stays as it
    /// is).
    pub machine_id: String,
    pub name: String,
}

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(
        "`{0}` is not a server URL: use `https://HOST[:PORT]`, or `http://` for a server on this machine"
    )]
    BadUrl(String),
    #[error("could not reach the server at `{url}`: {reason}")]
    Unreachable { url: String, reason: String },
    /// The server refused the token: nothing changed on either side.
    #[error("the server refused the token ({status}): {message}")]
    Refused { status: u16, message: String },
    /// No clear answer (5xx, a lost connection, a timeout): the server may or may not have
    /// used the token.
    #[error("the server gave no clear answer ({reason}); the token may or may not have been used")]
    Ambiguous { reason: String },
    #[error("could not store the fleet link in `{path}`: {reason}")]
    Store { path: PathBuf, reason: String },
}

impl FleetError {
    /// Whether the server may have acted on the request although no answer says so.
    pub fn is_ambiguous(&self) -> bool {
        matches!(self, Self::Ambiguous { .. } | Self::Unreachable { .. })
    }
}

/// A server URL taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    tls: bool,
    host: String,
    port: u16,
    /// The path prefix, without a trailing slash (usually empty).
    prefix: String,
}

impl ServerUrl {
    pub fn parse(text: &str) -> Result<Self, FleetError> {
        let bad = || FleetError::BadUrl(text.to_owned());
        let (tls, rest) = if let Some(rest) = text.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = text.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(bad());
        };
        let (authority, prefix) = match rest.find('/') {
            Some(slash) => (&rest[..slash], rest[slash..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') || prefix.contains(['?', '#']) {
            return Err(bad());
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
                (host, port.parse().map_err(|_| bad())?)
            }
            _ => (authority, if tls { 443 } else { 80 }),
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Self {
            tls,
            host,
            port,
            prefix: prefix.to_owned(),
        })
    }

    /// The URL as given, without a trailing slash.
    pub fn display(&self) -> String {
        format!(
            "{}://{}{}",
            if self.tls { "https" } else { "http" },
            self.authority(),
            self.prefix
        )
    }

    /// The same server with `path` appended to its prefix.
    pub fn join(&self, path: &str) -> Self {
        Self {
            prefix: format!("{}{}", self.prefix, path.trim_end_matches('/')),
            ..self.clone()
        }
    }

    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A connection to the server, plain or TLS.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

async fn connect(
    url: &ServerUrl,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<Box<dyn Stream>, FleetError> {
    let unreachable = |reason: String| FleetError::Unreachable {
        url: url.display(),
        reason,
    };
    let tcp = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::net::TcpStream::connect((url.host.as_str(), url.port)),
    )
    .await
    .map_err(|_| unreachable("no connection within 10 s".into()))?
    .map_err(|error| unreachable(error.to_string()))?;
    let _ = tcp.set_nodelay(true);
    if !url.tls {
        return Ok(Box::new(tcp));
    }
    let name = rustls::pki_types::ServerName::try_from(url.host.clone()).map_err(|error| {
        unreachable(format!("`{}` is not a TLS server name: {error}", url.host))
    })?;
    let stream = tokio_rustls::TlsConnector::from(tls.clone())
        .connect(name, tcp)
        .await
        .map_err(|error| {
            unreachable(format!(
                "TLS: {error} (for a private CA, point SSL_CERT_FILE at its PEM bundle)"
            ))
        })?;
    Ok(Box::new(stream))
}

/// Trades a pairing or reconnect token for a machine id and key (`POST /api/daemon/activate`).
pub async fn activate(
    server: &str,
    token: &SecretString,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<ActivateResponse, FleetError> {
    let url = ServerUrl::parse(server)?;
    let body = serde_json::to_vec(&ActivateRequest {
        token: token.expose_secret().to_owned(),
        hostname: hostname(),
        platform: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
    })
    .map_err(|error| FleetError::Ambiguous {
        reason: error.to_string(),
    })?;
    let exchange = async {
        let (status, body) = post(
            &url,
            ACTIVATE_PATH,
            &[(http::header::CONTENT_TYPE, "application/json".to_owned())],
            body,
            tls,
        )
        .await?;
        if status.is_success() {
            return serde_json::from_slice::<ActivateResponse>(&body).map_err(|error| {
                FleetError::Ambiguous {
                    reason: format!("the answer was not an activation: {error}"),
                }
            });
        }
        let message = paddock_client::fleet::refusal_message(&body);
        if status.is_server_error() {
            Err(FleetError::Ambiguous {
                reason: format!("HTTP {}: {message}", status.as_u16()),
            })
        } else {
            Err(FleetError::Refused {
                status: status.as_u16(),
                message,
            })
        }
    };
    match tokio::time::timeout(ACTIVATE_TIMEOUT, exchange).await {
        Ok(outcome) => outcome,
        Err(_) => Err(FleetError::Ambiguous {
            reason: format!("no answer within {} s", ACTIVATE_TIMEOUT.as_secs()),
        }),
    }
}

/// One `POST` of `body` to `path` under the server's URL, on a connection of its own; the
/// status and the whole answer. Once the request is sent, a failure is ambiguous: the server
/// may have acted on it.
pub async fn post(
    url: &ServerUrl,
    path: &str,
    headers: &[(http::HeaderName, String)],
    body: Vec<u8>,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<(http::StatusCode, hyper::body::Bytes), FleetError> {
    request(url, http::Method::POST, path, headers, body, tls).await
}

/// One request (`method` `path`, with `body`) under the server's URL, as [`post`] does.
pub async fn request(
    url: &ServerUrl,
    method: http::Method,
    path: &str,
    headers: &[(http::HeaderName, String)],
    body: Vec<u8>,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<(http::StatusCode, hyper::body::Bytes), FleetError> {
    let stream = connect(url, tls).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|error| FleetError::Unreachable {
                url: url.display(),
                reason: error.to_string(),
            })?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", url.prefix))
        .header(http::header::HOST, url.authority());
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request
        .body(http_body_util::Full::new(hyper::body::Bytes::from(body)))
        .map_err(|error| FleetError::BadUrl(format!("{}: {error}", url.display())))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| FleetError::Ambiguous {
            reason: format!("the connection failed mid-request: {error}"),
        })?;
    let status = response.status();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .map_err(|error| FleetError::Ambiguous {
            reason: format!("the answer was cut off: {error}"),
        })?
        .to_bytes();
    Ok((status, body))
}

/// This machine's hostname, for the server's machine list.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "unknown-host".to_owned())
}

/// Writes the link and the machine key (both 0600, each atomically).
pub fn save(state_dir: &Path, server: &str, answer: &ActivateResponse) -> Result<Link, FleetError> {
    let link = Link {
        server: server.trim_end_matches('/').to_owned(),
        machine_id: answer.machine_id.clone(),
        name: answer.name.clone(),
    };
    let store_error = |path: &Path, reason: String| FleetError::Store {
        path: path.to_path_buf(),
        reason,
    };
    let key_path = state_dir.join(KEY_FILE);
    crate::files::publish_private(&key_path, answer.machine_key.as_bytes())
        .map_err(|error| store_error(&key_path, error.to_string()))?;
    let link_path = state_dir.join(LINK_FILE);
    let json = serde_json::to_vec_pretty(&link)
        .map_err(|error| store_error(&link_path, error.to_string()))?;
    crate::files::publish_private(&link_path, &json)
        .map_err(|error| store_error(&link_path, error.to_string()))?;
    Ok(link)
}

/// The stored link and key, if this daemon joined a server.
pub fn load(state_dir: &Path) -> Result<Option<(Link, SecretString)>, String> {
    let link_path = state_dir.join(LINK_FILE);
    let text = match std::fs::read(&link_path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("could not read `{}`: {error}", link_path.display())),
    };
    let link: Link = serde_json::from_slice(&text)
        .map_err(|error| format!("`{}` is not a fleet link: {error}", link_path.display()))?;
    let key_path = state_dir.join(KEY_FILE);
    let key = paddock_client::private::open_private_file(&key_path)
        .map_err(|error| format!("the machine key `{}`: {error}", key_path.display()))
        .and_then(|mut file| {
            let mut key = String::new();
            std::io::Read::read_to_string(&mut file, &mut key)
                .map_err(|error| format!("could not read `{}`: {error}", key_path.display()))?;
            Ok(SecretString::new(key.trim()))
        })?;
    Ok(Some((link, key)))
}

/// The fleet's session of `device_id` on this daemon.
fn fleet_session(device_id: &str) -> Result<SessionKey, FrameError> {
    SessionKey::parse(&format!("fleet-{device_id}")).map_err(|_| FrameError {
        code: "invalid_input".into(),
        message: format!("`{device_id}` is not a device id"),
    })
}

/// What runs the server's commands: the daemon's tool core and its pool.
#[derive(Clone)]
pub struct FleetLinkHost {
    pub state_dir: PathBuf,
    pub mcp: Arc<McpHost>,
    pub pool: Pool,
    pub tls: Arc<rustls::ClientConfig>,
    /// The bots, which owners message through the server.
    pub bots: crate::bots::BotsHost,
}

impl std::fmt::Debug for FleetLinkHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetLinkHost")
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

impl FleetLinkHost {
    /// Keeps the control connection while the daemon runs: waits for a link (a `daemon join`
    /// while the daemon runs is picked up within seconds), connects, serves, and reconnects
    /// with backoff when the connection ends.
    pub async fn run(self) {
        let mut attempt: u32 = 0;
        let mut announced_missing = false;
        loop {
            let (link, key) = match load(&self.state_dir) {
                Ok(Some(found)) => found,
                Ok(None) => {
                    if !announced_missing {
                        debug!("not joined to a fleet server");
                        announced_missing = true;
                    }
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    continue;
                }
                Err(error) => {
                    warn!(%error, "the fleet link cannot be read; retrying");
                    tokio::time::sleep(BACKOFF_CAP).await;
                    continue;
                }
            };
            let started = Instant::now();
            match self.serve_once(&link, &key).await {
                Ok(()) => info!(server = %link.server, "control connection closed"),
                Err(error) => warn!(server = %link.server, %error, "control connection failed"),
            }
            // A connection that held for a while starts the backoff over.
            if started.elapsed() > Duration::from_secs(60) {
                attempt = 0;
            }
            let delay = backoff(attempt);
            attempt = attempt.saturating_add(1);
            debug!(
                delay_ms = delay.as_millis() as u64,
                "reconnecting to the fleet server"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn serve_once(&self, link: &Link, key: &SecretString) -> Result<(), String> {
        let url = ServerUrl::parse(&link.server).map_err(|error| error.to_string())?;
        let stream = connect(&url, &self.tls)
            .await
            .map_err(|error| error.to_string())?;
        let scheme = if url.tls { "wss" } else { "ws" };
        let mut request =
            tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
                format!("{scheme}://{}{}{CONTROL_PATH}", url.authority(), url.prefix),
            )
            .map_err(|error| error.to_string())?;
        let bearer = http::HeaderValue::from_str(&format!("Bearer {}", key.expose_secret()))
            .map_err(|_| "the stored machine key is not a header value".to_owned())?;
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, bearer);
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(64 * 1024 * 1024));
        let (socket, _) =
            tokio_tungstenite::client_async_with_config(request, stream, Some(config))
                .await
                .map_err(|error| match error {
                    tokio_tungstenite::tungstenite::Error::Http(response) => format!(
                        "the server refused the control connection (HTTP {}); if the machine key was replaced, run `paddock daemon reconnect`",
                        response.status().as_u16()
                    ),
                    other => other.to_string(),
                })?;
        info!(server = %link.server, machine = %link.machine_id, "connected to the fleet server");
        let (mut sink, mut stream) = socket.split();
        let (out_tx, mut out_rx) = mpsc::channel::<DaemonFrame>(64);
        // Both tasks end with this connection, also when the daemon drops it at shutdown (a
        // dropped JoinHandle would leave them running).
        let writer = AbortOnDrop(tokio::spawn(async move {
            let mut heartbeat = tokio::time::interval(HEARTBEAT);
            heartbeat.tick().await;
            loop {
                tokio::select! {
                    frame = out_rx.recv() => {
                        let Some(frame) = frame else { break };
                        let Ok(text) = serde_json::to_string(&frame) else { continue };
                        if sink.send(Message::Text(text.into())).await.is_err() {
                            break;
                        }
                    }
                    _ = heartbeat.tick() => {
                        if sink.send(Message::Ping(Vec::new().into())).await.is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = sink.close().await;
        }));
        let _inventory = AbortOnDrop(tokio::spawn(watch_inventory(
            self.pool.clone(),
            self.bots.clone(),
            out_tx.clone(),
        )));
        loop {
            let message = match tokio::time::timeout(SILENCE_LIMIT, stream.next()).await {
                Err(_) => break Err("the server went silent".to_owned()),
                Ok(None) => break Ok(()),
                Ok(Some(Err(error))) => break Err(error.to_string()),
                Ok(Some(Ok(message))) => message,
            };
            match message {
                Message::Text(text) => match serde_json::from_str::<ServerFrame>(text.as_str()) {
                    Ok(ServerFrame::Welcome { machine_id, name }) => {
                        debug!(%machine_id, %name, "welcomed by the fleet server");
                    }
                    Ok(ServerFrame::Command { id, command }) => {
                        let host = self.clone();
                        let out = out_tx.clone();
                        tokio::spawn(async move {
                            let frame = match host.run_command(command).await {
                                Ok(result) => DaemonFrame::Result {
                                    id,
                                    result: Some(result),
                                    error: None,
                                },
                                Err(error) => DaemonFrame::Result {
                                    id,
                                    result: None,
                                    error: Some(error),
                                },
                            };
                            let _ = out.send(frame).await;
                        });
                    }
                    Err(error) => warn!(%error, "unreadable frame from the fleet server"),
                },
                Message::Close(_) => break Ok(()),
                _ => {}
            }
            if writer.0.is_finished() {
                break Err("the connection's writer stopped".to_owned());
            }
        }
    }

    /// The fleet's session of `device_id`, bound to the device on first use.
    async fn bind(&self, device_id: &str) -> Result<SessionKey, FrameError> {
        let session = fleet_session(device_id)?;
        let bound_here = self
            .pool
            .device(session.as_str())
            .is_ok_and(|device| device.id() == device_id);
        if !bound_here {
            self.pool
                .acquire_id(session.as_str(), device_id)
                .await
                .map_err(device_frame_error)?;
        }
        Ok(session)
    }

    async fn run_command(&self, command: HostCommand) -> Result<serde_json::Value, FrameError> {
        match command {
            HostCommand::DeviceCall {
                device_id,
                tool,
                arguments,
            } => {
                let session = self.bind(&device_id).await?;
                self.mcp.fleet_call(Some(session), tool, arguments).await
            }
            HostCommand::Reset { device_id } => {
                let session = self.bind(&device_id).await?;
                let device = self
                    .pool
                    .device(session.as_str())
                    .map_err(device_frame_error)?;
                device.reset().await.map_err(device_frame_error)?;
                Ok(serde_json::json!({ "content": [], "isError": false }))
            }
            HostCommand::MachineCall { tool, arguments } => {
                // A task on a device the fleet already drives takes the device over.
                if tool == "runTask"
                    && let Some(device_id) = arguments.get("deviceId").and_then(|id| id.as_str())
                {
                    let session = fleet_session(device_id)?;
                    if self.pool.device(session.as_str()).is_ok() {
                        self.pool
                            .release(session.as_str(), "handed to a task by the fleet server")
                            .await;
                        wait_warm(&self.pool, device_id).await;
                    }
                }
                self.mcp.fleet_call(None, tool, arguments).await
            }
            HostCommand::Release { device_id } => {
                let session = fleet_session(&device_id)?;
                self.pool
                    .release(session.as_str(), "released by the fleet server")
                    .await;
                Ok(serde_json::json!({ "content": [], "isError": false }))
            }
            HostCommand::AgentWake {
                agent_id,
                latest_seq,
                count,
                ..
            } => {
                debug!(bot = %agent_id, latest_seq, count, "agent:wake");
                self.bots
                    .fleet_wake(&agent_id)
                    .await
                    .map_err(control_frame_error)
            }
            HostCommand::AgentStop { agent_id } => self
                .bots
                .fleet_stop(&agent_id)
                .await
                .map_err(control_frame_error),
        }
    }
}

/// A task that is aborted when its handle goes.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Waits (up to 30 s) for a released device to be reset and warm again.
async fn wait_warm(pool: &Pool, device_id: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let state = pool
            .list(None)
            .into_iter()
            .find(|device| device.id == device_id)
            .map(|device| device.state);
        if state != Some(paddock_devices::DeviceState::Resetting) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn device_frame_error(error: paddock_devices::DeviceError) -> FrameError {
    use paddock_devices::DeviceError;
    let code = match &error {
        DeviceError::NotFound(_) => "not_found",
        DeviceError::InvalidInput(_) | DeviceError::Unsupported(_) => "invalid_input",
        _ => "upstream_error",
    };
    FrameError {
        code: code.into(),
        message: error.to_string(),
    }
}

fn control_frame_error(error: paddock_client::control::ControlError) -> FrameError {
    use paddock_client::control::ErrorCode;
    let code = match error.code {
        ErrorCode::NotFound => "not_found",
        ErrorCode::InvalidParams => "invalid_input",
        _ => "upstream_error",
    };
    FrameError {
        code: code.into(),
        message: error.message,
    }
}

/// Sends the pool's devices and the bots whenever they change (and once at the start).
async fn watch_inventory(pool: Pool, bots: crate::bots::BotsHost, out: mpsc::Sender<DaemonFrame>) {
    let mut last: Option<(Vec<InventoryDevice>, Vec<String>)> = None;
    loop {
        let devices: Vec<InventoryDevice> = pool
            .list(None)
            .into_iter()
            .map(|device| InventoryDevice {
                id: device.id,
                platform: device.platform.as_str().to_owned(),
                profile: device.profile,
                state: device.state.as_str().to_owned(),
            })
            .collect();
        let now = (devices, bots.ids().await);
        if last.as_ref() != Some(&now) {
            if out
                .send(DaemonFrame::Inventory {
                    devices: now.0.clone(),
                    bots: now.1.clone(),
                })
                .await
                .is_err()
            {
                return;
            }
            last = Some(now);
        }
        tokio::time::sleep(INVENTORY_EVERY).await;
    }
}

/// The delay before reconnect `attempt`: doubling from [`BACKOFF_FIRST`] to [`BACKOFF_CAP`],
/// times a random factor in [0.5, 1.5) so that many daemons do not reconnect in step.
fn backoff(attempt: u32) -> Duration {
    let base = BACKOFF_FIRST
        .saturating_mul(2u32.saturating_pow(attempt.min(16)))
        .min(BACKOFF_CAP);
    let mut byte = [0u8; 1];
    let jitter = match getrandom::fill(&mut byte) {
        Ok(()) => 0.5 + f64::from(byte[0]) / 256.0,
        Err(_) => 1.0,
    };
    base.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls_parse() {
        let url = ServerUrl::parse("https://fleet.example.com").ok();
        assert_eq!(
            url,
            Some(ServerUrl {
                tls: true,
                host: "fleet.example.com".into(),
                port: 443,
                prefix: String::new(),
            })
        );
        let url = ServerUrl::parse("http://127.0.0.1:8080/paddock/").ok();
        assert_eq!(
            url.map(|url| (url.port, url.prefix)),
            Some((8080, "/paddock".into()))
        );
        let url = ServerUrl::parse("http://[::1]:9").ok();
        assert_eq!(url.map(|url| url.authority()), Some("[::1]:9".to_owned()));
        for bad in [
            "ftp://x",
            "https://",
            "https://user:pw@host",
            "http://h:port",
            "h:1",
        ] {
            assert!(ServerUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_grows_to_its_cap_with_jitter() {
        for attempt in 0..40 {
            let delay = backoff(attempt);
            assert!(delay >= BACKOFF_FIRST / 2, "{attempt}: {delay:?}");
            assert!(delay < BACKOFF_CAP.mul_f64(1.5), "{attempt}: {delay:?}");
        }
        assert!(backoff(20) >= BACKOFF_CAP / 2);
    }
}
