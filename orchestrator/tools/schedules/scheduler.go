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

// batch is how many due schedules one transaction fires at most.
const batch = 50

// RunStarter starts runs (runs.Service implements it).
type RunStarter interface {
	StartRun(ctx context.Context, agentID string, req runs.StartRequest) (orchestrator.Run, error)
}

// Scheduler fires due schedules as schedule-triggered runs. Several schedulers may share one
// database: row locks with SKIP LOCKED hand each due schedule to exactly one of them. After
// downtime a schedule that missed several wake-ups fires once, and its next wake-up is computed
// from now.
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

// Tick fires every schedule due now and returns how many runs it started.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	now := time.Now().UTC()
	if s.Now != nil {
		now = s.Now().UTC()
	}
	now = now.Truncate(time.Microsecond)
	total := 0
	for {
		n, err := s.Store.FireDue(ctx, now, batch, func(ctx context.Context, sc orchestrator.Schedule) (string, *time.Time, error) {
			next, err := NextAfter(sc, now)
			if err != nil {
				s.log().Error("schedule cannot compute its next wake-up; it stops", "schedule_id", sc.ID, "err", err.Error())
				next = nil
			}
			run, err := s.Runs.StartRun(ctx, sc.AgentID, runs.StartRequest{Kind: orchestrator.KindSchedule})
			if err != nil {
				// The wake-up is skipped, not retried every tick: the next one is computed from now.
				s.log().Error("schedule run did not start", "schedule_id", sc.ID, "agent_id", sc.AgentID, "err", err.Error())
				return "", next, nil
			}
			s.log().Info("schedule fired", "schedule_id", sc.ID, "run_id", run.ID, "due_at", sc.NextRunAt)
			return run.ID, next, nil
		})
		total += n
		if err != nil {
			return total, err
		}
		if n < batch {
			return total, nil
		}
	}
}

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
