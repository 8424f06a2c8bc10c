-- Agents keep max_schedules in config (those stored before it get the default, as runs' snapshots
-- do), and a wake-up of a schedule whose last run is still open is skipped: the skip is kept
-- beside the schedule's firings, naming that run.
UPDATE agents SET config = config || '{"max_schedules": 10}'::jsonb WHERE NOT config ? 'max_schedules';
UPDATE runs SET config = config || '{"max_schedules": 10}'::jsonb WHERE NOT config ? 'max_schedules';

CREATE TABLE schedule_skips (
    schedule_id text NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    due_at      timestamptz NOT NULL,
    open_run_id text NOT NULL,
    skipped_at  timestamptz NOT NULL,
    PRIMARY KEY (schedule_id, due_at)
);
