-- The MCP front door (issue 32). A call its client cancelled while it ran is recorded as
-- cancelled. A run whose offer or status changes is announced on guilds_runs (its id), so every
-- replica serving an MCP session of it tells the client its tool list changed (or ends the session
-- of a closed run) and drops the snapshot it cached.
ALTER TABLE tool_calls DROP CONSTRAINT tool_calls_status_check;
ALTER TABLE tool_calls ADD CONSTRAINT tool_calls_status_check CHECK (status IN ('started', 'completed', 'cancelled', 'interrupted'));

CREATE FUNCTION guilds_runs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('guilds_runs', NEW.id);
    RETURN NULL;
END $$;

CREATE TRIGGER runs_changed_notify AFTER UPDATE OF offered_tools, status ON runs FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.offered_tools::text IS DISTINCT FROM NEW.offered_tools::text)
    EXECUTE FUNCTION guilds_runs_notify();
