-- Version 5. Portable SQL. A counter every API-key revocation moves in the same transaction:
-- a replica that caches key lookups polls it and drops its cache when it moved, so a
-- revocation made by any process holds everywhere within the poll interval.

CREATE TABLE IF NOT EXISTS key_epoch (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);

INSERT INTO key_epoch (name, value)
    SELECT 'api_keys', 0 WHERE NOT EXISTS (SELECT 1 FROM key_epoch WHERE name = 'api_keys');
