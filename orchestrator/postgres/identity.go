package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// accountColumns is the column list scanAccount reads.
const accountColumns = "a.id, a.email, a.name, a.password_hash IS NOT NULL, a.instance_admin, a.deactivated_at IS NOT NULL, a.created_at, a.updated_at, a.last_sign_in_at"

// scanAccount reads one account row (accountColumns).
func scanAccount(r pgx.Row, extra ...any) (orchestrator.Account, error) {
	var a orchestrator.Account
	dst := append([]any{&a.ID, &a.Email, &a.Name, &a.HasPassword, &a.InstanceAdmin, &a.Deactivated, &a.CreatedAt, &a.UpdatedAt, &a.LastSignInAt}, extra...)
	return a, r.Scan(dst...)
}

// membershipsOf is the subquery of an account's memberships as JSON (alias a for the account).
const membershipsOf = `coalesce((SELECT json_agg(json_build_object('account_id', m.account_id, 'scope', m.scope, 'scope_id', m.scope_id,
	'org_id', m.org_id, 'role', m.role, 'created_at', m.created_at) ORDER BY m.scope, m.scope_id) FROM memberships m WHERE m.account_id = a.id), '[]')`

// CredentialByHash finds a presented credential by its hash, with its account and memberships, in
// one round trip.
func (s *Store) CredentialByHash(ctx context.Context, kind string, hash []byte) (orchestrator.Credential, error) {
	c := orchestrator.Credential{Kind: kind}
	var members []byte
	var err error
	switch kind {
	case orchestrator.CredentialSession:
		var a orchestrator.Account
		var last time.Time
		err = s.pool.QueryRow(ctx, `SELECT s.id, s.csrf_token, s.created_at, s.last_seen_at, s.expires_at, s.revoked_at, `+accountColumns+`, `+membershipsOf+`
			FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = $1`, hash).
			Scan(&c.ID, &c.CSRF, &c.CreatedAt, &last, &c.ExpiresAt, &c.RevokedAt,
				&a.ID, &a.Email, &a.Name, &a.HasPassword, &a.InstanceAdmin, &a.Deactivated, &a.CreatedAt, &a.UpdatedAt, &a.LastSignInAt, &members)
		c.Account, c.LastSeenAt = &a, &last
	case orchestrator.CredentialToken:
		var a orchestrator.Account
		var t orchestrator.APIToken
		var scope, scopeID, role, orgID *string
		err = s.pool.QueryRow(ctx, `SELECT t.id, t.account_id, t.name, t.prefix, t.role, t.scope, t.scope_id, t.org_id, t.expires_at, t.created_at, t.last_used_at, t.revoked_at,
			`+accountColumns+`, `+membershipsOf+`
			FROM api_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = $1`, hash).
			Scan(&t.ID, &t.AccountID, &t.Name, &t.Prefix, &role, &scope, &scopeID, &orgID, &t.ExpiresAt, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt,
				&a.ID, &a.Email, &a.Name, &a.HasPassword, &a.InstanceAdmin, &a.Deactivated, &a.CreatedAt, &a.UpdatedAt, &a.LastSignInAt, &members)
		t.Role, t.OrgID = deref(role), deref(orgID)
		if scope != nil {
			t.Scope = &orchestrator.TokenScope{Kind: *scope, ID: deref(scopeID)}
		}
		c.ID, c.Account, c.Token, c.ExpiresAt, c.RevokedAt, c.CreatedAt, c.LastSeenAt = t.ID, &a, &t, t.ExpiresAt, t.RevokedAt, t.CreatedAt, t.LastUsedAt
	case orchestrator.CredentialAgentKey:
		var k orchestrator.AgentKey
		err = s.pool.QueryRow(ctx, `SELECT id, agent_id, guild_id, org_id, name, prefix, created_by, expires_at, created_at, last_used_at, revoked_at
			FROM agent_keys WHERE token_hash = $1`, hash).
			Scan(&k.ID, &k.AgentID, &k.GuildID, &k.OrgID, &k.Name, &k.Prefix, &k.CreatedBy, &k.ExpiresAt, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt)
		c.ID, c.Key, c.ExpiresAt, c.RevokedAt, c.CreatedAt, c.LastSeenAt = k.ID, &k, k.ExpiresAt, k.RevokedAt, k.CreatedAt, k.LastUsedAt
		c.Chain = orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: k.OrgID, GuildID: k.GuildID, AgentID: k.AgentID}
	case orchestrator.CredentialRunToken:
		var status string
		err = s.pool.QueryRow(ctx, `SELECT id, agent_id, guild_id, org_id, status, token_expires_at, created_at FROM runs WHERE token_hash = $1`, hash).
			Scan(&c.RunID, &c.Chain.AgentID, &c.Chain.GuildID, &c.Chain.OrgID, &status, &c.ExpiresAt, &c.CreatedAt)
		c.ID, c.RunOpen, c.Chain.Scope = c.RunID, status == orchestrator.RunOpen, orchestrator.ScopeAgent
	default:
		return c, orchestrator.Errorf(orchestrator.EINVALID, "unknown credential kind %q", kind)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return c, orchestrator.Errorf(orchestrator.ENOTFOUND, "no such %s", kind)
	}
	if err != nil {
		return c, fmt.Errorf("look up a %s: %w", kind, err)
	}
	if members != nil {
		if err := json.Unmarshal(members, &c.Members); err != nil {
			return c, fmt.Errorf("memberships of account %s: %w", c.Account.ID, err)
		}
	}
	return c, nil
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TouchCredential records a session's or token's last use.
func (s *Store) TouchCredential(ctx context.Context, kind, id string, at time.Time) error {
	var q string
	switch kind {
	case orchestrator.CredentialSession:
		q = "UPDATE sessions SET last_seen_at = greatest(last_seen_at, $2) WHERE id = $1"
	case orchestrator.CredentialToken:
		q = "UPDATE api_tokens SET last_used_at = greatest(coalesce(last_used_at, $2), $2) WHERE id = $1"
	case orchestrator.CredentialAgentKey:
		q = "UPDATE agent_keys SET last_used_at = greatest(coalesce(last_used_at, $2), $2) WHERE id = $1"
	default:
		return nil
	}
	if _, err := s.pool.Exec(ctx, q, id, at); err != nil {
		return fmt.Errorf("touch %s %s: %w", kind, id, err)
	}
	return nil
}

