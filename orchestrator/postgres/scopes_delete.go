package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// DeleteOrg deletes an organisation and everything under it (its guilds and agents, their runs,
// artifacts, secrets and schedules, the connections they own and the bindings at them or pointing
// at those connections); refused while one of its agents has an open run.
func (s *Store) DeleteOrg(ctx context.Context, id string) error {
	return s.deleteScope(ctx, "organisation", "orgs", "org_id", id)
}

// DeleteGuild deletes a guild and everything under it, as DeleteOrg; refused while one of its
// agents has an open run.
func (s *Store) DeleteGuild(ctx context.Context, id string) error {
	return s.deleteScope(ctx, "guild", "guilds", "guild_id", id)
}

// DeleteAgent deletes an agent with its runs, artifacts, secrets, schedules, the connections it
// owns and the bindings at it or pointing at them; refused while it has an open run.
func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	return s.deleteScope(ctx, "agent", "agents", "agent_id", id)
}

// deleteScope deletes row id of table (whose runs carry it in column col) in one transaction: the
// row is locked first, so no run starts under it meanwhile; an open run refuses the deletion
// (ECONFLICT naming it); the foreign keys cascade the rest.
func (s *Store) deleteScope(ctx context.Context, what, table, col, id string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var found string
		if err := tx.QueryRow(ctx, "SELECT id FROM "+table+" WHERE id = $1 FOR UPDATE", id).Scan(&found); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound(what, id)
			}
			return err
		}
		rows, err := tx.Query(ctx, "SELECT id FROM runs WHERE "+col+" = $1 AND status = 'open' ORDER BY created_at LIMIT 5", id)
		if err != nil {
			return err
		}
		open, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(open) > 0 {
			return orchestrator.Errorf(orchestrator.ECONFLICT, "%s %s has open runs (%s); close them first (POST /api/runs/{id}/close), then delete it", what, id, strings.Join(open, ", "))
		}
		_, err = tx.Exec(ctx, "DELETE FROM "+table+" WHERE id = $1", id)
		return err
	})
	if err != nil && orchestrator.ErrorCode(err) == orchestrator.EINTERNAL {
		return fmt.Errorf("delete %s %s: %w", what, id, err)
	}
	return err
}
