-- report_issue: tooling problems agents file onto their guild, listed in the operators' inbox.

CREATE TABLE issues (
    id          text PRIMARY KEY,
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    guild_id    text NOT NULL REFERENCES guilds (id) ON DELETE CASCADE,
    agent_id    text REFERENCES agents (id) ON DELETE SET NULL,
    run_id      text REFERENCES runs (id) ON DELETE SET NULL,
    kind        text NOT NULL CHECK (kind IN ('tool_failure', 'truncated', 'api', 'other')),
    message     text NOT NULL,
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    created_at  timestamptz NOT NULL,
    resolved_at timestamptz,
    CHECK ((status = 'resolved') = (resolved_at IS NOT NULL))
);
CREATE INDEX issues_guild ON issues (guild_id, status, created_at DESC);
CREATE INDEX issues_org ON issues (org_id, status, created_at DESC);
