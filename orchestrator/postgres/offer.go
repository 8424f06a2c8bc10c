package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
)

// SetOfferedTools replaces an open run's offered tools (a later generation drops tools now off).
func (s *Store) SetOfferedTools(ctx context.Context, runID string, tools []orchestrator.OfferedTool) error {
	b, err := json.Marshal(tools)
	if err != nil {
		return fmt.Errorf("encode offered tools: %w", err)
	}
	tag, err := s.pool.Exec(ctx, "UPDATE runs SET offered_tools = $2 WHERE id = $1 AND status = 'open'", runID, b)
	if err != nil {
		return fmt.Errorf("set offered tools of %s: %w", runID, err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is not open (or does not exist); its offer stays as it was", runID)
	}
	return nil
}