// uniqueViolation reports whether err is PostgreSQL's unique_violation on the constraint.
func uniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (constraint == "" || pe.ConstraintName == constraint)
}

// CreateAccount inserts an account; an email already taken is ECONFLICT.
func (s *Store) CreateAccount(ctx context.Context, a orchestrator.Account, passwordHash string) (orchestrator.Account, error) {
	_, err := s.pool.Exec(ctx, `INSERT INTO accounts (id, email, name, password_hash, instance_admin, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)`, a.ID, a.Email, a.Name, nullable(passwordHash), a.InstanceAdmin, a.CreatedAt)
	if uniqueViolation(err, "accounts_email_key") {
		return a, orchestrator.Errorf(orchestrator.ECONFLICT, "an account with email %s already exists", a.Email)
	}
	if err != nil {
		return a, fmt.Errorf("create account: %w", err)
	}
	return s.GetAccount(ctx, a.ID)
}

// GetAccount reads one account.
func (s *Store) GetAccount(ctx context.Context, id string) (orchestrator.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, "SELECT "+accountColumns+" FROM accounts a WHERE a.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, notFound("account", id)
	}
	if err != nil {
		return a, fmt.Errorf("get account %s: %w", id, err)
	}
	return a, nil
}

// ListAccounts lists every account, oldest first.
func (s *Store) ListAccounts(ctx context.Context) ([]orchestrator.Account, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+accountColumns+" FROM accounts a ORDER BY a.created_at, a.id")
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Account, error) { return scanAccount(r) })
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	return nonNil(out), nil
}

// CountAccounts counts every account.
func (s *Store) CountAccounts(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil {
		return 0, fmt.Errorf("count accounts: %w", err)
	}
	return n, nil
}

