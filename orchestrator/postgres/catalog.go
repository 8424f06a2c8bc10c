package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file stores the catalog (mcp_servers, mcp_catalog_tools), connections (mcp_connections,
// mcp_tools) and bindings for the bindings package.

// nullable turns "" into SQL NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ownerColumns are the org_id, guild_id and agent_id of a chain, NULL above its scope.
func ownerColumns(c orchestrator.Chain) (any, any, any) {
	switch c.Scope {
	case orchestrator.ScopeOrg:
		return c.OrgID, nil, nil
	case orchestrator.ScopeGuild:
		return c.OrgID, c.GuildID, nil
	case orchestrator.ScopeAgent:
		return c.OrgID, c.GuildID, c.AgentID
	}
	return nil, nil, nil
}

// ScopeChain places an organisation, guild or agent.
func (s *Store) ScopeChain(ctx context.Context, scope, id string) (orchestrator.Chain, error) {
	c := orchestrator.Chain{Scope: scope}
	var err error
	switch scope {
	case orchestrator.ScopePlatform:
		return c, nil
	case orchestrator.ScopeOrg:
		err = s.pool.QueryRow(ctx, "SELECT id FROM orgs WHERE id = $1", id).Scan(&c.OrgID)
	case orchestrator.ScopeGuild:
		c.GuildID = id
		err = s.pool.QueryRow(ctx, "SELECT org_id FROM guilds WHERE id = $1", id).Scan(&c.OrgID)
	case orchestrator.ScopeAgent:
		c.AgentID = id
		err = s.pool.QueryRow(ctx, "SELECT org_id, guild_id FROM agents WHERE id = $1", id).Scan(&c.OrgID, &c.GuildID)
	default:
		return c, orchestrator.Errorf(orchestrator.EINVALID, "unknown scope %q", scope)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		what := map[string]string{orchestrator.ScopeOrg: "organisation", orchestrator.ScopeGuild: "guild", orchestrator.ScopeAgent: "agent"}[scope]
		return c, notFound(what, id)
	}
	if err != nil {
		return c, fmt.Errorf("place %s %s: %w", scope, id, err)
	}
	return c, nil
}

// SeedCatalog upserts every server and its published tools in one transaction. A row an admin
// edited keeps its copy (description, limitations, setup_hint, published); its connect facts
// (URL, auth, fields) follow the manifest. Seed tools the manifest dropped are removed.
func (s *Store) SeedCatalog(ctx context.Context, servers []orchestrator.MCPServer, now time.Time) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, srv := range servers {
			cfg, err := json.Marshal(srv.Config)
			if err != nil {
				return fmt.Errorf("seed %s: %w", srv.Slug, err)
			}
			endpoints, err := json.Marshal(nonNilMap(srv.Endpoints)) // null || admin_endpoints would be an array
			if err != nil {
				return fmt.Errorf("seed %s: %w", srv.Slug, err)
			}
			// The admin's URL and endpoints (admin_url, admin_endpoints) are columns of their own: a reseed keeps them.
			b.Queue(`INSERT INTO mcp_servers (slug, name, kind, transport, url, auth, config, description, limitations, setup_hint, seeds_tools, published, copy_source, endpoints, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, true, 'seed', $13, $12, $12)
				ON CONFLICT (slug) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind, transport = EXCLUDED.transport,
					url = EXCLUDED.url, auth = EXCLUDED.auth, config = EXCLUDED.config, seeds_tools = EXCLUDED.seeds_tools, endpoints = EXCLUDED.endpoints,
					description = CASE WHEN mcp_servers.copy_source = 'admin' THEN mcp_servers.description ELSE EXCLUDED.description END,
					limitations = CASE WHEN mcp_servers.copy_source = 'admin' THEN mcp_servers.limitations ELSE EXCLUDED.limitations END,
					setup_hint = CASE WHEN mcp_servers.copy_source = 'admin' THEN mcp_servers.setup_hint ELSE EXCLUDED.setup_hint END,
					updated_at = EXCLUDED.updated_at`,
				srv.Slug, srv.Name, srv.Kind, srv.Transport, srv.URL, srv.Auth, cfg, srv.Description, srv.Limitations, srv.SetupHint, srv.SeedsTools, now, endpoints)
			names := make([]string, 0, len(srv.Tools))
			for _, t := range srv.Tools {
				names = append(names, t.Name)
				b.Queue(`INSERT INTO mcp_catalog_tools (server_slug, name, description, input_schema, default_off, published, copy_source, updated_at)
					VALUES ($1, $2, $3, $4, $5, true, 'seed', $6)
					ON CONFLICT (server_slug, name) DO UPDATE SET description = EXCLUDED.description, input_schema = EXCLUDED.input_schema,
						default_off = EXCLUDED.default_off, copy_source = 'seed', updated_at = EXCLUDED.updated_at
					WHERE mcp_catalog_tools.copy_source <> 'admin'`,
					srv.Slug, t.Name, t.Description, []byte(t.InputSchema), t.DefaultOff, now)
			}
			b.Queue(`DELETE FROM mcp_catalog_tools WHERE server_slug = $1 AND copy_source = 'seed' AND NOT (name = ANY($2))`, srv.Slug, names)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("seed catalog: %w", err)
		}
		return nil
	})
}

