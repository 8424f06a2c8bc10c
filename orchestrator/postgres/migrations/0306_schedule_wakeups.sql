-- A due schedule is claimed in one transaction that advances its next_run_at and writes a wake-up
-- row keyed by (schedule_id, due_at), which also fixes the id the run will have. Starting the run
-- consumes the row: the run's id is its primary key, so a start retried after a crash finds the run
-- instead of making a second one, and a claimed wake-up stays until its run exists. A wake-up whose
-- run cannot start is kept as failed, with the reason.

CREATE TABLE schedule_wakeups (
    schedule_id text NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    due_at      timestamptz NOT NULL,
    run_id      text NOT NULL UNIQUE,
    agent_id    text NOT NULL,
    instruction text NOT NULL,
    claimed_at  timestamptz NOT NULL,
    state       text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'failed')),
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text NOT NULL DEFAULT '',
    PRIMARY KEY (schedule_id, due_at)
);
CREATE INDEX schedule_wakeups_pending ON schedule_wakeups (claimed_at) WHERE state = 'pending';
