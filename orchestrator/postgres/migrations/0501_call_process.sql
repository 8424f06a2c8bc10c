-- Each orchestrator process that takes calls registers and beats here; a started call names the
-- process that runs it. A call is interrupted only once its process is gone (no beat for a while),
-- so replicas sharing one database never mark each other's running calls.
CREATE TABLE orchestrator_processes (
    id         text PRIMARY KEY,
    host       text NOT NULL,
    pid        integer NOT NULL,
    started_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL
);
ALTER TABLE tool_calls ADD COLUMN process_id text;
