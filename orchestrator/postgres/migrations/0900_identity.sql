-- Who may do what: accounts with roles at organisations and guilds, sign-in sessions, API tokens,
-- agent keys, run tokens, invitations, the lockout of repeated failed sign-ins, and the audit log.
-- Every credential is found by the SHA-256 of its value (never stored); tokens and keys also keep
-- their value sealed under GUILDS_SECRET_KEY, so it can join the redaction of the runs it reaches.

CREATE TABLE accounts (
    id              text PRIMARY KEY,
    email           text NOT NULL UNIQUE CHECK (email = lower(email) AND email <> ''),
    name            text NOT NULL,
    password_hash   text,
    instance_admin  boolean NOT NULL DEFAULT false,
    deactivated_at  timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    last_sign_in_at timestamptz
);

CREATE TABLE memberships (
    account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    scope      text NOT NULL CHECK (scope IN ('org', 'guild')),
    scope_id   text NOT NULL,
    org_id     text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    guild_id   text REFERENCES guilds (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('owner', 'operator', 'viewer')),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, scope, scope_id),
    CHECK ((scope = 'org' AND scope_id = org_id AND guild_id IS NULL) OR (scope = 'guild' AND scope_id = guild_id))
);
CREATE INDEX memberships_scope ON memberships (scope, scope_id);
CREATE INDEX memberships_org ON memberships (org_id);

-- Failed sign-ins per email, whether an account exists or not (so a lockout leaks nothing).
CREATE TABLE sign_in_failures (
    email        text PRIMARY KEY,
    failures     integer NOT NULL,
    locked_until timestamptz,
    updated_at   timestamptz NOT NULL
);

CREATE TABLE sessions (
    id           text PRIMARY KEY,
    token_hash   bytea NOT NULL UNIQUE,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    csrf_token   text NOT NULL,
    client_addr  text NOT NULL DEFAULT '',
    user_agent   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX sessions_account ON sessions (account_id) WHERE revoked_at IS NULL;

CREATE TABLE api_tokens (
    id           text PRIMARY KEY,
    token_hash   bytea NOT NULL UNIQUE,
    sealed       bytea NOT NULL,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         text NOT NULL,
    prefix       text NOT NULL,
    role         text CHECK (role IN ('owner', 'operator', 'viewer')),
    scope        text CHECK (scope IN ('org', 'guild')),
    scope_id     text,
    org_id       text REFERENCES orgs (id) ON DELETE CASCADE,
    guild_id     text REFERENCES guilds (id) ON DELETE CASCADE,
    expires_at   timestamptz,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CHECK ((scope IS NULL) = (scope_id IS NULL))
);
CREATE INDEX api_tokens_account ON api_tokens (account_id, created_at);

CREATE TABLE agent_keys (
    id           text PRIMARY KEY,
    token_hash   bytea NOT NULL UNIQUE,
    sealed       bytea NOT NULL,
    agent_id     text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    guild_id     text NOT NULL,
    org_id       text NOT NULL,
    name         text NOT NULL,
    prefix       text NOT NULL,
    created_by   text NOT NULL,
    expires_at   timestamptz,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX agent_keys_agent ON agent_keys (agent_id, created_at);

-- A run's token: minted at its start, answered once, good until the run closes or it expires.
ALTER TABLE runs ADD COLUMN token_hash bytea UNIQUE;
ALTER TABLE runs ADD COLUMN token_sealed bytea;
ALTER TABLE runs ADD COLUMN token_expires_at timestamptz;

CREATE TABLE invitations (
    id          text PRIMARY KEY,
    token_hash  bytea NOT NULL UNIQUE,
    email       text NOT NULL,
    scope       text NOT NULL CHECK (scope IN ('org', 'guild')),
    scope_id    text NOT NULL,
    org_id      text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    guild_id    text REFERENCES guilds (id) ON DELETE CASCADE,
    role        text NOT NULL CHECK (role IN ('owner', 'operator', 'viewer')),
    invited_by  text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by text
);
CREATE INDEX invitations_email ON invitations (email) WHERE accepted_at IS NULL;

-- The audit log: one row per state-changing request, and per refused request that carried a
-- credential. It never holds a credential, a secret value, a note's content or a call's arguments.
-- org_id is not a foreign key: the rows outlive what they name.
CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor_kind  text NOT NULL,
    actor_id    text NOT NULL DEFAULT '',
    account_id  text NOT NULL DEFAULT '',
    operation   text NOT NULL,
    method      text NOT NULL,
    path        text NOT NULL,
    targets     jsonb NOT NULL DEFAULT '{}',
    org_id      text,
    guild_id    text,
    status      integer NOT NULL,
    request_id  text NOT NULL DEFAULT '',
    client_addr text NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_org ON audit_log (org_id, id DESC);
CREATE INDEX audit_log_at ON audit_log (at);

-- Change notices: every replica drops what it cached of a credential, an account or a run the
-- moment one of them changes (LISTEN guilds_identity).
-- Each trigger names its key's prefix and the column that completes it.
CREATE FUNCTION guilds_identity_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    PERFORM pg_notify('guilds_identity', TG_ARGV[0] || (to_jsonb(r) ->> TG_ARGV[1]));
    RETURN NULL;
END $$;

CREATE TRIGGER accounts_notify AFTER UPDATE OR DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION guilds_identity_notify('account:', 'id');
CREATE TRIGGER memberships_notify AFTER INSERT OR UPDATE OR DELETE ON memberships FOR EACH ROW EXECUTE FUNCTION guilds_identity_notify('account:', 'account_id');
CREATE TRIGGER sessions_notify AFTER UPDATE OF revoked_at OR DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION guilds_identity_notify('cred:session:', 'id');
CREATE TRIGGER api_tokens_notify AFTER INSERT OR UPDATE OF revoked_at, expires_at OR DELETE ON api_tokens FOR EACH ROW EXECUTE FUNCTION guilds_identity_notify('cred:token:', 'id');
CREATE TRIGGER agent_keys_notify AFTER INSERT OR UPDATE OF revoked_at, expires_at OR DELETE ON agent_keys FOR EACH ROW EXECUTE FUNCTION guilds_identity_notify('cred:agent_key:', 'id');
CREATE TRIGGER runs_notify AFTER UPDATE OF status OR DELETE ON runs FOR EACH ROW EXECUTE FUNCTION guilds_identity_notify('run:', 'id');
CREATE TRIGGER agents_notify AFTER DELETE ON agents FOR EACH ROW EXECUTE FUNCTION guilds_identity_notify('agent:', 'id');
