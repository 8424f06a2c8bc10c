package app

import (
	"context"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/search"
	"github.com/guildsai/guilds/shared/envelope"
)

// codeSearch is code_search: text search in files or content mode (symbols comes from the graph).
func codeSearch(ctx context.Context, c *runs.Call) envelope.Reply {
	var a search.TextArgs
	if err := c.DecodeArgs(&a); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	return search.Text(ctx, c, a, search.DefaultBudget)
}

// codeMatch is code_match: structural matches of a syntax pattern.
func codeMatch(ctx context.Context, c *runs.Call) envelope.Reply {
	var a search.MatchArgs
	if err := c.DecodeArgs(&a); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	return search.Match(ctx, c, a, search.DefaultBudget)
}
