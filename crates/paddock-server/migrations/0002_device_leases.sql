-- Device leases, version 2. Portable SQL. A lease is live while `until_ms` is in the future;
-- PostgreSQL takes them with `SELECT … FOR UPDATE SKIP LOCKED`, so two replicas never lease
-- the same device. A row whose lease ended (or was released) is free again.

CREATE TABLE IF NOT EXISTS device_leases (
    device_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    leased_at_ms BIGINT NOT NULL,
    until_ms BIGINT NOT NULL
);
