//! Tasks and their trajectories: each task as one JSON document (its summary), each recorded
//! step as one JSON document, numbered per owner (a task, or a recorded session), with an
//! optional JPEG. The daemon owns the shapes; this module keeps them. Written through on every
//! change.

use rusqlite::{OptionalExtension as _, params};

use crate::{Store, StoreError};

/// The tables, created with the others when the store opens.
pub(crate) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS tasks (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS steps (
        owner TEXT NOT NULL,
        seq INTEGER NOT NULL,
        body TEXT NOT NULL,
        image BLOB,
        PRIMARY KEY (owner, seq)
    );
";

/// Tasks `tasks` lists at most.
pub const MAX_LISTED_TASKS: usize = 500;

/// One stored step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredStep {
    pub seq: u64,
    pub body: String,
    pub has_image: bool,
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl Store {
    /// Writes task `id` (inserted or replaced).
    pub fn put_task(
        &self,
        id: &str,
        state: &str,
        created_at_ms: u64,
        body: &str,
    ) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "INSERT INTO tasks (id, state, created_at_ms, body) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET state = excluded.state, body = excluded.body",
                params![id, state, to_i64(created_at_ms), body],
            )
            .map(drop)
            .map_err(|error| self.sqlite_error(error))
    }

    /// Task `id`'s document.
    pub fn task(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.connection()
            .query_row("SELECT body FROM tasks WHERE id = ?1", params![id], |row| {
                row.get(0)
            })
            .optional()
            .map_err(|error| self.sqlite_error(error))
    }

    /// Task documents, newest first, only those in `state` when given.
    pub fn tasks(&self, state: Option<&str>) -> Result<Vec<String>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(
                "SELECT body FROM tasks WHERE ?1 IS NULL OR state = ?1
                 ORDER BY created_at_ms DESC, id DESC LIMIT ?2",
            )
            .map_err(|error| self.sqlite_error(error))?;
        let rows = statement
            .query_map(params![state, MAX_LISTED_TASKS as i64], |row| row.get(0))
            .map_err(|error| self.sqlite_error(error))?;
        rows.collect::<Result<Vec<String>, _>>()
            .map_err(|error| self.sqlite_error(error))
    }

    /// Appends step `seq` of `owner`.
    pub fn append_step(
        &self,
        owner: &str,
        seq: u64,
        body: &str,
        image: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "INSERT OR REPLACE INTO steps (owner, seq, body, image) VALUES (?1, ?2, ?3, ?4)",
                params![owner, to_i64(seq), body, image],
            )
            .map(drop)
            .map_err(|error| self.sqlite_error(error))
    }

    /// The highest step number of `owner`, if it has steps.
    pub fn last_step(&self, owner: &str) -> Result<Option<u64>, StoreError> {
        self.connection()
            .query_row(
                "SELECT MAX(seq) FROM steps WHERE owner = ?1",
                params![owner],
                |row| row.get::<_, Option<i64>>(0),
            )
            .map(|seq| seq.map(|seq| u64::try_from(seq).unwrap_or_default()))
            .map_err(|error| self.sqlite_error(error))
    }

    /// Adds a JPEG to step `seq` of `owner`.
    pub fn set_step_image(&self, owner: &str, seq: u64, image: &[u8]) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "UPDATE steps SET image = ?3 WHERE owner = ?1 AND seq = ?2",
                params![owner, to_i64(seq), image],
            )
            .map(drop)
            .map_err(|error| self.sqlite_error(error))
    }

    /// Steps of `owner` after `after`, at most `limit`, in order.
    pub fn steps(
        &self,
        owner: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredStep>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(
                "SELECT seq, body, image IS NOT NULL FROM steps
                 WHERE owner = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )
            .map_err(|error| self.sqlite_error(error))?;
        let rows = statement
            .query_map(
                params![
                    owner,
                    to_i64(after),
                    i64::try_from(limit).unwrap_or(i64::MAX)
                ],
                |row| {
                    Ok(StoredStep {
                        seq: u64::try_from(row.get::<_, i64>(0)?).unwrap_or_default(),
                        body: row.get(1)?,
                        has_image: row.get(2)?,
                    })
                },
            )
            .map_err(|error| self.sqlite_error(error))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|error| self.sqlite_error(error))
    }

    /// The JPEG of step `seq` of `owner`, or of its latest step with one; with its step.
    pub fn step_image(
        &self,
        owner: &str,
        seq: Option<u64>,
    ) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        let connection = self.connection();
        let row = |row: &rusqlite::Row<'_>| {
            Ok((
                u64::try_from(row.get::<_, i64>(0)?).unwrap_or_default(),
                row.get::<_, Vec<u8>>(1)?,
            ))
        };
        match seq {
            Some(seq) => connection.query_row(
                "SELECT seq, image FROM steps WHERE owner = ?1 AND seq = ?2 AND image IS NOT NULL",
                params![owner, to_i64(seq)],
                row,
            ),
            None => connection.query_row(
                "SELECT seq, image FROM steps WHERE owner = ?1 AND image IS NOT NULL
                 ORDER BY seq DESC LIMIT 1",
                params![owner],
                row,
            ),
        }
        .optional()
        .map_err(|error| self.sqlite_error(error))
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[test]
    fn tasks_and_steps_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paddock.db");
        {
            let store = Store::open(&path).unwrap();
            store.put_task("t1", "running", 1, "{\"a\":1}").unwrap();
            store.put_task("t2", "queued", 2, "{\"b\":2}").unwrap();
            store.put_task("t1", "completed", 1, "{\"a\":3}").unwrap();
            store.append_step("t1", 1, "s1", None).unwrap();
            store.append_step("t1", 2, "s2", Some(b"jpeg")).unwrap();
            store.append_step("t1", 3, "s3", None).unwrap();
            store.set_step_image("t1", 3, b"last").unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.task("t1").unwrap().as_deref(), Some("{\"a\":3}"));
        assert_eq!(store.task("nope").unwrap(), None);
        assert_eq!(store.tasks(None).unwrap(), ["{\"b\":2}", "{\"a\":3}"]);
        assert_eq!(store.tasks(Some("completed")).unwrap(), ["{\"a\":3}"]);
        let page = store.steps("t1", 1, 1).unwrap();
        assert_eq!(page.len(), 1);
        assert_eq!(
            (page[0].seq, page[0].body.as_str(), page[0].has_image),
            (2, "s2", true)
        );
        assert_eq!(
            store.step_image("t1", None).unwrap(),
            Some((3, b"last".to_vec()))
        );
        assert_eq!(
            store.step_image("t1", Some(2)).unwrap(),
            Some((2, b"jpeg".to_vec()))
        );
        assert_eq!(store.step_image("t1", Some(1)).unwrap(), None);
        assert!(store.steps("t2", 0, 10).unwrap().is_empty());
    }
}