// UpdateAccount applies a patch; deactivating also signs every session out.
func (s *Store) UpdateAccount(ctx context.Context, id string, p orchestrator.AccountPatch, now time.Time) (orchestrator.Account, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE accounts SET name = coalesce($2, name), email = coalesce($3, email),
			instance_admin = coalesce($4, instance_admin), password_hash = coalesce($5, password_hash),
			deactivated_at = CASE WHEN $6 THEN coalesce(deactivated_at, $7) WHEN $8 THEN NULL ELSE deactivated_at END, updated_at = $7
			WHERE id = $1`, id, p.Name, p.Email, p.InstanceAdmin, p.PasswordHash, p.Deactivate, now, p.Reactivate)
		if uniqueViolation(err, "accounts_email_key") {
			return orchestrator.Errorf(orchestrator.ECONFLICT, "an account with email %s already exists", deref(p.Email))
		}
		if err != nil {
			return fmt.Errorf("update account %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return notFound("account", id)
		}
		if p.Deactivate {
			if _, err := tx.Exec(ctx, "UPDATE sessions SET revoked_at = $2 WHERE account_id = $1 AND revoked_at IS NULL", id, now); err != nil {
				return fmt.Errorf("sign the account's sessions out: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return orchestrator.Account{}, err
	}
	return s.GetAccount(ctx, id)
}

// Memberships lists an account's memberships.
func (s *Store) Memberships(ctx context.Context, accountID string) ([]orchestrator.Membership, error) {
	rows, err := s.pool.Query(ctx, `SELECT account_id, scope, scope_id, org_id, role, created_at FROM memberships
		WHERE account_id = $1 ORDER BY scope, scope_id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list memberships: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Membership, error) {
		var m orchestrator.Membership
		return m, r.Scan(&m.AccountID, &m.Scope, &m.ScopeID, &m.OrgID, &m.Role, &m.CreatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list memberships: %w", err)
	}
	return nonNil(out), nil
}

// SignInState reads an email's account, password hash and lockout in one round trip.
func (s *Store) SignInState(ctx context.Context, email string) (orchestrator.SignInState, error) {
	var st orchestrator.SignInState
	var id, hash, gotEmail, name *string
	var a orchestrator.Account
	var hasPw, admin, deact *bool
	var created, updated *time.Time
	var failures *int
	err := s.pool.QueryRow(ctx, `SELECT a.id, a.email, a.name, a.password_hash, a.password_hash IS NOT NULL, a.instance_admin, a.deactivated_at IS NOT NULL,
			a.created_at, a.updated_at, a.last_sign_in_at, f.failures, f.locked_until
		FROM (SELECT $1::text AS email) e
		LEFT JOIN accounts a ON a.email = e.email
		LEFT JOIN sign_in_failures f ON f.email = e.email`, email).
		Scan(&id, &gotEmail, &name, &hash, &hasPw, &admin, &deact, &created, &updated, &a.LastSignInAt, &failures, &st.LockedUntil)
	if err != nil {
		return st, fmt.Errorf("read the sign-in state of an email: %w", err)
	}
	if id != nil {
		a.ID, a.Email, a.Name, a.HasPassword, a.InstanceAdmin, a.Deactivated, a.CreatedAt, a.UpdatedAt = *id, *gotEmail, *name, *hasPw, *admin, *deact, *created, *updated
		st.Account, st.PasswordHash = &a, deref(hash)
	}
	if failures != nil {
		st.Failures = *failures
	}
	return st, nil
}

// RecordSignIn counts a failed sign-in of an email (locking it until lockedUntil when set), or
// clears the count and stamps the account's sign-in on a success.
func (s *Store) RecordSignIn(ctx context.Context, email string, ok bool, lockedUntil *time.Time, now time.Time) error {
	var err error
	if ok {
		b := &pgx.Batch{}
		b.Queue("DELETE FROM sign_in_failures WHERE email = $1", email)
		b.Queue("UPDATE accounts SET last_sign_in_at = $2 WHERE email = $1", email, now)
		err = s.pool.SendBatch(ctx, b).Close()
	} else {
		_, err = s.pool.Exec(ctx, `INSERT INTO sign_in_failures (email, failures, locked_until, updated_at) VALUES ($1, 1, $2, $3)
			ON CONFLICT (email) DO UPDATE SET failures = sign_in_failures.failures + 1, locked_until = $2, updated_at = $3`, email, lockedUntil, now)
	}
	if err != nil {
		return fmt.Errorf("record a sign-in: %w", err)
	}
	return nil
}

