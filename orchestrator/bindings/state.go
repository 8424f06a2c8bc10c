package bindings

import (
	"context"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/runs"
)

var _ runs.StateSource = (*Policy)(nil)

// RunState quotes the coins of the agent's resolved Pinned prices login when it is connected
// (nil when there is none); a quote that fails is the state's prices_error, never a refused start.
func (p *Policy) RunState(ctx context.Context, agent orchestrator.Agent) *orchestrator.RunState {
	if p.Caller == nil || !p.Caller.QuotesPinned() {
		return nil
	}
	res, err := p.resolution(ctx, agent)
	if err != nil {
		p.log().Warn("pinned prices: reading the agent's bindings failed", "agent_id", agent.ID, "err", err.Error())
		return &orchestrator.RunState{Prices: []orchestrator.PinnedPrice{}, PricesError: "the pinned prices could not be quoted: the agent's bindings could not be read"}
	}
	st := newIndex(res.Rows).walk(orchestrator.CatalogMCP, connections.PinnedPricesSlug)
	conn, ok := res.Connections[st.ConnectionID]
	if !st.Enabled || !ok || conn.Server != connections.PinnedPricesSlug || conn.Status != orchestrator.ConnConnected {
		return nil
	}
	return p.Caller.PinnedState(ctx, agent.ID, conn.ID)
}
