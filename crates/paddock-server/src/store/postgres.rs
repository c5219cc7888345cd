//! The shared store: PostgreSQL over `tokio-postgres`, for several server replicas on one
//! database. Device leases are taken with `SELECT … FOR UPDATE SKIP LOCKED`; the replica relay
//! is a table plus `LISTEN`/`NOTIFY` on a per-replica channel. TLS is rustls (ring), with the
//! bundled web PKI roots and the platform's certificate store; `sslmode=disable` (and unix
//! sockets) connect without it. The URL's password never reaches a log line or an error.

use std::io;
use std::pin::Pin;
use std::str::FromStr as _;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Semaphore, mpsc};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::{AsyncMessage, Client, Config, Row};

use super::{
    AgentMessage, ApiKeyRecord, MIGRATIONS, MIGRATIONS_TABLE, MachineRecord, Pairing, Presence,
    RELAY_BUFFER, ServerStore, StoreError, Unacked, now_ms, redact_password,
};
use crate::credential::CredentialHash;

/// Connections kept per replica. A request holds one only for its few statements, so a
/// handful serves a busy replica; the database's own limit (often 100) is shared by them all.
/// The pool is our own (idle clients behind a semaphore, a broken one dropped on return)
/// rather than `deadpool-postgres`: a few dozen lines against another dependency and its
/// configuration surface, and nothing here needs its recycling hooks.
const POOL_SIZE: usize = 4;
/// How long a connection attempt may take before it fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The relay listener sweeps this often even without a notification (a safety net for a
/// notification lost while its connection was being replaced).
const RELAY_SWEEP_EVERY: Duration = Duration::from_secs(5);
/// The `application_name` of the relay's LISTEN connections (visible in `pg_stat_activity`).
pub const RELAY_APPLICATION_NAME: &str = "paddock-server-relay";
/// The advisory lock key that serialises migrations across replicas starting at once.
const MIGRATION_LOCK: i64 = 0x7061_6464_6f63_6b01;
/// The advisory lock key that serialises the "one live API key per name" check.
const API_KEY_NAME_LOCK: i64 = 0x7061_6464_6f63_6b02;

/// The PostgreSQL store. Cloning shares its pool.
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    /// The same with its own `application_name`, for the relay's LISTEN connections.
    listen_config: Config,
    tls: MakeRustls,
    /// The password, to scrub from any message (belt and braces: the driver's messages do not
    /// carry it).
    password: Option<String>,
    /// The location without the password, for messages.
    location: String,
    idle: Mutex<Vec<Client>>,
    permits: Semaphore,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PostgresStore")
            .field("location", &self.inner.location)
            .finish_non_exhaustive()
    }
}

/// A pooled connection; it goes back to the pool when dropped, unless it broke.
struct Pooled<'store> {
    client: Option<Client>,
    inner: &'store Inner,
    _permit: tokio::sync::SemaphorePermit<'store>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        // Present from checkout until drop.
        self.client.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(client) = self.client.take()
            && !client.is_closed()
        {
            lock(&self.inner.idle).push(client);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl Inner {
    /// `message` with the password (if any) replaced.
    fn scrub(&self, message: String) -> String {
        match &self.password {
            Some(password) if !password.is_empty() => message.replace(password.as_str(), "***"),
            _ => message,
        }
    }

    fn database(&self, error: &tokio_postgres::Error) -> StoreError {
        StoreError::Database(self.scrub(error_text(error)))
    }

    fn open_error(&self, message: String) -> StoreError {
        StoreError::Open {
            location: self.location.clone(),
            message: self.scrub(message),
        }
    }

    /// A new connection, its driver task spawned.
    async fn connect(&self) -> Result<(Client, ConnectionTask), StoreError> {
        self.connect_with(&self.config).await
    }

    async fn connect_with(&self, config: &Config) -> Result<(Client, ConnectionTask), StoreError> {
        let (client, mut connection) = config
            .connect(self.tls.clone())
            .await
            .map_err(|error| self.open_error(error_text(&error)))?;
        let (notices, notified) = mpsc::unbounded_channel();
        let stream = futures_util::stream::poll_fn(move |context| connection.poll_message(context));
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(message) = stream.next().await {
                match message {
                    Ok(AsyncMessage::Notification(notification)) => {
                        // Nobody listening on a pooled connection: the send fails harmlessly.
                        let _sent = notices.send(notification.payload().to_owned());
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::debug!(error = %error_text(&error), "database connection closed");
                        break;
                    }
                }
            }
        });
        Ok((client, ConnectionTask { notified, task }))
    }

    async fn client(&self) -> Result<Pooled<'_>, StoreError> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|error| StoreError::Database(error.to_string()))?;
        let reused = {
            let mut idle = lock(&self.idle);
            let mut found = None;
            while let Some(client) = idle.pop() {
                if !client.is_closed() {
                    found = Some(client);
                    break;
                }
            }
            found
        };
        let client = match reused {
            Some(client) => client,
            None => self.connect().await?.0,
        };
        Ok(Pooled {
            client: Some(client),
            inner: self,
            _permit: permit,
        })
    }
}

