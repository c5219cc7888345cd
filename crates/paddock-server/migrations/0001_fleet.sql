-- The fleet server's schema, version 1. Portable SQL: the same text runs on SQLite and on
-- PostgreSQL. Times are Unix milliseconds (BIGINT); every credential is stored only as the
-- hex SHA-256 of its full text, never the value.

CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    profile TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    revoked_at_ms BIGINT
);

CREATE TABLE IF NOT EXISTS pairing_tokens (
    token_hash TEXT PRIMARY KEY,
    name TEXT,
    -- A reconnect token names the machine it replaces the credential of.
    reconnect_machine TEXT,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    used_at_ms BIGINT
);

CREATE TABLE IF NOT EXISTS machines (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    hostname TEXT NOT NULL,
    platform TEXT NOT NULL,
    arch TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    revoked_at_ms BIGINT
);

CREATE TABLE IF NOT EXISTS runner_keys (
    key_hash TEXT PRIMARY KEY,
    machine_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    revoked_at_ms BIGINT
);

-- Which replica holds each connected machine's control connection, and the machine's device
-- inventory as it last reported it (JSON), so any replica can list every device.
CREATE TABLE IF NOT EXISTS machine_presence (
    machine_id TEXT PRIMARY KEY,
    replica_id TEXT NOT NULL,
    connected BOOLEAN NOT NULL,
    inventory TEXT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
