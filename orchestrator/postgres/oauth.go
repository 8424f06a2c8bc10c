package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// This file stores browser OAuth logins: registered clients, pending states, and the grant each
// OAuth connection refreshes under its row lock.

// OAuthClientFor returns the client registered for a server at an issuer for a redirect URI, with
// its secret still sealed; none is ENOTFOUND.
func (s *Store) OAuthClientFor(ctx context.Context, server, issuer, redirectURI string) (orchestrator.OAuthClient, []byte, error) {
	c := orchestrator.OAuthClient{Server: server, Issuer: issuer, RedirectURI: redirectURI}
	var secret []byte
	err := s.pool.QueryRow(ctx, `SELECT id, client_id, client_secret, auth_method, registered_at FROM mcp_oauth_clients
		WHERE server_slug = $1 AND issuer = $2 AND redirect_uri = $3`, server, issuer, redirectURI).Scan(&c.ID, &c.ClientID, &secret, &c.AuthMethod, &c.RegisteredAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil, notFound("OAuth client of "+server+" at", issuer)
	}
	if err != nil {
		return c, nil, fmt.Errorf("read the OAuth client of %s: %w", server, err)
	}
	return c, secret, nil
}

// SaveOAuthClient stores a registered client; when another registration for the same server,
// issuer and redirect URI was stored first, that one is kept and returned.
func (s *Store) SaveOAuthClient(ctx context.Context, c orchestrator.OAuthClient, sealedSecret []byte) (orchestrator.OAuthClient, []byte, error) {
	_, err := s.pool.Exec(ctx, `INSERT INTO mcp_oauth_clients (server_slug, issuer, redirect_uri, client_id, client_secret, auth_method, registered_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (server_slug, issuer, redirect_uri) DO NOTHING`,
		c.Server, c.Issuer, c.RedirectURI, c.ClientID, sealedSecret, c.AuthMethod, c.RegisteredAt)
	if err != nil {
		return c, nil, fmt.Errorf("store the OAuth client of %s: %w", c.Server, err)
	}
	return s.OAuthClientFor(ctx, c.Server, c.Issuer, c.RedirectURI)
}

// BeginOAuth creates the pending connection (or takes the pending or disconnected one of the same
// server and owner) and stores the login's state, in one transaction; a connected login is
// ECONFLICT.
func (s *Store) BeginOAuth(ctx context.Context, w orchestrator.OAuthBegin) (orchestrator.Connection, error) {
	var out orchestrator.Connection
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		id, _, err := claimConnection(ctx, tx, w.Server, w.Owner, w.NewID, w.Now, "begin OAuth login")
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM mcp_oauth_states WHERE expires_at < $1", w.Now.Add(-keepExpired)); err != nil {
			return fmt.Errorf("begin OAuth login: drop expired states: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO mcp_oauth_states (state_hash, connection_id, client_ref, verifier, resource, issuer, token_endpoint, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, w.StateHash, id, w.Client.ID, w.SealVerifier(id), w.Meta.Resource, w.Meta.Issuer,
			w.Meta.TokenEndpoint, w.Now, w.Now.Add(orchestrator.OAuthStateTTL)); err != nil {
			return fmt.Errorf("begin OAuth login: store the state: %w", err)
		}
		out, err = scanConnection(tx.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", id))
		return err
	})
	return out, err
}

