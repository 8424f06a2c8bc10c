-- A guild's group chat: messages agents post with group_post, listed by the operator API.

CREATE TABLE group_messages (
    id         bigserial PRIMARY KEY,
    guild_id   text NOT NULL REFERENCES guilds (id) ON DELETE CASCADE,
    agent_id   text REFERENCES agents (id) ON DELETE SET NULL,
    run_id     text REFERENCES runs (id) ON DELETE SET NULL,
    text       text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX group_messages_guild ON group_messages (guild_id, id DESC);
