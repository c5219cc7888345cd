-- The agent data plane, version 4. Portable SQL. Each agent (a bot on one machine) has one
-- conversation: messages to it (`inbound` = 1, from an owner's API key) and from it
-- (`inbound` = 0, sent with its runner key), numbered by one counter per agent. `acked` is how
-- far the agent's daemon has taken the inbound messages into its own inbox.

CREATE TABLE IF NOT EXISTS agent_cursors (
    machine_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    last_seq BIGINT NOT NULL,
    acked BIGINT NOT NULL,
    PRIMARY KEY (machine_id, agent_id)
);

CREATE TABLE IF NOT EXISTS agent_messages (
    machine_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    inbound BIGINT NOT NULL,
    target TEXT NOT NULL,
    sender TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (machine_id, agent_id, seq)
);

CREATE INDEX IF NOT EXISTS runner_keys_by_agent ON runner_keys (machine_id, agent_id);