// TakeOAuthState removes a login's state and returns it: a state is good for one callback. An
// unknown (or already taken) state is ENOTFOUND; the caller checks the expiry.
func (s *Store) TakeOAuthState(ctx context.Context, stateHash []byte) (orchestrator.OAuthPending, error) {
	var p orchestrator.OAuthPending
	var status *string
	err := s.pool.QueryRow(ctx, `WITH taken AS (DELETE FROM mcp_oauth_states WHERE state_hash = $1 RETURNING *)
		SELECT t.connection_id, c.status, c.server_slug, c.scope, c.scope_id, COALESCE(c.org_id, ''), COALESCE(c.guild_id, ''), COALESCE(c.agent_id, ''),
			t.verifier, t.resource, t.issuer, t.token_endpoint, t.created_at, t.expires_at,
			k.id, k.redirect_uri, k.client_id, k.client_secret, k.auth_method
		FROM taken t JOIN mcp_connections c ON c.id = t.connection_id JOIN mcp_oauth_clients k ON k.id = t.client_ref`, stateHash).Scan(
		&p.ConnectionID, &status, &p.Server, &p.Owner.Scope, new(string), &p.Owner.OrgID, &p.Owner.GuildID, &p.Owner.AgentID,
		&p.SealedVerifier, &p.Meta.Resource, &p.Meta.Issuer, &p.Meta.TokenEndpoint, &p.CreatedAt, &p.ExpiresAt,
		&p.Client.ID, &p.Client.RedirectURI, &p.Client.ClientID, &p.SealedSecret, &p.Client.AuthMethod)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, orchestrator.Errorf(orchestrator.ENOTFOUND, "no pending login has this state")
	}
	if err != nil {
		return p, fmt.Errorf("take the OAuth state: %w", err)
	}
	if status != nil {
		p.Status = *status
	}
	p.Client.Server, p.Client.Issuer = p.Server, p.Meta.Issuer
	return p, nil
}

// AbandonOAuth deletes a connection whose login failed when it is still pending (a new login);
// a disconnected one, or one holding tokens already, keeps its row and bindings. It reports
// whether it deleted.
func (s *Store) AbandonOAuth(ctx context.Context, connectionID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM mcp_connections WHERE id = $1 AND status = 'pending'
		AND NOT EXISTS (SELECT 1 FROM mcp_oauth_logins l WHERE l.connection_id = $1)`, connectionID) // a held login (Drive before its folder) stays
	if err != nil {
		return false, fmt.Errorf("drop the pending connection %s: %w", connectionID, err)
	}
	return tag.RowsAffected() > 0, nil
}

// CompleteOAuth stores a successful callback in one transaction: the sealed tokens, status
// connected, the grant refresh uses, the listed tools and the enabled binding at the owner. A
// connection deleted meanwhile is ENOTFOUND; one another callback connected first is ECONFLICT.
// Hold stores only the tokens and the grant (the connection stays pending); without Seal it
// connects a login held earlier, with its settings.
func (s *Store) CompleteOAuth(ctx context.Context, w orchestrator.OAuthComplete) (orchestrator.Connection, error) {
	var out orchestrator.Connection
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, "SELECT status FROM mcp_connections WHERE id = $1 FOR UPDATE", w.ConnectionID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return orchestrator.Errorf(orchestrator.ENOTFOUND, "connection %s was deleted while its login was under way; nothing was connected", w.ConnectionID)
		}
		if err != nil {
			return fmt.Errorf("complete OAuth login: %w", err)
		}
		if status == orchestrator.ConnConnected {
			return orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s was connected by another login meanwhile; this one changed nothing", w.ConnectionID)
		}
		if w.Seal == nil {
			return connectHeld(ctx, tx, w, &out)
		}
		if w.Hold {
			// pending again when it was disconnected: a re-login waits for its folder too, its bindings intact
			if _, err := tx.Exec(ctx, "UPDATE mcp_connections SET status = 'pending', credentials = $2, updated_at = $3 WHERE id = $1", w.ConnectionID, w.Seal(w.ConnectionID), w.Now); err != nil {
				return fmt.Errorf("hold the OAuth login: %w", err)
			}
		} else if _, err := tx.Exec(ctx, `UPDATE mcp_connections SET status = 'connected', account_hint = $2, credentials = $3, verified_at = $4, listed_at = $4,
			updated_at = $4, transport = $5, list_error = '', relist_until = NULL WHERE id = $1`,
			w.ConnectionID, w.AccountHint, w.Seal(w.ConnectionID), w.Now, w.Transport); err != nil {
			return fmt.Errorf("complete OAuth login: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO mcp_oauth_logins (connection_id, client_ref, resource, issuer, token_endpoint, expires_at, issued_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (connection_id) DO UPDATE SET client_ref = EXCLUDED.client_ref, resource = EXCLUDED.resource,
			issuer = EXCLUDED.issuer, token_endpoint = EXCLUDED.token_endpoint, expires_at = EXCLUDED.expires_at, issued_at = EXCLUDED.issued_at, refreshed_at = NULL`,
			w.ConnectionID, w.ClientID, w.Meta.Resource, w.Meta.Issuer, w.Meta.TokenEndpoint, w.ExpiresAt, w.Now); err != nil {
			return fmt.Errorf("complete OAuth login: store the grant: %w", err)
		}
		if w.Hold {
			out, err = scanConnection(tx.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", w.ConnectionID))
			return err
		}
		return connectListed(ctx, tx, w, &out)
	})
	return out, err
}

