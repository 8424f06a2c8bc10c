package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// scanTrigger decodes a run's stored trigger (NULL for a direct run) into t, whose Type is set.
func scanTrigger(runID string, stored []byte, t *orchestrator.RunTrigger) error {
	if stored == nil {
		return nil
	}
	typ := t.Type
	if err := json.Unmarshal(stored, t); err != nil {
		return fmt.Errorf("run %s trigger: %w", runID, err)
	}
	t.Type = typ
	return nil
}

// summaryColumns is the column list scanSummary reads: a run without its snapshot.
const summaryColumns = "id, agent_id, guild_id, org_id, kind, status, tool_call_budget, tool_calls_used, created_at, closed_at, " + triggerColumns

func scanSummary(r pgx.Row) (orchestrator.RunSummary, error) {
	var s orchestrator.RunSummary
	var trigger []byte
	if err := r.Scan(&s.ID, &s.AgentID, &s.GuildID, &s.OrgID, &s.Kind, &s.Status, &s.ToolCallBudget, &s.ToolCallsUsed, &s.CreatedAt, &s.ClosedAt,
		&s.Trigger.Type, &trigger, &s.LastActiveAt, &s.CloseReason); err != nil {
		return s, err
	}
	s.RemainingToolCalls = max(0, s.ToolCallBudget-s.ToolCallsUsed)
	return s, scanTrigger(s.ID, trigger, &s.Trigger)
}

// ListRuns lists a page of an agent's (q.AgentID) or a guild's (q.GuildID) runs, newest first, by
// state, kind and trigger, after the run q.After; an After that names no run of theirs is EINVALID.
func (s *Store) ListRuns(ctx context.Context, q orchestrator.RunQuery) ([]orchestrator.RunSummary, error) {
	col, owner := "agent_id", q.AgentID
	if q.AgentID == "" {
		col, owner = "guild_id", q.GuildID
	}
	var cursor struct {
		at time.Time
		id string
	}
	if q.After != "" {
		err := s.pool.QueryRow(ctx, "SELECT created_at, id FROM runs WHERE id = $1 AND "+col+" = $2", q.After, owner).Scan(&cursor.at, &cursor.id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "after=%q names no run of this %s; pass the next_after of the previous page, or leave it out for the newest runs", q.After, col[:len(col)-3])
		}
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
	}
	rows, err := s.pool.Query(ctx, "SELECT "+summaryColumns+" FROM runs WHERE "+col+` = $1
		AND ($2 = '' OR status = $2) AND ($3 = '' OR kind = $3) AND ($4 = '' OR trigger_type = $4)
		AND ($5 = '' OR (created_at, id) < ($6, $5)) ORDER BY created_at DESC, id DESC LIMIT $7`,
		owner, q.Status, q.Kind, q.Trigger, cursor.id, cursor.at, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.RunSummary, error) { return scanSummary(r) })
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return nonNil(out), nil
}

// CloseStaleRuns closes at most limit open runs that are idle (no activity since idleBefore) or
// missed (fired by a schedule before pickupBefore and never called), reporting run.closed for
// each, in one transaction. It locks the runs it closes and skips those another transaction holds
// (a call starting, another replica's sweep), and a run's state is checked again on its locked row:
// no run is closed twice, nor one whose call just started.
func (s *Store) CloseStaleRuns(ctx context.Context, at, idleBefore, pickupBefore time.Time, limit int) ([]orchestrator.RunSummary, error) {
	var out []orchestrator.RunSummary
	err := pgx.BeginFunc(ctx, s.pool.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE runs r SET status = 'closed', closed_at = $1,
				close_reason = CASE WHEN r.trigger_type = 'schedule' AND r.tool_calls_used = 0 AND r.created_at < $3 THEN 'missed' ELSE 'idle' END
			FROM (SELECT id AS due_id FROM runs WHERE status = 'open'
					AND (active_at < $2 OR (trigger_type = 'schedule' AND tool_calls_used = 0 AND created_at < $3))
				ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED) due
			WHERE r.id = due.due_id AND r.status = 'open'
			RETURNING `+summaryColumns, at, idleBefore, pickupBefore, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.RunSummary, error) { return scanSummary(r) })
		if err != nil || len(out) == 0 {
			return err
		}
		evs := make([]orchestrator.Event, len(out))
		for i, r := range out {
			evs[i] = orchestrator.RunClosedEvent(r)
		}
		return appendEvents(ctx, tx, evs...)
	})
	if err != nil {
		return nil, fmt.Errorf("close idle and missed runs: %w", err)
	}
	return out, nil
}

// closeScopeRuns closes every open run whose column col is id, for the reason, reporting each, in
// tx (a scope's deletion).
func closeScopeRuns(ctx context.Context, tx pgx.Tx, col, id, reason string, at time.Time) error {
	rows, err := tx.Query(ctx, "UPDATE runs SET status = 'closed', closed_at = $2, close_reason = $3 WHERE "+col+" = $1 AND status = 'open' RETURNING "+summaryColumns, id, at, reason)
	if err != nil {
		return err
	}
	closed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.RunSummary, error) { return scanSummary(r) })
	if err != nil {
		return err
	}
	evs := make([]orchestrator.Event, len(closed))
	for i, r := range closed {
		evs[i] = orchestrator.RunClosedEvent(r)
	}
	return appendEvents(ctx, tx, evs...)
}
