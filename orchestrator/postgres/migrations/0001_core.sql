-- Core scopes, agents, runs and their tool calls.

-- pg_trgm backs "similar spelling" matching in record search (records work).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE orgs (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE guilds (
    id         text PRIMARY KEY,
    org_id     text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX guilds_org_id ON guilds (org_id, created_at);

CREATE TABLE agents (
    id         text PRIMARY KEY,
    guild_id   text NOT NULL REFERENCES guilds (id) ON DELETE CASCADE,
    org_id     text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name       text NOT NULL,
    config     jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agents_guild_id ON agents (guild_id, created_at);

CREATE TABLE runs (
    id               text PRIMARY KEY,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    guild_id         text NOT NULL,
    org_id           text NOT NULL,
    kind             text NOT NULL CHECK (kind IN ('direct', 'group', 'schedule', 'group_chat')),
    status           text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    config           jsonb NOT NULL,
    tool_call_budget integer NOT NULL CHECK (tool_call_budget > 0),
    tool_calls_used  integer NOT NULL DEFAULT 0 CHECK (tool_calls_used >= 0 AND tool_calls_used <= tool_call_budget),
    offered_tools    jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    closed_at        timestamptz
);
CREATE INDEX runs_agent_id ON runs (agent_id, created_at);

-- One row per tool call: arguments redacted, result stamped (the raw result is never stored).
CREATE TABLE tool_calls (
    run_id      text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         bigint NOT NULL,
    call_id     text NOT NULL UNIQUE,
    name        text NOT NULL,
    arguments   jsonb NOT NULL,
    result      text NOT NULL,
    metadata    jsonb NOT NULL,
    is_error    boolean NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    duration_ms double precision NOT NULL,
    PRIMARY KEY (run_id, seq)
);
