-- OpenID Connect single sign-ons in flight (issue 30): each start stores its state here for 10
-- minutes, so the callback may reach any replica. The state and the nonce are stored as their
-- SHA-256 only and the PKCE verifier sealed; a callback takes the row once (used_at), and rows are
-- kept a day past their expiry so a late or repeated callback can be told what happened.
CREATE TABLE oidc_states (
    state_hash   bytea PRIMARY KEY,
    nonce_hash   bytea NOT NULL,
    verifier     bytea NOT NULL,
    return_to    text NOT NULL,
    redirect_uri text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz
);
CREATE INDEX oidc_states_expires ON oidc_states (expires_at);
