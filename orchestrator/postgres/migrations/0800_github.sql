-- The GitHub App's logins (issue 20). A github connection keeps its installation here; the id
-- never leaves the orchestrator.
CREATE TABLE github_installations (
    connection_id   text PRIMARY KEY REFERENCES mcp_connections (id) ON DELETE CASCADE,
    installation_id bigint NOT NULL CHECK (installation_id > 0),
    account         text NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- A GitHub Connect's single-use state, by its SHA-256 (the state itself is never stored). created
-- says Connect made the connection, so a refused callback deletes it; picker holds the
-- installations the user reached when there were several, until the operator picks one.
CREATE TABLE github_states (
    state_hash    bytea PRIMARY KEY,
    connection_id text NOT NULL REFERENCES mcp_connections (id) ON DELETE CASCADE,
    created       boolean NOT NULL,
    picker        jsonb,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL
);
CREATE INDEX github_states_connection ON github_states (connection_id);

-- The repositories a GitHub login picked, by GitHub's id (which a rename keeps).
CREATE TABLE github_selected (
    connection_id  text NOT NULL REFERENCES mcp_connections (id) ON DELETE CASCADE,
    github_id      bigint NOT NULL,
    name           text NOT NULL,
    full_name      text NOT NULL,
    url            text NOT NULL,
    default_branch text NOT NULL DEFAULT '',
    position       int NOT NULL,
    PRIMARY KEY (connection_id, github_id)
);

-- A guild's repositories: mirrored from a guild-owned GitHub login's selection (connection_id
-- set; deleting the login deletes them), or extra git URLs an operator added (connection_id NULL).
-- name is the folder under /home/agent/repos.
CREATE TABLE guild_repositories (
    id             text PRIMARY KEY,
    guild_id       text NOT NULL REFERENCES guilds (id) ON DELETE CASCADE,
    name           text NOT NULL,
    url            text NOT NULL,
    default_branch text NOT NULL DEFAULT '',
    connection_id  text REFERENCES mcp_connections (id) ON DELETE CASCADE,
    github_id      bigint,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (guild_id, name)
);
CREATE INDEX guild_repositories_connection ON guild_repositories (connection_id) WHERE connection_id IS NOT NULL;

-- The installation tokens an agent's sandbox holds, sealed (bound to agent and connection), with
-- the repositories each reaches; replaced before they expire.
CREATE TABLE github_agent_tokens (
    agent_id      text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    connection_id text NOT NULL REFERENCES mcp_connections (id) ON DELETE CASCADE,
    sealed        bytea NOT NULL,
    repositories  jsonb NOT NULL,
    expires_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (agent_id, connection_id)
);