// CreateSession stores a new session.
func (s *Store) CreateSession(ctx context.Context, r orchestrator.SessionRow) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (id, token_hash, account_id, csrf_token, client_addr, user_agent, created_at, last_seen_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8)`, r.ID, r.Hash, r.AccountID, r.CSRF, r.Client, r.UserAgent, r.CreatedAt, r.ExpiresAt)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// RevokeSessions signs one session of the account out, or all of them when id is "".
func (s *Store) RevokeSessions(ctx context.Context, accountID, id string, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE sessions SET revoked_at = $3 WHERE account_id = $1 AND ($2 = '' OR id = $2) AND revoked_at IS NULL`, accountID, id, now)
	if err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	return nil
}

// PutMembership inserts or replaces an account's role at a scope.
func (s *Store) PutMembership(ctx context.Context, m orchestrator.Membership) (orchestrator.Membership, error) {
	var guild any
	if m.Scope == orchestrator.ScopeGuild {
		guild = m.ScopeID
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO memberships (account_id, scope, scope_id, org_id, guild_id, role, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (account_id, scope, scope_id) DO UPDATE SET role = EXCLUDED.role
		RETURNING created_at`, m.AccountID, m.Scope, m.ScopeID, m.OrgID, guild, m.Role, m.CreatedAt).Scan(&m.CreatedAt)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // the account, organisation or guild went away meanwhile
		return m, orchestrator.Errorf(orchestrator.ENOTFOUND, "account %q or %s %q not found", m.AccountID, m.Scope, m.ScopeID)
	}
	if err != nil {
		return m, fmt.Errorf("put membership: %w", err)
	}
	return m, nil
}

// DeleteMembership removes an account's role at a scope.
func (s *Store) DeleteMembership(ctx context.Context, accountID, scope, scopeID string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM memberships WHERE account_id = $1 AND scope = $2 AND scope_id = $3", accountID, scope, scopeID)
	if err != nil {
		return fmt.Errorf("delete membership: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "account %q is not a member of %s %q", accountID, scope, scopeID)
	}
	return nil
}

// ListMembers lists the memberships held at a scope, with each account's email and name.
func (s *Store) ListMembers(ctx context.Context, scope, scopeID string) ([]orchestrator.Member, error) {
	rows, err := s.pool.Query(ctx, `SELECT m.account_id, m.scope, m.scope_id, m.org_id, m.role, m.created_at, a.email, a.name
		FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.scope = $1 AND m.scope_id = $2 ORDER BY a.email`, scope, scopeID)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Member, error) {
		var m orchestrator.Member
		return m, r.Scan(&m.AccountID, &m.Scope, &m.ScopeID, &m.OrgID, &m.Role, &m.CreatedAt, &m.Email, &m.Name)
	})
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return nonNil(out), nil
}

// tokenColumns is the column list scanToken reads.
const tokenColumns = "id, account_id, name, prefix, role, scope, scope_id, org_id, expires_at, created_at, last_used_at, revoked_at"

// scanToken reads one api_tokens row (tokenColumns).
func scanToken(r pgx.Row) (orchestrator.APIToken, error) {
	var t orchestrator.APIToken
	var role, scope, scopeID, orgID *string
	err := r.Scan(&t.ID, &t.AccountID, &t.Name, &t.Prefix, &role, &scope, &scopeID, &orgID, &t.ExpiresAt, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	t.Role, t.OrgID = deref(role), deref(orgID)
	if scope != nil {
		t.Scope = &orchestrator.TokenScope{Kind: *scope, ID: deref(scopeID)}
	}
	return t, err
}

// CreateToken stores a new API token.
func (s *Store) CreateToken(ctx context.Context, t orchestrator.NewToken) (orchestrator.APIToken, error) {
	var scope, scopeID, guild any
	if t.Scope != nil {
		scope, scopeID = t.Scope.Kind, t.Scope.ID
		if t.Scope.Kind == orchestrator.ScopeGuild {
			guild = t.Scope.ID
		}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO api_tokens (id, token_hash, sealed, account_id, name, prefix, role, scope, scope_id, org_id, guild_id, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		t.ID, t.Hash, t.Sealed, t.AccountID, t.Name, t.Prefix, nullable(t.Role), scope, scopeID, nullable(t.OrgID), guild, t.ExpiresAt, t.CreatedAt)
	if err != nil {
		return t.APIToken, fmt.Errorf("create token: %w", err)
	}
	return scanToken(s.pool.QueryRow(ctx, "SELECT "+tokenColumns+" FROM api_tokens WHERE id = $1", t.ID))
}

// ListTokens lists an account's tokens, newest first.
func (s *Store) ListTokens(ctx context.Context, accountID string) ([]orchestrator.APIToken, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+tokenColumns+" FROM api_tokens WHERE account_id = $1 ORDER BY created_at DESC, id", accountID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.APIToken, error) { return scanToken(r) })
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return nonNil(out), nil
}

// RevokeToken revokes one of the account's tokens; another account's, or none, is ENOTFOUND.
func (s *Store) RevokeToken(ctx context.Context, accountID, id string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, $3) WHERE id = $2 AND account_id = $1", accountID, id, now)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("token", id)
	}
	return nil
}

// keyColumns is the column list scanKey reads.
const keyColumns = "id, agent_id, guild_id, org_id, name, prefix, created_by, expires_at, created_at, last_used_at, revoked_at"

// scanKey reads one agent_keys row (keyColumns).
func scanKey(r pgx.Row) (orchestrator.AgentKey, error) {
	var k orchestrator.AgentKey
	return k, r.Scan(&k.ID, &k.AgentID, &k.GuildID, &k.OrgID, &k.Name, &k.Prefix, &k.CreatedBy, &k.ExpiresAt, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt)
}

// CreateAgentKey stores a new agent key; a deleted agent is ENOTFOUND.
func (s *Store) CreateAgentKey(ctx context.Context, k orchestrator.NewAgentKey) (orchestrator.AgentKey, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO agent_keys (id, token_hash, sealed, agent_id, guild_id, org_id, name, prefix, created_by, expires_at, created_at)
		SELECT $1, $2, $3, id, guild_id, org_id, $5, $6, $7, $8, $9 FROM agents WHERE id = $4`,
		k.ID, k.Hash, k.Sealed, k.AgentID, k.Name, k.Prefix, k.CreatedBy, k.ExpiresAt, k.CreatedAt)
	if err != nil {
		return k.AgentKey, fmt.Errorf("create agent key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return k.AgentKey, notFound("agent", k.AgentID)
	}
	return scanKey(s.pool.QueryRow(ctx, "SELECT "+keyColumns+" FROM agent_keys WHERE id = $1", k.ID))
}

// ListAgentKeys lists an agent's keys, newest first.
func (s *Store) ListAgentKeys(ctx context.Context, agentID string) ([]orchestrator.AgentKey, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+keyColumns+" FROM agent_keys WHERE agent_id = $1 ORDER BY created_at DESC, id", agentID)
	if err != nil {
		return nil, fmt.Errorf("list agent keys: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.AgentKey, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("list agent keys: %w", err)
	}
	return nonNil(out), nil
}

// RevokeAgentKey revokes one of the agent's keys; another agent's, or none, is ENOTFOUND.
func (s *Store) RevokeAgentKey(ctx context.Context, agentID, id string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, "UPDATE agent_keys SET revoked_at = coalesce(revoked_at, $3) WHERE id = $2 AND agent_id = $1", agentID, id, now)
	if err != nil {
		return fmt.Errorf("revoke agent key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("agent key", id)
	}
	return nil
}

// SetRunToken stores a run's token.
func (s *Store) SetRunToken(ctx context.Context, runID string, hash, sealed []byte, expires time.Time) error {
	tag, err := s.pool.Exec(ctx, "UPDATE runs SET token_hash = $2, token_sealed = $3, token_expires_at = $4 WHERE id = $1", runID, hash, sealed, expires)
	if err != nil {
		return fmt.Errorf("store the run token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("run", runID)
	}
	return nil
}

// CredentialsReaching returns the sealed values of the credentials that reach the agent's runs:
// the run's token, the agent's live keys, and the live API tokens of accounts whose roles reach the
// agent (an instance admin's reach everything), narrowed by each token's scope.
func (s *Store) CredentialsReaching(ctx context.Context, chain orchestrator.Chain, runID string) ([]orchestrator.SealedCredential, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT 'run_token', id, token_sealed FROM runs WHERE id = $4 AND token_sealed IS NOT NULL
		UNION ALL
		SELECT 'agent_key', id, sealed FROM agent_keys WHERE agent_id = $3 AND revoked_at IS NULL
		UNION ALL
		SELECT 'token', t.id, t.sealed FROM api_tokens t JOIN accounts a ON a.id = t.account_id
		WHERE t.revoked_at IS NULL AND a.deactivated_at IS NULL
		  AND (t.scope IS NULL OR (t.scope = 'org' AND t.scope_id = $1) OR (t.scope = 'guild' AND t.scope_id = $2))
		  AND (a.instance_admin OR EXISTS (SELECT 1 FROM memberships m WHERE m.account_id = a.id
		       AND ((m.scope = 'org' AND m.scope_id = $1) OR (m.scope = 'guild' AND m.scope_id = $2))))`,
		chain.OrgID, chain.GuildID, chain.AgentID, runID)
	if err != nil {
		return nil, fmt.Errorf("read credentials reaching agent %s: %w", chain.AgentID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.SealedCredential, error) {
		var c orchestrator.SealedCredential
		return c, r.Scan(&c.Kind, &c.ID, &c.Sealed)
	})
	if err != nil {
		return nil, fmt.Errorf("read credentials reaching agent %s: %w", chain.AgentID, err)
	}
	return out, nil
}

// invitationColumns is the column list scanInvitation reads.
const invitationColumns = "id, email, scope, scope_id, org_id, role, invited_by, created_at, expires_at, accepted_at"

// scanInvitation reads one invitations row (invitationColumns).
func scanInvitation(r pgx.Row) (orchestrator.Invitation, error) {
	var i orchestrator.Invitation
	return i, r.Scan(&i.ID, &i.Email, &i.Scope.Kind, &i.Scope.ID, &i.OrgID, &i.Role, &i.InvitedBy, &i.CreatedAt, &i.ExpiresAt, &i.AcceptedAt)
}

// CreateInvitation stores a new invitation.
func (s *Store) CreateInvitation(ctx context.Context, inv orchestrator.NewInvitation) (orchestrator.Invitation, error) {
	var guild any
	if inv.Scope.Kind == orchestrator.ScopeGuild {
		guild = inv.Scope.ID
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO invitations (id, token_hash, email, scope, scope_id, org_id, guild_id, role, invited_by, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		inv.ID, inv.Hash, inv.Email, inv.Scope.Kind, inv.Scope.ID, inv.OrgID, guild, inv.Role, inv.InvitedBy, inv.CreatedAt, inv.ExpiresAt)
	if err != nil {
		return inv.Invitation, fmt.Errorf("create invitation: %w", err)
	}
	return inv.Invitation, nil
}

// InvitationByHash finds an invitation by its token's hash.
func (s *Store) InvitationByHash(ctx context.Context, hash []byte) (orchestrator.Invitation, error) {
	i, err := scanInvitation(s.pool.QueryRow(ctx, "SELECT "+invitationColumns+" FROM invitations WHERE token_hash = $1", hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return i, orchestrator.Errorf(orchestrator.ENOTFOUND, "no such invitation")
	}
	if err != nil {
		return i, fmt.Errorf("find invitation: %w", err)
	}
	return i, nil
}

// AcceptInvitation makes the new account (when given), takes the invitation once and gives the
// account its role, in one transaction.
func (s *Store) AcceptInvitation(ctx context.Context, w orchestrator.AcceptWrite) (orchestrator.Membership, error) {
	var m orchestrator.Membership
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if a := w.NewAccount; a != nil {
			_, err := tx.Exec(ctx, `INSERT INTO accounts (id, email, name, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
				a.ID, a.Email, a.Name, nullable(w.PasswordHash), w.Now)
			if uniqueViolation(err, "accounts_email_key") {
				return orchestrator.Errorf(orchestrator.ECONFLICT, "an account with email %s was made meanwhile: accept with its password", a.Email)
			}
			if err != nil {
				return fmt.Errorf("create the invited account: %w", err)
			}
		}
		var guild *string
		err := tx.QueryRow(ctx, `UPDATE invitations SET accepted_at = $2, accepted_by = $3
			WHERE id = $1 AND accepted_at IS NULL AND expires_at > $2
			RETURNING scope, scope_id, org_id, guild_id, role`, w.InvitationID, w.Now, w.AccountID).
			Scan(&m.Scope, &m.ScopeID, &m.OrgID, &guild, &m.Role)
		if errors.Is(err, pgx.ErrNoRows) {
			return orchestrator.Errorf(orchestrator.ECONFLICT, "this invitation was already accepted or has expired")
		}
		if err != nil {
			return fmt.Errorf("accept invitation: %w", err)
		}
		m.AccountID, m.CreatedAt = w.AccountID, w.Now
		_, err = tx.Exec(ctx, `INSERT INTO memberships (account_id, scope, scope_id, org_id, guild_id, role, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (account_id, scope, scope_id) DO UPDATE SET role = EXCLUDED.role`,
			m.AccountID, m.Scope, m.ScopeID, m.OrgID, guild, m.Role, m.CreatedAt)
		if err != nil {
			return fmt.Errorf("give the invited role: %w", err)
		}
		return nil
	})
	return m, err
}

