//! Bots, their inboxes and what they sent: named agents with a stored definition, the messages
//! that arrive for them (numbered per bot), how far each bot has seen and acknowledged its
//! inbox, and its outbox of sent messages and drafts. Written through on every change; read
//! from SQLite (these are not on a request's hot path).

use rusqlite::{OptionalExtension as _, params};

use crate::{Store, StoreError, now_ms};

/// The tables, created with the others when the store opens.
pub(crate) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS bots (
        id TEXT PRIMARY KEY,
        backend TEXT NOT NULL,
        model TEXT,
        cwd TEXT NOT NULL,
        instructions TEXT,
        mode TEXT NOT NULL,
        permissions TEXT NOT NULL,
        sandbox TEXT,
        created_at_ms INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS inbox (
        bot TEXT NOT NULL,
        seq INTEGER NOT NULL,
        target TEXT NOT NULL,
        sender TEXT NOT NULL,
        body TEXT NOT NULL,
        received_at_ms INTEGER NOT NULL,
        PRIMARY KEY (bot, seq)
    );
    CREATE TABLE IF NOT EXISTS inbox_cursors (
        bot TEXT PRIMARY KEY,
        seen_seq INTEGER NOT NULL,
        acked_seq INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        bot TEXT NOT NULL,
        target TEXT NOT NULL,
        body TEXT NOT NULL,
        state TEXT NOT NULL,
        reason TEXT,
        producer_fact_id TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL
    );
";

/// A bot's stored definition: what to launch when a message wakes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotDefinition {
    pub id: String,
    pub backend: String,
    pub model: Option<String>,
    pub cwd: String,
    pub instructions: Option<String>,
    pub mode: String,
    pub permissions: String,
    /// The bot's own sandbox setting, as the control wire's JSON (`None`: the daemon's).
    pub sandbox: Option<String>,
    pub created_at_ms: u64,
}

/// One inbox message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxMessage {
    pub seq: u64,
    pub target: String,
    pub sender: String,
    pub body: String,
    pub received_at_ms: u64,
}

/// How far a bot has read its inbox: `seen` is what was pulled (the model saw it), `acked`
/// what it acknowledged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InboxCursor {
    pub seen: u64,
    pub acked: u64,
}

/// One outbox entry: sent, or a draft held back with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub id: u64,
    pub target: String,
    pub body: String,
    /// `sent`, `held` or `blocked`.
    pub state: String,
    pub reason: Option<String>,
    pub producer_fact_id: String,
    pub created_at_ms: u64,
}