/// A connection's driver: its notifications, and the task that ends with the connection.
struct ConnectionTask {
    notified: mpsc::UnboundedReceiver<String>,
    task: tokio::task::JoinHandle<()>,
}

/// The whole source chain of a driver error ("db error" alone says nothing).
fn error_text(error: &tokio_postgres::Error) -> String {
    if let Some(database) = error.as_db_error() {
        return format!("{}: {}", database.severity(), database.message());
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl PostgresStore {
    /// Connects to `url`, runs the migrations (one replica at a time) and keeps a pool.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let location = redact_password(url);
        // libpq's `sslrootcert=PATH` (a private CA, as managed databases use): the driver does
        // not know it, so it is taken out here and added to the trusted roots.
        let (url, root_cert) = take_query_parameter(url, "sslrootcert");
        let url = url.as_str();
        let mut config = Config::from_str(url).map_err(|error| StoreError::Open {
            location: location.clone(),
            message: format!("the URL does not parse: {}", scrub_url_error(url, &error)),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("paddock-server");
        }
        let password = config
            .get_password()
            .map(|password| String::from_utf8_lossy(password).into_owned());
        let tls =
            MakeRustls::new(root_cert.as_deref().map(std::path::Path::new)).map_err(|message| {
                StoreError::Open {
                    location: location.clone(),
                    message,
                }
            })?;
        let mut listen_config = config.clone();
        listen_config.application_name(RELAY_APPLICATION_NAME);
        let inner = Arc::new(Inner {
            config,
            listen_config,
            tls,
            password,
            location,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(POOL_SIZE),
        });
        let store = Self { inner };
        store.migrate().await?;
        Ok(store)
    }

    /// Runs the pending migrations on a connection of its own, under a session advisory lock
    /// (released when that connection closes, even if this replica dies mid-way).
    async fn migrate(&self) -> Result<(), StoreError> {
        let inner = &self.inner;
        let (mut client, connection) = inner.connect().await?;
        let fail = |error: tokio_postgres::Error| {
            inner.open_error(format!("migrating: {}", error_text(&error)))
        };
        client
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(fail)?;
        client.batch_execute(MIGRATIONS_TABLE).await.map_err(fail)?;
        for (version, sql) in MIGRATIONS {
            let transaction = client.transaction().await.map_err(fail)?;
            let applied = transaction
                .query_opt(
                    "SELECT version FROM schema_migrations WHERE version = $1",
                    &[version],
                )
                .await
                .map_err(fail)?;
            if applied.is_none() {
                transaction.batch_execute(sql).await.map_err(fail)?;
                transaction
                    .execute(
                        "INSERT INTO schema_migrations (version, applied_at_ms) VALUES ($1, $2)",
                        &[version, &now_ms()],
                    )
                    .await
                    .map_err(fail)?;
                tracing::info!(version, "database migration applied");
            }
            transaction.commit().await.map_err(fail)?;
        }
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(fail)?;
        drop(client);
        connection.task.abort();
        Ok(())
    }

    /// Runs `work` with a pooled connection.
    fn run<'a, T: Send + 'a>(
        &'a self,
        work: impl for<'c> FnOnce(&'c mut Client) -> BoxFuture<'c, Result<T, tokio_postgres::Error>>
        + Send
        + 'a,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        Box::pin(async move {
            let mut client = self.inner.client().await?;
            work(&mut client)
                .await
                .map_err(|error| self.inner.database(&error))
        })
    }
}

