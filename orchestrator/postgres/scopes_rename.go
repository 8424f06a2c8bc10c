package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// RenameOrg gives an organisation a new name and answers it; a missing one is ENOTFOUND.
func (s *Store) RenameOrg(ctx context.Context, id, name string) (orchestrator.Org, error) {
	var o orchestrator.Org
	err := s.pool.QueryRow(ctx, "UPDATE orgs SET name = $2 WHERE id = $1 RETURNING id, name, created_at", id, name).Scan(&o.ID, &o.Name, &o.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, notFound("organisation", id)
	}
	if err != nil {
		return o, fmt.Errorf("rename org %s: %w", id, err)
	}
	return o, nil
}

// RenameGuild gives a guild a new name and answers it; a missing one is ENOTFOUND.
func (s *Store) RenameGuild(ctx context.Context, id, name string) (orchestrator.Guild, error) {
	var g orchestrator.Guild
	err := s.pool.QueryRow(ctx, "UPDATE guilds SET name = $2 WHERE id = $1 RETURNING id, org_id, name, created_at", id, name).
		Scan(&g.ID, &g.OrgID, &g.Name, &g.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, notFound("guild", id)
	}
	if err != nil {
		return g, fmt.Errorf("rename guild %s: %w", id, err)
	}
	return g, nil
}
