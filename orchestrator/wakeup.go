package orchestrator

import (
	"context"
	"time"
)

// Wakeup is a claimed wake-up of a schedule, waiting for its run: the run will have RunID.
type Wakeup struct {
	ScheduleID  string
	DueAt       time.Time
	RunID       string
	AgentID     string
	Instruction string
	ClaimedAt   time.Time
	Attempts    int // failed starts so far
}

// NextWakeFunc returns a schedule's next wake-up after the claim's now (nil: it has none).
type NextWakeFunc func(sc Schedule) *time.Time

// StartWakeupFunc starts the run of a wake-up under w.RunID. It must be idempotent: when the run
// already exists (a start that got that far before a crash) it reports success.
type StartWakeupFunc func(ctx context.Context, w Wakeup) error