/// `url` without its query parameter `name`, and that parameter's value.
fn take_query_parameter(url: &str, name: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), None);
    };
    let mut value = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.split_once('=') {
            Some((key, found)) if key == name => {
                value = Some(found.to_owned());
                false
            }
            _ => true,
        })
        .collect();
    if kept.is_empty() {
        (base.to_owned(), value)
    } else {
        (format!("{base}?{}", kept.join("&")), value)
    }
}

/// A URL parse error, without the URL's password.
fn scrub_url_error(url: &str, error: &tokio_postgres::Error) -> String {
    let text = error.to_string();
    match url.split_once("://").and_then(|(_, rest)| {
        let authority = rest.split('/').next().unwrap_or(rest);
        authority
            .rsplit_once('@')
            .and_then(|(user_info, _)| user_info.split_once(':').map(|(_, password)| password))
    }) {
        Some(password) if !password.is_empty() => text.replace(password, "***"),
        _ => text,
    }
}

/// The NOTIFY channel of `replica`: a fixed-length identifier whatever the replica's name.
fn relay_channel(replica: &str) -> String {
    let digest = Sha256::digest(replica.as_bytes());
    let hex: String = digest
        .iter()
        .take(12)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("paddock_relay_{hex}")
}

fn api_key_row(row: &Row) -> Result<ApiKeyRecord, tokio_postgres::Error> {
    Ok(ApiKeyRecord {
        id: row.try_get(0)?,
        name: row.try_get(1)?,
        profile: row.try_get(2)?,
        created_at_ms: row.try_get(3)?,
        revoked_at_ms: row.try_get(4)?,
    })
}

fn machine_row(row: &Row) -> Result<MachineRecord, tokio_postgres::Error> {
    Ok(MachineRecord {
        id: row.try_get(0)?,
        name: row.try_get(1)?,
        hostname: row.try_get(2)?,
        platform: row.try_get(3)?,
        arch: row.try_get(4)?,
        created_at_ms: row.try_get(5)?,
        revoked_at_ms: row.try_get(6)?,
    })
}

const API_KEY_COLUMNS: &str = "id, name, profile, created_at_ms, revoked_at_ms";
const MACHINE_COLUMNS: &str = "id, name, hostname, platform, arch, created_at_ms, revoked_at_ms";

/// Deletes and returns every body waiting for `replica`, oldest first.
async fn sweep_relay(client: &Client, replica: &str) -> Result<Vec<String>, tokio_postgres::Error> {
    let rows = client
        .query(
            "DELETE FROM relay WHERE to_replica = $1 RETURNING id, body",
            &[&replica],
        )
        .await?;
    let mut bodies = rows
        .iter()
        .map(|row| Ok((row.try_get::<_, i64>(0)?, row.try_get::<_, String>(1)?)))
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
    bodies.sort_by_key(|(id, _)| *id);
    Ok(bodies.into_iter().map(|(_, body)| body).collect())
}

/// A dedicated connection that `LISTEN`s on `channel`.
async fn listen_connection(
    inner: &Inner,
    channel: &str,
) -> Result<(Client, ConnectionTask), StoreError> {
    let (client, connection) = inner.connect_with(&inner.listen_config).await?;
    // `channel` is our own `paddock_relay_<hex>`: a plain identifier.
    client
        .batch_execute(&format!("LISTEN {channel}"))
        .await
        .map_err(|error| inner.database(&error))?;
    Ok((client, connection))
}

