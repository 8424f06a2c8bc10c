package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// This file holds the collections of the artifact store and their grants; records.go holds their
// records.

const collectionColumns = "a.id, a.key, a.level, a.org_id, COALESCE(a.guild_id, ''), a.spec, a.created_at, a.updated_at"

func scanCollection(r pgx.Row, extra ...any) (orchestrator.Collection, error) {
	var c orchestrator.Collection
	var spec []byte
	dst := append([]any{&c.ID, &c.Name, &c.Level, &c.OrgID, &c.GuildID, &spec, &c.CreatedAt, &c.UpdatedAt}, extra...)
	if err := r.Scan(dst...); err != nil {
		return c, err
	}
	if err := json.Unmarshal(spec, &c.Columns); err != nil {
		return c, fmt.Errorf("collection %s: stored columns: %w", c.ID, err)
	}
	return c, nil
}

// CreateCollection stores a new collection: an organisation table (GuildID empty) or a guild's
// own table. A name already used by a table of the organisation or of any of its guilds is ECONFLICT.
func (s *Store) CreateCollection(ctx context.Context, c orchestrator.Collection) (orchestrator.Collection, error) {
	spec, err := json.Marshal(c.Columns)
	if err != nil {
		return c, fmt.Errorf("create collection: %w", err)
	}
	c.ID = orchestrator.NewID(orchestrator.PrefixArtifact)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// One creator of collections per organisation at a time keeps names unique across its tables.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('collections:' || $1, 0))", c.OrgID); err != nil {
			return err
		}
		var clash string
		err := tx.QueryRow(ctx, `SELECT CASE a.level WHEN 'org' THEN 'the organisation' ELSE 'guild ' || a.guild_id END FROM artifacts a
			WHERE a.kind = 'collection' AND a.org_id = $1 AND a.key = $2 LIMIT 1`, c.OrgID, c.Name).Scan(&clash)
		if err == nil {
			return orchestrator.Errorf(orchestrator.ECONFLICT, "a collection named %q already exists in %s; collection names are unique across an organisation and its guilds, so pick another name", c.Name, clash)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var guild any
		if c.GuildID != "" {
			guild = c.GuildID
		}
		return scanCollectionInto(&c, tx.QueryRow(ctx, `INSERT INTO artifacts AS a (id, kind, level, org_id, guild_id, key, spec, created_at, updated_at)
			VALUES ($1, 'collection', $2, $3, $4, $5, $6, $7, $7) RETURNING `+collectionColumns,
			c.ID, c.Level, c.OrgID, guild, c.Name, spec, c.CreatedAt))
	})
	if err != nil {
		if orchestrator.ErrorCode(err) != orchestrator.EINTERNAL {
			return c, err
		}
		return c, fmt.Errorf("create collection %s: %w", c.Name, err)
	}
	return c, nil
}

func scanCollectionInto(c *orchestrator.Collection, r pgx.Row) error {
	got, err := scanCollection(r)
	if err != nil {
		return err
	}
	*c = got
	return nil
}

// ListCollections lists the collections owned at level (org or guild) by owner, by name.
func (s *Store) ListCollections(ctx context.Context, level, owner string) ([]orchestrator.Collection, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+collectionColumns+" FROM artifacts a WHERE a.kind = 'collection' AND a.level = $1 AND a.owner = $2 ORDER BY a.key", level, owner)
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Collection, error) { return scanCollection(r) })
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	return out, nil
}

// GetCollection reads a collection with its grants.
func (s *Store) GetCollection(ctx context.Context, id string) (orchestrator.Collection, error) {
	c, err := scanCollection(s.pool.QueryRow(ctx, "SELECT "+collectionColumns+" FROM artifacts a WHERE a.kind = 'collection' AND a.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFound("collection", id)
	}
	if err != nil {
		return c, fmt.Errorf("read collection %s: %w", id, err)
	}
	rows, err := s.pool.Query(ctx, "SELECT collection_id, COALESCE(agent_id, ''), COALESCE(guild_id, ''), access, updated_at FROM collection_grants WHERE collection_id = $1 ORDER BY agent_id IS NULL, agent_id, guild_id", id)
	if err != nil {
		return c, fmt.Errorf("read grants of collection %s: %w", id, err)
	}
	c.Grants, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.CollectionGrant, error) {
		var g orchestrator.CollectionGrant
		err := r.Scan(&g.CollectionID, &g.AgentID, &g.GuildID, &g.Access, &g.UpdatedAt)
		return g, err
	})
	if err != nil {
		return c, fmt.Errorf("read grants of collection %s: %w", id, err)
	}
	return c, nil
}

// PutCollectionGrant writes an agent's or a guild's grant on a collection, replacing the previous one.
func (s *Store) PutCollectionGrant(ctx context.Context, g orchestrator.CollectionGrant) (orchestrator.CollectionGrant, error) {
	var sql string
	var who string
	if g.AgentID != "" {
		who = g.AgentID
		sql = `INSERT INTO collection_grants (collection_id, agent_id, access, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (collection_id, agent_id) WHERE agent_id IS NOT NULL DO UPDATE SET access = EXCLUDED.access, updated_at = EXCLUDED.updated_at`
	} else {
		who = g.GuildID
		sql = `INSERT INTO collection_grants (collection_id, guild_id, access, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (collection_id, guild_id) WHERE guild_id IS NOT NULL DO UPDATE SET access = EXCLUDED.access, updated_at = EXCLUDED.updated_at`
	}
	if _, err := s.pool.Exec(ctx, sql, g.CollectionID, who, g.Access, g.UpdatedAt); err != nil {
		return g, fmt.Errorf("grant collection %s to %s: %w", g.CollectionID, who, err)
	}
	return g, nil
}

// AgentCollections reads the collections an agent may name (its organisation's tables and its
// guild's own tables) with the agent's and its guild's grant rows; name "" reads every one.
func (s *Store) AgentCollections(ctx context.Context, orgID, guildID, agentID, name string) ([]orchestrator.ReachableCollection, error) {
	sql := "SELECT " + collectionColumns + `,
			COALESCE((SELECT g.access FROM collection_grants g WHERE g.collection_id = a.id AND g.agent_id = $3), ''),
			COALESCE((SELECT g.access FROM collection_grants g WHERE g.collection_id = a.id AND g.guild_id = $2), '')
		FROM artifacts a WHERE a.kind = 'collection' AND a.org_id = $1 AND (a.level = 'org' OR a.guild_id = $2)`
	args := []any{orgID, guildID, agentID}
	if name != "" {
		sql += " AND a.key = $4"
		args = append(args, name)
	}
	rows, err := s.pool.Query(ctx, sql+" ORDER BY a.key", args...)
	if err != nil {
		return nil, fmt.Errorf("read collections of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.ReachableCollection, error) {
		var rc orchestrator.ReachableCollection
		c, err := scanCollection(r, &rc.AgentAccess, &rc.GuildAccess)
		rc.Collection = c
		return rc, err
	})
	if err != nil {
		return nil, fmt.Errorf("read collections of agent %s: %w", agentID, err)
	}
	return out, nil
}
