-- A call is recorded as started before anything runs and completed after; a call left started by a
-- crash is marked interrupted at the next start. A client's call_id (unique in its run) makes a retry
-- answer the stored call instead of running it again; request_hash tells a different request apart.
ALTER TABLE tool_calls
    ADD COLUMN status text NOT NULL DEFAULT 'completed' CHECK (status IN ('started', 'completed', 'interrupted')),
    ADD COLUMN client_call_id text,
    ADD COLUMN request_hash text NOT NULL DEFAULT '',
    ALTER COLUMN finished_at DROP NOT NULL,
    ALTER COLUMN duration_ms DROP NOT NULL;
CREATE UNIQUE INDEX tool_calls_client_call_id ON tool_calls (run_id, client_call_id) WHERE client_call_id IS NOT NULL;
CREATE INDEX tool_calls_started ON tool_calls (run_id) WHERE status = 'started';