// PendingInvitations lists an email's open invitations.
func (s *Store) PendingInvitations(ctx context.Context, email string, now time.Time) ([]orchestrator.Invitation, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+invitationColumns+" FROM invitations WHERE email = $1 AND accepted_at IS NULL AND expires_at > $2 ORDER BY created_at", email, now)
	if err != nil {
		return nil, fmt.Errorf("list invitations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Invitation, error) { return scanInvitation(r) })
	if err != nil {
		return nil, fmt.Errorf("list invitations: %w", err)
	}
	return nonNil(out), nil
}

// AppendAudit writes audit rows in one round trip.
func (s *Store) AppendAudit(ctx context.Context, rows []orchestrator.AuditEntry) error {
	b := &pgx.Batch{}
	for _, e := range rows {
		targets, err := json.Marshal(nonNilMap(e.Targets))
		if err != nil {
			return fmt.Errorf("audit targets: %w", err)
		}
		b.Queue(`INSERT INTO audit_log (at, actor_kind, actor_id, account_id, operation, method, path, targets, org_id, guild_id, status, request_id, client_addr)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			e.At, e.ActorKind, e.ActorID, e.AccountID, e.Operation, e.Method, e.Path, targets, nullable(e.OrgID), nullable(e.GuildID), e.Status, e.RequestID, e.ClientAddr)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write audit rows: %w", err)
	}
	return nil
}

// ListAudit reads the audit log, newest first.
func (s *Store) ListAudit(ctx context.Context, q orchestrator.AuditQuery) ([]orchestrator.AuditEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, at, actor_kind, actor_id, account_id, operation, method, path, targets, coalesce(org_id, ''), coalesce(guild_id, ''),
			status, request_id, client_addr
		FROM audit_log
		WHERE ($1 = '' OR org_id = $1) AND ($2 = '' OR actor_id = $2 OR account_id = $2) AND ($3 = '' OR operation = $3)
		  AND ($4::timestamptz IS NULL OR at >= $4) AND ($5 = 0 OR id < $5)
		ORDER BY id DESC LIMIT $6`, q.OrgID, q.Actor, q.Operation, q.Since, q.After, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.AuditEntry, error) {
		var e orchestrator.AuditEntry
		var targets []byte
		err := r.Scan(&e.ID, &e.At, &e.ActorKind, &e.ActorID, &e.AccountID, &e.Operation, &e.Method, &e.Path, &targets, &e.OrgID, &e.GuildID,
			&e.Status, &e.RequestID, &e.ClientAddr)
		if err == nil {
			err = json.Unmarshal(targets, &e.Targets)
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return nonNil(out), nil
}