// connectHeld connects a login whose tokens are held already (Drive once its folder is picked):
// status, account hint and settings, then the listing and the binding.
func connectHeld(ctx context.Context, tx pgx.Tx, w orchestrator.OAuthComplete, out *orchestrator.Connection) error {
	settings := w.Settings
	if settings == nil {
		settings = []byte("{}")
	}
	if _, err := tx.Exec(ctx, `UPDATE mcp_connections SET status = 'connected', account_hint = $2, settings = $3, verified_at = $4, listed_at = $4,
		updated_at = $4, transport = $5, list_error = '', relist_until = NULL WHERE id = $1`,
		w.ConnectionID, w.AccountHint, settings, w.Now, w.Transport); err != nil {
		return fmt.Errorf("complete the held OAuth login: %w", err)
	}
	return connectListed(ctx, tx, w, out)
}

// connectListed writes a completed login's listed tools and enabled binding, and reads it back.
func connectListed(ctx context.Context, tx pgx.Tx, w orchestrator.OAuthComplete, out *orchestrator.Connection) error {
	org, guild, agent := ownerColumns(w.Owner)
	if _, err := writeListing(ctx, tx, w.Server, w.ConnectionID, w.Owner, w.Tools, w.Now); err != nil {
		return fmt.Errorf("complete OAuth login: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bindings (scope, scope_id, catalog_kind, catalog_id, enabled, connection_id, org_id, guild_id, agent_id, created_at, updated_at)
		VALUES ($1, $2, 'mcp', $3, true, $4, $5, $6, $7, $8, $8)
		ON CONFLICT (scope, scope_id, catalog_kind, catalog_id) DO UPDATE SET enabled = true, connection_id = EXCLUDED.connection_id, updated_at = EXCLUDED.updated_at`,
		w.Owner.Scope, w.Owner.ID(), w.Server.Slug, w.ConnectionID, org, guild, agent, w.Now); err != nil {
		return fmt.Errorf("complete OAuth login: enabled binding: %w", err)
	}
	c, err := scanConnection(tx.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", w.ConnectionID))
	*out = c
	return err
}

const grantQuery = `SELECT c.id, c.server_slug, c.status, c.credentials, l.expires_at, l.issued_at, l.resource, l.issuer, l.token_endpoint,
		k.id, k.redirect_uri, k.client_id, k.client_secret, k.auth_method
	FROM mcp_connections c JOIN mcp_oauth_logins l ON l.connection_id = c.id JOIN mcp_oauth_clients k ON k.id = l.client_ref
	WHERE c.id = $1`

func scanGrant(r pgx.Row) (orchestrator.OAuthGrant, error) {
	var g orchestrator.OAuthGrant
	err := r.Scan(&g.ConnectionID, &g.Server, &g.Status, &g.Sealed, &g.ExpiresAt, &g.IssuedAt, &g.Meta.Resource, &g.Meta.Issuer, &g.Meta.TokenEndpoint,
		&g.Client.ID, &g.Client.RedirectURI, &g.Client.ClientID, &g.SealedSecret, &g.Client.AuthMethod)
	g.Client.Server, g.Client.Issuer = g.Server, g.Meta.Issuer
	return g, err
}

// OAuthGrant reads an OAuth connection's grant without locking it; a connection that is not an
// OAuth login is ENOTFOUND.
func (s *Store) OAuthGrant(ctx context.Context, connectionID string) (orchestrator.OAuthGrant, error) {
	g, err := scanGrant(s.pool.QueryRow(ctx, grantQuery, connectionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return g, notFound("OAuth login", connectionID)
	}
	if err != nil {
		return g, fmt.Errorf("read the OAuth grant of %s: %w", connectionID, err)
	}
	return g, nil
}

// RefreshOAuth locks the connection's row, reads its grant and hands it to fn, then writes what
// fn returns in the same transaction, even when fn also returns an error (a refused grant is
// stored as disconnected and reported). Replicas refreshing one login queue on the lock.
func (s *Store) RefreshOAuth(ctx context.Context, connectionID string, fn func(orchestrator.OAuthGrant) (*orchestrator.OAuthGrantUpdate, error)) error {
	var fnErr error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		g, err := scanGrant(tx.QueryRow(ctx, grantQuery+" FOR UPDATE OF c", connectionID))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("OAuth login", connectionID)
		}
		if err != nil {
			return fmt.Errorf("lock the OAuth grant of %s: %w", connectionID, err)
		}
		u, ferr := fn(g)
		fnErr = ferr
		if u == nil {
			return nil
		}
		if u.Disconnect {
			if err := disconnectOAuth(ctx, tx, connectionID, u.Now); err != nil {
				return fmt.Errorf("mark %s disconnected: %w", connectionID, err)
			}
			return nil
		}
		if _, err := tx.Exec(ctx, "UPDATE mcp_connections SET credentials = $2, updated_at = $3 WHERE id = $1", connectionID, u.Sealed, u.Now); err != nil {
			return fmt.Errorf("store the refreshed tokens of %s: %w", connectionID, err)
		}
		if _, err := tx.Exec(ctx, "UPDATE mcp_oauth_logins SET expires_at = $2, issued_at = $3, refreshed_at = $3 WHERE connection_id = $1",
			connectionID, u.ExpiresAt, u.Now); err != nil {
			return fmt.Errorf("store the refreshed expiry of %s: %w", connectionID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return fnErr
}

// keepExpired is how long an expired state is kept so that its callback can say it expired
// (rather than that it is unknown); BeginOAuth drops older ones.
const keepExpired = 24 * time.Hour

// SaveConfiguredOAuthClient stores the box's own client of a server (Google's, from the
// environment) for an issuer and redirect URI, replacing the id and secret a changed environment
// brings, and returns the row.
func (s *Store) SaveConfiguredOAuthClient(ctx context.Context, c orchestrator.OAuthClient, sealedSecret []byte) (orchestrator.OAuthClient, []byte, error) {
	_, err := s.pool.Exec(ctx, `INSERT INTO mcp_oauth_clients (server_slug, issuer, redirect_uri, client_id, client_secret, auth_method, registered_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (server_slug, issuer, redirect_uri) DO UPDATE SET client_id = EXCLUDED.client_id,
		client_secret = EXCLUDED.client_secret, auth_method = EXCLUDED.auth_method`,
		c.Server, c.Issuer, c.RedirectURI, c.ClientID, sealedSecret, c.AuthMethod, c.RegisteredAt)
	if err != nil {
		return c, nil, fmt.Errorf("store the configured OAuth client of %s: %w", c.Server, err)
	}
	return s.OAuthClientFor(ctx, c.Server, c.Issuer, c.RedirectURI)
}
