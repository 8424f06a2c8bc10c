package search

import (
	"context"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
)

// symbolsCap is symbols mode's cap: at most 20 groups.
const symbolsCap = 20

// symbols answers code_search mode symbols. The symbol graph answers it once it is wired in
// here; until then the mode says it is not available and points at the modes that are.
func symbols(ctx context.Context, c *runs.Call, a TextArgs, limit int) envelope.Reply {
	return envelope.Errorf(nil, "code_search mode symbols is not available yet in this sandbox; use mode files or content to search the text")
}
