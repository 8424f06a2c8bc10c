package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// PinnedPricesSlug is the catalog slug of Pinned prices.
const PinnedPricesSlug = "pinned_prices"

// quoteTimeout bounds the run-start quote, so a provider that hangs delays a run start only so long.
const quoteTimeout = 10 * time.Second

// SettingsStore replaces a connection's connector settings; postgres.Store implements it.
type SettingsStore interface {
	SetConnectionSettings(ctx context.Context, id string, settings json.RawMessage, now time.Time) (orchestrator.Connection, error)
}

var _ runs.StateSource = (*Policy)(nil)

// pinnedServer returns Pinned prices' catalog row and the adapter seam that serves it.
func (s *Service) pinnedServer(ctx context.Context) (orchestrator.MCPServer, LocalAdapters, error) {
	srv, err := s.server(ctx, PinnedPricesSlug)
	if err != nil {
		return srv, nil, err
	}
	la := s.local(srv)
	if la == nil {
		return srv, nil, orchestrator.Errorf(orchestrator.EINVALID, "%s's adapter is not built in this orchestrator", srv.Name)
	}
	return srv, la, nil
}

// checkQuery checks a coin picker query.
func checkQuery(q string) (string, error) {
	q = strings.TrimSpace(q)
	if q == "" || utf8.RuneCountInString(q) > 100 {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "q is the coin's name or symbol, 1 to 100 characters")
	}
	return q, nil
}

// SearchCoins is the coin picker before Connect: it searches with the key as typed, storing nothing.
func (s *Service) SearchCoins(ctx context.Context, apiKey, q string) ([]Coin, error) {
	srv, la, err := s.pinnedServer(ctx)
	if err != nil {
		return nil, err
	}
	if q, err = checkQuery(q); err != nil {
		return nil, err
	}
	apiKey = strings.TrimSpace(apiKey)
	if apiKey == "" || len(apiKey) > maxCredential {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "api_key (the CoinGecko Pro API key) is required")
	}
	return la.SearchCoins(ctx, srv, map[string]string{"api_key": apiKey}, q)
}

// pinnedLogin opens a Pinned prices connection's credentials.
func (s *Service) pinnedLogin(ctx context.Context, id string) (orchestrator.MCPServer, LocalAdapters, map[string]string, error) {
	srv, la, err := s.pinnedServer(ctx)
	if err != nil {
		return srv, nil, nil, err
	}
	conn, err := s.GetConnection(ctx, id)
	if err != nil {
		return srv, nil, nil, err
	}
	if conn.Server != srv.Slug {
		return srv, nil, nil, orchestrator.Errorf(orchestrator.EINVALID, "connection %s is a %s login, not %s", id, conn.Server, srv.Name)
	}
	_, login, err := s.Remote.login(ctx, id, "")
	if err != nil {
		return srv, nil, nil, err
	}
	return srv, la, login.Credentials, nil
}

// SearchConnectionCoins is the coin picker of a Pinned prices login, with its stored key.
func (s *Service) SearchConnectionCoins(ctx context.Context, id, q string) ([]Coin, error) {
	q, err := checkQuery(q)
	if err != nil {
		return nil, err
	}
	srv, la, creds, err := s.pinnedLogin(ctx, id)
	if err != nil {
		return nil, err
	}
	return la.SearchCoins(ctx, srv, creds, q)
}

// PinCoins replaces a Pinned prices login's coins after checking each id is quoted.
func (s *Service) PinCoins(ctx context.Context, id string, coins []Coin) (orchestrator.Connection, error) {
	srv, la, creds, err := s.pinnedLogin(ctx, id)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	settings, err := checkCoins(srv, coins)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if err := la.CheckCoins(ctx, srv, creds, PinnedPrices{Coins: coins}.ids()); err != nil {
		return orchestrator.Connection{}, err
	}
	st, ok := s.Store.(SettingsStore)
	if !ok {
		return orchestrator.Connection{}, fmt.Errorf("the store cannot replace connection settings")
	}
	conn, err := st.SetConnectionSettings(ctx, id, settings, s.now())
	if err != nil {
		return orchestrator.Connection{}, err
	}
	s.log().Info("pinned coins replaced", "connection_id", id, "coins", len(coins))
	return conn, nil
}

// RunState quotes the coins of the agent's resolved Pinned prices login when it is connected
// (nil when there is none); a quote that fails is the state's prices_error, never a refused start.
func (p *Policy) RunState(ctx context.Context, agent orchestrator.Agent) *orchestrator.RunState {
	if p.Remote == nil || p.Remote.Local == nil || !p.Remote.Local.Serves(PinnedPricesSlug) {
		return nil
	}
	res, err := p.resolution(ctx, agent)
	if err != nil {
		p.log().Warn("pinned prices: reading the agent's bindings failed", "agent_id", agent.ID, "err", err.Error())
		return &orchestrator.RunState{Prices: []orchestrator.PinnedPrice{}, PricesError: "the pinned prices could not be quoted: the agent's bindings could not be read"}
	}
	st := newIndex(res.Rows).walk(orchestrator.CatalogMCP, PinnedPricesSlug)
	conn, ok := res.Connections[st.ConnectionID]
	if !st.Enabled || !ok || conn.Server != PinnedPricesSlug || conn.Status != orchestrator.ConnConnected {
		return nil
	}
	state := &orchestrator.RunState{Prices: []orchestrator.PinnedPrice{}}
	row, login, err := p.Remote.login(ctx, conn.ID, "")
	if err != nil {
		p.log().Warn("pinned prices: opening the login failed", "connection_id", conn.ID, "err", err.Error())
		state.PricesError = "the pinned prices could not be quoted: the login could not be opened"
		return state
	}
	var pinned PinnedPrices
	if err := json.Unmarshal(row.Connection.Settings, &pinned); err != nil || len(pinned.Coins) == 0 {
		state.PricesError = fmt.Sprintf("Pinned prices login %s pins no coins; pin them with PUT /api/mcp/connections/%s/pinned-prices", conn.ID, conn.ID)
		return state
	}
	qctx, cancel := context.WithTimeout(ctx, quoteTimeout)
	defer cancel()
	prices, err := p.Remote.Local.QuoteCoins(qctx, row.Server, login.Credentials, pinned.Coins)
	if err != nil {
		p.log().Warn("pinned prices: the run-start quote failed", "connection_id", conn.ID, "agent_id", agent.ID, "err", err.Error())
		state.PricesError = "ERROR: " + err.Error()
		return state
	}
	state.Prices = prices
	return state
}