// SeedPlatformBindings writes an enabled platform row for each tool that has no platform row.
func (s *Store) SeedPlatformBindings(ctx context.Context, tools []string, now time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO bindings (scope, scope_id, catalog_kind, catalog_id, enabled, created_at, updated_at)
		SELECT 'platform', '', 'native_tool', t, true, $2, $2 FROM unnest($1::text[]) AS t
		ON CONFLICT (scope, scope_id, catalog_kind, catalog_id) DO NOTHING`, tools, now)
	if err != nil {
		return fmt.Errorf("seed platform bindings: %w", err)
	}
	return nil
}

// serverColumns read a catalog row as it is in effect: the admin's URL and endpoints over the seeded ones.
const serverColumns = `slug, name, kind, transport, COALESCE(admin_url, url), auth, config, description, limitations, setup_hint, seeds_tools,
	published, copy_source, updated_at, custom, endpoints || admin_endpoints`

func scanServer(r pgx.Row) (orchestrator.MCPServer, error) {
	var srv orchestrator.MCPServer
	var cfg, endpoints []byte
	if err := r.Scan(&srv.Slug, &srv.Name, &srv.Kind, &srv.Transport, &srv.URL, &srv.Auth, &cfg, &srv.Description, &srv.Limitations,
		&srv.SetupHint, &srv.SeedsTools, &srv.Published, &srv.CopySource, &srv.UpdatedAt, &srv.Custom, &endpoints); err != nil {
		return srv, err
	}
	if err := json.Unmarshal(cfg, &srv.Config); err != nil {
		return srv, fmt.Errorf("server %s config: %w", srv.Slug, err)
	}
	if err := json.Unmarshal(endpoints, &srv.Endpoints); err != nil {
		return srv, fmt.Errorf("server %s endpoints: %w", srv.Slug, err)
	}
	if srv.Config.Fields == nil {
		srv.Config.Fields = []orchestrator.CredentialField{}
	}
	srv.Tools = []orchestrator.CatalogTool{}
	return srv, nil
}

// ListServers lists the catalog with its tools, by slug; publishedOnly keeps published rows.
func (s *Store) ListServers(ctx context.Context, publishedOnly bool) ([]orchestrator.MCPServer, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+serverColumns+" FROM mcp_servers WHERE published OR NOT $1 ORDER BY slug", publishedOnly)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	servers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.MCPServer, error) { return scanServer(r) })
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	if err := s.attachTools(ctx, servers, publishedOnly); err != nil {
		return nil, err
	}
	return nonNil(servers), nil
}

// GetServer reads one catalog row with all its tools.
func (s *Store) GetServer(ctx context.Context, slug string) (orchestrator.MCPServer, error) {
	srv, err := scanServer(s.pool.QueryRow(ctx, "SELECT "+serverColumns+" FROM mcp_servers WHERE slug = $1", slug))
	if errors.Is(err, pgx.ErrNoRows) {
		return srv, notFound("catalog server", slug)
	}
	if err != nil {
		return srv, fmt.Errorf("get server %s: %w", slug, err)
	}
	list := []orchestrator.MCPServer{srv}
	if err := s.attachTools(ctx, list, false); err != nil {
		return srv, err
	}
	return list[0], nil
}

// attachTools fills each server's catalog tools.
func (s *Store) attachTools(ctx context.Context, servers []orchestrator.MCPServer, publishedOnly bool) error {
	if len(servers) == 0 {
		return nil
	}
	at := map[string]int{}
	slugs := make([]string, len(servers))
	for i, srv := range servers {
		at[srv.Slug], slugs[i] = i, srv.Slug
	}
	rows, err := s.pool.Query(ctx, `SELECT server_slug, name, description, input_schema, default_off, published, copy_source
		FROM mcp_catalog_tools WHERE server_slug = ANY($1) AND (published OR NOT $2) ORDER BY server_slug, name`, slugs, publishedOnly)
	if err != nil {
		return fmt.Errorf("list catalog tools: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var slug string
		var t orchestrator.CatalogTool
		var schema []byte
		if err := rows.Scan(&slug, &t.Name, &t.Description, &schema, &t.DefaultOff, &t.Published, &t.CopySource); err != nil {
			return fmt.Errorf("list catalog tools: %w", err)
		}
		t.InputSchema = schema
		servers[at[slug]].Tools = append(servers[at[slug]].Tools, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list catalog tools: %w", err)
	}
	return nil
}

// PatchServer applies an admin edit in one transaction: a copy edit makes the row copy_source=admin
// so reseeds keep it; the URL and endpoints go to admin_url and admin_endpoints, which reseeds never
// touch (a URL of JSON null, or an endpoint set to null, restores the seeded value). When the URL or
// an endpoint in effect changed, every login of the server not disconnected yet is marked
// disconnected with the reason in the same transaction, each reported by connection.disconnected
// (server_moved): its stored credentials were verified against the old host only, and go nowhere
// until its next Connect verifies them against the new.
func (s *Store) PatchServer(ctx context.Context, slug string, p orchestrator.ServerPatch, now time.Time) (orchestrator.MCPServer, error) {
	setURL, restoreURL := len(p.URL) > 0, string(p.URL) == "null"
	var adminURL *string
	if setURL && !restoreURL {
		var u string
		if err := json.Unmarshal(p.URL, &u); err != nil {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "url must be a string or null")
		}
		adminURL = &u
	}
	set, unset := map[string]string{}, []string{}
	for name, v := range p.Endpoints {
		if v == nil {
			unset = append(unset, name)
		} else {
			set[name] = *v
		}
	}
	setJSON, err := json.Marshal(set)
	if err != nil {
		return orchestrator.MCPServer{}, fmt.Errorf("patch server %s: %w", slug, err)
	}
	const upstream = `SELECT COALESCE(admin_url, url), (endpoints || admin_endpoints)::text FROM mcp_servers WHERE slug = $1`
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var urlBefore, endpointsBefore string
		if err := tx.QueryRow(ctx, upstream+" FOR UPDATE", slug).Scan(&urlBefore, &endpointsBefore); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE mcp_servers SET description = COALESCE($2, description), limitations = COALESCE($3, limitations),
			setup_hint = COALESCE($4, setup_hint), published = COALESCE($5, published),
			copy_source = CASE WHEN $7 THEN 'admin' ELSE copy_source END,
			admin_url = CASE WHEN $8 THEN $9 ELSE admin_url END,
			admin_endpoints = (admin_endpoints - $10::text[]) || $11::jsonb,
			updated_at = $6 WHERE slug = $1`,
			slug, p.Description, p.Limitations, p.SetupHint, p.Published, now, p.CopyEdit(), setURL, adminURL, unset, setJSON); err != nil {
			return err
		}
		var urlAfter, endpointsAfter string
		if err := tx.QueryRow(ctx, upstream, slug).Scan(&urlAfter, &endpointsAfter); err != nil {
			return err
		}
		if urlAfter == urlBefore && endpointsAfter == endpointsBefore {
			return nil
		}
		rows, err := tx.Query(ctx, `UPDATE mcp_connections SET status = 'disconnected', disconnect_reason = $2, updated_at = $3
			WHERE server_slug = $1 AND status <> 'disconnected' RETURNING id`, slug, orchestrator.ServerMovedReason, now)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, id := range ids {
			c, err := scanConnection(tx.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", id))
			if err != nil {
				return err
			}
			if err := appendEvents(ctx, tx, orchestrator.ConnectionDisconnectedEvent(c, orchestrator.DisconnectServerMoved, orchestrator.ServerMovedReason, now)); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return orchestrator.MCPServer{}, notFound("catalog server", slug)
	}
	if err != nil {
		return orchestrator.MCPServer{}, fmt.Errorf("patch server %s: %w", slug, err)
	}
	return s.GetServer(ctx, slug)
}

