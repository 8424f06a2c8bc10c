package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// CreateSchedule stores a schedule of an agent (its guild and organisation come from the agent
// row). A schedule past the agent's config.max_schedules is refused with ECONFLICT; the agent row
// is locked meanwhile (the limit is read from it under that lock), so concurrent creates, or a
// create beside a config change, cannot pass the limit.
func (s *Store) CreateSchedule(ctx context.Context, sc orchestrator.Schedule) (orchestrator.Schedule, error) {
	var out orchestrator.Schedule
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var cfgJSON []byte
		err := tx.QueryRow(ctx, `SELECT config FROM agents WHERE id = $1 FOR UPDATE`, sc.AgentID).Scan(&cfgJSON)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("agent", sc.AgentID)
		}
		if err != nil {
			return err
		}
		// Counted by a statement of its own once the lock is held, so it sees the schedules the
		// creates it waited for committed.
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM schedules WHERE agent_id = $1", sc.AgentID).Scan(&n); err != nil {
			return err
		}
		var cfg orchestrator.AgentConfig
		if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
			return fmt.Errorf("agent %s config: %w", sc.AgentID, err)
		}
		if max := cfg.ScheduleLimit(); n >= max {
			return orchestrator.Errorf(orchestrator.ECONFLICT, "you already have %d schedules, the most your config allows (max_schedules %d); delete one with schedule_delete (schedule_list names them) before creating another", n, max)
		}
		out, err = scanSchedule(tx.QueryRow(ctx, `INSERT INTO schedules (id, agent_id, guild_id, org_id, kind, cron, timezone, window_start, window_end,
				max_wakes, seed, description, instruction, status, next_run_at, created_at, updated_at)
			SELECT $1, a.id, a.guild_id, a.org_id, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'active', $12, $13, $13 FROM agents a WHERE a.id = $2
			RETURNING `+scheduleColumns, sc.ID, sc.AgentID, sc.Kind, sc.Cron, sc.Timezone, sc.Start, sc.End, sc.MaxWakes, sc.Seed,
			sc.Description, sc.Instruction, sc.NextRunAt, sc.CreatedAt))
		return err
	})
	if err != nil {
		if orchestrator.ErrorCode(err) != orchestrator.EINTERNAL {
			return out, err
		}
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

// ClaimDue locks up to limit active schedules due at now, skipping rows another process holds
// (FOR UPDATE SKIP LOCKED), and in that one transaction advances each one's next_run_at to next(sc)
// and writes its pending wake-up, keyed by (schedule_id, due_at) and carrying the id of the run
// it will start. So a due wake-up is claimed once however many schedulers share the database, and
// a crash cannot separate the claim from the advance. A schedule whose earlier wake-up is still
// pending (its run has not started yet, say after a crash and downtime) gets no second one: the
// missed wake-ups fold into it, one run, not a burst. A schedule whose last run is still open
// gets none either: the wake-up is recorded as skipped (schedule_skips, naming that run), so an
// agent never piles up runs it is not closing. It returns how many schedules it advanced, how
// many wake-ups it wrote and how many it skipped.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, limit int, next orchestrator.NextWakeFunc) (advanced, claimed, skipped int, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT "+scheduleColumns+` FROM schedules
			WHERE status = 'active' AND next_run_at <= $1 ORDER BY next_run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`, now, limit)
		if err != nil {
			return err
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Schedule, error) { return scanSchedule(r) })
		if err != nil {
			return err
		}
		advanced, claimed, skipped = 0, 0, 0
		if len(due) == 0 {
			return nil
		}
		// One round trip for the lot: per schedule, advance it, and write its wake-up unless one
		// is pending or its last run is open, in which case the skip is written.
		var b pgx.Batch
		for _, sc := range due {
			b.Queue(`WITH open_run AS (SELECT id FROM runs WHERE id = $8 AND status = 'open'),
				advance AS (UPDATE schedules SET next_run_at = $2, updated_at = $3,
					last_run_at = CASE WHEN EXISTS (SELECT 1 FROM open_run) THEN last_run_at ELSE $3 END WHERE id = $1),
				skip AS (INSERT INTO schedule_skips (schedule_id, due_at, open_run_id, skipped_at)
					SELECT $1, $4, id, $3 FROM open_run ON CONFLICT (schedule_id, due_at) DO NOTHING RETURNING 1),
				wake AS (INSERT INTO schedule_wakeups (schedule_id, due_at, run_id, agent_id, instruction, claimed_at)
					SELECT $1, $4, $5, $6, $7, $3
					WHERE NOT EXISTS (SELECT 1 FROM schedule_wakeups WHERE schedule_id = $1 AND state = 'pending')
						AND NOT EXISTS (SELECT 1 FROM open_run)
					ON CONFLICT (schedule_id, due_at) DO NOTHING RETURNING 1)
				SELECT (SELECT count(*) FROM wake), (SELECT count(*) FROM skip)`,
				sc.ID, next(sc), now, sc.NextRunAt, orchestrator.NewID(orchestrator.PrefixRun), sc.AgentID, sc.Instruction, sc.LastRunID)
		}
		br := tx.SendBatch(ctx, &b)
		for range due {
			var woke, skip int
			if err := br.QueryRow().Scan(&woke, &skip); err != nil {
				br.Close()
				return err
			}
			advanced++
			claimed += woke
			skipped += skip
		}
		return br.Close()
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("claim due schedules: %w", err)
	}
	return advanced, claimed, skipped, nil
}

// MaxWakeupAttempts is how many failed starts a wake-up gets before it is kept as failed.
const MaxWakeupAttempts = 5

// StartWakeups locks up to limit pending wake-ups, oldest first, skipping rows another process
// holds, and calls start for each. A started one is recorded as a firing (with the schedule's
// last_run_id) and dropped in the same transaction; should that transaction not commit, the wake-up
// stays pending and the next try finds its run, so the wake-up is neither lost nor doubled. A failed
// start counts an attempt and keeps the reason; it is given up (state failed) after
// MaxWakeupAttempts, or at once when final(err). It returns how many wake-ups it took and how many
// of them started.
func (s *Store) StartWakeups(ctx context.Context, now time.Time, limit int, start orchestrator.StartWakeupFunc, final func(error) bool) (taken, started int, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT schedule_id, due_at, run_id, agent_id, instruction, claimed_at, attempts FROM schedule_wakeups
			WHERE state = 'pending' ORDER BY claimed_at, schedule_id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		pending, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Wakeup, error) {
			var w orchestrator.Wakeup
			return w, r.Scan(&w.ScheduleID, &w.DueAt, &w.RunID, &w.AgentID, &w.Instruction, &w.ClaimedAt, &w.Attempts)
		})
		if err != nil {
			return err
		}
		taken, started = len(pending), 0
		// The starts first, then every outcome in one round trip, in the same transaction.
		var b pgx.Batch
		for _, w := range pending {
			if serr := start(ctx, w); serr != nil {
				if ctx.Err() != nil {
					return serr
				}
				state := "pending"
				if w.Attempts+1 >= MaxWakeupAttempts || (final != nil && final(serr)) {
					state = "failed"
				}
				b.Queue("UPDATE schedule_wakeups SET attempts = attempts + 1, last_error = $3, state = $4 WHERE schedule_id = $1 AND due_at = $2",
					w.ScheduleID, w.DueAt, clipError(serr.Error()), state)
				continue
			}
			b.Queue(`WITH fired AS (
					INSERT INTO schedule_firings (run_id, schedule_id, instruction, due_at, fired_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id) DO NOTHING
				), latest AS (UPDATE schedules SET last_run_id = $1 WHERE id = $2)
				DELETE FROM schedule_wakeups WHERE schedule_id = $2 AND due_at = $4`, w.RunID, w.ScheduleID, w.Instruction, w.DueAt, now)
			started++
		}
		if b.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return 0, 0, fmt.Errorf("start claimed wake-ups: %w", err)
	}
	return taken, started, nil
}

// clipError bounds a stored error text.
func clipError(s string) string {
	if len(s) > 2000 {
		return strings.ToValidUTF8(s[:2000], "") + "…"
	}
	return s
}

// ListFirings lists a schedule's firings, newest first: the wake-ups that started a run (with that
// run's status and close reason), and those skipped because its last run was still open.
func (s *Store) ListFirings(ctx context.Context, scheduleID string) ([]orchestrator.ScheduleFiring, error) {
	rows, err := s.pool.Query(ctx, `SELECT f.run_id, f.schedule_id, f.instruction, f.due_at, f.fired_at, 'started', '', r.status, coalesce(r.close_reason, '')
		FROM schedule_firings f JOIN runs r ON r.id = f.run_id WHERE f.schedule_id = $1
		UNION ALL
		SELECT '', k.schedule_id, s.instruction, k.due_at, k.skipped_at, 'skipped', k.open_run_id, '', '' FROM schedule_skips k JOIN schedules s ON s.id = k.schedule_id WHERE k.schedule_id = $1
		ORDER BY 5 DESC, 1`, scheduleID)
	if err != nil {
		return nil, fmt.Errorf("list firings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.ScheduleFiring, error) {
		var f orchestrator.ScheduleFiring
		err := r.Scan(&f.RunID, &f.ScheduleID, &f.Instruction, &f.DueAt, &f.FiredAt, &f.Outcome, &f.OpenRunID, &f.RunStatus, &f.CloseReason)
		f.Missed = f.CloseReason == orchestrator.CloseMissed
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("list firings: %w", err)
	}
	return nonNil(out), nil
}
