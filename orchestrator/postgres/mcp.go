package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// This file stores what the MCP client learns: relisted tools with their diff, the published copy
// of servers that publish as listed, default-off overlays on first appearance, the relist lease,
// and the one-round-trip read a tool call needs.

// writeListing replaces a connection's listed tools inside tx and returns what changed. A tool the
// server's rules name default-off gets an Off overlay at the owner when it first appears (an
// existing overlay, or a tool listed before, is left alone); a server that publishes as listed gets
// the tools as its published copy (an admin's edit of a copy row stays).
func writeListing(ctx context.Context, tx pgx.Tx, srv orchestrator.MCPServer, id string, owner orchestrator.Chain, tools []orchestrator.ListedTool, now time.Time) (orchestrator.ListingDiff, error) {
	diff := orchestrator.ListingDiff{Added: []string{}, Removed: []string{}, Changed: []string{}}
	rows, err := tx.Query(ctx, "SELECT name, description, input_schema FROM mcp_tools WHERE connection_id = $1", id)
	if err != nil {
		return diff, fmt.Errorf("read listed tools: %w", err)
	}
	type was struct {
		desc   string
		schema string
	}
	before := map[string]was{}
	for rows.Next() {
		var name, desc string
		var schema []byte
		if err := rows.Scan(&name, &desc, &schema); err != nil {
			rows.Close()
			return diff, fmt.Errorf("read listed tools: %w", err)
		}
		before[name] = was{desc, canonicalJSON(schema)}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return diff, fmt.Errorf("read listed tools: %w", err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM mcp_tools WHERE connection_id = $1", id); err != nil {
		return diff, fmt.Errorf("replace listed tools: %w", err)
	}
	now = now.UTC()
	copyRows := make([][]any, len(tools))
	var off []string
	seen := map[string]bool{}
	for i, t := range tools {
		seen[t.Name] = true
		copyRows[i] = []any{id, t.RemoteName, t.Name, t.Description, []byte(t.InputSchema), []byte(t.OfferedSchema), now}
		prev, listedBefore := before[t.Name]
		switch {
		case !listedBefore:
			diff.Added = append(diff.Added, t.Name)
			if t.DefaultOff {
				off = append(off, t.Name)
			}
		case prev.desc != t.Description || prev.schema != canonicalJSON(t.InputSchema):
			diff.Changed = append(diff.Changed, t.Name)
		}
	}
	for name := range before {
		if !seen[name] {
			diff.Removed = append(diff.Removed, name)
		}
	}
	sort.Strings(diff.Added)
	sort.Strings(diff.Removed)
	sort.Strings(diff.Changed)
	if len(copyRows) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"mcp_tools"}, []string{"connection_id", "remote_name", "name", "description", "input_schema", "offered_schema", "listed_at"},
			pgx.CopyFromRows(copyRows)); err != nil {
			return diff, fmt.Errorf("write listed tools: %w", err)
		}
	}
	org, guild, agent := ownerColumns(owner)
	if len(off) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO bindings (scope, scope_id, catalog_kind, catalog_id, enabled, org_id, guild_id, agent_id, created_at, updated_at)
			SELECT $1, $2, 'mcp_tool', n, false, $3, $4, $5, $6, $6 FROM unnest($7::text[]) AS n
			ON CONFLICT (scope, scope_id, catalog_kind, catalog_id) DO NOTHING`,
			owner.Scope, owner.ID(), org, guild, agent, now, off); err != nil {
			return diff, fmt.Errorf("default-off overlays: %w", err)
		}
	}
	if srv.PublishesListed() && len(tools) > 0 {
		b := &pgx.Batch{}
		for _, t := range tools {
			b.Queue(`INSERT INTO mcp_catalog_tools (server_slug, name, description, input_schema, default_off, published, copy_source, updated_at)
				VALUES ($1, $2, $3, $4, $5, true, 'listed', $6)
				ON CONFLICT (server_slug, name) DO UPDATE SET description = EXCLUDED.description, input_schema = EXCLUDED.input_schema,
					default_off = EXCLUDED.default_off, updated_at = EXCLUDED.updated_at
				WHERE mcp_catalog_tools.copy_source = 'listed'`,
				srv.Slug, t.RemoteName, t.Description, []byte(t.InputSchema), t.DefaultOff, now)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return diff, fmt.Errorf("publish listed tools: %w", err)
		}
	}
	return diff, nil
}

// canonicalJSON is a JSON document in one spelling (keys sorted, no spaces), to compare schemas
// whatever whitespace or key order the server or jsonb gave them.
func canonicalJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// SaveListing stores a relist of a connected login (see orchestrator.ListingWrite) in one
// transaction and ends its relist lease. A login that is no longer connected is ECONFLICT.
func (s *Store) SaveListing(ctx context.Context, w orchestrator.ListingWrite) (orchestrator.ListingDiff, error) {
	var diff orchestrator.ListingDiff
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var owner orchestrator.Chain
		var status string
		err := tx.QueryRow(ctx, `SELECT scope, COALESCE(org_id, ''), COALESCE(guild_id, ''), COALESCE(agent_id, ''), status
			FROM mcp_connections WHERE id = $1 FOR UPDATE`, w.ConnectionID).Scan(&owner.Scope, &owner.OrgID, &owner.GuildID, &owner.AgentID, &status)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("connection", w.ConnectionID)
		}
		if err != nil {
			return fmt.Errorf("save listing of %s: %w", w.ConnectionID, err)
		}
		if status != orchestrator.ConnConnected {
			return orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is %s, not connected; its list was not replaced", w.ConnectionID, status)
		}
		if diff, err = writeListing(ctx, tx, w.Server, w.ConnectionID, owner, w.Tools, w.Now); err != nil {
			return fmt.Errorf("save listing of %s: %w", w.ConnectionID, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE mcp_connections SET listed_at = $2, transport = $3, list_error = '', relist_until = NULL WHERE id = $1`,
			w.ConnectionID, w.Now.UTC(), w.Transport); err != nil {
			return fmt.Errorf("save listing of %s: %w", w.ConnectionID, err)
		}
		return nil
	})
	return diff, err
}

