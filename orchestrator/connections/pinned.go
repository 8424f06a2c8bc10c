package connections

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// PinnedPricesSlug is the catalog slug of Pinned prices.
const PinnedPricesSlug = "pinned_prices"

// quoteTimeout bounds the run-start quote, so a provider that hangs delays a run start only so long.
const quoteTimeout = 10 * time.Second

// PinnedPrices is Pinned prices' Connect settings: the coins a login pins, stored as the
// connection's settings.
type PinnedPrices struct {
	Coins []orchestrator.Coin `json:"coins"` // 1 to the server's max_coins
}

// PinnedState quotes the coins of a connected Pinned prices login for a run's start: the run's
// state.prices, or state.prices_error saying why they could not be quoted (never a refused start).
func (r *Caller) PinnedState(ctx context.Context, agentID, connectionID string) *orchestrator.RunState {
	state := &orchestrator.RunState{Prices: []orchestrator.PinnedPrice{}}
	row, login, err := r.Login(ctx, connectionID, "")
	if err != nil {
		r.log().Warn("pinned prices: opening the login failed", "connection_id", connectionID, "err", err.Error())
		state.PricesError = "the pinned prices could not be quoted: the login could not be opened"
		return state
	}
	var pinned PinnedPrices
	if err := json.Unmarshal(row.Connection.Settings, &pinned); err != nil || len(pinned.Coins) == 0 {
		state.PricesError = fmt.Sprintf("Pinned prices login %s pins no coins; pin them with PUT /api/mcp/connections/%s/pinned-prices", connectionID, connectionID)
		return state
	}
	qctx, cancel := context.WithTimeout(ctx, quoteTimeout)
	defer cancel()
	prices, err := r.Local.QuoteCoins(qctx, row.Server, login.Credentials, pinned.Coins)
	if err != nil {
		r.log().Warn("pinned prices: the run-start quote failed", "connection_id", connectionID, "agent_id", agentID, "err", err.Error())
		state.PricesError = "ERROR: " + err.Error()
		return state
	}
	state.Prices = prices
	return state
}

// QuotesPinned reports whether the Pinned prices adapter is built in, so run starts quote.
func (r *Caller) QuotesPinned() bool { return r.Local != nil && r.Local.Serves(PinnedPricesSlug) }
