-- Secrets granted to an agent: values sealed with AES-256-GCM under GUILDS_SECRET_KEY, bound to
-- agent and name; and the agents' requests for the operator to store one.

CREATE TABLE agent_secrets (
    agent_id   text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name       text NOT NULL,
    sealed     bytea NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (agent_id, name)
);

CREATE TABLE secret_requests (
    id          text PRIMARY KEY,
    agent_id    text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    run_id      text REFERENCES runs (id) ON DELETE SET NULL,
    name        text NOT NULL,
    reason      text NOT NULL,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered')),
    created_at  timestamptz NOT NULL,
    answered_at timestamptz,
    CHECK ((status = 'answered') = (answered_at IS NOT NULL))
);
CREATE INDEX secret_requests_agent ON secret_requests (agent_id, status, created_at);
