//! The control plane's server side: pairing-token activation, the control WebSocket each
//! joined daemon keeps (`/api/daemon/control`, machine key), and the [`FleetBackend`] the
//! fleet tools use — host commands sent to the daemon that holds a device, answers matched
//! back by id.
//!
//! Presence and inventories go to the store, so every replica on one database lists every
//! device; a command for a machine connected to another replica travels there over the store's
//! relay.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Json, State};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use futures_util::{SinkExt as _, StreamExt as _};
use http::{HeaderMap, StatusCode, header};
use paddock_client::fleet::{
    ActivateRequest, ActivateResponse, DaemonFrame, FrameError, HostCommand, InventoryDevice,
    ServerFrame,
};
use paddock_tools::fleet::{FleetBackend, FleetDevice, FleetMachine};
use paddock_tools::{ToolError, ToolErrorCode};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

use crate::credential::{self, CredentialHash, CredentialKind};
use crate::store::{MachineRecord, Presence, ServerStore, StoreError, Unacked, now_ms};

/// How long a host command may take before the caller is told the machine did not answer
/// (below the server's 60 s request deadline, above the daemon's 45 s device operations).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(55);
/// How often the server pings each daemon, and refreshes its presence.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// A daemon silent for this long is taken for gone.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(45);
/// A presence not refreshed for this long is offline, whichever replica wrote it.
const PRESENCE_FRESH_MS: i64 = 60_000;
/// The longest control frame accepted from a daemon (an inventory of many devices, or an
/// answer carrying a screenshot).
const MAX_FRAME_BYTES: usize = 32 * 1024 * 1024;

/// A command's outcome as the daemon sent it.
type Reply = Result<Value, FrameError>;

/// One connected daemon.
struct Connected {
    /// Frames to the daemon's socket writer.
    outbox: mpsc::Sender<ServerFrame>,
    /// Bumped per connection, so a replaced connection's end does not remove its successor.
    generation: u64,
}

/// The joined daemons this replica holds, and the commands waiting for their answers.
pub struct Hub {
    store: Arc<dyn ServerStore>,
    replica_id: String,
    connected: Mutex<HashMap<String, Connected>>,
    /// Commands waiting for an answer: the machine they went to (`None` for a relayed one,
    /// which the other replica answers) and the waiter.
    pending: Mutex<HashMap<u64, Waiter>>,
    next_id: AtomicU64,
    /// The machines and presences as last read, for at most [`SNAPSHOT_FOR`]; this replica's
    /// own writes drop it at once.
    snapshot: Mutex<Option<(tokio::time::Instant, Arc<Snapshot>)>>,
}

/// A command's waiter: the machine it went to (`None` when relayed) and where its answer goes.
type Waiter = (Option<String>, oneshot::Sender<Reply>);

/// The store's view of the fleet at one moment.
struct Snapshot {
    machines: Vec<MachineRecord>,
    presences: Vec<Presence>,
}

/// How long a read of the fleet serves `list_devices` and routing: another replica's change
/// shows here within this.
const SNAPSHOT_FOR: Duration = Duration::from_millis(250);

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("replica_id", &self.replica_id)
            .field("connected", &lock(&self.connected).len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn store_error(error: StoreError) -> ToolError {
    ToolError::new(ToolErrorCode::UpstreamError, error.to_string())
}

fn upstream(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolErrorCode::UpstreamError, message)
}

impl Hub {
    pub fn new(store: Arc<dyn ServerStore>, replica_id: String) -> Arc<Self> {
        Arc::new(Self {
            store,
            replica_id,
            connected: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            snapshot: Mutex::new(None),
        })
    }

    /// The fleet as the store has it (at most [`SNAPSHOT_FOR`] old).
    async fn snapshot(&self) -> Result<Arc<Snapshot>, ToolError> {
        if let Some((read_at, snapshot)) = lock(&self.snapshot).as_ref()
            && read_at.elapsed() < SNAPSHOT_FOR
        {
            return Ok(snapshot.clone());
        }
        let (machines, presences) =
            tokio::try_join!(self.store.list_machines(), self.store.presences())
                .map_err(store_error)?;
        let snapshot = Arc::new(Snapshot {
            machines,
            presences,
        });
        *lock(&self.snapshot) = Some((tokio::time::Instant::now(), snapshot.clone()));
        Ok(snapshot)
    }

