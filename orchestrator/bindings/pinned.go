package bindings

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// PinnedPrices is Pinned prices' Connect settings: the coins a login pins, stored as the
// connection's settings.
type PinnedPrices struct {
	Coins []Coin `json:"coins"` // 1 to the server's max_coins
}

// Coin is one pinned coin of a Pinned prices login.
type Coin struct {
	ID     string `json:"id"`
	Symbol string `json:"symbol"`
	Name   string `json:"name"`
}

var coinID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// checkCoins checks a Pinned prices login's coins (1 to max_coins, each id, symbol and name) and
// returns the connection settings; other servers take no coins.
func checkCoins(srv orchestrator.MCPServer, coins []Coin) (json.RawMessage, error) {
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
