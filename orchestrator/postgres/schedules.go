package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

const scheduleColumns = `id, agent_id, guild_id, org_id, kind, cron, timezone, window_start, window_end, max_wakes, seed,
	description, instruction, status, next_run_at, last_run_at, coalesce(last_run_id, ''), created_at, updated_at`

func scanSchedule(r pgx.Row) (orchestrator.Schedule, error) {
	var s orchestrator.Schedule
	err := r.Scan(&s.ID, &s.AgentID, &s.GuildID, &s.OrgID, &s.Kind, &s.Cron, &s.Timezone, &s.Start, &s.End, &s.MaxWakes, &s.Seed,
		&s.Description, &s.Instruction, &s.Status, &s.NextRunAt, &s.LastRunAt, &s.LastRunID, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// CreateSchedule stores a schedule of an agent (its guild and organisation come from the agent row).
func (s *Store) CreateSchedule(ctx context.Context, sc orchestrator.Schedule) (orchestrator.Schedule, error) {
	row := s.pool.QueryRow(ctx, `INSERT INTO schedules (id, agent_id, guild_id, org_id, kind, cron, timezone, window_start, window_end,
			max_wakes, seed, description, instruction, status, next_run_at, created_at, updated_at)
		SELECT $1, a.id, a.guild_id, a.org_id, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'active', $12, $13, $13 FROM agents a WHERE a.id = $2
		RETURNING `+scheduleColumns, sc.ID, sc.AgentID, sc.Kind, sc.Cron, sc.Timezone, sc.Start, sc.End, sc.MaxWakes, sc.Seed,
		sc.Description, sc.Instruction, sc.NextRunAt, sc.CreatedAt)
	out, err := scanSchedule(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, notFound("agent", sc.AgentID)
	}
	if err != nil {
		return out, fmt.Errorf("create schedule: %w", err)
	}
	return out, nil
}

// ListSchedules lists an agent's schedules, oldest first.
func (s *Store) ListSchedules(ctx context.Context, agentID string) ([]orchestrator.Schedule, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+scheduleColumns+" FROM schedules WHERE agent_id = $1 ORDER BY created_at, id", agentID)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Schedule, error) { return scanSchedule(r) })
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return nonNil(out), nil
}

// GetSchedule reads one schedule of an agent; another agent's schedule is ENOTFOUND.
func (s *Store) GetSchedule(ctx context.Context, agentID, id string) (orchestrator.Schedule, error) {
	out, err := scanSchedule(s.pool.QueryRow(ctx, "SELECT "+scheduleColumns+" FROM schedules WHERE id = $1 AND agent_id = $2", id, agentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return out, notFound("schedule", id)
	}
	if err != nil {
		return out, fmt.Errorf("get schedule %s: %w", id, err)
	}
	return out, nil
}

// SetScheduleStatus pauses or resumes an agent's schedule and sets its next_run_at.
func (s *Store) SetScheduleStatus(ctx context.Context, agentID, id, status string, next *time.Time, at time.Time) (orchestrator.Schedule, error) {
	out, err := scanSchedule(s.pool.QueryRow(ctx, `UPDATE schedules SET status = $3, next_run_at = $4, updated_at = $5
		WHERE id = $1 AND agent_id = $2 RETURNING `+scheduleColumns, id, agentID, status, next, at))
	if errors.Is(err, pgx.ErrNoRows) {
		return out, notFound("schedule", id)
	}
	if err != nil {
		return out, fmt.Errorf("update schedule %s: %w", id, err)
	}
	return out, nil
}

// DeleteSchedule removes an agent's schedule.
func (s *Store) DeleteSchedule(ctx context.Context, agentID, id string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM schedules WHERE id = $1 AND agent_id = $2", id, agentID)
	if err != nil {
		return fmt.Errorf("delete schedule %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("schedule", id)
	}
	return nil
}

// FireFunc starts the run of one due schedule and returns the run id ("" when none was started)
// and the schedule's next wake-up after now.
type FireFunc func(ctx context.Context, sc orchestrator.Schedule) (runID string, next *time.Time, err error)

// FireDue locks up to limit active schedules due at now, skipping rows another process holds
// (FOR UPDATE SKIP LOCKED), calls fire for each while the lock is held, then advances next_run_at
// and records the firing in the same transaction, so a due schedule fires once however many
// schedulers share the database. It returns how many runs were started.
func (s *Store) FireDue(ctx context.Context, now time.Time, limit int, fire FireFunc) (int, error) {
	fired := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT "+scheduleColumns+` FROM schedules
			WHERE status = 'active' AND next_run_at <= $1 ORDER BY next_run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`, now, limit)
		if err != nil {
			return err
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Schedule, error) { return scanSchedule(r) })
		if err != nil {
			return err
		}
		for _, sc := range due {
			runID, next, err := fire(ctx, sc)
			if err != nil {
				return fmt.Errorf("fire schedule %s: %w", sc.ID, err)
			}
			if _, err := tx.Exec(ctx, `UPDATE schedules SET next_run_at = $2, last_run_at = $3, last_run_id = coalesce(NULLIF($4, ''), last_run_id), updated_at = $3
				WHERE id = $1`, sc.ID, next, now, runID); err != nil {
				return err
			}
			if runID == "" {
				continue
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schedule_firings (run_id, schedule_id, instruction, due_at, fired_at) VALUES ($1, $2, $3, $4, $5)",
				runID, sc.ID, sc.Instruction, sc.NextRunAt, now); err != nil {
				return err
			}
			fired++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("fire due schedules: %w", err)
	}
	return fired, nil
}

// ListFirings lists a schedule's firings, newest first.
func (s *Store) ListFirings(ctx context.Context, scheduleID string) ([]orchestrator.ScheduleFiring, error) {
	rows, err := s.pool.Query(ctx, "SELECT run_id, schedule_id, instruction, due_at, fired_at FROM schedule_firings WHERE schedule_id = $1 ORDER BY fired_at DESC, run_id", scheduleID)
	if err != nil {
		return nil, fmt.Errorf("list firings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.ScheduleFiring, error) {
		var f orchestrator.ScheduleFiring
		return f, r.Scan(&f.RunID, &f.ScheduleID, &f.Instruction, &f.DueAt, &f.FiredAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list firings: %w", err)
	}
	return nonNil(out), nil
}
