package runs

import (
	"context"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
)

// ExplorationStore is the part of the run store that records a run's exploration figures.
type ExplorationStore interface {
	SetExploration(ctx context.Context, runID string, e orchestrator.Exploration) error
}

// explore computes a coding run's exploration over its calls so far and stores it on the run
// (the spec's "Exploration": after each generation of a coding run). Other runs are left as they are.
func (s *Service) explore(ctx context.Context, run *orchestrator.Run) error {
	if !run.Config.Coding {
		return nil
	}
	if err := s.settle(ctx, run.ID); err != nil {
		return err
	}
	calls, err := s.Runs.ListCalls(ctx, run.ID, orchestrator.CallPage{})
	if err != nil {
		return fmt.Errorf("exploration of run %s: %w", run.ID, err)
	}
	e := orchestrator.Explore(calls)
	if err := s.Runs.SetExploration(ctx, run.ID, e); err != nil {
		return err
	}
	run.Exploration = &e
	s.log().Info("exploration", "run_id", run.ID, "calls_before_first_edit", e.CallsBeforeFirstEdit, "read_bytes_unedited", e.ReadBytesUnedited)
	return nil
}