// CreateServer adds an admin's custom server; a slug already in the catalog is ECONFLICT.
func (s *Store) CreateServer(ctx context.Context, srv orchestrator.MCPServer, now time.Time) (orchestrator.MCPServer, error) {
	cfg, err := json.Marshal(srv.Config)
	if err != nil {
		return srv, fmt.Errorf("create server %s: %w", srv.Slug, err)
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO mcp_servers (slug, name, kind, transport, url, auth, config, description, limitations, setup_hint,
			seeds_tools, published, copy_source, custom, created_at, updated_at)
		VALUES ($1, $2, 'remote', 'http', $3, $4, $5, $6, '', '', false, true, 'admin', true, $7, $7) ON CONFLICT (slug) DO NOTHING`,
		srv.Slug, srv.Name, srv.URL, srv.Auth, cfg, srv.Description, now)
	if err != nil {
		return srv, fmt.Errorf("create server %s: %w", srv.Slug, err)
	}
	if tag.RowsAffected() == 0 {
		return srv, orchestrator.Errorf(orchestrator.ECONFLICT, "the catalog already has a server %q; pick another slug", srv.Slug)
	}
	return s.GetServer(ctx, srv.Slug)
}

// PatchTool applies an admin edit to one catalog tool; reseeds then keep it.
func (s *Store) PatchTool(ctx context.Context, slug, name string, p orchestrator.ToolPatch, now time.Time) (orchestrator.MCPServer, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE mcp_catalog_tools SET description = COALESCE($3, description), published = COALESCE($4, published),
		copy_source = 'admin', updated_at = $5 WHERE server_slug = $1 AND name = $2`, slug, name, p.Description, p.Published, now)
	if err != nil {
		return orchestrator.MCPServer{}, fmt.Errorf("patch tool %s/%s: %w", slug, name, err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.MCPServer{}, notFound("catalog tool", slug+"/"+name)
	}
	return s.GetServer(ctx, slug)
}

const connectionColumns = `c.id, c.server_slug, c.scope, c.scope_id, COALESCE(c.org_id, ''), COALESCE(c.guild_id, ''), COALESCE(c.agent_id, ''),
	c.status, c.account_hint, c.settings, c.verified_at, c.listed_at, c.created_at, c.updated_at,
	(SELECT count(*) FROM mcp_tools t WHERE t.connection_id = c.id), c.list_error, c.transport, c.disconnect_reason`

func scanConnection(r pgx.Row) (orchestrator.Connection, error) {
	var c orchestrator.Connection
	var settings []byte
	err := r.Scan(&c.ID, &c.Server, &c.Scope, &c.ScopeID, &c.OrgID, &c.GuildID, &c.AgentID, &c.Status, &c.AccountHint, &settings,
		&c.VerifiedAt, &c.ListedAt, &c.CreatedAt, &c.UpdatedAt, &c.ToolCount, &c.ListError, &c.Transport, &c.DisconnectReason)
	c.Settings = settings
	return c, err
}

// claimConnection takes the login of srv at owner for a Connect inside tx: a new pending row
// (created), or the pending or disconnected one already there, locked; a connected one is
// ECONFLICT. what names the operation in errors.
func claimConnection(ctx context.Context, tx pgx.Tx, srv orchestrator.MCPServer, owner orchestrator.Chain, newID string, now time.Time, what string) (id string, created bool, err error) {
	org, guild, agent := ownerColumns(owner)
	tag, err := tx.Exec(ctx, `INSERT INTO mcp_connections (id, server_slug, scope, scope_id, org_id, guild_id, agent_id, status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8) ON CONFLICT (server_slug, scope, scope_id) DO NOTHING`,
		newID, srv.Slug, owner.Scope, owner.ID(), org, guild, agent, now)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", what, err)
	}
	var status string
	if err := tx.QueryRow(ctx, `SELECT id, status FROM mcp_connections WHERE server_slug = $1 AND scope = $2 AND scope_id = $3 FOR UPDATE`,
		srv.Slug, owner.Scope, owner.ID()).Scan(&id, &status); err != nil {
		return "", false, fmt.Errorf("%s: %w", what, err)
	}
	if status == orchestrator.ConnConnected {
		return "", false, orchestrator.Errorf(orchestrator.ECONFLICT, "%s already has a connected %s login (%s); delete it (DELETE /api/mcp/connections/%s) before connecting another",
			describe(owner), srv.Name, id, id)
	}
	return id, tag.RowsAffected() == 1, nil
}

