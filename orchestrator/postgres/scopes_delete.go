package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// DeleteOrg deletes an organisation and everything under it (its guilds and agents, their runs,
// artifacts, secrets and schedules, the connections they own and the bindings at them or pointing
// at those connections); while one of its agents has an open run it is refused, unless closeRuns,
// which closes them first (reason org_deleted).
func (s *Store) DeleteOrg(ctx context.Context, id string, closeRuns bool) error {
	return s.deleteScope(ctx, "organisation", "orgs", "org_id", id, closeRuns, orchestrator.CloseOrgDeleted)
}

// DeleteGuild deletes a guild and everything under it, as DeleteOrg (reason guild_deleted).
func (s *Store) DeleteGuild(ctx context.Context, id string, closeRuns bool) error {
	return s.deleteScope(ctx, "guild", "guilds", "guild_id", id, closeRuns, orchestrator.CloseGuildDeleted)
}

// DeleteAgent deletes an agent with its runs, artifacts, secrets, schedules, the connections it
// owns and the bindings at it or pointing at them, as DeleteOrg (reason agent_deleted).
func (s *Store) DeleteAgent(ctx context.Context, id string, closeRuns bool) error {
	return s.deleteScope(ctx, "agent", "agents", "agent_id", id, closeRuns, orchestrator.CloseAgentDeleted)
}

// deleteScope deletes row id of table (whose runs carry it in column col) in one transaction: the
// row is locked first, so no run starts under it meanwhile; an open run refuses the deletion
// (ECONFLICT naming it) unless closeRuns, which closes them for reason, reporting each; pending
// approval requests under it expire, reported; the foreign keys cascade the rest.
func (s *Store) deleteScope(ctx context.Context, what, table, col, id string, closeRuns bool, reason string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var found string
		if err := tx.QueryRow(ctx, "SELECT id FROM "+table+" WHERE id = $1 FOR UPDATE", id).Scan(&found); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound(what, id)
			}
			return err
		}
		if closeRuns {
			if err := closeScopeRuns(ctx, tx, col, id, reason, time.Now().UTC().Truncate(time.Microsecond)); err != nil {
				return err
			}
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
			e := orchestrator.Errorf(orchestrator.ECONFLICT, "%s %s has open runs (%s); close them first (POST /api/runs/{id}/close), or delete with ?close_runs=true, which closes them", what, id, strings.Join(open, ", "))
			e.Fields = map[string]any{"open_runs": open}
			return e
		}
		// A call waiting for an approval under it ends now, as a decision: its request expires
		// (reported and announced) before the cascade deletes it.
		if err := expireApprovals(ctx, tx, col, id, fmt.Sprintf("the %s was deleted before anyone decided", what), time.Now().UTC().Truncate(time.Microsecond)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "DELETE FROM "+table+" WHERE id = $1", id)
		return err
	})
	if err != nil && orchestrator.ErrorCode(err) == orchestrator.EINTERNAL {
		return fmt.Errorf("delete %s %s: %w", what, id, err)
	}
	return err
}