    fn invalidate(&self) {
        *lock(&self.snapshot) = None;
    }

    /// Hands the answer to command `id` (from its daemon, or relayed back from another
    /// replica) to whoever waits for it; `empty` says what an answer with neither part was.
    fn deliver(&self, id: u64, result: Option<Value>, error: Option<FrameError>, empty: &str) {
        let waiter = lock(&self.pending).remove(&id);
        if let Some((_, waiter)) = waiter {
            let _ = waiter.send(match (result, error) {
                (_, Some(error)) => Err(error),
                (Some(result), None) => Ok(result),
                (None, None) => Err(FrameError {
                    code: "upstream_error".into(),
                    message: empty.to_owned(),
                }),
            });
        }
    }

    /// The store the hub keeps presences in.
    pub fn store(&self) -> &Arc<dyn ServerStore> {
        &self.store
    }

    /// How many daemons hold a control connection to this replica.
    pub fn connected_count(&self) -> usize {
        lock(&self.connected).len()
    }

    /// Sends `command` to machine `machine_id` — over its control connection when this replica
    /// holds it, else through the replica that does — and waits for its answer.
    async fn command(&self, machine_id: &str, command: HostCommand) -> Result<Value, ToolError> {
        let local = lock(&self.connected).contains_key(machine_id);
        if local {
            return self.command_local(machine_id, command).await;
        }
        let snapshot = self.snapshot().await?;
        let holder = snapshot.presences.iter().find(|presence| {
            presence.machine_id == machine_id
                && presence.replica_id != self.replica_id
                && is_live(presence, now_ms())
        });
        match holder {
            Some(presence) => {
                let replica = presence.replica_id.clone();
                self.command_relayed(&replica, machine_id, command).await
            }
            None => Err(not_connected(machine_id)),
        }
    }

