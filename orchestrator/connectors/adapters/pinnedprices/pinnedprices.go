// Package pinnedprices is the Pinned prices adapter: a CoinGecko Pro key plus pinned coins,
// checked at Connect (ping, and /simple/price for every pinned id), quoted at each run start,
// and a coin search for the picker. It lists no model tools.
package pinnedprices

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "pinned_prices"

// provider names CoinGecko, whose API this is, in errors.
const provider = "CoinGecko"

// MaxCoins is the most coins a login pins (the manifest's max_coins).
const MaxCoins = 20

// searchRows is the most coins one picker search returns.
const searchRows = 20

func init() { adapters.Register(Adapter{}) }

// Adapter is the Pinned prices adapter.
type Adapter struct{}

var _ adapters.Coins = Adapter{}

// Slug returns "pinned_prices".
func (Adapter) Slug() string { return Slug }

func client(l adapters.Login) adapters.HTTP {
	key := l.Credential("api_key")
	return adapters.HTTP{Provider: provider, Login: l, Auth: func(h http.Header) { h.Set("x-cg-pro-api-key", key) }}
}

// Verify pings the key, then checks that CoinGecko quotes every id in l.Coins: an id it does not
// quote is a refused Connect (KindInvalid, naming the ids).
func (a Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	if err := client(l).JSON(ctx, adapters.Get(l.URL, "/ping", nil, "the /ping endpoint"), new(map[string]any)); err != nil {
		return connections.Verification{}, err
	}
	if len(l.Coins) == 0 {
		return connections.Verification{}, nil
	}
	return connections.Verification{}, a.Check(ctx, l, l.Coins)
}

// Check asks /simple/price for ids and refuses the list when CoinGecko does not quote one.
func (Adapter) Check(ctx context.Context, l adapters.Login, ids []string) error {
	if len(ids) == 0 || len(ids) > MaxCoins {
		return adapters.Invalid(provider, "Pinned prices pins 1 to 20 coins")
	}
	got, err := simplePrice(ctx, l, ids)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range ids {
		if _, ok := got[id]["usd"]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return adapters.Invalid(provider, "does not quote "+strings.Join(missing, ", ")+"; pick coins from the search")
	}
	return nil
}

// Call answers that Pinned prices lists no model tools.
func (Adapter) Call(_ context.Context, _ adapters.Login, tool string, _ map[string]any) (string, error) {
	return "", adapters.UnknownTool("Pinned prices", tool)
}

func simplePrice(ctx context.Context, l adapters.Login, ids []string) (map[string]map[string]float64, error) {
	q := url.Values{"ids": {strings.Join(ids, ",")}, "vs_currencies": {"usd"}, "include_24hr_change": {"true"}, "include_last_updated_at": {"true"}}
	var out map[string]map[string]float64
	if err := client(l).JSON(ctx, adapters.Get(l.URL, "/simple/price", q, "prices of "+strings.Join(ids, ",")), &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Quote quotes the pinned coins in one /simple/price request, in their order; a coin CoinGecko
// did not quote this time has a nil USD. quoted_at is CoinGecko's last update, else the clock.
func (Adapter) Quote(ctx context.Context, l adapters.Login, coins []orchestrator.Coin) ([]orchestrator.PinnedPrice, error) {
	if len(coins) == 0 {
		return nil, nil
	}
	ids := make([]string, len(coins))
	for i, c := range coins {
		ids[i] = c.ID
	}
	got, err := simplePrice(ctx, l, ids)
	if err != nil {
		return nil, err
	}
	now := l.Clock().UTC()
	out := make([]orchestrator.PinnedPrice, len(coins))
	for i, c := range coins {
		p := orchestrator.PinnedPrice{Coin: c, QuotedAt: now}
		if m, ok := got[c.ID]; ok {
			if v, ok := m["usd"]; ok {
				p.USD = &v
			}
			if v, ok := m["usd_24h_change"]; ok {
				p.Change24h = &v
			}
			if ts, ok := m["last_updated_at"]; ok && ts > 0 {
				p.QuotedAt = time.Unix(int64(ts), 0).UTC()
			}
		}
		out[i] = p
	}
	return out, nil
}

// Search finds coins for the picker by name or symbol, at most 20, best first.
func (Adapter) Search(ctx context.Context, l adapters.Login, q string) ([]orchestrator.Coin, error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return nil, adapters.Invalid(provider, "q is required")
	}
	var out struct {
		Coins []orchestrator.Coin `json:"coins"`
	}
	if err := client(l).JSON(ctx, adapters.Get(l.URL, "/search", url.Values{"query": {q}}, "search "+q), &out); err != nil {
		return nil, err
	}
	if len(out.Coins) > searchRows {
		out.Coins = out.Coins[:searchRows]
	}
	return out.Coins, nil
}