/// The relay listener of one replica: sweeps on each notification (and now and then), hands
/// the bodies to `sender` in order, and replaces its connection when it drops. It ends when
/// the receiver is dropped.
async fn relay_loop(
    inner: Arc<Inner>,
    replica: String,
    channel: String,
    mut client: Client,
    mut connection: ConnectionTask,
    sender: mpsc::Sender<String>,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let healthy = match sweep_relay(&client, &replica).await {
            Ok(bodies) => {
                for body in bodies {
                    // A body deleted here is this listener's: if the receiver went away it
                    // is dropped with it, never delivered twice.
                    if sender.send(body).await.is_err() {
                        connection.task.abort();
                        return;
                    }
                }
                tokio::select! {
                    () = sender.closed() => {
                        connection.task.abort();
                        return;
                    }
                    notice = connection.notified.recv() => notice.is_some(),
                    () = tokio::time::sleep(RELAY_SWEEP_EVERY) => true,
                }
            }
            Err(error) => {
                tracing::warn!(error = %inner.scrub(error_text(&error)), "relay sweep failed");
                false
            }
        };
        if healthy && !client.is_closed() {
            backoff = Duration::from_millis(100);
            continue;
        }
        // The listening connection is gone: make another, then sweep what came meanwhile.
        connection.task.abort();
        loop {
            tokio::select! {
                () = sender.closed() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            match listen_connection(&inner, &channel).await {
                Ok((new_client, new_connection)) => {
                    client = new_client;
                    connection = new_connection;
                    break;
                }
                Err(error) => {
                    tracing::warn!(%error, "relay listener: reconnecting");
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

impl ServerStore for PostgresStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn insert_api_key(
        &self,
        record: ApiKeyRecord,
        hash: CredentialHash,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let inner = &self.inner;
            let mut client = inner.client().await?;
            let fail = |error: tokio_postgres::Error| inner.database(&error);
            let transaction = client.transaction().await.map_err(fail)?;
            // Two replicas creating the same name at once: one waits for the other's commit.
            transaction
                .execute("SELECT pg_advisory_xact_lock($1)", &[&API_KEY_NAME_LOCK])
                .await
                .map_err(fail)?;
            let taken = transaction
                .query_opt(
                    "SELECT id FROM api_keys WHERE name = $1 AND revoked_at_ms IS NULL",
                    &[&record.name],
                )
                .await
                .map_err(fail)?;
            if taken.is_some() {
                return Err(StoreError::Duplicate {
                    what: "live API key",
                    name: record.name,
                });
            }
            transaction
                .execute(
                    "INSERT INTO api_keys (id, name, key_hash, profile, created_at_ms) VALUES ($1, $2, $3, $4, $5)",
                    &[&record.id, &record.name, &hash.as_str(), &record.profile, &record.created_at_ms],
                )
                .await
                .map_err(fail)?;
            transaction.commit().await.map_err(fail)
        })
    }

    fn api_key(
        &self,
        hash: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<ApiKeyRecord>, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                client
                    .query_opt(
                        &format!("SELECT {API_KEY_COLUMNS} FROM api_keys WHERE key_hash = $1"),
                        &[&hash.as_str()],
                    )
                    .await?
                    .as_ref()
                    .map(api_key_row)
                    .transpose()
            })
        })
    }

    fn list_api_keys(&self) -> BoxFuture<'_, Result<Vec<ApiKeyRecord>, StoreError>> {
        self.run(|client| {
            Box::pin(async move {
                client
                    .query(
                        &format!(
                            "SELECT {API_KEY_COLUMNS} FROM api_keys ORDER BY created_at_ms, id"
                        ),
                        &[],
                    )
                    .await?
                    .iter()
                    .map(api_key_row)
                    .collect()
            })
        })
    }

    fn revoke_api_key(
        &self,
        which: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let transaction = client.transaction().await?;
                let changed = transaction
                    .execute(
                        "UPDATE api_keys SET revoked_at_ms = $2 WHERE (id = $1 OR name = $1) AND revoked_at_ms IS NULL",
                        &[&which, &now_ms],
                    )
                    .await?;
                transaction
                    .execute(
                        "UPDATE key_epoch SET value = value + 1 WHERE name = 'api_keys'",
                        &[],
                    )
                    .await?;
                transaction.commit().await?;
                Ok(changed > 0)
            })
        })
    }

    fn key_epoch(&self) -> BoxFuture<'_, Result<i64, StoreError>> {
        self.run(|client| {
            Box::pin(async move {
                client
                    .query_one("SELECT value FROM key_epoch WHERE name = 'api_keys'", &[])
                    .await?
                    .try_get(0)
            })
        })
    }

    fn insert_pairing(
        &self,
        hash: CredentialHash,
        pairing: Pairing,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                client
                    .execute(
                        "INSERT INTO pairing_tokens (token_hash, name, reconnect_machine, created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4, $5)",
                        &[&hash.as_str(), &pairing.name, &pairing.reconnect_machine, &now_ms, &expires_at_ms],
                    )
                    .await?;
                Ok(())
            })
        })
    }

    fn take_pairing(
        &self,
        hash: CredentialHash,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<Option<Pairing>, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                // One UPDATE: of concurrent takers (on any replica) exactly one changes the row.
                let row = client
                    .query_opt(
                        "UPDATE pairing_tokens SET used_at_ms = $2
                         WHERE token_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2
                         RETURNING name, reconnect_machine",
                        &[&hash.as_str(), &now_ms],
                    )
                    .await?;
                row.map(|row| {
                    Ok(Pairing {
                        name: row.try_get(0)?,
                        reconnect_machine: row.try_get(1)?,
                    })
                })
                .transpose()
            })
        })
    }

    fn insert_machine(
        &self,
        record: MachineRecord,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                client
                    .execute(
                        "INSERT INTO machines (id, name, key_hash, hostname, platform, arch, created_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        &[&record.id, &record.name, &key.as_str(), &record.hostname, &record.platform, &record.arch, &record.created_at_ms],
                    )
                    .await?;
                Ok(())
            })
        })
    }

    fn machine_by_key(
        &self,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<MachineRecord>, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                client
                    .query_opt(
                        &format!(
                            "SELECT {MACHINE_COLUMNS} FROM machines WHERE key_hash = $1 AND revoked_at_ms IS NULL"
                        ),
                        &[&key.as_str()],
                    )
                    .await?
                    .as_ref()
                    .map(machine_row)
                    .transpose()
            })
        })
    }

    fn machine(&self, id: String) -> BoxFuture<'_, Result<Option<MachineRecord>, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                client
                    .query_opt(
                        &format!("SELECT {MACHINE_COLUMNS} FROM machines WHERE id = $1"),
                        &[&id],
                    )
                    .await?
                    .as_ref()
                    .map(machine_row)
                    .transpose()
            })
        })
    }

    fn list_machines(&self) -> BoxFuture<'_, Result<Vec<MachineRecord>, StoreError>> {
        self.run(|client| {
            Box::pin(async move {
                client
                    .query(
                        &format!(
                            "SELECT {MACHINE_COLUMNS} FROM machines ORDER BY created_at_ms, id"
                        ),
                        &[],
                    )
                    .await?
                    .iter()
                    .map(machine_row)
                    .collect()
            })
        })
    }

    fn replace_machine_key(
        &self,
        id: String,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let changed = client
                    .execute(
                        "UPDATE machines SET key_hash = $2 WHERE id = $1 AND revoked_at_ms IS NULL",
                        &[&id, &key.as_str()],
                    )
                    .await?;
                Ok(changed > 0)
            })
        })
    }

    fn insert_runner_key(
        &self,
        key: CredentialHash,
        machine_id: String,
        agent_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                client
                    .execute(
                        "INSERT INTO runner_keys (key_hash, machine_id, agent_id, created_at_ms) VALUES ($1, $2, $3, $4)",
                        &[&key.as_str(), &machine_id, &agent_id, &now_ms],
                    )
                    .await?;
                Ok(())
            })
        })
    }

    fn revoke_runner_keys(
        &self,
        machine_id: String,
        agent_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                client
                    .execute(
                        "UPDATE runner_keys SET revoked_at_ms = $3 WHERE machine_id = $1 AND agent_id = $2 AND revoked_at_ms IS NULL",
                        &[&machine_id, &agent_id, &now_ms],
                    )
                    .await
            })
        })
    }

    fn runner_key(
        &self,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<(String, String)>, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let row = client
                    .query_opt(
                        "SELECT r.machine_id, r.agent_id FROM runner_keys r JOIN machines m ON m.id = r.machine_id
                         WHERE r.key_hash = $1 AND r.revoked_at_ms IS NULL AND m.revoked_at_ms IS NULL",
                        &[&key.as_str()],
                    )
                    .await?;
                row.map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                    .transpose()
            })
        })
    }

    fn set_presence(&self, presence: Presence) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                client
                    .execute(
                        "INSERT INTO machine_presence (machine_id, replica_id, connected, inventory, updated_at_ms)
                         VALUES ($1, $2, $3, $4, $5)
                         ON CONFLICT (machine_id) DO UPDATE SET replica_id = excluded.replica_id,
                             connected = excluded.connected, inventory = excluded.inventory,
                             updated_at_ms = excluded.updated_at_ms",
                        &[&presence.machine_id, &presence.replica_id, &presence.connected, &presence.inventory, &presence.updated_at_ms],
                    )
                    .await?;
                Ok(())
            })
        })
    }

    fn presences(&self) -> BoxFuture<'_, Result<Vec<Presence>, StoreError>> {
        self.run(|client| {
            Box::pin(async move {
                client
                    .query(
                        "SELECT machine_id, replica_id, connected, inventory, updated_at_ms FROM machine_presence ORDER BY machine_id",
                        &[],
                    )
                    .await?
                    .iter()
                    .map(|row| {
                        Ok(Presence {
                            machine_id: row.try_get(0)?,
                            replica_id: row.try_get(1)?,
                            connected: row.try_get(2)?,
                            inventory: row.try_get(3)?,
                            updated_at_ms: row.try_get(4)?,
                        })
                    })
                    .collect()
            })
        })
    }

    fn lease_device(
        &self,
        candidates: Vec<String>,
        holder: String,
        now_ms: i64,
        until_ms: i64,
    ) -> BoxFuture<'_, Result<Option<String>, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                if candidates.is_empty() {
                    return Ok(None);
                }
                // Every candidate gets a row (free: `until_ms` 0) so that it can be locked;
                // inserted in sorted order so concurrent callers never deadlock.
                client
                    .execute(
                        "INSERT INTO device_leases (device_id, holder, leased_at_ms, until_ms)
                         SELECT id, '', 0, 0 FROM unnest($1::text[]) AS id ORDER BY id
                         ON CONFLICT (device_id) DO NOTHING",
                        &[&candidates],
                    )
                    .await?;
                let transaction = client.transaction().await?;
                // A row another replica is leasing right now is locked: skip it and take
                // the next free one rather than wait.
                let row = transaction
                    .query_opt(
                        "SELECT device_id FROM device_leases
                         WHERE device_id = ANY($1::text[]) AND until_ms <= $2
                         ORDER BY array_position($1::text[], device_id)
                         LIMIT 1
                         FOR UPDATE SKIP LOCKED",
                        &[&candidates, &now_ms],
                    )
                    .await?;
                let Some(row) = row else {
                    transaction.commit().await?;
                    return Ok(None);
                };
                let device_id: String = row.try_get(0)?;
                transaction
                    .execute(
                        "UPDATE device_leases SET holder = $2, leased_at_ms = $3, until_ms = $4
                         WHERE device_id = $1",
                        &[&device_id, &holder, &now_ms, &until_ms],
                    )
                    .await?;
                transaction.commit().await?;
                Ok(Some(device_id))
            })
        })
    }

    fn release_lease(
        &self,
        device_id: String,
        holder: String,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let changed = client
                    .execute(
                        "DELETE FROM device_leases WHERE device_id = $1 AND holder = $2 AND holder <> ''",
                        &[&device_id, &holder],
                    )
                    .await?;
                Ok(changed > 0)
            })
        })
    }

    fn lease_holder(
        &self,
        device_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<Option<String>, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let row = client
                    .query_opt(
                        "SELECT holder FROM device_leases WHERE device_id = $1 AND until_ms > $2",
                        &[&device_id, &now_ms],
                    )
                    .await?;
                row.map(|row| row.try_get(0)).transpose()
            })
        })
    }

    fn append_agent_message(
        &self,
        machine_id: String,
        agent_id: String,
        message: AgentMessage,
    ) -> BoxFuture<'_, Result<i64, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let transaction = client.transaction().await?;
                // The cursor row's lock orders two replicas appending for one agent.
                let seq: i64 = transaction
                    .query_one(
                        "INSERT INTO agent_cursors (machine_id, agent_id, last_seq, acked) VALUES ($1, $2, 1, 0)
                         ON CONFLICT (machine_id, agent_id) DO UPDATE SET last_seq = agent_cursors.last_seq + 1
                         RETURNING last_seq",
                        &[&machine_id, &agent_id],
                    )
                    .await?
                    .try_get(0)?;
                transaction
                    .execute(
                        "INSERT INTO agent_messages (machine_id, agent_id, seq, inbound, target, sender, body, created_at_ms)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                        &[
                            &machine_id,
                            &agent_id,
                            &seq,
                            &i64::from(message.inbound),
                            &message.target,
                            &message.sender,
                            &message.body,
                            &message.created_at_ms,
                        ],
                    )
                    .await?;
                transaction.commit().await?;
                Ok(seq)
            })
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
        self.run(move |client| {
            Box::pin(async move {
                let rows = client
                    .query(
                        "SELECT seq, inbound, target, sender, body, created_at_ms FROM agent_messages
                         WHERE machine_id = $1 AND agent_id = $2 AND seq > $3 AND (inbound = 1 OR $4::BIGINT = 0)
                         ORDER BY seq LIMIT $5",
                        &[&machine_id, &agent_id, &after_seq, &i64::from(inbound_only), &limit],
                    )
                    .await?;
                rows.iter()
                    .map(|row| {
                        Ok(AgentMessage {
                            seq: row.try_get(0)?,
                            inbound: row.try_get::<_, i64>(1)? != 0,
                            target: row.try_get(2)?,
                            sender: row.try_get(3)?,
                            body: row.try_get(4)?,
                            created_at_ms: row.try_get(5)?,
                        })
                    })
                    .collect()
            })
        })
    }

    fn agent_acked(
        &self,
        machine_id: String,
        agent_id: String,
    ) -> BoxFuture<'_, Result<i64, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let row = client
                    .query_opt(
                        "SELECT acked FROM agent_cursors WHERE machine_id = $1 AND agent_id = $2",
                        &[&machine_id, &agent_id],
                    )
                    .await?;
                row.map_or(Ok(0), |row| row.try_get(0))
            })
        })
    }

    fn ack_agent(
        &self,
        machine_id: String,
        agent_id: String,
        upto: i64,
    ) -> BoxFuture<'_, Result<i64, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let row = client
                    .query_opt(
                        "UPDATE agent_cursors SET acked = GREATEST(acked, LEAST($3, last_seq))
                         WHERE machine_id = $1 AND agent_id = $2 RETURNING acked",
                        &[&machine_id, &agent_id, &upto],
                    )
                    .await?;
                row.map_or(Ok(0), |row| row.try_get(0))
            })
        })
    }

    fn unacked_agents(
        &self,
        machine_id: String,
    ) -> BoxFuture<'_, Result<Vec<Unacked>, StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let rows = client
                    .query(
                        "SELECT m.agent_id, COUNT(*), MAX(m.seq) FROM agent_messages m
                         JOIN agent_cursors c ON c.machine_id = m.machine_id AND c.agent_id = m.agent_id
                         WHERE m.machine_id = $1 AND m.inbound = 1 AND m.seq > c.acked
                         GROUP BY m.agent_id ORDER BY m.agent_id",
                        &[&machine_id],
                    )
                    .await?;
                rows.iter()
                    .map(|row| {
                        Ok(Unacked {
                            agent_id: row.try_get(0)?,
                            count: row.try_get(1)?,
                            latest_seq: row.try_get(2)?,
                        })
                    })
                    .collect()
            })
        })
    }

    fn relay_post(
        &self,
        to_replica: String,
        body: String,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.run(move |client| {
            Box::pin(async move {
                let channel = relay_channel(&to_replica);
                let transaction = client.transaction().await?;
                // The counter's row lock orders posters; the notification goes out at commit.
                let id: i64 = transaction
                    .query_one(
                        "UPDATE relay_counter SET value = value + 1 WHERE name = 'relay' RETURNING value",
                        &[],
                    )
                    .await?
                    .try_get(0)?;
                transaction
                    .execute(
                        "INSERT INTO relay (id, to_replica, body, posted_at_ms) VALUES ($1, $2, $3, $4)",
                        &[&id, &to_replica, &body, &now_ms()],
                    )
                    .await?;
                transaction
                    .execute("SELECT pg_notify($1, $2)", &[&channel, &id.to_string()])
                    .await?;
                transaction.commit().await
            })
        })
    }

    fn relay_listen(
        &self,
        replica: String,
    ) -> BoxFuture<'_, Result<mpsc::Receiver<String>, StoreError>> {
        Box::pin(async move {
            let channel = relay_channel(&replica);
            // Listening before the first sweep: nothing posted from here on is missed, and
            // the sweep returns what was posted before.
            let (client, connection) = listen_connection(&self.inner, &channel).await?;
            let (sender, receiver) = mpsc::channel(RELAY_BUFFER);
            tokio::spawn(relay_loop(
                self.inner.clone(),
                replica,
                channel,
                client,
                connection,
                sender,
            ));
            Ok(receiver)
        })
    }
}

