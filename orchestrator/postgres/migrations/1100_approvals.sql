-- Ask (issue 34): a native_tool or mcp_tool binding may be On with an operator's approval for each
-- call; a call of such a tool waits for a decision on its approval request, bound to its exact
-- arguments. Range 1100-1199 belongs to this feature.

-- ask is true only on an enabled native_tool or mcp_tool row; a row without it means what it did.
ALTER TABLE bindings
    ADD COLUMN ask boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT bindings_ask CHECK (NOT ask OR (enabled AND catalog_kind IN ('native_tool', 'mcp_tool')));

-- One request per started call of a tool resolved Ask: what the operator decides on. arguments are
-- the call's arguments as stored with it (redacted), arguments_sha256 the digest of the canonical
-- arguments the call runs with once approved. A pending request past expires_at, or whose call is
-- no longer started (its orchestrator stopped), reads as expired and cannot be decided.
CREATE TABLE approvals (
    id               text PRIMARY KEY,
    run_id           text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq              bigint NOT NULL,
    call_id          text NOT NULL,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    guild_id         text NOT NULL,
    org_id           text NOT NULL,
    tool             text NOT NULL,
    arguments        jsonb NOT NULL,
    arguments_sha256 text NOT NULL CHECK (arguments_sha256 ~ '^[0-9a-f]{64}$'),
    status           text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    reason           text NOT NULL DEFAULT '',
    decided_by       text NOT NULL DEFAULT '', -- the deciding account's id, or admin for the bootstrap token; '' when none decided
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    decided_at       timestamptz,
    UNIQUE (run_id, seq),
    CHECK ((status = 'pending') = (decided_at IS NULL))
);
CREATE INDEX approvals_org ON approvals (org_id, created_at DESC, id DESC);
CREATE INDEX approvals_guild ON approvals (guild_id, created_at DESC, id DESC);
CREATE INDEX approvals_agent ON approvals (agent_id, created_at DESC, id DESC);
CREATE INDEX approvals_pending ON approvals (org_id) WHERE status = 'pending';

-- A decision (or an expiry) is announced to every replica: the call waiting on it may run on any.
CREATE FUNCTION guilds_approvals_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('guilds_approvals', NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER approvals_notify AFTER UPDATE OF status ON approvals FOR EACH ROW
    WHEN (OLD.status = 'pending' AND NEW.status <> 'pending') EXECUTE FUNCTION guilds_approvals_notify();