    /// Asks replica `replica` to send `command` to the machine connected there.
    async fn command_relayed(
        &self,
        replica: &str,
        machine_id: &str,
        command: HostCommand,
    ) -> Result<Value, ToolError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer_tx, answer) = oneshot::channel();
        lock(&self.pending).insert(id, (None, answer_tx));
        let _pending = PendingGuard { hub: self, id };
        let body = serde_json::to_string(&Relayed::Command {
            reply_to: self.replica_id.clone(),
            id,
            machine_id: machine_id.to_owned(),
            command,
        })
        .map_err(|error| upstream(error.to_string()))?;
        self.store
            .relay_post(replica.to_owned(), body)
            .await
            .map_err(store_error)?;
        match tokio::time::timeout(COMMAND_TIMEOUT, answer).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(error))) => Err(frame_error(error)),
            Ok(Err(_)) | Err(_) => Err(upstream(format!(
                "machine `{machine_id}` (connected to replica `{replica}`) did not answer within {} s",
                COMMAND_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Serves the relay: commands other replicas send for the machines connected here, and
    /// the answers to the commands this replica relayed. Runs while the server does.
    pub async fn serve_relay(self: Arc<Self>) -> Result<(), StoreError> {
        let mut bodies = self.store.relay_listen(self.replica_id.clone()).await?;
        while let Some(body) = bodies.recv().await {
            match serde_json::from_str::<Relayed>(&body) {
                Ok(Relayed::Command {
                    reply_to,
                    id,
                    machine_id,
                    command,
                }) => {
                    let hub = self.clone();
                    tokio::spawn(async move {
                        let outcome = hub.command_local(&machine_id, command).await;
                        let (result, error) = match outcome {
                            Ok(value) => (Some(value), None),
                            Err(error) => (
                                None,
                                Some(FrameError {
                                    code: error.code.as_str().to_owned(),
                                    message: error.message.clone(),
                                }),
                            ),
                        };
                        let reply = Relayed::Reply { id, result, error };
                        if let Ok(body) = serde_json::to_string(&reply)
                            && let Err(error) = hub.store.relay_post(reply_to, body).await
                        {
                            warn!(%error, "could not relay an answer back");
                        }
                    });
                }
                Ok(Relayed::Reply { id, result, error }) => {
                    self.deliver(id, result, error, "an empty relayed answer");
                }
                Err(error) => warn!(%error, "unreadable relay message"),
            }
        }
        Ok(())
    }

    /// Sends `command` over this replica's control connection to `machine_id`.
    async fn command_local(
        &self,
        machine_id: &str,
        command: HostCommand,
    ) -> Result<Value, ToolError> {
        let outbox = lock(&self.connected)
            .get(machine_id)
            .map(|connected| connected.outbox.clone());
        let Some(outbox) = outbox else {
            return Err(not_connected(machine_id));
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer_tx, answer) = oneshot::channel();
        lock(&self.pending).insert(id, (Some(machine_id.to_owned()), answer_tx));
        let _pending = PendingGuard { hub: self, id };
        if outbox
            .send(ServerFrame::Command { id, command })
            .await
            .is_err()
        {
            return Err(upstream(format!(
                "machine `{machine_id}` disconnected before the command was sent"
            )));
        }
        match tokio::time::timeout(COMMAND_TIMEOUT, answer).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(error))) => Err(frame_error(error)),
            Ok(Err(_)) => Err(upstream(format!(
                "machine `{machine_id}` disconnected before it answered"
            ))),
            Err(_) => Err(upstream(format!(
                "machine `{machine_id}` did not answer within {} s",
                COMMAND_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Tells `machine_id` that bot `unacked.agent_id` has messages waiting (a bodiless
    /// notice); the daemon's answer.
    pub async fn wake(&self, machine_id: &str, unacked: Unacked) -> Result<Value, ToolError> {
        self.command(
            machine_id,
            HostCommand::AgentWake {
                agent_id: unacked.agent_id,
                target: paddock_client::fleet::FLEET_OWNER_DM.to_owned(),
                latest_seq: unacked.latest_seq,
                count: unacked.count,
            },
        )
        .await
    }

    /// Stops bot `agent_id`'s running session on `machine_id`.
    pub async fn stop_agent(&self, machine_id: &str, agent_id: &str) -> Result<Value, ToolError> {
        self.command(
            machine_id,
            HostCommand::AgentStop {
                agent_id: agent_id.to_owned(),
            },
        )
        .await
    }

    /// Wakes each bot of `machine_id` that has messages its daemon has not taken.
    async fn wake_waiting(&self, machine_id: &str) {
        let waiting = match self.store.unacked_agents(machine_id.to_owned()).await {
            Ok(waiting) => waiting,
            Err(error) => {
                warn!(%error, machine = %machine_id, "could not read the messages waiting for a machine's bots");
                return;
            }
        };
        for unacked in waiting {
            let agent = unacked.agent_id.clone();
            if let Err(error) = self.wake(machine_id, unacked).await {
                warn!(machine = %machine_id, bot = %agent, error = %error.message, "a bot with waiting messages could not be woken");
            }
        }
    }

    /// The machine whose daemon defines bot `bot` (a machine id or name in `machine` picks
    /// one when several do).
    pub async fn machine_of_bot(
        &self,
        bot: &str,
        machine: Option<&str>,
    ) -> Result<String, (StatusCode, String)> {
        let snapshot = self
            .snapshot()
            .await
            .map_err(|error| (StatusCode::SERVICE_UNAVAILABLE, error.message))?;
        let holders: Vec<&MachineRecord> = snapshot
            .machines
            .iter()
            .filter(|record| record.revoked_at_ms.is_none())
            .filter(|record| {
                machine.is_none_or(|wanted| record.id == wanted || record.name == wanted)
            })
            .filter(|record| {
                snapshot.presences.iter().any(|presence| {
                    presence.machine_id == record.id
                        && StoredInventory::parse(&presence.inventory)
                            .bots
                            .iter()
                            .any(|known| known == bot)
                })
            })
            .collect();
        match holders.as_slice() {
            [one] => Ok(one.id.clone()),
            [] => Err((
                StatusCode::NOT_FOUND,
                format!(
                    "no bot `{bot}` on {}; a daemon lists its bots (`paddock bot add`) once it has connected",
                    machine.map_or("any joined machine".to_owned(), |name| format!(
                        "machine `{name}`"
                    ))
                ),
            )),
            several => Err((
                StatusCode::CONFLICT,
                format!(
                    "bot `{bot}` is defined on {} machines ({}); name one with `machine`",
                    several.len(),
                    several
                        .iter()
                        .map(|record| record.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// The machine that holds `device_id`, from the inventories.
    async fn machine_of(&self, device_id: &str) -> Result<String, ToolError> {
        let devices = self.fleet_devices().await?;
        let device = devices
            .into_iter()
            .find(|device| device.id == device_id)
            .ok_or_else(|| {
                ToolError::not_found(format!(
                    "no device `{device_id}` in the fleet; `list_devices` lists them"
                ))
            })?;
        if !device.online {
            return Err(upstream(format!(
                "device `{device_id}` is offline: its machine `{}` is not connected",
                device.machine_id
            )));
        }
        Ok(device.machine_id)
    }

    async fn fleet_devices(&self) -> Result<Vec<FleetDevice>, ToolError> {
        let snapshot = self.snapshot().await?;
        let now = now_ms();
        let mut devices = Vec::new();
        for presence in &snapshot.presences {
            let Some(machine) = snapshot
                .machines
                .iter()
                .find(|machine| machine.id == presence.machine_id)
            else {
                continue;
            };
            if machine.revoked_at_ms.is_some() {
                continue;
            }
            let online = is_live(presence, now);
            for device in StoredInventory::parse(&presence.inventory).devices {
                devices.push(FleetDevice {
                    id: device.id,
                    machine_id: machine.id.clone(),
                    machine_name: machine.name.clone(),
                    platform: device.platform,
                    profile: device.profile,
                    state: if online {
                        device.state
                    } else {
                        "offline".to_owned()
                    },
                    online,
                });
            }
        }
        Ok(devices)
    }

    async fn set_presence(&self, machine_id: &str, connected: bool, inventory: Option<String>) {
        let inventory = match inventory {
            Some(inventory) => inventory,
            None => match self.store.presences().await {
                Ok(presences) => presences
                    .into_iter()
                    .find(|presence| presence.machine_id == machine_id)
                    .map(|presence| presence.inventory)
                    .unwrap_or_else(|| StoredInventory::EMPTY.to_owned()),
                Err(_) => StoredInventory::EMPTY.to_owned(),
            },
        };
        let presence = Presence {
            machine_id: machine_id.to_owned(),
            replica_id: self.replica_id.clone(),
            connected,
            inventory,
            updated_at_ms: now_ms(),
        };
        if let Err(error) = self.store.set_presence(presence).await {
            warn!(%error, machine = %machine_id, "could not record a machine's presence");
        }
        self.invalidate();
    }

    /// Serves one daemon's control connection until it closes or goes silent.
    async fn serve(self: Arc<Self>, machine: MachineRecord, socket: WebSocket) {
        let (mut sink, mut stream) = socket.split();
        let (outbox, mut frames) = mpsc::channel::<ServerFrame>(64);
        let generation = self.next_id.fetch_add(1, Ordering::Relaxed);
        let replaced = lock(&self.connected).insert(
            machine.id.clone(),
            Connected {
                // The map holds the only sender: removing the entry (a replaced key) ends the
                // writer, which closes the socket.
                outbox,
                generation,
            },
        );
        if replaced.is_some() {
            info!(machine = %machine.id, "a new control connection replaced the machine's old one");
        }
        info!(machine = %machine.id, name = %machine.name, "daemon connected");
        self.set_presence(&machine.id, true, None).await;
        // Messages that arrived while it was away: one wake per bot that has any.
        {
            let hub = self.clone();
            let machine_id = machine.id.clone();
            tokio::spawn(async move { hub.wake_waiting(&machine_id).await });
        }
        let welcome = ServerFrame::Welcome {
            machine_id: machine.id.clone(),
            name: machine.name.clone(),
        };
        let writer = tokio::spawn(async move {
            if let Ok(text) = serde_json::to_string(&welcome)
                && sink.send(Message::Text(text.into())).await.is_err()
            {
                return;
            }
            let mut heartbeat = tokio::time::interval(HEARTBEAT);
            heartbeat.tick().await;
            loop {
                tokio::select! {
                    frame = frames.recv() => {
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
        });
        let mut refreshed = tokio::time::Instant::now();
        loop {
            let next = tokio::time::timeout(SILENCE_LIMIT, stream.next()).await;
            let message = match next {
                Err(_) => {
                    warn!(machine = %machine.id, "daemon went silent; closing its control connection");
                    break;
                }
                Ok(None | Some(Err(_))) => break,
                Ok(Some(Ok(message))) => message,
            };
            if refreshed.elapsed() >= HEARTBEAT {
                refreshed = tokio::time::Instant::now();
                self.set_presence(&machine.id, true, None).await;
            }
            match message {
                Message::Text(text) => self.on_frame(&machine.id, text.as_str()).await,
                Message::Close(_) => break,
                // Pongs and pings only prove the daemon is alive.
                _ => {}
            }
            if writer.is_finished() {
                break;
            }
        }
        writer.abort();
        let ours = {
            let mut connected = lock(&self.connected);
            match connected.get(&machine.id) {
                Some(current) if current.generation == generation => {
                    connected.remove(&machine.id);
                    true
                }
                _ => false,
            }
        };
        if ours {
            // Offline first, so a caller told of the disconnect below lists the machine offline.
            self.set_presence(&machine.id, false, None).await;
            // The commands in flight to it get their answer now, not at their deadline.
            let orphaned: Vec<_> = {
                let mut pending = lock(&self.pending);
                let ids: Vec<u64> = pending
                    .iter()
                    .filter(|(_, (to, _))| to.as_deref() == Some(machine.id.as_str()))
                    .map(|(id, _)| *id)
                    .collect();
                ids.into_iter()
                    .filter_map(|id| pending.remove(&id))
                    .collect()
            };
            for (_, waiter) in orphaned {
                let _ = waiter.send(Err(FrameError {
                    code: "upstream_error".into(),
                    message: format!(
                        "machine `{}` disconnected before it answered; the command may or may not have run",
                        machine.id
                    ),
                }));
            }
            info!(machine = %machine.id, "daemon disconnected; its devices are offline");
        }
    }

    async fn on_frame(&self, machine_id: &str, text: &str) {
        match serde_json::from_str::<DaemonFrame>(text) {
            Ok(DaemonFrame::Inventory { devices, bots }) => {
                debug!(machine = %machine_id, devices = devices.len(), bots = bots.len(), "inventory");
                let inventory = serde_json::to_string(&StoredInventory { devices, bots })
                    .unwrap_or_else(|_| StoredInventory::EMPTY.into());
                self.set_presence(machine_id, true, Some(inventory)).await;
            }
            Ok(DaemonFrame::Result { id, result, error }) => {
                self.deliver(
                    id,
                    result,
                    error,
                    "the daemon answered with neither a result nor an error",
                );
            }
            Err(error) => {
                warn!(machine = %machine_id, %error, "unreadable control frame from a daemon");
            }
        }
    }

    /// `GET /api/daemon/control`: a daemon's control WebSocket, authenticated by its machine
    /// key (`Authorization: Bearer pdk_mk_…`).
    pub async fn control_route(
        State(hub): State<Arc<Hub>>,
        headers: HeaderMap,
        upgrade: WebSocketUpgrade,
    ) -> Response {
        let machine = match hub.machine_of_key(&headers).await {
            Ok(machine) => machine,
            Err(refused) => return refused,
        };
        upgrade
            .max_message_size(MAX_FRAME_BYTES)
            .on_upgrade(move |socket| hub.serve(machine, socket))
    }

    /// The live machine whose key (`Authorization: Bearer pdk_mk_…`) `headers` carry, or the
    /// refusal to answer with.
    pub async fn machine_of_key(&self, headers: &HeaderMap) -> Result<MachineRecord, Response> {
        let Some(key) = credential::bearer(headers, CredentialKind::Machine) else {
            return Err(refusal(
                StatusCode::UNAUTHORIZED,
                "this route needs `Authorization: Bearer pdk_mk_…` (the machine key `paddock daemon join` stored)",
            ));
        };
        match self.store.machine_by_key(CredentialHash::of(key)).await {
            Ok(Some(machine)) => Ok(machine),
            Ok(None) => Err(refusal(
                StatusCode::UNAUTHORIZED,
                "unknown or replaced machine key; pair again with `paddock server pair` and `paddock daemon join`",
            )),
            Err(error) => {
                warn!(%error, "machine key lookup failed");
                Err(refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server's database is unavailable",
                ))
            }
        }
    }

    /// `POST /api/daemon/activate`: trades a pairing token (once, within its 10 minutes) for a
    /// machine id and key; a reconnect token gives its machine a new key instead.
    pub async fn activate_route(
        State(hub): State<Arc<Hub>>,
        Json(request): Json<ActivateRequest>,
    ) -> Response {
        match hub.activate(request).await {
            Ok(answer) => Json(answer).into_response(),
            Err((status, message)) => refusal(status, &message),
        }
    }

    async fn activate(
        &self,
        request: ActivateRequest,
    ) -> Result<ActivateResponse, (StatusCode, String)> {
        let unavailable = |error: StoreError| {
            warn!(%error, "activation failed in the database");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the server's database is unavailable; try again".to_owned(),
            )
        };
        let refused = || {
            (
                StatusCode::UNAUTHORIZED,
                "unknown, used or expired pairing token; mint a new one with `paddock server pair`"
                    .to_owned(),
            )
        };
        if !credential::well_formed(CredentialKind::Pairing, &request.token) {
            return Err(refused());
        }
        for (field, value) in [
            ("hostname", &request.hostname),
            ("platform", &request.platform),
            ("arch", &request.arch),
        ] {
            if value.is_empty() || value.len() > 255 || value.chars().any(char::is_control) {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("`{field}` must be 1 to 255 printable characters"),
                ));
            }
        }
        let pairing = self
            .store
            .take_pairing(CredentialHash::of(&request.token), now_ms())
            .await
            .map_err(unavailable)?
            .ok_or_else(refused)?;
        let random = |error: getrandom::Error| {
            warn!(%error, "OS random source failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the server could not mint a key".to_owned(),
            )
        };
        let key = credential::mint(CredentialKind::Machine).map_err(random)?;
        let key_hash = CredentialHash::of(key.expose_secret());
        if let Some(machine_id) = pairing.reconnect_machine {
            let machine = self
                .store
                .machine(machine_id.clone())
                .await
                .map_err(unavailable)?
                .ok_or_else(refused)?;
            if !self
                .store
                .replace_machine_key(machine_id.clone(), key_hash)
                .await
                .map_err(unavailable)?
            {
                return Err(refused());
            }
            // The old key's connection, if any, is not the machine any more.
            lock(&self.connected).remove(&machine_id);
            self.invalidate();
            info!(machine = %machine_id, host = %request.describe(), "machine reconnected with a new key");
            return Ok(ActivateResponse {
                machine_id,
                name: machine.name,
                machine_key: key.expose_secret().to_owned(),
            });
        }
        let machine = MachineRecord {
            id: credential::record_id("m_").map_err(random)?,
            name: pairing.name.unwrap_or_else(|| request.hostname.clone()),
            hostname: request.hostname.clone(),
            platform: request.platform.clone(),
            arch: request.arch.clone(),
            created_at_ms: now_ms(),
            revoked_at_ms: None,
        };
        self.store
            .insert_machine(machine.clone(), key_hash)
            .await
            .map_err(unavailable)?;
        self.invalidate();
        info!(machine = %machine.id, name = %machine.name, host = %request.describe(), "machine paired");
        Ok(ActivateResponse {
            machine_id: machine.id,
            name: machine.name,
            machine_key: key.expose_secret().to_owned(),
        })
    }
}

/// Removes a command's waiter when its caller stops waiting (answered, timed out or dropped).
struct PendingGuard<'a> {
    hub: &'a Hub,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.hub.pending).remove(&self.id);
    }
}

/// What replicas send each other over the store's relay.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Relayed {
    /// Send `command` to `machine_id` (connected to the receiving replica) and answer to
    /// `reply_to` with the same `id`.
    #[serde(rename_all = "camelCase")]
    Command {
        reply_to: String,
        id: u64,
        machine_id: String,
        command: HostCommand,
    },
    Reply {
        id: u64,
        result: Option<Value>,
        error: Option<FrameError>,
    },
}

/// What a presence row keeps of a daemon's last inventory.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct StoredInventory {
    devices: Vec<InventoryDevice>,
    #[serde(default)]
    bots: Vec<String>,
}

impl StoredInventory {
    const EMPTY: &'static str = r#"{"devices":[],"bots":[]}"#;

    /// A stored inventory; an unreadable one is empty (the daemon sends a new one on connect).
    fn parse(json: &str) -> Self {
        serde_json::from_str(json).unwrap_or_default()
    }
}

/// Whether `presence` says its machine is connected, written recently enough to believe (a
/// replica that died leaves `connected` set).
fn is_live(presence: &Presence, now_ms: i64) -> bool {
    presence.connected && now_ms - presence.updated_at_ms < PRESENCE_FRESH_MS
}

fn not_connected(machine_id: &str) -> ToolError {
    upstream(format!(
        "machine `{machine_id}` is not connected to the server; its daemon may be stopped or unreachable (it reconnects by itself when it comes back)"
    ))
}

fn frame_error(error: FrameError) -> ToolError {
    let code = match error.code.as_str() {
        "not_found" => ToolErrorCode::NotFound,
        "forbidden" => ToolErrorCode::Forbidden,
        "invalid_input" => ToolErrorCode::InvalidInput,
        "rate_limited" => ToolErrorCode::RateLimited,
        _ => ToolErrorCode::UpstreamError,
    };
    ToolError::new(code, error.message)
}

/// A refusal in the edge's shape, `{"error": {"code", "message"}}`, with a code for its status.
pub(crate) fn refusal(status: StatusCode, message: &str) -> Response {
    let code = match status {
        StatusCode::BAD_REQUEST => "invalid_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::CONFLICT => "conflict",
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::BAD_GATEWAY => "upstream_error",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        _ => "internal_error",
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({ "error": { "code": code, "message": message } }).to_string(),
    )
        .into_response()
}

fn call_result(value: Value) -> Result<CallToolResult, ToolError> {
    serde_json::from_value(value).map_err(|error| {
        upstream(format!(
            "the daemon's answer was not a tool result: {error}"
        ))
    })
}

impl FleetBackend for Hub {
    fn devices(&self) -> BoxFuture<'_, Result<Vec<FleetDevice>, ToolError>> {
        Box::pin(self.fleet_devices())
    }

    fn machines(&self) -> BoxFuture<'_, Result<Vec<FleetMachine>, ToolError>> {
        Box::pin(async move {
            let devices = self.fleet_devices().await?;
            let snapshot = self.snapshot().await?;
            let presences = &snapshot.presences;
            let now = now_ms();
            Ok(snapshot
                .machines
                .iter()
                .filter(|machine| machine.revoked_at_ms.is_none())
                .map(|machine| {
                    let online = presences.iter().any(|presence| {
                        presence.machine_id == machine.id && is_live(presence, now)
                    });
                    FleetMachine {
                        devices: devices
                            .iter()
                            .filter(|device| device.machine_id == machine.id)
                            .count(),
                        id: machine.id.clone(),
                        name: machine.name.clone(),
                        online,
                    }
                })
                .collect())
        })
    }

    fn device_call(
        &self,
        device_id: String,
        tool: &'static str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'_, Result<CallToolResult, ToolError>> {
        Box::pin(async move {
            let machine = self.machine_of(&device_id).await?;
            let value = self
                .command(
                    &machine,
                    HostCommand::DeviceCall {
                        device_id,
                        tool: tool.to_owned(),
                        arguments,
                    },
                )
                .await?;
            call_result(value)
        })
    }

    fn machine_call(
        &self,
        machine_id: String,
        tool: &'static str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'_, Result<CallToolResult, ToolError>> {
        Box::pin(async move {
            let known = self
                .store
                .machine(machine_id.clone())
                .await
                .map_err(store_error)?;
            if known.is_none_or(|machine| machine.revoked_at_ms.is_some()) {
                return Err(ToolError::not_found(format!(
                    "no machine `{machine_id}` in the fleet"
                )));
            }
            let value = self
                .command(
                    &machine_id,
                    HostCommand::MachineCall {
                        tool: tool.to_owned(),
                        arguments,
                    },
                )
                .await?;
            call_result(value)
        })
    }

    fn release_device(&self, device_id: String) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async move {
            let machine = self.machine_of(&device_id).await?;
            self.command(&machine, HostCommand::Release { device_id })
                .await
                .map(drop)
        })
    }

    fn reset_device(&self, device_id: String) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async move {
            let machine = self.machine_of(&device_id).await?;
            self.command(&machine, HostCommand::Reset { device_id })
                .await
                .map(drop)
        })
    }
}