/// rustls for `sslmode=prefer|require`: the server's certificate is verified against the
/// bundled web PKI roots, the platform's store and the URL's `sslrootcert` file (stricter than
/// libpq's `require`, which encrypts without verifying).
#[derive(Clone)]
struct MakeRustls {
    config: Arc<rustls::ClientConfig>,
}

impl MakeRustls {
    fn new(root_cert: Option<&std::path::Path>) -> Result<Self, String> {
        use rustls::pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let loaded = rustls_native_certs::load_native_certs();
        let (_added, _ignored) = roots.add_parsable_certificates(loaded.certs);
        if let Some(path) = root_cert {
            let unreadable =
                |reason: String| format!("`sslrootcert` file `{}`: {reason}", path.display());
            let certificates = rustls::pki_types::CertificateDer::pem_file_iter(path)
                .map_err(|error| unreadable(format!("{error:?}")))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| unreadable(format!("{error:?}")))?;
            if certificates.is_empty() {
                return Err(unreadable("it holds no PEM certificate".into()));
            }
            for certificate in certificates {
                roots
                    .add(certificate)
                    .map_err(|error| unreadable(error.to_string()))?;
            }
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS setup: {error}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Self {
            config: Arc::new(config),
        })
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, Self::Error> {
        // The driver asks for a connector for every host before it knows whether TLS will be
        // used (a unix socket path is no DNS name): a bad name fails only if TLS is tried.
        Ok(RustlsConnect {
            config: self.config.clone(),
            name: rustls::pki_types::ServerName::try_from(domain.to_owned())
                .map_err(|_| format!("`{domain}` is not a host name TLS can verify")),
        })
    }
}

struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
    name: Result<rustls::pki_types::ServerName<'static>, String>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = BoxFuture<'static, io::Result<RustlsStream<S>>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let name = self
                .name
                .map_err(|message| io::Error::new(io::ErrorKind::InvalidInput, message))?;
            let stream = tokio_rustls::TlsConnector::from(self.config)
                .connect(name, stream)
                .await?;
            Ok(RustlsStream(Box::new(stream)))
        })
    }
}

struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(context, buffer)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(context, buffer)
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(context)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM without channel binding (`-PLUS`): the handshake is still verified by rustls.
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslrootcert_is_taken_out_of_the_url() {
        assert_eq!(
            take_query_parameter(
                "postgres://u@h/db?sslmode=require&sslrootcert=/ca.pem",
                "sslrootcert"
            ),
            (
                "postgres://u@h/db?sslmode=require".to_owned(),
                Some("/ca.pem".to_owned())
            )
        );
        assert_eq!(
            take_query_parameter("postgres://u@h/db?sslrootcert=/ca.pem", "sslrootcert"),
            ("postgres://u@h/db".to_owned(), Some("/ca.pem".to_owned()))
        );
        assert_eq!(
            take_query_parameter("postgres://u@h/db", "sslrootcert"),
            ("postgres://u@h/db".to_owned(), None)
        );
    }

    #[test]
    fn relay_channels_are_short_identifiers() {
        let channel = relay_channel("replica \"a\"; DROP TABLE relay");
        assert!(channel.len() < 63, "{channel}");
        assert!(
            channel
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        );
        assert_ne!(channel, relay_channel("replica-b"));
    }
}
