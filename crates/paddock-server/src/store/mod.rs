//! Persistence behind one trait, [`ServerStore`]: SQLite embedded (the default, one replica)
//! or PostgreSQL (several replicas sharing everything). Both run the same schema from
//! `migrations/`; credentials are stored only as hashes.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::credential::CredentialHash;

pub mod postgres;
pub mod sqlite;

/// The migrations, in order: (version, SQL). The same text runs on both databases.
pub const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../migrations/0001_fleet.sql")),
    (2, include_str!("../../migrations/0002_device_leases.sql")),
    (3, include_str!("../../migrations/0003_relay.sql")),
    (4, include_str!("../../migrations/0004_agent_inbox.sql")),
    (5, include_str!("../../migrations/0005_key_epoch.sql")),
];

/// The table that records which migrations ran.
pub const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version BIGINT PRIMARY KEY,
    applied_at_ms BIGINT NOT NULL
)";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("could not open the database `{location}`: {message}")]
    Open { location: String, message: String },
    #[error("database error: {0}")]
    Database(String),
    #[error("a {what} named `{name}` already exists")]
    Duplicate { what: &'static str, name: String },
}

/// Where the server keeps its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// `sqlite:PATH`.
    Sqlite(std::path::PathBuf),
    /// `postgres://…` or `postgresql://…` (kept whole: it may hold a password).
    Postgres(paddock_secrets::SecretString),
}

impl DatabaseUrl {
    /// Parses `sqlite:PATH`, `postgres://…` or `postgresql://…`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(
                    "`sqlite:` needs a path, as in `sqlite:/var/lib/paddock/server.sqlite`".into(),
                );
            }
            return Ok(Self::Sqlite(path.into()));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Self::Postgres(paddock_secrets::SecretString::new(text)));
        }
        Err("expected `sqlite:PATH` or `postgres://USER@HOST/DB`".into())
    }

    /// The location without any password, for messages.
    pub fn display(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite:{}", path.display()),
            Self::Postgres(url) => redact_password(url.expose_secret()),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "postgres://…".to_owned();
    };
    let (authority, tail) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    // Query parameters may carry a password too (`?password=`).
    let tail = match tail.split_once('?') {
        Some((path, _)) => format!("{path}?…"),
        None => tail.to_owned(),
    };
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => format!("{scheme}://{user_info}@{host}{tail}"),
        },
        None => format!("{scheme}://{authority}{tail}"),
    }
}

/// An API key, without its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub id: String,
    pub name: String,
    /// `readonly`, `no-commerce` or `full`.
    pub profile: String,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

/// What a used pairing token was for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    pub name: Option<String>,
    /// A reconnect token: the machine whose credential it replaces.
    pub reconnect_machine: Option<String>,
}

/// A paired machine, without its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineRecord {
    pub id: String,
    pub name: String,
    pub hostname: String,
    pub platform: String,
    pub arch: String,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

/// A machine's control connection as the replicas see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presence {
    pub machine_id: String,
    /// The replica holding the machine's control connection.
    pub replica_id: String,
    pub connected: bool,
    /// The devices and bots the machine last reported (JSON: `{"devices": […], "bots": […]}`).
    pub inventory: String,
    pub updated_at_ms: i64,
}

/// One message of an agent's conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentMessage {
    /// Numbered per agent, both directions together, from 1.
    pub seq: i64,
    /// To the agent (from an owner), or from it.
    pub inbound: bool,
    /// The channel ref, as in `/.dm/owner#fleet`.
    pub target: String,
    /// An API key's name for an inbound message, the agent's id for an outbound one.
    pub sender: String,
    pub body: String,
    pub created_at_ms: i64,
}

/// Inbound messages an agent's daemon has not taken yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unacked {
    pub agent_id: String,
    pub count: i64,
    pub latest_seq: i64,
}

/// The server's persistent state.
pub trait ServerStore: Send + Sync + std::fmt::Debug {
    /// `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;