// ClaimRelist takes a connected login's relist lease until now+lease and reports whether this
// caller got it: only when no lease is running and the list was last written before staleBefore,
// or whatever the lease and age when force is set. Several orchestrators on one database so relist
// a login once.
func (s *Store) ClaimRelist(ctx context.Context, id string, now, staleBefore time.Time, force bool, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE mcp_connections SET relist_until = $2::timestamptz + make_interval(secs => $5)
		WHERE id = $1 AND status = 'connected'
			AND ($3 OR relist_until IS NULL OR relist_until <= $2)
			AND ($3 OR listed_at IS NULL OR listed_at < $4)`,
		id, now.UTC(), force, staleBefore.UTC(), lease.Seconds())
	if err != nil {
		return false, fmt.Errorf("claim the relist of %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// FailListing records a failed relist: what the server answered, and the lease kept until
// retryAt, so that run starts meanwhile serve the stored list without asking again.
func (s *Store) FailListing(ctx context.Context, id, answer string, retryAt time.Time) error {
	if _, err := s.pool.Exec(ctx, "UPDATE mcp_connections SET list_error = $2, relist_until = $3 WHERE id = $1", id, answer, retryAt.UTC()); err != nil {
		return fmt.Errorf("record the failed listing of %s: %w", id, err)
	}
	return nil
}

// SealedCredentialsOf reads the sealed credentials of several connections in one round trip;
// a connection that does not exist, or holds none, is left out.
func (s *Store) SealedCredentialsOf(ctx context.Context, ids []string) (map[string][]byte, error) {
	rows, err := s.pool.Query(ctx, "SELECT id, credentials FROM mcp_connections WHERE id = ANY($1) AND credentials IS NOT NULL", ids)
	if err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	defer rows.Close()
	out := make(map[string][]byte, len(ids))
	for rows.Next() {
		var id string
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return nil, fmt.Errorf("read credentials: %w", err)
		}
		out[id] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	return out, nil
}

// SetTransport records the transport a connection's session went over, when it changed.
func (s *Store) SetTransport(ctx context.Context, id, transport string) error {
	if _, err := s.pool.Exec(ctx, "UPDATE mcp_connections SET transport = $2 WHERE id = $1 AND transport <> $2", id, transport); err != nil {
		return fmt.Errorf("record the transport of %s: %w", id, err)
	}
	return nil
}

// MCPLogin reads, in one round trip, what calling a connection's tool needs: the connection, its
// server as in effect, its sealed credentials and, when remoteName is set, that listed tool with its
// input schema (Tool.Name is "" when the connection lists no such tool).
func (s *Store) MCPLogin(ctx context.Context, connectionID, remoteName string) (orchestrator.MCPLogin, error) {
	var l orchestrator.MCPLogin
	c, srv := &l.Connection, &l.Server
	var settings, cfg, endpoints, schema []byte
	var remote, name, desc *string
	err := s.pool.QueryRow(ctx, `SELECT c.id, c.server_slug, c.scope, c.scope_id, COALESCE(c.org_id, ''), COALESCE(c.guild_id, ''), COALESCE(c.agent_id, ''),
			c.status, c.account_hint, c.settings, c.listed_at, c.transport, c.list_error, c.disconnect_reason, c.credentials,
			s.name, s.kind, COALESCE(s.admin_url, s.url), s.auth, s.config, s.endpoints || s.admin_endpoints, s.seeds_tools, s.published, s.custom,
			t.remote_name, t.name, t.description, t.input_schema
		FROM mcp_connections c JOIN mcp_servers s ON s.slug = c.server_slug
		LEFT JOIN mcp_tools t ON t.connection_id = c.id AND t.remote_name = $2
		WHERE c.id = $1`, connectionID, remoteName).Scan(
		&c.ID, &c.Server, &c.Scope, &c.ScopeID, &c.OrgID, &c.GuildID, &c.AgentID,
		&c.Status, &c.AccountHint, &settings, &c.ListedAt, &c.Transport, &c.ListError, &c.DisconnectReason, &l.Sealed,
		&srv.Name, &srv.Kind, &srv.URL, &srv.Auth, &cfg, &endpoints, &srv.SeedsTools, &srv.Published, &srv.Custom,
		&remote, &name, &desc, &schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, notFound("connection", connectionID)
	}
	if err != nil {
		return l, fmt.Errorf("read the login of %s: %w", connectionID, err)
	}
	c.Settings, srv.Slug, srv.Transport = settings, c.Server, "http"
	if err := json.Unmarshal(cfg, &srv.Config); err != nil {
		return l, fmt.Errorf("server %s config: %w", srv.Slug, err)
	}
	if err := json.Unmarshal(endpoints, &srv.Endpoints); err != nil {
		return l, fmt.Errorf("server %s endpoints: %w", srv.Slug, err)
	}
	if remote != nil {
		l.Tool = orchestrator.ListedTool{RemoteName: *remote, Name: *name, Description: *desc, InputSchema: bytes.Clone(schema)}
	}
	return l, nil
}

// ListedToolNamed returns a connection's listed tool by its namespaced name; none is ENOTFOUND.
func (s *Store) ListedToolNamed(ctx context.Context, connectionID, name string) (orchestrator.ListedTool, error) {
	var t orchestrator.ListedTool
	var in, offered []byte
	err := s.pool.QueryRow(ctx, `SELECT remote_name, name, description, input_schema, offered_schema FROM mcp_tools
		WHERE connection_id = $1 AND name = $2`, connectionID, name).Scan(&t.RemoteName, &t.Name, &t.Description, &in, &offered)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, notFound("listed tool", name)
	}
	if err != nil {
		return t, fmt.Errorf("read tool %s of %s: %w", name, connectionID, err)
	}
	t.InputSchema, t.OfferedSchema = in, offered
	return t, nil
}
