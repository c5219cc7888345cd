-- The replica relay, version 3. Portable SQL. A body posted to a replica waits here until that
-- replica's listener deletes and returns it; on PostgreSQL a NOTIFY on the replica's channel
-- carries only the row id (NOTIFY payloads are capped at 8000 bytes). The ids come from one
-- counter row, taken under its row lock, so one poster's bodies keep their order. The embedded
-- SQLite store relays in memory (one process) and leaves these tables empty.

CREATE TABLE IF NOT EXISTS relay_counter (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);

INSERT INTO relay_counter (name, value)
    SELECT 'relay', 0 WHERE NOT EXISTS (SELECT 1 FROM relay_counter WHERE name = 'relay');

CREATE TABLE IF NOT EXISTS relay (
    id BIGINT PRIMARY KEY,
    to_replica TEXT NOT NULL,
    body TEXT NOT NULL,
    posted_at_ms BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS relay_by_replica ON relay (to_replica, id);
