-- Runs end and say why; events are written in the transaction of what they report (an outbox),
-- then positioned in one stream and delivered to the organisations' webhooks and live streams.

-- What started a run (direct, a schedule's firing, a group message), when it was last active (the
-- idle close counts from it), and why it closed.
ALTER TABLE runs ADD COLUMN trigger_type text NOT NULL DEFAULT 'direct' CHECK (trigger_type IN ('direct', 'schedule', 'group_chat'));
ALTER TABLE runs ADD COLUMN trigger jsonb;
ALTER TABLE runs ADD COLUMN active_at timestamptz;
ALTER TABLE runs ADD COLUMN close_reason text;
UPDATE runs r SET active_at = coalesce((SELECT max(c.started_at) FROM tool_calls c WHERE c.run_id = r.id), r.created_at);
UPDATE runs r SET trigger_type = 'schedule',
    trigger = jsonb_build_object('type', 'schedule', 'schedule', jsonb_build_object('id', f.schedule_id, 'instruction', f.instruction, 'due_at', f.due_at))
    FROM schedule_firings f WHERE f.run_id = r.id;
UPDATE runs SET close_reason = 'operator' WHERE status = 'closed';
ALTER TABLE runs ALTER COLUMN active_at SET NOT NULL;
ALTER TABLE runs ALTER COLUMN active_at SET DEFAULT now();
CREATE INDEX runs_open_active ON runs (active_at) WHERE status = 'open';
CREATE INDEX runs_open_scheduled ON runs (created_at) WHERE status = 'open' AND trigger_type = 'schedule' AND tool_calls_used = 0;
CREATE INDEX runs_agent_newest ON runs (agent_id, created_at DESC, id DESC);
CREATE INDEX runs_guild_newest ON runs (guild_id, created_at DESC, id DESC);
DROP INDEX runs_agent_id;

-- The outbox. seq orders the inserts; pos is the event's place in the stream, given by the
-- sequencer (one at a time, under event_stream's row lock) to committed events in seq order, so a
-- reader that saw pos n has seen every event before it: resuming after n misses none.
CREATE TABLE events (
    seq        bigserial PRIMARY KEY,
    id         text NOT NULL UNIQUE,
    type       text NOT NULL,
    org_id     text NOT NULL DEFAULT '',
    guild_id   text,
    agent_id   text,
    run_id     text,
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    pos        bigint UNIQUE
);
CREATE INDEX events_unplaced ON events (seq) WHERE pos IS NULL;
CREATE INDEX events_created ON events (created_at);

CREATE TABLE event_stream (
    one      boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_pos bigint NOT NULL
);
INSERT INTO event_stream (last_pos) VALUES (0);

-- Every transaction that writes events wakes the sequencers (one notice per transaction: equal
-- notices of one transaction are folded into one).
CREATE FUNCTION guilds_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('guilds_events', 'new');
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION guilds_events_notify();

-- An organisation's webhooks: the signing secret sealed under GUILDS_SECRET_KEY.
CREATE TABLE webhooks (
    id            text PRIMARY KEY,
    org_id        text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    url           text NOT NULL,
    events        text[] NOT NULL,
    description   text NOT NULL DEFAULT '',
    enabled       boolean NOT NULL DEFAULT true,
    secret_sealed bytea NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE INDEX webhooks_org ON webhooks (org_id, created_at);

-- One row per event sent to one webhook (and per redelivery an operator asks for), with its last
-- answer; kept a week. A pending delivery waits for every earlier pending delivery of its run to
-- the same webhook (run_id NULL: no order); lease_until marks one a replica is sending.
CREATE TABLE webhook_deliveries (
    id              bigserial PRIMARY KEY,
    webhook_id      text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    pos             bigint NOT NULL,
    run_id          text,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    lease_until     timestamptz,
    last_attempt_at timestamptz,
    delivered_at    timestamptz,
    response_status integer,
    response_body   text NOT NULL DEFAULT '',
    error           text NOT NULL DEFAULT '',
    duration_ms     double precision NOT NULL DEFAULT 0,
    redelivery_of   bigint,
    created_at      timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_run ON webhook_deliveries (webhook_id, run_id, pos) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, id DESC);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
