//! Persistence for the daemon, in one SQLite file in the state directory.
//!
//! What lives here must survive a daemon restart: the discovery choices made with
//! `setToolEnabled`, per scope, and the sessions the daemon has seen. Reads are served from an
//! in-memory copy that is loaded once and written through, so the request path never waits on
//! the disk for a read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, params};

mod bots;
mod tasks;

pub use bots::{BotDefinition, InboxCursor, InboxMessage, OutboxEntry};
pub use tasks::{MAX_LISTED_TASKS, StoredStep};

/// Which set of discovery choices a write or read concerns.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChoiceScope {
    /// A connection profile: the calling principal or connection.
    Profile(String),
    /// A routing session, named by its session key.
    Session(String),
}

impl ChoiceScope {
    fn kind(&self) -> &'static str {
        match self {
            Self::Profile(_) => "profile",
            Self::Session(_) => "session",
        }
    }

    fn key(&self) -> &str {
        match self {
            Self::Profile(key) | Self::Session(key) => key,
        }
    }
}

/// Per-tool choices of one scope: `true` enabled for discovery, `false` omitted.
pub type Choices = BTreeMap<String, bool>;

/// Errors of the store. Messages name the database path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("could not open the state database `{path}`")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("state database `{path}` failed")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("a write to the state database `{path}` failed unexpectedly")]
    TaskFailed { path: PathBuf },
    #[error("could not make the state database `{path}` private (mode 0600)")]
    Permissions {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Creates the database file 0600 before SQLite opens it, and narrows an existing database and
/// its `-wal`/`-shm` files to 0600. SQLite gives the WAL and shared-memory files the mode of
/// the database file, so a private database keeps its journal private too.
#[cfg(unix)]
fn make_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};

    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        match std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn make_private(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

/// The daemon's store.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    connection: Mutex<Connection>,
    choices: RwLock<HashMap<ChoiceScope, Choices>>,
    sessions: RwLock<HashSet<String>>,
    bindings: RwLock<HashMap<String, DeviceBinding>>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and loads it.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_error = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        make_private(path).map_err(|source| StoreError::Permissions {
            path: path.to_path_buf(),
            source,
        })?;
        let connection = Connection::open(path).map_err(open_error)?;
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = NORMAL;
                 PRAGMA busy_timeout = 5000;
                 CREATE TABLE IF NOT EXISTS tool_choices (
                     scope_kind TEXT NOT NULL,
                     scope_key TEXT NOT NULL,
                     tool TEXT NOT NULL,
                     enabled INTEGER NOT NULL,
                     updated_at_ms INTEGER NOT NULL,
                     PRIMARY KEY (scope_kind, scope_key, tool)
                 );
                 CREATE TABLE IF NOT EXISTS sessions (
                     session_key TEXT PRIMARY KEY,
                     first_seen_ms INTEGER NOT NULL
                 );
                 CREATE TABLE IF NOT EXISTS device_bindings (
                     session_key TEXT PRIMARY KEY,
                     device_id TEXT NOT NULL,
                     platform TEXT NOT NULL,
                     daemon_instance TEXT NOT NULL,
                     state TEXT NOT NULL,
                     updated_at_ms INTEGER NOT NULL
                 );",
            )
            .map_err(open_error)?;
        connection.execute_batch(bots::SCHEMA).map_err(open_error)?;
        connection
            .execute_batch(tasks::SCHEMA)
            .map_err(open_error)?;
        let store = Self {
            path: path.to_path_buf(),
            connection: Mutex::new(connection),
            choices: RwLock::new(HashMap::new()),
            sessions: RwLock::new(HashSet::new()),
            bindings: RwLock::new(HashMap::new()),
        };
        store.load()?;
        Ok(store)
    }

    fn sqlite_error(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn load(&self) -> Result<(), StoreError> {
        let connection = self.connection();
        let mut choices: HashMap<ChoiceScope, Choices> = HashMap::new();
        let mut statement = connection
            .prepare("SELECT scope_kind, scope_key, tool, enabled FROM tool_choices")
            .map_err(|error| self.sqlite_error(error))?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, bool>(3)?,
                ))
            })
            .map_err(|error| self.sqlite_error(error))?;
        for row in rows {
            let (kind, key, tool, enabled) = row.map_err(|error| self.sqlite_error(error))?;
            let scope = match kind.as_str() {
                "session" => ChoiceScope::Session(key),
                _ => ChoiceScope::Profile(key),
            };
            choices.entry(scope).or_default().insert(tool, enabled);
        }
        let mut sessions = HashSet::new();
        let mut statement = connection
            .prepare("SELECT session_key FROM sessions")
            .map_err(|error| self.sqlite_error(error))?;
        let rows = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(|error| self.sqlite_error(error))?;
        for row in rows {
            sessions.insert(row.map_err(|error| self.sqlite_error(error))?);
        }
        let mut bindings = HashMap::new();
        let mut statement = connection
            .prepare(
                "SELECT session_key, device_id, platform, daemon_instance, state FROM device_bindings",
            )
            .map_err(|error| self.sqlite_error(error))?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    DeviceBinding {
                        device_id: row.get(1)?,
                        platform: row.get(2)?,
                        daemon_instance: row.get(3)?,
                        state: row.get(4)?,
                    },
                ))
            })
            .map_err(|error| self.sqlite_error(error))?;
        for row in rows {
            let (session, binding) = row.map_err(|error| self.sqlite_error(error))?;
            bindings.insert(session, binding);
        }
        *self.choices.write().unwrap_or_else(|p| p.into_inner()) = choices;
        *self.sessions.write().unwrap_or_else(|p| p.into_inner()) = sessions;
        *self.bindings.write().unwrap_or_else(|p| p.into_inner()) = bindings;
        Ok(())
    }

    /// The persisted choices of `scope` (empty when none were made).
    pub fn choices(&self, scope: &ChoiceScope) -> Choices {
        self.choices
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(scope)
            .cloned()
            .unwrap_or_default()
    }

    /// Applies `changes` to `scope` atomically: all rows land in one transaction, or none do.
    pub fn write_choices(&self, scope: &ChoiceScope, changes: &Choices) -> Result<(), StoreError> {
        let now = now_ms();
        {
            let mut connection = self.connection();
            let transaction = connection
                .transaction()
                .map_err(|error| self.sqlite_error(error))?;
            for (tool, enabled) in changes {
                transaction
                    .execute(
                        "INSERT INTO tool_choices (scope_kind, scope_key, tool, enabled, updated_at_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5)
                         ON CONFLICT (scope_kind, scope_key, tool)
                         DO UPDATE SET enabled = excluded.enabled, updated_at_ms = excluded.updated_at_ms",
                        params![scope.kind(), scope.key(), tool, enabled, now],
                    )
                    .map_err(|error| self.sqlite_error(error))?;
            }
            transaction
                .commit()
                .map_err(|error| self.sqlite_error(error))?;
        }
        let mut cache = self.choices.write().unwrap_or_else(|p| p.into_inner());
        let entry = cache.entry(scope.clone()).or_default();
        for (tool, enabled) in changes {
            entry.insert(tool.clone(), *enabled);
        }
        Ok(())
    }

    /// Removes every saved choice of `scope`; returns how many there were.
    pub fn clear_choices(&self, scope: &ChoiceScope) -> Result<usize, StoreError> {
        let removed = self
            .connection()
            .execute(
                "DELETE FROM tool_choices WHERE scope_kind = ?1 AND scope_key = ?2",
                params![scope.kind(), scope.key()],
            )
            .map_err(|error| self.sqlite_error(error))?;
        self.choices
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(scope);
        Ok(removed)
    }

    /// Reads the choices of `scope` from the database itself rather than the in-memory copy, to
    /// confirm what a write left on disk.
    pub fn read_choices_from_disk(&self, scope: &ChoiceScope) -> Result<Choices, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(
                "SELECT tool, enabled FROM tool_choices WHERE scope_kind = ?1 AND scope_key = ?2",
            )
            .map_err(|error| self.sqlite_error(error))?;
        let rows = statement
            .query_map(params![scope.kind(), scope.key()], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, bool>(1)?))
            })
            .map_err(|error| self.sqlite_error(error))?;
        rows.collect::<Result<Choices, _>>()
            .map_err(|error| self.sqlite_error(error))
    }

    /// Records that a session key has been used; cheap after the first time.
    pub fn record_session(&self, session_key: &str) -> Result<(), StoreError> {
        if self
            .sessions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(session_key)
        {
            return Ok(());
        }
        self.insert_session_row(session_key)?;
        self.sessions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session_key.to_owned());
        Ok(())
    }

    fn insert_session_row(&self, session_key: &str) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "INSERT OR IGNORE INTO sessions (session_key, first_seen_ms) VALUES (?1, ?2)",
                params![session_key, now_ms()],
            )
            .map(drop)
            .map_err(|error| self.sqlite_error(error))
    }

    /// Runs `work` with the store on a blocking thread and waits for it: SQLite waits on disk,
    /// which an async worker must not. Every write reached from async code goes through here.
    pub async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .unwrap_or(Err(StoreError::TaskFailed { path }))
    }

    /// Records a session key from code that cannot wait (deciding a request's session): known
    /// keys cost nothing; a new one is known at once and written on a blocking thread, with a
    /// failure reported to `on_error`. Outside a Tokio runtime it is written here.
    pub fn record_session_soon(
        self: &Arc<Self>,
        session_key: &str,
        on_error: impl FnOnce(StoreError) + Send + 'static,
    ) {
        if self.session_known(session_key) {
            return;
        }
        // Known at once, so the next request may name it; the row follows.
        self.sessions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session_key.to_owned());
        let store = self.clone();
        let key = session_key.to_owned();
        let work = move || {
            if let Err(error) = store.insert_session_row(&key) {
                on_error(error);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(work);
            }
            Err(_) => work(),
        }
    }

    /// Whether a session key has ever been used with this state directory.
    pub fn session_known(&self, session_key: &str) -> bool {
        self.sessions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(session_key)
    }
}