    fn insert_api_key(
        &self,
        record: ApiKeyRecord,
        hash: CredentialHash,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    fn api_key(
        &self,
        hash: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<ApiKeyRecord>, StoreError>>;
    fn list_api_keys(&self) -> BoxFuture<'_, Result<Vec<ApiKeyRecord>, StoreError>>;
    /// Revokes the key whose id or name is `which`, moving the key epoch in the same
    /// transaction; whether one was revoked now.
    fn revoke_api_key(&self, which: String, now_ms: i64)
    -> BoxFuture<'_, Result<bool, StoreError>>;
    /// A counter that every revocation moves: a cache of key lookups is good while it stays.
    fn key_epoch(&self) -> BoxFuture<'_, Result<i64, StoreError>>;

    fn insert_pairing(
        &self,
        hash: CredentialHash,
        pairing: Pairing,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Uses a pairing token: atomically marks it used and returns what it was for, or `None`
    /// when it is unknown, used or expired.
    fn take_pairing(
        &self,
        hash: CredentialHash,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<Option<Pairing>, StoreError>>;

    fn insert_machine(
        &self,
        record: MachineRecord,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The live (unrevoked) machine whose key hashes to `key`.
    fn machine_by_key(
        &self,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<MachineRecord>, StoreError>>;
    fn machine(&self, id: String) -> BoxFuture<'_, Result<Option<MachineRecord>, StoreError>>;
    fn list_machines(&self) -> BoxFuture<'_, Result<Vec<MachineRecord>, StoreError>>;
    /// Gives machine `id` a new key (the old one stops working); whether it exists.
    fn replace_machine_key(
        &self,
        id: String,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;

    fn insert_runner_key(
        &self,
        key: CredentialHash,
        machine_id: String,
        agent_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Revokes every live runner key of `agent_id` on `machine_id` (a new one replaces them).
    fn revoke_runner_keys(
        &self,
        machine_id: String,
        agent_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<u64, StoreError>>;
    /// `(machine_id, agent_id)` of a live runner key of a live machine.
    fn runner_key(
        &self,
        key: CredentialHash,
    ) -> BoxFuture<'_, Result<Option<(String, String)>, StoreError>>;

    fn set_presence(&self, presence: Presence) -> BoxFuture<'_, Result<(), StoreError>>;
    fn presences(&self) -> BoxFuture<'_, Result<Vec<Presence>, StoreError>>;

    /// Leases the first of `candidates` (device ids, in order of preference) that has no live
    /// lease to `holder` until `until_ms`; `None` when every one is held. Two callers, on one
    /// replica or two, never get the same device.
    fn lease_device(
        &self,
        candidates: Vec<String>,
        holder: String,
        now_ms: i64,
        until_ms: i64,
    ) -> BoxFuture<'_, Result<Option<String>, StoreError>>;
    /// Ends `holder`'s lease of `device_id`; whether it held one.
    fn release_lease(
        &self,
        device_id: String,
        holder: String,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Who holds a live lease of `device_id` at `now_ms`.
    fn lease_holder(
        &self,
        device_id: String,
        now_ms: i64,
    ) -> BoxFuture<'_, Result<Option<String>, StoreError>>;

    /// Appends a message to the conversation of `agent_id` on `machine_id`; its sequence
    /// number.
    fn append_agent_message(
        &self,
        machine_id: String,
        agent_id: String,
        message: AgentMessage,
    ) -> BoxFuture<'_, Result<i64, StoreError>>;
    /// The agent's messages after `after_seq`, oldest first, at most `limit`; only those to it
    /// when `inbound_only`.
    fn agent_messages(
        &self,
        machine_id: String,
        agent_id: String,
        after_seq: i64,
        inbound_only: bool,
        limit: i64,
    ) -> BoxFuture<'_, Result<Vec<AgentMessage>, StoreError>>;
    /// How far the agent's daemon took its inbound messages.
    fn agent_acked(
        &self,
        machine_id: String,
        agent_id: String,
    ) -> BoxFuture<'_, Result<i64, StoreError>>;
    /// Moves the agent's acknowledged boundary up to `upto` (never down, never past its last
    /// message); the boundary now.
    fn ack_agent(
        &self,
        machine_id: String,
        agent_id: String,
        upto: i64,
    ) -> BoxFuture<'_, Result<i64, StoreError>>;
    /// The agents of `machine_id` with inbound messages their daemon has not taken.
    fn unacked_agents(&self, machine_id: String)
    -> BoxFuture<'_, Result<Vec<Unacked>, StoreError>>;

    /// Posts `body` to replica `to_replica` (a daemon connected there, a request served here):
    /// its listener receives it once, after the bodies this caller posted to it before.
    fn relay_post(&self, to_replica: String, body: String)
    -> BoxFuture<'_, Result<(), StoreError>>;
    /// The bodies posted to `replica`, each delivered once, in order, including those posted
    /// while nobody listened. Dropping the receiver stops listening.
    fn relay_listen(
        &self,
        replica: String,
    ) -> BoxFuture<'_, Result<tokio::sync::mpsc::Receiver<String>, StoreError>>;
}

/// How many relayed bodies a listener buffers before the relay waits for it.
pub const RELAY_BUFFER: usize = 256;

/// Opens the database `url` and runs its migrations.
pub async fn open(url: &DatabaseUrl) -> Result<Arc<dyn ServerStore>, StoreError> {
    match url {
        DatabaseUrl::Sqlite(path) => Ok(Arc::new(sqlite::SqliteStore::open(path).await?)),
        DatabaseUrl::Postgres(secret) => Ok(Arc::new(
            postgres::PostgresStore::open(secret.expose_secret()).await?,
        )),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_hide_passwords() {
        assert_eq!(
            DatabaseUrl::parse("sqlite:/tmp/x.sqlite"),
            Ok(DatabaseUrl::Sqlite("/tmp/x.sqlite".into()))
        );
        assert!(DatabaseUrl::parse("sqlite:").is_err());
        assert!(DatabaseUrl::parse("mysql://x").is_err());
        let url = DatabaseUrl::parse("postgres://app:hunter2@db.example:5432/fleet?password=x")
            .unwrap_or(DatabaseUrl::Sqlite("wrong".into()));
        let shown = url.display();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(shown, "postgres://app:***@db.example:5432/fleet?…");
        assert_eq!(
            redact_password("postgres://app@db.example/fleet"),
            "postgres://app@db.example/fleet"
        );
    }
}