// Connect stores a token Connect in one transaction (see orchestrator.ConnectWrite).
func (s *Store) Connect(ctx context.Context, w orchestrator.ConnectWrite) (orchestrator.Connection, error) {
	var out orchestrator.Connection
	org, guild, agent := ownerColumns(w.Owner)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		id, _, err := claimConnection(ctx, tx, w.Server, w.Owner, w.NewID, w.Now, "connect")
		if err != nil {
			return err
		}
		var verified any
		if w.Verified {
			verified = w.Now
		}
		settings := w.Settings
		if len(settings) == 0 {
			settings = json.RawMessage(`{}`)
		}
		if _, err := tx.Exec(ctx, `UPDATE mcp_connections SET status = 'connected', account_hint = $2, credentials = $3, settings = $4,
			verified_at = $5, listed_at = $6, updated_at = $6, transport = $7, list_error = '', relist_until = NULL WHERE id = $1`,
			id, w.AccountHint, w.Seal(id), []byte(settings), verified, w.Now, w.Transport); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		if _, err := writeListing(ctx, tx, w.Server, id, w.Owner, w.Tools, w.Now); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bindings (scope, scope_id, catalog_kind, catalog_id, enabled, connection_id, org_id, guild_id, agent_id, created_at, updated_at)
			VALUES ($1, $2, 'mcp', $3, true, $4, $5, $6, $7, $8, $8)
			ON CONFLICT (scope, scope_id, catalog_kind, catalog_id) DO UPDATE SET enabled = true, connection_id = EXCLUDED.connection_id, updated_at = EXCLUDED.updated_at`,
			w.Owner.Scope, w.Owner.ID(), w.Server.Slug, id, org, guild, agent, w.Now); err != nil {
			return fmt.Errorf("connect: enabled binding: %w", err)
		}
		out, err = scanConnection(tx.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", id))
		return err
	})
	return out, err
}

// describe names a scope for messages.
func describe(c orchestrator.Chain) string {
	if c.Scope == orchestrator.ScopePlatform {
		return "the platform"
	}
	return c.Scope + " " + c.ID()
}

// ListConnections lists the connections owned at a scope ("" lists all), oldest first.
func (s *Store) ListConnections(ctx context.Context, scope, scopeID string) ([]orchestrator.Connection, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+connectionColumns+` FROM mcp_connections c
		WHERE $1 = '' OR (c.scope = $1 AND c.scope_id = $2) ORDER BY c.created_at, c.id`, scope, scopeID)
	if err != nil {
		return nil, fmt.Errorf("list connections: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Connection, error) { return scanConnection(r) })
	if err != nil {
		return nil, fmt.Errorf("list connections: %w", err)
	}
	return nonNil(out), nil
}

// GetConnection reads one connection's metadata (never its credentials).
func (s *Store) GetConnection(ctx context.Context, id string) (orchestrator.Connection, error) {
	c, err := scanConnection(s.pool.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFound("connection", id)
	}
	if err != nil {
		return c, fmt.Errorf("get connection %s: %w", id, err)
	}
	return c, nil
}

// SealedCredentials reads a connection's sealed credentials, for the connectors that call with them.
func (s *Store) SealedCredentials(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, "SELECT credentials FROM mcp_connections WHERE id = $1", id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("connection", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read credentials of %s: %w", id, err)
	}
	return b, nil
}

// SetConnectionStatus changes a connection's status. Only a refusal of its credentials marks a
// login disconnected (a provider's 401 on its key, a removed GitHub App installation), so moving
// one there reports connection.disconnected (credentials_refused) in the same transaction.
func (s *Store) SetConnectionStatus(ctx context.Context, id, status string, now time.Time) (orchestrator.Connection, error) {
	var c orchestrator.Connection
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var was string
		if err := tx.QueryRow(ctx, "SELECT status FROM mcp_connections WHERE id = $1 FOR UPDATE", id).Scan(&was); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE mcp_connections SET status = $2, updated_at = $3 WHERE id = $1", id, status, now); err != nil {
			return err
		}
		var err error
		if c, err = scanConnection(tx.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", id)); err != nil {
			return err
		}
		if status != orchestrator.ConnDisconnected || was == orchestrator.ConnDisconnected {
			return nil
		}
		return appendEvents(ctx, tx, orchestrator.ConnectionDisconnectedEvent(c, orchestrator.DisconnectCredentialsRefused,
			"the provider refused the login's stored credentials (a revoked or wrong key, or a removed GitHub App installation); connect it again", now))
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFound("connection", id)
	}
	if err != nil {
		return c, fmt.Errorf("set status of %s: %w", id, err)
	}
	return c, nil
}

// disconnectOAuth marks an OAuth login disconnected in tx (its grant refused) and reports it.
func disconnectOAuth(ctx context.Context, tx pgx.Tx, id string, now time.Time) error {
	var was string
	if err := tx.QueryRow(ctx, "SELECT status FROM mcp_connections WHERE id = $1", id).Scan(&was); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "UPDATE mcp_connections SET status = 'disconnected', updated_at = $2 WHERE id = $1", id, now); err != nil {
		return err
	}
	if was == orchestrator.ConnDisconnected {
		return nil
	}
	c, err := scanConnection(tx.QueryRow(ctx, "SELECT "+connectionColumns+" FROM mcp_connections c WHERE c.id = $1", id))
	if err != nil {
		return err
	}
	return appendEvents(ctx, tx, orchestrator.ConnectionDisconnectedEvent(c, orchestrator.DisconnectInvalidGrant,
		"the authorization server refused to renew the login (invalid_grant); log in again", now))
}

// SetConnectionSettings replaces a connection's settings (Pinned prices' coins).
func (s *Store) SetConnectionSettings(ctx context.Context, id string, settings json.RawMessage, now time.Time) (orchestrator.Connection, error) {
	tag, err := s.pool.Exec(ctx, "UPDATE mcp_connections SET settings = $2, updated_at = $3 WHERE id = $1", id, []byte(settings), now)
	if err != nil {
		return orchestrator.Connection{}, fmt.Errorf("set settings of %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Connection{}, notFound("connection", id)
	}
	return s.GetConnection(ctx, id)
}

// DeleteConnection deletes a connection; its listed tools and the bindings naming it cascade.
func (s *Store) DeleteConnection(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM mcp_connections WHERE id = $1", id)
	if err != nil {
		return fmt.Errorf("delete connection %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("connection", id)
	}
	return nil
}

// ListedTools lists a connection's tools by name.
func (s *Store) ListedTools(ctx context.Context, connectionID string) ([]orchestrator.ListedTool, error) {
	rows, err := s.pool.Query(ctx, `SELECT remote_name, name, description, input_schema, offered_schema FROM mcp_tools
		WHERE connection_id = $1 ORDER BY name`, connectionID)
	if err != nil {
		return nil, fmt.Errorf("list tools of %s: %w", connectionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.ListedTool, error) {
		var t orchestrator.ListedTool
		var in, offered []byte
		err := r.Scan(&t.RemoteName, &t.Name, &t.Description, &in, &offered)
		t.InputSchema, t.OfferedSchema = in, offered
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("list tools of %s: %w", connectionID, err)
	}
	return nonNil(out), nil
}

// ConnectionsListing returns the connections that list a namespaced tool.
func (s *Store) ConnectionsListing(ctx context.Context, name string) ([]orchestrator.Connection, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+connectionColumns+` FROM mcp_connections c
		WHERE EXISTS (SELECT 1 FROM mcp_tools t WHERE t.connection_id = c.id AND t.name = $1) ORDER BY c.id`, name)
	if err != nil {
		return nil, fmt.Errorf("connections listing %s: %w", name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Connection, error) { return scanConnection(r) })
	if err != nil {
		return nil, fmt.Errorf("connections listing %s: %w", name, err)
	}
	return out, nil
}

// PutBinding inserts or replaces the row at the chain's own scope.
func (s *Store) PutBinding(ctx context.Context, at orchestrator.Chain, b orchestrator.Binding) (orchestrator.Binding, error) {
	org, guild, agent := ownerColumns(at)
	err := s.pool.QueryRow(ctx, `INSERT INTO bindings (scope, scope_id, catalog_kind, catalog_id, enabled, connection_id, org_id, guild_id, agent_id, created_at, updated_at, ask)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11)
		ON CONFLICT (scope, scope_id, catalog_kind, catalog_id) DO UPDATE SET enabled = EXCLUDED.enabled, ask = EXCLUDED.ask, connection_id = EXCLUDED.connection_id, updated_at = EXCLUDED.updated_at
		RETURNING updated_at`, at.Scope, at.ID(), b.CatalogKind, b.CatalogID, b.Enabled, nullable(b.ConnectionID), org, guild, agent, b.UpdatedAt, b.Ask).Scan(&b.UpdatedAt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return b, orchestrator.Errorf(orchestrator.ENOTFOUND, "the connection or scope of this binding was deleted meanwhile; nothing was written")
	}
	if err != nil {
		return b, fmt.Errorf("put binding: %w", err)
	}
	b.Scope, b.ScopeID = at.Scope, at.ID()
	return b, nil
}

// DeleteBinding removes one row.
func (s *Store) DeleteBinding(ctx context.Context, at orchestrator.Chain, kind, id string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM bindings WHERE scope = $1 AND scope_id = $2 AND catalog_kind = $3 AND catalog_id = $4", at.Scope, at.ID(), kind, id)
	if err != nil {
		return fmt.Errorf("delete binding: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "no %s binding for %s at %s; it already inherits", kind, id, describe(at))
	}
	return nil
}

const bindingColumns = "scope, scope_id, catalog_kind, catalog_id, enabled, ask, COALESCE(connection_id, ''), updated_at"

func scanBinding(r pgx.Row) (orchestrator.Binding, error) {
	var b orchestrator.Binding
	err := r.Scan(&b.Scope, &b.ScopeID, &b.CatalogKind, &b.CatalogID, &b.Enabled, &b.Ask, &b.ConnectionID, &b.UpdatedAt)
	return b, err
}

// ListBindings lists the rows written at one scope.
func (s *Store) ListBindings(ctx context.Context, at orchestrator.Chain) ([]orchestrator.Binding, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+bindingColumns+" FROM bindings WHERE scope = $1 AND scope_id = $2 ORDER BY catalog_kind, catalog_id", at.Scope, at.ID())
	if err != nil {
		return nil, fmt.Errorf("list bindings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Binding, error) { return scanBinding(r) })
	if err != nil {
		return nil, fmt.Errorf("list bindings: %w", err)
	}
	return nonNil(out), nil
}

// chainWhere selects the binding rows of a chain: the platform row and the rows at its
// organisation, guild and agent ("" matches nothing: no such row has an empty scope_id).
const chainWhere = `((b.scope = 'platform' AND b.scope_id = '') OR (b.scope = 'org' AND b.scope_id = $1)
	OR (b.scope = 'guild' AND b.scope_id = $2) OR (b.scope = 'agent' AND b.scope_id = $3))`

// Resolution reads the chain's rows and the connections they name, with their servers and listed
// tools (less those an admin unpublished from the catalog). The rows and the connections, with
// each one's tools_version, are one batch; the tools come from the process's cache of that
// version (listedTools), so a second round trip is made only for a list this process has not read.
func (s *Store) Resolution(ctx context.Context, chain orchestrator.Chain) (orchestrator.Resolution, error) {
	res := orchestrator.Resolution{Connections: map[string]orchestrator.ResolvedConnection{}}
	versions := map[string]int64{}
	unpublished := map[string][]string{}
	var ids []string
	b := &pgx.Batch{}
	b.Queue("SELECT "+bindingColumns+" FROM bindings b WHERE "+chainWhere, chain.OrgID, chain.GuildID, chain.AgentID).Query(func(rows pgx.Rows) error {
		var err error
		res.Rows, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Binding, error) { return scanBinding(r) })
		return err
	})
	b.Queue(`SELECT c.id, c.server_slug, c.scope, c.scope_id, COALESCE(c.org_id, ''), COALESCE(c.guild_id, ''), COALESCE(c.agent_id, ''), c.status,
			c.listed_at, c.transport, c.list_error, s.name, s.kind, s.auth, s.published, c.tools_version,
			ARRAY(SELECT ct.name FROM mcp_catalog_tools ct WHERE ct.server_slug = c.server_slug AND NOT ct.published)
		FROM mcp_connections c JOIN mcp_servers s ON s.slug = c.server_slug
		WHERE c.id IN (SELECT b.connection_id FROM bindings b WHERE `+chainWhere+` AND b.connection_id IS NOT NULL)
		ORDER BY c.id`, chain.OrgID, chain.GuildID, chain.AgentID).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var c orchestrator.ResolvedConnection
			var version int64
			var hidden []string
			if err := rows.Scan(&c.ID, &c.Server, &c.Scope, &c.ScopeID, &c.OrgID, &c.GuildID, &c.AgentID, &c.Status,
				&c.ListedAt, &c.Transport, &c.ListError, &c.ServerName, &c.ServerKind, &c.ServerAuth, &c.ServerPublished, &version, &hidden); err != nil {
				return err
			}
			res.Connections[c.ID] = c
			versions[c.ID], unpublished[c.ID] = version, hidden
			ids = append(ids, c.ID)
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return res, fmt.Errorf("resolve bindings for %s: %w", describe(chain), err)
	}
	lists, err := s.listedTools(ctx, ids, versions)
	if err != nil {
		return res, fmt.Errorf("resolve bindings for %s: %w", describe(chain), err)
	}
	for _, id := range ids {
		c := res.Connections[id]
		for _, t := range lists[id] {
			if !slices.Contains(unpublished[id], t.RemoteName) {
				c.Tools = append(c.Tools, t)
			}
		}
		c.ToolCount = len(c.Tools)
		res.Connections[id] = c
	}
	return res, nil
}