/// A device bound to a session, as persisted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceBinding {
    pub device_id: String,
    pub platform: String,
    pub daemon_instance: String,
    /// `active`, `released`, `lost` or `ended_by_restart`.
    pub state: String,
}

impl Store {
    /// Records that `session_key` holds `device_id` in daemon instance `instance`.
    pub fn bind_device(
        &self,
        session_key: &str,
        device_id: &str,
        platform: &str,
        instance: &str,
    ) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "INSERT INTO device_bindings (session_key, device_id, platform, daemon_instance, state, updated_at_ms)
                 VALUES (?1, ?2, ?3, ?4, 'active', ?5)
                 ON CONFLICT (session_key) DO UPDATE SET device_id = excluded.device_id,
                     platform = excluded.platform, daemon_instance = excluded.daemon_instance,
                     state = 'active', updated_at_ms = excluded.updated_at_ms",
                params![session_key, device_id, platform, instance, now_ms()],
            )
            .map_err(|error| self.sqlite_error(error))?;
        self.bindings_mut().insert(
            session_key.to_owned(),
            DeviceBinding {
                device_id: device_id.to_owned(),
                platform: platform.to_owned(),
                daemon_instance: instance.to_owned(),
                state: "active".to_owned(),
            },
        );
        Ok(())
    }

    /// Marks a session's binding ended with `state`.
    pub fn end_device_binding(&self, session_key: &str, state: &str) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "UPDATE device_bindings SET state = ?2, updated_at_ms = ?3 WHERE session_key = ?1",
                params![session_key, state, now_ms()],
            )
            .map_err(|error| self.sqlite_error(error))?;
        if let Some(binding) = self.bindings_mut().get_mut(session_key) {
            binding.state = state.to_owned();
        }
        Ok(())
    }

    /// Ends every binding made by another daemon instance: a restart ends every session.
    /// Returns how many were still active.
    pub fn end_bindings_of_other_instances(&self, instance: &str) -> Result<usize, StoreError> {
        let ended = self
            .connection()
            .execute(
                "UPDATE device_bindings SET state = 'ended_by_restart', updated_at_ms = ?2
                 WHERE daemon_instance != ?1 AND state = 'active'",
                params![instance, now_ms()],
            )
            .map_err(|error| self.sqlite_error(error))?;
        for binding in self.bindings_mut().values_mut() {
            if binding.daemon_instance != instance && binding.state == "active" {
                binding.state = "ended_by_restart".to_owned();
            }
        }
        Ok(ended)
    }

    /// The binding of `session_key`, if one was ever made. Read from memory: the request path
    /// never waits on disk for it.
    pub fn device_binding(&self, session_key: &str) -> Option<DeviceBinding> {
        self.bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(session_key)
            .cloned()
    }

    fn bindings_mut(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, DeviceBinding>> {
        self.bindings.write().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_and_sessions_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paddock.db");
        let profile = ChoiceScope::Profile("http:owner".into());
        let session = ChoiceScope::Session("s1".into());
        {
            let store = Store::open(&path).unwrap();
            store
                .write_choices(
                    &profile,
                    &Choices::from([("a".into(), false), ("b".into(), true)]),
                )
                .unwrap();
            store
                .write_choices(&profile, &Choices::from([("a".into(), true)]))
                .unwrap();
            store
                .write_choices(&session, &Choices::from([("c".into(), true)]))
                .unwrap();
            store.record_session("s1").unwrap();
            store.record_session("s1").unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(
            store.choices(&profile),
            Choices::from([("a".into(), true), ("b".into(), true)])
        );
        assert_eq!(store.choices(&session), Choices::from([("c".into(), true)]));
        assert!(
            store
                .choices(&ChoiceScope::Session("other".into()))
                .is_empty()
        );
        assert!(store.session_known("s1"));
        assert!(!store.session_known("s2"));
        assert_eq!(
            store.read_choices_from_disk(&profile).unwrap(),
            store.choices(&profile)
        );
        assert_eq!(store.clear_choices(&profile).unwrap(), 2);
        assert!(store.choices(&profile).is_empty());
        assert!(store.read_choices_from_disk(&profile).unwrap().is_empty());
    }

    #[test]
    fn device_bindings_end_with_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paddock.db");
        {
            let store = Store::open(&path).unwrap();
            store
                .bind_device("s1", "web-1", "web", "instance-a")
                .unwrap();
            store
                .bind_device("s2", "web-2", "web", "instance-a")
                .unwrap();
            store.end_device_binding("s2", "released").unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(
            store.end_bindings_of_other_instances("instance-b").unwrap(),
            1
        );
        assert_eq!(
            store.device_binding("s1").unwrap().state,
            "ended_by_restart"
        );
        assert_eq!(store.device_binding("s2").unwrap().state, "released");
        assert!(store.device_binding("s3").is_none());
    }

    #[test]
    fn a_corrupt_database_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paddock.db");
        std::fs::write(
            &path,
            b"this is not a sqlite database at all, not even close......",
        )
        .unwrap();
        let error = Store::open(&path).unwrap_err();
        assert!(error.to_string().contains("paddock.db"), "{error}");
    }
}
