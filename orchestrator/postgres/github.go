package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// BeginGitHub creates the pending GitHub connection at owner (or retries a pending or disconnected
// one in place; a connected one is ECONFLICT) and stores the Connect's state, in one transaction.
func (s *Store) BeginGitHub(ctx context.Context, srv orchestrator.MCPServer, owner orchestrator.Chain, newID string, stateHash []byte, now, expires time.Time) (string, bool, error) {
	var id string
	created := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if id, created, err = claimConnection(ctx, tx, srv, owner, newID, now, "begin GitHub connect"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO github_states (state_hash, connection_id, created, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
			stateHash, id, created, now, expires); err != nil {
			return fmt.Errorf("begin GitHub connect: store the state: %w", err)
		}
		return nil
	})
	return id, created, err
}

// GitHubState reads an unexpired Connect state with its connection; none is ENOTFOUND.
func (s *Store) GitHubState(ctx context.Context, stateHash []byte, now time.Time) (orchestrator.GitHubState, error) {
	var st orchestrator.GitHubState
	err := s.pool.QueryRow(ctx, `SELECT g.connection_id, g.created, g.picker, c.status, c.scope, COALESCE(c.org_id, ''), COALESCE(c.guild_id, ''), COALESCE(c.agent_id, ''), g.expires_at
		FROM github_states g JOIN mcp_connections c ON c.id = g.connection_id WHERE g.state_hash = $1 AND g.expires_at > $2`, stateHash, now).
		Scan(&st.ConnectionID, &st.Created, &st.Picker, &st.Status, &st.Owner.Scope, &st.Owner.OrgID, &st.Owner.GuildID, &st.Owner.AgentID, &st.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, orchestrator.Errorf(orchestrator.ENOTFOUND, "the GitHub login state is unknown, used or expired")
	}
	if err != nil {
		return st, fmt.Errorf("read GitHub state: %w", err)
	}
	return st, nil
}

// TakeGitHubState deletes a state, reporting whether it was still there (a state is used once).
func (s *Store) TakeGitHubState(ctx context.Context, stateHash []byte) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM github_states WHERE state_hash = $1`, stateHash)
	if err != nil {
		return false, fmt.Errorf("take GitHub state: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// SetGitHubPicker keeps the installations the user reached on the state, for the picker.
func (s *Store) SetGitHubPicker(ctx context.Context, stateHash, picker []byte) error {
	if _, err := s.pool.Exec(ctx, `UPDATE github_states SET picker = $2 WHERE state_hash = $1`, stateHash, picker); err != nil {
		return fmt.Errorf("store the GitHub picker: %w", err)
	}
	return nil
}

// DeletePendingConnection deletes a connection that is still pending (a refused callback's).
func (s *Store) DeletePendingConnection(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM mcp_connections WHERE id = $1 AND status = 'pending'`, id); err != nil {
		return fmt.Errorf("delete pending connection %s: %w", id, err)
	}
	return nil
}

