package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
)

var coinID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// checkCoins checks a Pinned prices login's coins (1 to max_coins, each id, symbol and name) and
// returns the connection settings; other servers take no coins.
func checkCoins(srv orchestrator.MCPServer, coins []orchestrator.Coin) (json.RawMessage, error) {
	if srv.Config.MaxCoins == 0 {
		if len(coins) > 0 {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "coins are only for Pinned prices, not %s", srv.Name)
		}
		return json.RawMessage(`{}`), nil
	}
	if len(coins) == 0 || len(coins) > srv.Config.MaxCoins {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "%s pins 1 to %d coins (id, symbol, name), got %d", srv.Name, srv.Config.MaxCoins, len(coins))
	}
	seen := map[string]bool{}
	for i, c := range coins {
		if !coinID.MatchString(c.ID) || strings.TrimSpace(c.Symbol) == "" || strings.TrimSpace(c.Name) == "" || len(c.Symbol) > 40 || len(c.Name) > 200 {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "coins[%d] needs a CoinGecko id (lower-case, e.g. bitcoin), a symbol and a name", i)
		}
		if seen[c.ID] {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "coins[%d]: %s is pinned twice", i, c.ID)
		}
		seen[c.ID] = true
	}
	b, err := json.Marshal(map[string]any{"coins": coins})
	if err != nil {
		return nil, fmt.Errorf("encode coins: %w", err)
	}
	return b, nil
}

// pinnedServer returns Pinned prices' catalog row and the adapter seam that serves it.
func (s *Service) pinnedServer(ctx context.Context) (orchestrator.MCPServer, connections.LocalAdapters, error) {
	srv, err := s.GetServer(ctx, connections.PinnedPricesSlug)
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
func (s *Service) SearchCoins(ctx context.Context, apiKey, q string) ([]orchestrator.Coin, error) {
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
func (s *Service) pinnedLogin(ctx context.Context, id string) (orchestrator.MCPServer, connections.LocalAdapters, map[string]string, error) {
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
	_, login, err := s.Caller.Login(ctx, id, "")
	if err != nil {
		return srv, nil, nil, err
	}
	return srv, la, login.Credentials, nil
}

// SearchConnectionCoins is the coin picker of a Pinned prices login, with its stored key.
func (s *Service) SearchConnectionCoins(ctx context.Context, id, q string) ([]orchestrator.Coin, error) {
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
func (s *Service) PinCoins(ctx context.Context, id string, coins []orchestrator.Coin) (orchestrator.Connection, error) {
	srv, la, creds, err := s.pinnedLogin(ctx, id)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	settings, err := checkCoins(srv, coins)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if err := la.CheckCoins(ctx, srv, creds, coinIDs(connections.PinnedPrices{Coins: coins})); err != nil {
		return orchestrator.Connection{}, err
	}
	conn, err := s.Store.SetConnectionSettings(ctx, id, settings, s.now())
	if err != nil {
		return orchestrator.Connection{}, err
	}
	s.log().Info("pinned coins replaced", "connection_id", id, "coins", len(coins))
	return conn, nil
}
