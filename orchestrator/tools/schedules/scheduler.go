package schedules

import (
	"context"
	"log/slog"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// DefaultInterval is how often the scheduler looks for due schedules.
const DefaultInterval = 15 * time.Second

// batch is how many schedules or wake-ups one transaction handles at most.
const batch = 50

// RunStarter starts runs and reads them back (runs.Service implements it).
type RunStarter interface {
	StartRun(ctx context.Context, agentID string, req runs.StartRequest) (orchestrator.Run, error)
	GetRun(ctx context.Context, id string) (orchestrator.Run, error)
}

// Scheduler fires due schedules as schedule-triggered runs, exactly once per wake-up even with
// several schedulers on one database and across crashes. A tick has two steps. Claim: one
// transaction locks the due schedules (FOR UPDATE SKIP LOCKED), advances each one's next_run_at and
// writes its wake-up, keyed by (schedule_id, due_at), with the id its run will have. Start: each
// pending wake-up starts its run under that id, and the firing is recorded as the wake-up is
// dropped; since the id is the runs' primary key, a start retried after a crash finds the run
// instead of making a second one. After downtime a schedule that missed several wake-ups fires
// once, and its next wake-up is computed from now. A schedule whose last run is still open skips
// its wake-up, recorded as a skipped firing.
type Scheduler struct {
	Store    Store
	Runs     RunStarter
	Now      func() time.Time // clock; nil means time.Now
	Interval time.Duration    // 0 means DefaultInterval
	Log      *slog.Logger
}

func (s *Scheduler) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Tick claims every schedule due now, then starts the runs of the pending wake-ups (its own and
// any a crashed scheduler left), and returns how many runs it started.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	now := time.Now().UTC()
	if s.Now != nil {
		now = s.Now().UTC()
	}
	now = now.Truncate(time.Microsecond)
	for {
		advanced, claimed, skipped, err := s.Store.ClaimDue(ctx, now, batch, func(sc orchestrator.Schedule) *time.Time {
			next, err := NextAfter(sc, now)
			if err != nil {
				s.log().Error("schedule cannot compute its next wake-up; it stops", "schedule_id", sc.ID, "err", err.Error())
				return nil
			}
			return next
		})
		if err != nil {
			return 0, err
		}
		if folded := advanced - claimed - skipped; folded > 0 {
			s.log().Warn("due schedules whose earlier wake-up has not started yet: folded into it", "schedules", folded)
		}
		if skipped > 0 {
			s.log().Info("due schedules whose last run is still open: wake-up skipped and recorded", "schedules", skipped)
		}
		if advanced < batch {
			break
		}
	}
	total := 0
	for {
		taken, started, err := s.Store.StartWakeups(ctx, now, batch, s.start, final)
		total += started
		if err != nil {
			return total, err
		}
		if taken < batch || started < taken {
			return total, nil // the rest (and the retries) on the next tick
		}
	}
}

// start starts the run of a wake-up under its fixed id. The id is the run row's primary key, so a
// start that fails because the run exists (an earlier start of this wake-up wrote it, then the
// process died before recording the firing) counts as started: one run, never two.
func (s *Scheduler) start(ctx context.Context, w orchestrator.Wakeup) error {
	if _, err := s.Runs.StartRun(ctx, w.AgentID, runs.StartRequest{ID: w.RunID, Kind: orchestrator.KindSchedule,
		Schedule: &orchestrator.ScheduleTrigger{ID: w.ScheduleID, Instruction: w.Instruction, DueAt: w.DueAt}}); err != nil {
		if _, gerr := s.Runs.GetRun(ctx, w.RunID); gerr == nil {
			s.log().Info("schedule wake-up found its run started already", "schedule_id", w.ScheduleID, "run_id", w.RunID, "due_at", w.DueAt)
			return nil
		}
		s.log().Error("schedule run did not start", "schedule_id", w.ScheduleID, "agent_id", w.AgentID, "run_id", w.RunID, "attempt", w.Attempts+1, "err", err.Error())
		return err
	}
	s.log().Info("schedule fired", "schedule_id", w.ScheduleID, "run_id", w.RunID, "due_at", w.DueAt)
	return nil
}

// final reports whether a failed start will fail again however often it is retried: anything but
// an internal error (the agent is gone, its config refuses the run).
func final(err error) bool { return orchestrator.ErrorCode(err) != orchestrator.EINTERNAL }

// Run ticks every Interval until ctx is done.
func (s *Scheduler) Run(ctx context.Context) {
	iv := s.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	tk := time.NewTicker(iv)
	defer tk.Stop()
	for {
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.log().Error("scheduler tick failed", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}
