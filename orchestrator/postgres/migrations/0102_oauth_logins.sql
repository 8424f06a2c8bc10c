-- Browser OAuth logins of remote MCP servers (issue 19): the clients registered at each
-- authorization server (RFC 7591, one per server, issuer and redirect URI, reused), each pending
-- login's single-use state (stored as its SHA-256 only, with the sealed PKCE verifier, for 10
-- minutes), and per OAuth connection the client and endpoint its refresh uses and its access
-- token's life. The tokens themselves are the connection's sealed credentials.

CREATE TABLE mcp_oauth_clients (
    id            bigserial PRIMARY KEY,
    server_slug   text NOT NULL REFERENCES mcp_servers (slug) ON DELETE CASCADE,
    issuer        text NOT NULL,
    redirect_uri  text NOT NULL,
    client_id     text NOT NULL,
    client_secret bytea,                 -- sealed; NULL for a public client
    auth_method   text NOT NULL DEFAULT 'none',
    registered_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (server_slug, issuer, redirect_uri)
);

CREATE TABLE mcp_oauth_states (
    state_hash     bytea PRIMARY KEY,    -- SHA-256 of the state; the state itself is never stored
    connection_id  text NOT NULL REFERENCES mcp_connections (id) ON DELETE CASCADE,
    client_ref     bigint NOT NULL REFERENCES mcp_oauth_clients (id) ON DELETE CASCADE,
    verifier       bytea NOT NULL,       -- the sealed PKCE verifier
    resource       text NOT NULL,
    issuer         text NOT NULL,
    token_endpoint text NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX mcp_oauth_states_connection ON mcp_oauth_states (connection_id);

CREATE TABLE mcp_oauth_logins (
    connection_id  text PRIMARY KEY REFERENCES mcp_connections (id) ON DELETE CASCADE,
    client_ref     bigint NOT NULL REFERENCES mcp_oauth_clients (id) ON DELETE CASCADE,
    resource       text NOT NULL,
    issuer         text NOT NULL,
    token_endpoint text NOT NULL,
    expires_at     timestamptz,          -- the access token's expiry; NULL: the server did not say
    issued_at      timestamptz NOT NULL, -- when the access token was stored
    refreshed_at   timestamptz
);
