-- Catalog (remote MCP servers and local adapters with their published tool copy), connections
-- (one login for one server, owned at a scope), the tools listed on each connection, and bindings
-- (which scope turns which catalog item on). Range 0100-0199 belongs to this feature.

CREATE TABLE mcp_servers (
    slug        text PRIMARY KEY CHECK (slug ~ '^[a-z][a-z0-9_]{0,30}$'),
    name        text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('remote', 'local', 'github')),
    transport   text NOT NULL CHECK (transport IN ('http')),
    url         text NOT NULL,
    auth        text NOT NULL CHECK (auth IN ('none', 'token', 'oauth')),
    config      jsonb NOT NULL DEFAULT '{}', -- connect config: credential fields, default-off rules, OAuth client
    description text NOT NULL,
    limitations text NOT NULL DEFAULT '',
    setup_hint  text NOT NULL DEFAULT '',
    seeds_tools boolean NOT NULL,            -- the manifest publishes its tool list at boot
    published   boolean NOT NULL DEFAULT true,
    copy_source text NOT NULL DEFAULT 'seed' CHECK (copy_source IN ('seed', 'admin')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The published copy of each server's tools.
CREATE TABLE mcp_catalog_tools (
    server_slug  text NOT NULL REFERENCES mcp_servers (slug) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text NOT NULL,
    input_schema jsonb NOT NULL,
    default_off  boolean NOT NULL DEFAULT false,
    published    boolean NOT NULL DEFAULT true,
    copy_source  text NOT NULL DEFAULT 'seed' CHECK (copy_source IN ('seed', 'admin', 'listed')),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (server_slug, name)
);

CREATE TABLE mcp_connections (
    id           text PRIMARY KEY,
    server_slug  text NOT NULL REFERENCES mcp_servers (slug) ON DELETE CASCADE,
    scope        text NOT NULL CHECK (scope IN ('platform', 'org', 'guild', 'agent')),
    scope_id     text NOT NULL,
    org_id       text REFERENCES orgs (id) ON DELETE CASCADE,
    guild_id     text REFERENCES guilds (id) ON DELETE CASCADE,
    agent_id     text REFERENCES agents (id) ON DELETE CASCADE,
    status       text NOT NULL CHECK (status IN ('pending', 'connected', 'disconnected')),
    account_hint text NOT NULL DEFAULT '',
    credentials  bytea,                      -- sealed (AES-256-GCM, bound to id); never leaves the orchestrator
    settings     jsonb NOT NULL DEFAULT '{}', -- non-secret per-login settings (pinned coins)
    verified_at  timestamptz,                -- last live credential check that passed; NULL: never checked
    listed_at    timestamptz,                -- last write of the listed tools
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (server_slug, scope, scope_id),
    CHECK ((scope = 'platform' AND scope_id = '' AND org_id IS NULL AND guild_id IS NULL AND agent_id IS NULL)
        OR (scope = 'org' AND org_id = scope_id AND guild_id IS NULL AND agent_id IS NULL)
        OR (scope = 'guild' AND guild_id = scope_id AND org_id IS NOT NULL AND agent_id IS NULL)
        OR (scope = 'agent' AND agent_id = scope_id AND guild_id IS NOT NULL AND org_id IS NOT NULL))
);

-- Tools listed on a connection: remote_name is what the server calls it, name the namespaced
-- {slug}_{remote_name} (dots become _) the model sees; offered_schema is input_schema shaped for the model.
CREATE TABLE mcp_tools (
    connection_id  text NOT NULL REFERENCES mcp_connections (id) ON DELETE CASCADE,
    remote_name    text NOT NULL,
    name           text NOT NULL,
    description    text NOT NULL,
    input_schema   jsonb NOT NULL,
    offered_schema jsonb NOT NULL,
    listed_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (connection_id, remote_name),
    UNIQUE (connection_id, name)
);
CREATE INDEX mcp_tools_name ON mcp_tools (name);

-- One row per scope and catalog item. platform rows have scope_id ''; the owner columns cascade
-- deletes of organisations, guilds and agents, and connection_id cascades deletes of connections.
CREATE TABLE bindings (
    scope         text NOT NULL CHECK (scope IN ('platform', 'org', 'guild', 'agent')),
    scope_id      text NOT NULL,
    catalog_kind  text NOT NULL CHECK (catalog_kind IN ('native_tool', 'mcp', 'mcp_tool', 'artifact_grant')),
    catalog_id    text NOT NULL,
    enabled       boolean NOT NULL,
    connection_id text REFERENCES mcp_connections (id) ON DELETE CASCADE,
    org_id        text REFERENCES orgs (id) ON DELETE CASCADE,
    guild_id      text REFERENCES guilds (id) ON DELETE CASCADE,
    agent_id      text REFERENCES agents (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, scope_id, catalog_kind, catalog_id),
    CHECK (connection_id IS NULL OR catalog_kind = 'mcp'),
    CHECK ((scope = 'platform' AND scope_id = '' AND org_id IS NULL AND guild_id IS NULL AND agent_id IS NULL)
        OR (scope = 'org' AND org_id = scope_id AND guild_id IS NULL AND agent_id IS NULL)
        OR (scope = 'guild' AND guild_id = scope_id AND org_id IS NOT NULL AND agent_id IS NULL)
        OR (scope = 'agent' AND agent_id = scope_id AND guild_id IS NOT NULL AND org_id IS NOT NULL))
);
CREATE INDEX bindings_connection_id ON bindings (connection_id) WHERE connection_id IS NOT NULL;