// CompleteGitHub stores the installation, marks the connection connected with the account as
// account_hint, drops its states and writes the enabled binding at the owner, in one transaction.
func (s *Store) CompleteGitHub(ctx context.Context, connID string, owner orchestrator.Chain, installationID int64, account string, now time.Time) (orchestrator.Connection, error) {
	org, guild, agent := ownerColumns(owner)
	var out orchestrator.Connection
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE mcp_connections SET status = 'connected', account_hint = $2, verified_at = $3, updated_at = $3, list_error = ''
			WHERE id = $1`, connID, account, now)
		if err != nil {
			return fmt.Errorf("complete GitHub connect: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return orchestrator.Errorf(orchestrator.ENOTFOUND, "connection %s was deleted meanwhile; Connect again", connID)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO github_installations (connection_id, installation_id, account, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (connection_id) DO UPDATE SET installation_id = EXCLUDED.installation_id, account = EXCLUDED.account, updated_at = EXCLUDED.updated_at`,
			connID, installationID, account, now); err != nil {
			return fmt.Errorf("complete GitHub connect: installation: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM github_states WHERE connection_id = $1`, connID); err != nil {
			return fmt.Errorf("complete GitHub connect: states: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bindings (scope, scope_id, catalog_kind, catalog_id, enabled, connection_id, org_id, guild_id, agent_id, created_at, updated_at)
			VALUES ($1, $2, 'mcp', 'github', true, $3, $4, $5, $6, $7, $7)
			ON CONFLICT (scope, scope_id, catalog_kind, catalog_id) DO UPDATE SET enabled = true, connection_id = EXCLUDED.connection_id, updated_at = EXCLUDED.updated_at`,
			owner.Scope, owner.ID(), connID, org, guild, agent, now); err != nil {
			return fmt.Errorf("complete GitHub connect: enabled binding: %w", err)
		}
		out, err = scanConnection(tx.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", connID))
		return err
	})
	return out, err
}

// GitHubInstallation returns a GitHub login's installation id and account; none is ENOTFOUND.
func (s *Store) GitHubInstallation(ctx context.Context, connID string) (int64, string, error) {
	var id int64
	var account string
	err := s.pool.QueryRow(ctx, `SELECT installation_id, account FROM github_installations WHERE connection_id = $1`, connID).Scan(&id, &account)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", orchestrator.Errorf(orchestrator.ENOTFOUND, "connection %s has no GitHub installation: it is not a connected GitHub login", connID)
	}
	if err != nil {
		return 0, "", fmt.Errorf("read GitHub installation: %w", err)
	}
	return id, account, nil
}

// GitHubLogins lists the GitHub connections of an organisation (at every scope), oldest first.
func (s *Store) GitHubLogins(ctx context.Context, orgID string) ([]orchestrator.Connection, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+connectionColumns+` FROM mcp_connections c
		WHERE c.server_slug = 'github' AND c.org_id = $1 ORDER BY c.created_at, c.id`, orgID)
	if err != nil {
		return nil, fmt.Errorf("list GitHub logins: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Connection, error) { return scanConnection(r) })
	if err != nil {
		return nil, fmt.Errorf("list GitHub logins: %w", err)
	}
	return nonNil(out), nil
}

// SetGitHubSelection replaces a login's selection and, for a guild-owned login, the guild
// repositories mirrored from it, in one transaction.
func (s *Store) SetGitHubSelection(ctx context.Context, conn orchestrator.Connection, repos []orchestrator.GitHubRepo, newID func() string, now time.Time) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM github_selected WHERE connection_id = $1`, conn.ID); err != nil {
			return fmt.Errorf("store the selection: %w", err)
		}
		for i, r := range repos {
			if _, err := tx.Exec(ctx, `INSERT INTO github_selected (connection_id, github_id, name, full_name, url, default_branch, position)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, conn.ID, r.GitHubID, r.Name, r.FullName, r.URL, r.DefaultBranch, i); err != nil {
				return fmt.Errorf("store the selection: %w", err)
			}
		}
		if conn.Scope != orchestrator.ScopeGuild {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM guild_repositories WHERE connection_id = $1`, conn.ID); err != nil {
			return fmt.Errorf("mirror the selection: %w", err)
		}
		for _, r := range repos {
			_, err := tx.Exec(ctx, `INSERT INTO guild_repositories (id, guild_id, name, url, default_branch, connection_id, github_id, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, newID(), conn.GuildID, r.Name, r.URL, r.DefaultBranch, conn.ID, r.GitHubID, now)
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" {
				return orchestrator.Errorf(orchestrator.ECONFLICT, "guild %s already has a repository named %s; remove it (DELETE /api/guilds/%s/repositories) or pick another", conn.GuildID, r.Name, conn.GuildID)
			}
			if err != nil {
				return fmt.Errorf("mirror the selection: %w", err)
			}
		}
		return nil
	})
}

// GitHubSelection returns a login's selection in its order.
func (s *Store) GitHubSelection(ctx context.Context, connID string) ([]orchestrator.GitHubRepo, error) {
	rows, err := s.pool.Query(ctx, `SELECT github_id, name, full_name, url, default_branch FROM github_selected WHERE connection_id = $1 ORDER BY position`, connID)
	if err != nil {
		return nil, fmt.Errorf("read the selection: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.GitHubRepo, error) {
		var g orchestrator.GitHubRepo
		err := r.Scan(&g.GitHubID, &g.Name, &g.FullName, &g.URL, &g.DefaultBranch)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the selection: %w", err)
	}
	return out, nil
}

// RenameGitHubRepo records a repository's current full name and URL (by its GitHub id) in the
// login's selection and in the guild repositories mirrored from it.
func (s *Store) RenameGitHubRepo(ctx context.Context, connID string, r orchestrator.GitHubRepo) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE github_selected SET full_name = $3, url = $4 WHERE connection_id = $1 AND github_id = $2`, connID, r.GitHubID, r.FullName, r.URL); err != nil {
			return fmt.Errorf("record a rename: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE guild_repositories SET url = $3 WHERE (connection_id = $1 OR via_connection_id = $1) AND github_id = $2`, connID, r.GitHubID, r.URL); err != nil {
			return fmt.Errorf("record a rename: %w", err)
		}
		return nil
	})
}

// GuildRepositories lists a guild's repositories by name.
func (s *Store) GuildRepositories(ctx context.Context, guildID string) ([]orchestrator.GuildRepository, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, guild_id, name, url, default_branch, COALESCE(connection_id, ''), COALESCE(github_id, 0), COALESCE(via_connection_id, ''), created_at
		FROM guild_repositories WHERE guild_id = $1 ORDER BY name`, guildID)
	if err != nil {
		return nil, fmt.Errorf("list guild repositories: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.GuildRepository, error) {
		var g orchestrator.GuildRepository
		err := r.Scan(&g.ID, &g.GuildID, &g.Name, &g.URL, &g.DefaultBranch, &g.ConnectionID, &g.GitHubID, &g.ViaConnection, &g.CreatedAt)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("list guild repositories: %w", err)
	}
	return nonNil(out), nil
}

// AddGuildRepository adds an extra git URL to a guild; a name the guild has is ECONFLICT.
func (s *Store) AddGuildRepository(ctx context.Context, r orchestrator.GuildRepository) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO guild_repositories (id, guild_id, name, url, default_branch, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		r.ID, r.GuildID, r.Name, r.URL, r.DefaultBranch, r.CreatedAt)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return orchestrator.Errorf(orchestrator.ECONFLICT, "guild %s already has a repository named %s; pick another name", r.GuildID, r.Name)
	}
	if err != nil {
		return fmt.Errorf("add guild repository: %w", err)
	}
	return nil
}

// DeleteGuildRepository removes an extra git URL of a guild (a mirrored one goes with its
// login's selection); none is ENOTFOUND.
func (s *Store) DeleteGuildRepository(ctx context.Context, guildID, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM guild_repositories WHERE guild_id = $1 AND id = $2 AND connection_id IS NULL`, guildID, id)
	if err != nil {
		return fmt.Errorf("delete guild repository: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "guild %s has no extra repository %s (one mirrored from a GitHub login changes with PUT /api/mcp/connections/{id}/github/selected)", guildID, id)
	}
	return nil
}

// SaveAgentTokens replaces an agent's stored installation tokens, in one statement.
func (s *Store) SaveAgentTokens(ctx context.Context, agentID string, toks []orchestrator.GitHubAgentToken, now time.Time) error {
	conns, sealed, repos, exps := make([]string, len(toks)), make([][]byte, len(toks)), make([]string, len(toks)), make([]time.Time, len(toks))
	for i, t := range toks {
		conns[i], sealed[i], repos[i], exps[i] = t.ConnectionID, t.Sealed, string(t.Repositories), t.ExpiresAt
	}
	_, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM github_agent_tokens WHERE agent_id = $1 AND connection_id <> ALL($2::text[]))
		INSERT INTO github_agent_tokens (agent_id, connection_id, sealed, repositories, expires_at, updated_at)
		SELECT $1, c, t, r::jsonb, e, $6 FROM unnest($2::text[], $3::bytea[], $4::text[], $5::timestamptz[]) AS x(c, t, r, e)
		ON CONFLICT (agent_id, connection_id) DO UPDATE SET sealed = EXCLUDED.sealed, repositories = EXCLUDED.repositories,
			expires_at = EXCLUDED.expires_at, updated_at = EXCLUDED.updated_at`, agentID, conns, sealed, repos, exps, now)
	if err != nil {
		return fmt.Errorf("store the agent's GitHub tokens: %w", err)
	}
	return nil
}

// AgentTokens reads an agent's stored installation tokens (still sealed).
func (s *Store) AgentTokens(ctx context.Context, agentID string) ([]orchestrator.GitHubAgentToken, error) {
	rows, err := s.pool.Query(ctx, `SELECT agent_id, connection_id, sealed, repositories, expires_at FROM github_agent_tokens WHERE agent_id = $1 ORDER BY connection_id`, agentID)
	if err != nil {
		return nil, fmt.Errorf("read the agent's GitHub tokens: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.GitHubAgentToken, error) {
		var t orchestrator.GitHubAgentToken
		err := r.Scan(&t.AgentID, &t.ConnectionID, &t.Sealed, &t.Repositories, &t.ExpiresAt)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the agent's GitHub tokens: %w", err)
	}
	return out, nil
}

// ResolveGuildRepository records that a login's installation reaches an extra guild URL, with
// GitHub's id for it.
func (s *Store) ResolveGuildRepository(ctx context.Context, id, connID string, githubID int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE guild_repositories SET via_connection_id = $2, github_id = $3 WHERE id = $1 AND connection_id IS NULL`, id, connID, githubID); err != nil {
		return fmt.Errorf("record the login reaching a guild repository: %w", err)
	}
	return nil
}