fn as_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl Store {
    /// Adds or replaces a bot's definition.
    pub fn put_bot(&self, bot: &BotDefinition) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "INSERT INTO bots (id, backend, model, cwd, instructions, mode, permissions, sandbox, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?9, ?8)
                 ON CONFLICT (id) DO UPDATE SET backend = ?2, model = ?3, cwd = ?4,
                     instructions = ?5, mode = ?6, permissions = ?7, sandbox = ?9",
                params![
                    bot.id,
                    bot.backend,
                    bot.model,
                    bot.cwd,
                    bot.instructions,
                    bot.mode,
                    bot.permissions,
                    now_ms(),
                    bot.sandbox
                ],
            )
            .map(drop)
            .map_err(|error| self.sqlite_error(error))
    }

    /// Removes a bot with its inbox, cursor and outbox; false when there was none.
    pub fn remove_bot(&self, id: &str) -> Result<bool, StoreError> {
        let mut connection = self.connection();
        let transaction = connection
            .transaction()
            .map_err(|error| self.sqlite_error(error))?;
        let removed = transaction
            .execute("DELETE FROM bots WHERE id = ?1", params![id])
            .map_err(|error| self.sqlite_error(error))?;
        for table in ["inbox", "inbox_cursors", "outbox"] {
            transaction
                .execute(&format!("DELETE FROM {table} WHERE bot = ?1"), params![id])
                .map_err(|error| self.sqlite_error(error))?;
        }
        transaction
            .commit()
            .map_err(|error| self.sqlite_error(error))?;
        Ok(removed > 0)
    }

    /// Every bot, by id.
    pub fn bots(&self) -> Result<Vec<BotDefinition>, StoreError> {
        self.query_bots("SELECT id, backend, model, cwd, instructions, mode, permissions, created_at_ms, sandbox FROM bots ORDER BY id", None)
    }

    /// One bot.
    pub fn bot(&self, id: &str) -> Result<Option<BotDefinition>, StoreError> {
        Ok(self
            .query_bots("SELECT id, backend, model, cwd, instructions, mode, permissions, created_at_ms, sandbox FROM bots WHERE id = ?1", Some(id))?
            .pop())
    }

    fn query_bots(&self, sql: &str, id: Option<&str>) -> Result<Vec<BotDefinition>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(sql)
            .map_err(|error| self.sqlite_error(error))?;
        let read = |row: &rusqlite::Row<'_>| {
            Ok(BotDefinition {
                id: row.get(0)?,
                backend: row.get(1)?,
                model: row.get(2)?,
                cwd: row.get(3)?,
                instructions: row.get(4)?,
                mode: row.get(5)?,
                permissions: row.get(6)?,
                created_at_ms: as_u64(row.get(7)?),
                sandbox: row.get(8)?,
            })
        };
        let rows = match id {
            Some(id) => statement.query_map(params![id], read),
            None => statement.query_map([], read),
        }
        .map_err(|error| self.sqlite_error(error))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|error| self.sqlite_error(error))
    }

    /// Appends a message to `bot`'s inbox; returns its sequence number (1, 2, … per bot).
    pub fn inbox_append(
        &self,
        bot: &str,
        target: &str,
        sender: &str,
        body: &str,
    ) -> Result<u64, StoreError> {
        let mut connection = self.connection();
        let transaction = connection
            .transaction()
            .map_err(|error| self.sqlite_error(error))?;
        let last: i64 = transaction
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM inbox WHERE bot = ?1",
                params![bot],
                |row| row.get(0),
            )
            .map_err(|error| self.sqlite_error(error))?;
        let seq = last + 1;
        transaction
            .execute(
                "INSERT INTO inbox (bot, seq, target, sender, body, received_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![bot, seq, target, sender, body, now_ms()],
            )
            .map_err(|error| self.sqlite_error(error))?;
        transaction
            .commit()
            .map_err(|error| self.sqlite_error(error))?;
        Ok(as_u64(seq))
    }

    /// `bot`'s messages after `after`, oldest first.
    pub fn inbox_after(&self, bot: &str, after: u64) -> Result<Vec<InboxMessage>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(
                "SELECT seq, target, sender, body, received_at_ms FROM inbox
                 WHERE bot = ?1 AND seq > ?2 ORDER BY seq",
            )
            .map_err(|error| self.sqlite_error(error))?;
        let rows = statement
            .query_map(params![bot, as_i64(after)], |row| {
                Ok(InboxMessage {
                    seq: as_u64(row.get(0)?),
                    target: row.get(1)?,
                    sender: row.get(2)?,
                    body: row.get(3)?,
                    received_at_ms: as_u64(row.get(4)?),
                })
            })
            .map_err(|error| self.sqlite_error(error))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|error| self.sqlite_error(error))
    }

    /// How far `bot` has seen and acknowledged its inbox.
    pub fn inbox_cursor(&self, bot: &str) -> Result<InboxCursor, StoreError> {
        let cursor = self
            .connection()
            .query_row(
                "SELECT seen_seq, acked_seq FROM inbox_cursors WHERE bot = ?1",
                params![bot],
                |row| {
                    Ok(InboxCursor {
                        seen: as_u64(row.get(0)?),
                        acked: as_u64(row.get(1)?),
                    })
                },
            )
            .optional()
            .map_err(|error| self.sqlite_error(error))?;
        Ok(cursor.unwrap_or_default())
    }

    /// Moves `bot`'s cursor forward (never back).
    pub fn inbox_advance(
        &self,
        bot: &str,
        seen: u64,
        acked: u64,
    ) -> Result<InboxCursor, StoreError> {
        self.connection()
            .execute(
                "INSERT INTO inbox_cursors (bot, seen_seq, acked_seq) VALUES (?1, ?2, ?3)
                 ON CONFLICT (bot) DO UPDATE SET seen_seq = MAX(seen_seq, ?2), acked_seq = MAX(acked_seq, ?3)",
                params![bot, as_i64(seen), as_i64(acked)],
            )
            .map_err(|error| self.sqlite_error(error))?;
        self.inbox_cursor(bot)
    }

    /// Records an outgoing message or a draft.
    pub fn outbox_add(
        &self,
        bot: &str,
        target: &str,
        body: &str,
        state: &str,
        reason: Option<&str>,
        producer_fact_id: &str,
    ) -> Result<u64, StoreError> {
        let connection = self.connection();
        connection
            .execute(
                "INSERT INTO outbox (bot, target, body, state, reason, producer_fact_id, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![bot, target, body, state, reason, producer_fact_id, now_ms()],
            )
            .map_err(|error| self.sqlite_error(error))?;
        Ok(as_u64(connection.last_insert_rowid()))
    }

    /// `bot`'s outbox, oldest first.
    pub fn outbox(&self, bot: &str) -> Result<Vec<OutboxEntry>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(
                "SELECT id, target, body, state, reason, producer_fact_id, created_at_ms FROM outbox
                 WHERE bot = ?1 ORDER BY id",
            )
            .map_err(|error| self.sqlite_error(error))?;
        let rows = statement
            .query_map(params![bot], |row| {
                Ok(OutboxEntry {
                    id: as_u64(row.get(0)?),
                    target: row.get(1)?,
                    body: row.get(2)?,
                    state: row.get(3)?,
                    reason: row.get(4)?,
                    producer_fact_id: row.get(5)?,
                    created_at_ms: as_u64(row.get(6)?),
                })
            })
            .map_err(|error| self.sqlite_error(error))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|error| self.sqlite_error(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db")).unwrap();
        (dir, store)
    }

    #[test]
    fn a_bot_its_inbox_cursor_and_outbox_round_trip_and_go_with_it() {
        let (_dir, store) = store();
        let bot = BotDefinition {
            id: "helper".into(),
            backend: "claude".into(),
            model: None,
            cwd: "/work".into(),
            instructions: Some("be brief".into()),
            mode: "default".into(),
            permissions: "deny".into(),
            sandbox: Some(r#"{"read":["/srv/docs"]}"#.into()),
            created_at_ms: 0,
        };
        store.put_bot(&bot).unwrap();
        let stored = store.bot("helper").unwrap().unwrap();
        assert_eq!(stored.instructions.as_deref(), Some("be brief"));
        assert_eq!(stored.sandbox, bot.sandbox);
        assert_eq!(
            store
                .inbox_append("helper", "/.dm/owner", "owner", "one")
                .unwrap(),
            1
        );
        assert_eq!(
            store
                .inbox_append("helper", "/.dm/owner", "owner", "two")
                .unwrap(),
            2
        );
        assert_eq!(
            store
                .inbox_append("other", "/.dm/owner", "owner", "x")
                .unwrap(),
            1
        );
        let after = store.inbox_after("helper", 1).unwrap();
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].body, "two");
        let cursor = store.inbox_advance("helper", 2, 1).unwrap();
        assert_eq!(cursor, InboxCursor { seen: 2, acked: 1 });
        assert_eq!(
            store.inbox_advance("helper", 1, 0).unwrap(),
            cursor,
            "a cursor never moves back"
        );
        store
            .outbox_add("helper", "/.dm/owner", "hi", "held", Some("stale"), "f1")
            .unwrap();
        assert_eq!(store.outbox("helper").unwrap()[0].state, "held");
        assert!(store.remove_bot("helper").unwrap());
        assert!(store.bot("helper").unwrap().is_none());
        assert!(store.inbox_after("helper", 0).unwrap().is_empty());
        assert!(store.outbox("helper").unwrap().is_empty());
        assert_eq!(store.inbox_after("other", 0).unwrap().len(), 1);
        assert!(!store.remove_bot("helper").unwrap());
    }
}
