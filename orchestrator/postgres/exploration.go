package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
)

// SetExploration stores a run's exploration figures; a missing run is ENOTFOUND.
func (s *Store) SetExploration(ctx context.Context, runID string, e orchestrator.Exploration) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("set exploration: %w", err)
	}
	tag, err := s.pool.Exec(ctx, "UPDATE runs SET exploration = $2 WHERE id = $1", runID, b)
	if err != nil {
		return fmt.Errorf("set exploration of run %s: %w", runID, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("run", runID)
	}
	return nil
}
