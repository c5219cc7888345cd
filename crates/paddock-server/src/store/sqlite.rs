//! The embedded store: one SQLite file (0600, in a private directory), used from blocking
//! threads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use futures_util::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension as _, params};
use tokio::sync::mpsc;

use super::{
    AgentMessage, ApiKeyRecord, MIGRATIONS, MIGRATIONS_TABLE, MachineRecord, Pairing, Presence,
    RELAY_BUFFER, ServerStore, StoreError, Unacked, now_ms,
};
use crate::credential::CredentialHash;

#[derive(Debug, Clone)]
pub struct SqliteStore {
    connection: Arc<Mutex<Connection>>,
    /// The file, made absolute: the key of this database's in-process relay.
    path: PathBuf,
}

fn database(error: rusqlite::Error) -> StoreError {
    StoreError::Database(error.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, in a directory only this user can
    /// read, and runs the migrations.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let relay_key = path.clone();
        let open_error = {
            let location = format!("sqlite:{}", path.display());
            move |message: String| StoreError::Open {
                location: location.clone(),
                message,
            }
        };
        let opened = tokio::task::spawn_blocking(move || -> Result<Connection, String> {
            if let Some(parent) = path.parent()
                && !parent.as_os_str().is_empty()
            {
                paddock_secrets::private::ensure_safe_parent(parent)
                    .map_err(|error| error.to_string())?;
            }
            let connection = Connection::open(&path).map_err(|error| error.to_string())?;
            restrict(&path).map_err(|error| error.to_string())?;
            // The busy timeout first: switching to WAL takes a lock that another process
            // opening the file at the same moment may hold.
            connection
                .busy_timeout(std::time::Duration::from_secs(5))
                .map_err(|error| error.to_string())?;
            switch_to_wal(&connection).map_err(|error| format!("switching to WAL: {error}"))?;
            migrate(&connection).map_err(|error| format!("migrating: {error}"))?;
            Ok(connection)
        })
        .await
        .map_err(|error| open_error(error.to_string()))?
        .map_err(open_error)?;
        Ok(Self {
            connection: Arc::new(Mutex::new(opened)),
            path: relay_key,
        })
    }

    /// Runs `work` with the connection on a blocking thread.
    fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<'_, Result<T, StoreError>> {
        let connection = self.connection.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || work(&lock(&connection)))
                .await
                .map_err(|error| StoreError::Database(error.to_string()))?
        })
    }
}

