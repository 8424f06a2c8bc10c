-- The artifact store: notes, memory, scripts and collections share one table of artifacts, owned at
-- the organisation, a guild or an agent; records live in their collection; memory keeps revisions.

CREATE TABLE artifacts (
    id         text PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('note', 'memory', 'script', 'collection')),
    level      text NOT NULL CHECK (level IN ('org', 'guild', 'agent')),
    org_id     text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    guild_id   text REFERENCES guilds (id) ON DELETE CASCADE,
    agent_id   text REFERENCES agents (id) ON DELETE CASCADE,
    -- owner is the id of the owning scope: org_id, guild_id or agent_id by level.
    owner      text GENERATED ALWAYS AS (CASE level WHEN 'org' THEN org_id WHEN 'guild' THEN guild_id ELSE agent_id END) STORED,
    key        text NOT NULL,
    content    text NOT NULL DEFAULT '',
    spec       jsonb, -- collections: their columns
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    search     tsvector GENERATED ALWAYS AS (to_tsvector('simple', key || ' ' || content)) STORED,
    CHECK ((level = 'org' AND guild_id IS NULL AND agent_id IS NULL)
        OR (level = 'guild' AND guild_id IS NOT NULL AND agent_id IS NULL)
        OR (level = 'agent' AND guild_id IS NOT NULL AND agent_id IS NOT NULL)),
    CHECK ((kind = 'collection') = (spec IS NOT NULL)),
    UNIQUE (kind, level, owner, key)
);
CREATE INDEX artifacts_org ON artifacts (org_id, kind);
CREATE INDEX artifacts_search ON artifacts USING gin (search);

-- Earlier versions of an agent's memory, newest kept: the store trims to the last 50.
CREATE TABLE memory_revisions (
    id          bigserial PRIMARY KEY,
    agent_id    text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    content     text NOT NULL,
    written_at  timestamptz NOT NULL,
    archived_at timestamptz NOT NULL
);
CREATE INDEX memory_revisions_agent ON memory_revisions (agent_id, id DESC);

-- Grants of a collection: an agent's own row, or a guild's row on an organisation table.
CREATE TABLE collection_grants (
    collection_id text NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    agent_id      text REFERENCES agents (id) ON DELETE CASCADE,
    guild_id      text REFERENCES guilds (id) ON DELETE CASCADE,
    access        text NOT NULL CHECK (access IN ('none', 'read', 'write')),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((agent_id IS NULL) <> (guild_id IS NULL))
);
CREATE UNIQUE INDEX collection_grants_agent ON collection_grants (collection_id, agent_id) WHERE agent_id IS NOT NULL;
CREATE UNIQUE INDEX collection_grants_guild ON collection_grants (collection_id, guild_id) WHERE guild_id IS NOT NULL;

-- Records of a collection: values in data, their words in search_text, the unique column's value in
-- unique_value. Removal is soft (deleted_at); at most one live record holds a unique value.
CREATE TABLE records (
    id            text PRIMARY KEY,
    collection_id text NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    data          jsonb NOT NULL,
    search_text   text NOT NULL,
    search        tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED,
    unique_value  text,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    deleted_at    timestamptz
);
CREATE UNIQUE INDEX records_unique_live ON records (collection_id, unique_value) WHERE deleted_at IS NULL AND unique_value IS NOT NULL;
CREATE INDEX records_changed ON records (collection_id, updated_at) WHERE deleted_at IS NULL;
CREATE INDEX records_search ON records USING gin (search) WHERE deleted_at IS NULL;
CREATE INDEX records_trgm ON records USING gin (search_text gin_trgm_ops) WHERE deleted_at IS NULL;
CREATE INDEX records_data ON records USING gin (data jsonb_path_ops) WHERE deleted_at IS NULL;
