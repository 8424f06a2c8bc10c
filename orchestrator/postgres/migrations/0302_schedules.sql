-- Schedules wake agents: cron (five fields, UTC) or a daily random window; each firing starts a
-- schedule-triggered run and is recorded with the instruction it carried.

CREATE TABLE schedules (
    id           text PRIMARY KEY,
    agent_id     text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    guild_id     text NOT NULL,
    org_id       text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('cron', 'window')),
    cron         text NOT NULL DEFAULT '',
    timezone     text NOT NULL DEFAULT '',
    window_start text NOT NULL DEFAULT '',
    window_end   text NOT NULL DEFAULT '',
    max_wakes    integer NOT NULL DEFAULT 0,
    seed         bigint NOT NULL DEFAULT 0,
    description  text NOT NULL CHECK (char_length(description) BETWEEN 1 AND 400),
    instruction  text NOT NULL DEFAULT '' CHECK (char_length(instruction) <= 2000),
    status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
    next_run_at  timestamptz,
    last_run_at  timestamptz,
    last_run_id  text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    CHECK ((kind = 'cron') = (cron <> ''))
);
CREATE INDEX schedules_agent ON schedules (agent_id, created_at);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE status = 'active';

CREATE TABLE schedule_firings (
    run_id      text PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    schedule_id text NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    instruction text NOT NULL,
    due_at      timestamptz NOT NULL,
    fired_at    timestamptz NOT NULL
);
CREATE INDEX schedule_firings_schedule ON schedule_firings (schedule_id, fired_at DESC);