fn lock(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    connection
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

#[cfg(unix)]
fn restrict(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn restrict(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

/// Runs each pending migration and records it in one `BEGIN IMMEDIATE` transaction, so two
/// processes opening a fresh file at once apply each migration once.
/// Puts the database in WAL mode. Another process switching the same new file at the same
/// moment makes SQLite answer "locked" at once, without its busy handler: that is retried for up
/// to 5 s.
fn switch_to_wal(connection: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match connection.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;") {
            Err(rusqlite::Error::SqliteFailure(failure, _))
                if matches!(
                    failure.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

fn migrate(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(MIGRATIONS_TABLE)?;
    for (version, sql) in MIGRATIONS {
        connection.execute_batch("BEGIN IMMEDIATE")?;
        let applied = (|| -> rusqlite::Result<()> {
            let applied: Option<i64> = connection
                .query_row(
                    "SELECT version FROM schema_migrations WHERE version = ?1",
                    params![version],
                    |row| row.get(0),
                )
                .optional()?;
            if applied.is_none() {
                connection.execute_batch(sql)?;
                connection.execute(
                    "INSERT INTO schema_migrations (version, applied_at_ms) VALUES (?1, ?2)",
                    params![version, now_ms()],
                )?;
            }
            Ok(())
        })();
        match applied {
            Ok(()) => connection.execute_batch("COMMIT")?,
            Err(error) => {
                // The transaction's own error is the one worth reporting.
                let _rolled_back = connection.execute_batch("ROLLBACK");
                return Err(error);
            }
        }
    }
    Ok(())
}

/// The relay of one process: SQLite serves a single replica, so an in-memory map of listeners
/// (keyed by database file and replica, shared by every store opened on that file in this
/// process) is enough; bodies posted while nobody listens wait in the map.
#[derive(Debug, Default)]
struct RelaySlot {
    listener: Option<mpsc::Sender<String>>,
    pending: Vec<String>,
}

type RelayMap = Mutex<HashMap<(PathBuf, String), RelaySlot>>;

fn relay_map() -> &'static RelayMap {
    static MAP: OnceLock<RelayMap> = OnceLock::new();
    MAP.get_or_init(RelayMap::default)
}

fn lock_relay() -> MutexGuard<'static, HashMap<(PathBuf, String), RelaySlot>> {
    relay_map()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

fn api_key_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ApiKeyRecord> {
    Ok(ApiKeyRecord {
        id: row.get(0)?,
        name: row.get(1)?,
        profile: row.get(2)?,
        created_at_ms: row.get(3)?,
        revoked_at_ms: row.get(4)?,
    })
}

fn machine_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<MachineRecord> {
    Ok(MachineRecord {
        id: row.get(0)?,
        name: row.get(1)?,
        hostname: row.get(2)?,
        platform: row.get(3)?,
        arch: row.get(4)?,
        created_at_ms: row.get(5)?,
        revoked_at_ms: row.get(6)?,
    })
}

const API_KEY_COLUMNS: &str = "id, name, profile, created_at_ms, revoked_at_ms";
const MACHINE_COLUMNS: &str = "id, name, hostname, platform, arch, created_at_ms, revoked_at_ms";

impl ServerStore for SqliteStore {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn insert_api_key(
        &self,
        record: ApiKeyRecord,
        hash: CredentialHash,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |connection| {
            let taken: Option<String> = connection
                .query_row(
                    "SELECT id FROM api_keys WHERE name = ?1 AND revoked_at_ms IS NULL",
                    params![record.name],
                    |row| row.get(0),
                )
                .optional()
                .map_err(database)?;
            if taken.is_some() {
                return Err(StoreError::Duplicate {
                    what: "live API key",
                    name: record.name,
                });
            }
            connection
                .execute(
                    "INSERT INTO api_keys (id, name, key_hash, profile, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![record.id, record.name, hash.as_str(), record.profile, record.created_at_ms],
                )
                .map_err(database)?;
            Ok(())
        })
    }

    fn api_key(
        &self,
        hash: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<ApiKeyRecord>, StoreError>> {
        self.run(move |connection| {
            connection
                .query_row(
                    &format!("SELECT {API_KEY_COLUMNS} FROM api_keys WHERE key_hash = ?1"),
                    params![hash.as_str()],
                    api_key_row,
                )
                .optional()
                .map_err(database)
        })
    }

    fn list_api_keys(&self) -> BoxFuture<'_, Result<Vec<ApiKeyRecord>, StoreError>> {
        self.run(|connection| {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT {API_KEY_COLUMNS} FROM api_keys ORDER BY created_at_ms, id"
                ))
                .map_err(database)?;
            statement
                .query_map([], api_key_row)
                .map_err(database)?
                .collect::<Result<_, _>>()
                .map_err(database)
        })
    }

    fn revoke_api_key(
        &self,
        which: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.run(move |connection| {
            let transaction = connection.unchecked_transaction().map_err(database)?;
            let changed = transaction
                .execute(
                    "UPDATE api_keys SET revoked_at_ms = ?2 WHERE (id = ?1 OR name = ?1) AND revoked_at_ms IS NULL",
                    params![which, now_ms],
                )
                .map_err(database)?;
            transaction
                .execute(
                    "UPDATE key_epoch SET value = value + 1 WHERE name = 'api_keys'",
                    [],
                )
                .map_err(database)?;
            transaction.commit().map_err(database)?;
            Ok(changed > 0)
        })
    }

    fn key_epoch(&self) -> BoxFuture<'_, Result<i64, StoreError>> {
        self.run(|connection| {
            connection
                .query_row(
                    "SELECT value FROM key_epoch WHERE name = 'api_keys'",
                    [],
                    |row| row.get(0),
                )
                .map_err(database)
        })
    }

    fn insert_pairing(
        &self,
        hash: CredentialHash,
        pairing: Pairing,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |connection| {
            connection
                .execute(
                    "INSERT INTO pairing_tokens (token_hash, name, reconnect_machine, created_at_ms, expires_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![hash.as_str(), pairing.name, pairing.reconnect_machine, now_ms, expires_at_ms],
                )
                .map_err(database)?;
            Ok(())
        })
    }

    fn take_pairing(
        &self,
        hash: CredentialHash,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<Option<Pairing>, StoreError>> {
        self.run(move |connection| {
            connection
                .query_row(
                    "UPDATE pairing_tokens SET used_at_ms = ?2
                     WHERE token_hash = ?1 AND used_at_ms IS NULL AND expires_at_ms > ?2
                     RETURNING name, reconnect_machine",
                    params![hash.as_str(), now_ms],
                    |row| {
                        Ok(Pairing {
                            name: row.get(0)?,
                            reconnect_machine: row.get(1)?,
                        })
                    },
                )
                .optional()
                .map_err(database)
        })
    }

    fn insert_machine(
        &self,
        record: MachineRecord,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |connection| {
            connection
                .execute(
                    "INSERT INTO machines (id, name, key_hash, hostname, platform, arch, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![record.id, record.name, key.as_str(), record.hostname, record.platform, record.arch, record.created_at_ms],
                )
                .map_err(database)?;
            Ok(())
        })
    }

    fn machine_by_key(
        &self,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<MachineRecord>, StoreError>> {
        self.run(move |connection| {
            connection
                .query_row(
                    &format!(
                        "SELECT {MACHINE_COLUMNS} FROM machines WHERE key_hash = ?1 AND revoked_at_ms IS NULL"
                    ),
                    params![key.as_str()],
                    machine_row,
                )
                .optional()
                .map_err(database)
        })
    }

    fn machine(&self, id: String) -> BoxFuture<'_, Result<Option<MachineRecord>, StoreError>> {
        self.run(move |connection| {
            connection
                .query_row(
                    &format!("SELECT {MACHINE_COLUMNS} FROM machines WHERE id = ?1"),
                    params![id],
                    machine_row,
                )
                .optional()
                .map_err(database)
        })
    }

    fn list_machines(&self) -> BoxFuture<'_, Result<Vec<MachineRecord>, StoreError>> {
        self.run(|connection| {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT {MACHINE_COLUMNS} FROM machines ORDER BY created_at_ms, id"
                ))
                .map_err(database)?;
            statement
                .query_map([], machine_row)
                .map_err(database)?
                .collect::<Result<_, _>>()
                .map_err(database)
        })
    }

    fn replace_machine_key(
        &self,
        id: String,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.run(move |connection| {
            let changed = connection
                .execute(
                    "UPDATE machines SET key_hash = ?2 WHERE id = ?1 AND revoked_at_ms IS NULL",
                    params![id, key.as_str()],
                )
                .map_err(database)?;
            Ok(changed > 0)
        })
    }

    fn insert_runner_key(
        &self,
        key: CredentialHash,
        machine_id: String,
        agent_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |connection| {
            connection
                .execute(
                    "INSERT INTO runner_keys (key_hash, machine_id, agent_id, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
                    params![key.as_str(), machine_id, agent_id, now_ms],
                )
                .map_err(database)?;
            Ok(())
        })
    }

    fn revoke_runner_keys(
        &self,
        machine_id: String,
        agent_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.run(move |connection| {
            let changed = connection
                .execute(
                    "UPDATE runner_keys SET revoked_at_ms = ?3 WHERE machine_id = ?1 AND agent_id = ?2 AND revoked_at_ms IS NULL",
                    params![machine_id, agent_id, now_ms],
                )
                .map_err(database)?;
            Ok(changed as u64)
        })
    }

    fn runner_key(
        &self,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<(String, String)>, StoreError>> {
        self.run(move |connection| {
            connection
                .query_row(
                    "SELECT r.machine_id, r.agent_id FROM runner_keys r JOIN machines m ON m.id = r.machine_id
                     WHERE r.key_hash = ?1 AND r.revoked_at_ms IS NULL AND m.revoked_at_ms IS NULL",
                    params![key.as_str()],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(database)
        })
    }

    fn set_presence(&self, presence: Presence) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |connection| {
            connection
                .execute(
                    "INSERT INTO machine_presence (machine_id, replica_id, connected, inventory, updated_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (machine_id) DO UPDATE SET replica_id = excluded.replica_id,
                         connected = excluded.connected, inventory = excluded.inventory,
                         updated_at_ms = excluded.updated_at_ms",
                    params![presence.machine_id, presence.replica_id, presence.connected, presence.inventory, presence.updated_at_ms],
                )
                .map_err(database)?;
            Ok(())
        })
    }

    fn presences(&self) -> BoxFuture<'_, Result<Vec<Presence>, StoreError>> {
        self.run(|connection| {
            let mut statement = connection
                .prepare(
                    "SELECT machine_id, replica_id, connected, inventory, updated_at_ms FROM machine_presence ORDER BY machine_id",
                )
                .map_err(database)?;
            statement
                .query_map([], |row| {
                    Ok(Presence {
                        machine_id: row.get(0)?,
                        replica_id: row.get(1)?,
                        connected: row.get(2)?,
                        inventory: row.get(3)?,
                        updated_at_ms: row.get(4)?,
                    })
                })
                .map_err(database)?
                .collect::<Result<_, _>>()
                .map_err(database)
        })
    }

    fn lease_device(
        &self,
        candidates: Vec<String>,
        holder: String,
        now_ms: i64,
        until_ms: i64,
    ) -> BoxFuture<'_, Result<Option<String>, StoreError>> {
        self.run(move |connection| {
            // One upsert per candidate: it takes a free or expired row and leaves a live one
            // alone, atomically (SQLite writes one at a time).
            for device_id in candidates {
                let taken = connection
                    .execute(
                        "INSERT INTO device_leases (device_id, holder, leased_at_ms, until_ms)
                         VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT (device_id) DO UPDATE SET holder = excluded.holder,
                             leased_at_ms = excluded.leased_at_ms, until_ms = excluded.until_ms
                         WHERE device_leases.until_ms <= ?3",
                        params![device_id, holder, now_ms, until_ms],
                    )
                    .map_err(database)?;
                if taken > 0 {
                    return Ok(Some(device_id));
                }
            }
            Ok(None)
        })
    }

    fn release_lease(
        &self,
        device_id: String,
        holder: String,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.run(move |connection| {
            let changed = connection
                .execute(
                    "DELETE FROM device_leases WHERE device_id = ?1 AND holder = ?2",
                    params![device_id, holder],
                )
                .map_err(database)?;
            Ok(changed > 0)
        })
    }

    fn lease_holder(
        &self,
        device_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<Option<String>, StoreError>> {
        self.run(move |connection| {
            connection
                .query_row(
                    "SELECT holder FROM device_leases WHERE device_id = ?1 AND until_ms > ?2",
                    params![device_id, now_ms],
                    |row| row.get(0),
                )
                .optional()
                .map_err(database)
        })
    }

    fn append_agent_message(
        &self,
        machine_id: String,
        agent_id: String,
        message: AgentMessage,
    ) -> BoxFuture<'_, Result<i64, StoreError>> {
        self.run(move |connection| {
            let transaction = connection.unchecked_transaction().map_err(database)?;
            let seq: i64 = transaction
                .query_row(
                    "INSERT INTO agent_cursors (machine_id, agent_id, last_seq, acked) VALUES (?1, ?2, 1, 0)
                     ON CONFLICT (machine_id, agent_id) DO UPDATE SET last_seq = agent_cursors.last_seq + 1
                     RETURNING last_seq",
                    params![machine_id, agent_id],
                    |row| row.get(0),
                )
                .map_err(database)?;
            transaction
                .execute(
                    "INSERT INTO agent_messages (machine_id, agent_id, seq, inbound, target, sender, body, created_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        machine_id,
                        agent_id,
                        seq,
                        i64::from(message.inbound),
                        message.target,
                        message.sender,
                        message.body,
                        message.created_at_ms
                    ],
                )
                .map_err(database)?;
            transaction.commit().map_err(database)?;
            Ok(seq)
        })
    }

    fn agent_messages(
        &self,
        machine_id: String,
        agent_id: String,
        after_seq: i64,
        inbound_only: bool,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<AgentMessage>, StoreError>> {
        self.run(move |connection| {
            let mut statement = connection
                .prepare(
                    "SELECT seq, inbound, target, sender, body, created_at_ms FROM agent_messages
                     WHERE machine_id = ?1 AND agent_id = ?2 AND seq > ?3 AND (inbound = 1 OR ?4 = 0)
                     ORDER BY seq LIMIT ?5",
                )
                .map_err(database)?;
            let rows = statement
                .query_map(
                    params![machine_id, agent_id, after_seq, i64::from(inbound_only), limit],
                    |row| {
                        Ok(AgentMessage {
                            seq: row.get(0)?,
                            inbound: row.get::<_, i64>(1)? != 0,
                            target: row.get(2)?,
                            sender: row.get(3)?,
                            body: row.get(4)?,
                            created_at_ms: row.get(5)?,
                        })
                    },
                )
                .map_err(database)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(database)
        })
    }

    fn agent_acked(
        &self,
        machine_id: String,
        agent_id: String,
    ) -> BoxFuture<'_, Result<i64, StoreError>> {
        self.run(move |connection| {
            connection
                .query_row(
                    "SELECT acked FROM agent_cursors WHERE machine_id = ?1 AND agent_id = ?2",
                    params![machine_id, agent_id],
                    |row| row.get(0),
                )
                .optional()
                .map(|acked| acked.unwrap_or(0))
                .map_err(database)
        })
    }

    fn ack_agent(
        &self,
        machine_id: String,
        agent_id: String,
        upto: i64,
    ) -> BoxFuture<'_, Result<i64, StoreError>> {
        self.run(move |connection| {
            connection
                .query_row(
                    "UPDATE agent_cursors SET acked = MAX(acked, MIN(?3, last_seq))
                     WHERE machine_id = ?1 AND agent_id = ?2 RETURNING acked",
                    params![machine_id, agent_id, upto],
                    |row| row.get(0),
                )
                .optional()
                .map(|acked| acked.unwrap_or(0))
                .map_err(database)
        })
    }

    fn unacked_agents(
        &self,
        machine_id: String,
    ) -> BoxFuture<'_, Result<Vec<Unacked>, StoreError>> {
        self.run(move |connection| {
            let mut statement = connection
                .prepare(
                    "SELECT m.agent_id, COUNT(*), MAX(m.seq) FROM agent_messages m
                     JOIN agent_cursors c ON c.machine_id = m.machine_id AND c.agent_id = m.agent_id
                     WHERE m.machine_id = ?1 AND m.inbound = 1 AND m.seq > c.acked
                     GROUP BY m.agent_id ORDER BY m.agent_id",
                )
                .map_err(database)?;
            let rows = statement
                .query_map(params![machine_id], |row| {
                    Ok(Unacked {
                        agent_id: row.get(0)?,
                        count: row.get(1)?,
                        latest_seq: row.get(2)?,
                    })
                })
                .map_err(database)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(database)
        })
    }

    fn relay_post(
        &self,
        to_replica: String,
        body: String,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        let key = (self.path.clone(), to_replica);
        Box::pin(async move {
            let listener = {
                let mut map = lock_relay();
                let slot = map.entry(key.clone()).or_default();
                match &slot.listener {
                    Some(listener) if !listener.is_closed() => listener.clone(),
                    _ => {
                        slot.listener = None;
                        slot.pending.push(body);
                        return Ok(());
                    }
                }
            };
            if let Err(mpsc::error::SendError(body)) = listener.send(body).await {
                // The listener went away meanwhile: keep the body for the next one.
                lock_relay().entry(key).or_default().pending.push(body);
            }
            Ok(())
        })
    }

    fn relay_listen(
        &self,
        replica: String,
    ) -> BoxFuture<'_, Result<mpsc::Receiver<String>, StoreError>> {
        let key = (self.path.clone(), replica);
        Box::pin(async move {
            let mut map = lock_relay();
            let slot = map.entry(key).or_default();
            let pending = std::mem::take(&mut slot.pending);
            let (sender, receiver) = mpsc::channel(RELAY_BUFFER + pending.len());
            for body in pending {
                // The channel is new and sized for these, so none is refused.
                let _queued = sender.try_send(body);
            }
            slot.listener = Some(sender);
            Ok(receiver)
        })
    }
}
