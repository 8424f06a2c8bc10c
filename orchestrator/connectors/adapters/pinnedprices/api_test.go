package pinnedprices_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

// cgKey is the key the loopback CoinGecko accepts.
const cgKey = "CG-e2e-pro-key-7d1c40"

func TestMain(m *testing.M) { pgtest.Main(m) }

// adapterServe serves the orchestrator as wired on a fresh database with a secret key, in the
// sandbox backend given.
func adapterServe(t testing.TB, backend string) (*wiretest.Served, string) {
	t.Helper()
	s := wiretest.ServeIn(t, backend)
	return s, s.API
}

// coingeckoFake is CoinGecko Pro on loopback accepting cgKey (adapterstest.CoinGecko).
func coingeckoFake(t testing.TB) *adapterstest.Fake { return adapterstest.CoinGecko(t, cgKey) }

// TestPinnedPricesEndToEnd: the coin picker before and after Connect, Connect's coin checks, a
// new list checked id by id, and state.prices at run start (in the answer and in GET
// /api/runs/{id}), or an error line there when the quote fails while the run starts anyway.
func TestPinnedPricesEndToEnd(t *testing.T) {
	_, api := adapterServe(t, "local")
	f := coingeckoFake(t)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/pinned_prices", map[string]any{"url": f.URL + "/api/v3"})
	org, agent := wiretest.ScopesAt(t, api)

	found := wiretest.Must(t, 200, "POST", api+"/api/mcp/pinned-prices/search", map[string]any{"api_key": cgKey, "q": "btc"})["coins"].([]any)
	if len(found) != 1 || found[0].(map[string]any)["id"] != "bitcoin" {
		t.Fatalf("search before Connect: %v", found)
	}
	if st, out := wiretest.Request(t, "POST", api+"/api/mcp/pinned-prices/search", map[string]any{"api_key": "CG-wrong-key-0000", "q": "btc"}); st != 422 || strings.Contains(wiretest.ErrText(out), "CG-wrong-key-0000") {
		t.Fatalf("search with a refused key: %d %v", st, out)
	}
	btc := map[string]any{"id": "bitcoin", "symbol": "btc", "name": "Bitcoin"}
	eth := map[string]any{"id": "ethereum", "symbol": "eth", "name": "Ethereum"}
	nope := map[string]any{"id": "not-a-coin", "symbol": "nac", "name": "Nope"}
	body := func(coins ...any) map[string]any {
		return map[string]any{"server": "pinned_prices", "scope": "org", "scope_id": org, "credentials": map[string]any{"api_key": cgKey}, "coins": coins}
	}
	if st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body(btc, nope)); st != 422 || !strings.Contains(wiretest.ErrText(out), "not-a-coin") {
		t.Fatalf("an unquoted id: %d %v", st, out)
	}
	if st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body()); st != 422 {
		t.Fatalf("no coins: %d %v", st, out)
	}
	conn := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", body(btc))
	id := conn["id"].(string)
	if conn["verified_at"] == nil {
		t.Fatalf("connection %v", conn)
	}
	found = wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id+"/pinned-prices/search?q=btc", nil)["coins"].([]any)
	if len(found) != 1 {
		t.Fatalf("search after Connect: %v", found)
	}
	if st, out := wiretest.Request(t, "PUT", api+"/api/mcp/connections/"+id+"/pinned-prices", map[string]any{"coins": []any{btc, nope}}); st != 422 || !strings.Contains(wiretest.ErrText(out), "not-a-coin") {
		t.Fatalf("PUT an unquoted id: %d %v", st, out)
	}
	put := wiretest.Must(t, 200, "PUT", api+"/api/mcp/connections/"+id+"/pinned-prices", map[string]any{"coins": []any{btc, eth}})
	if b, _ := json.Marshal(put["settings"]); !strings.Contains(string(b), "ethereum") {
		t.Fatalf("PUT answered %v", put)
	}

	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	for _, r := range []map[string]any{run, wiretest.Must(t, 200, "GET", api+"/api/runs/"+run["id"].(string), nil)} {
		st, _ := r["state"].(map[string]any)
		prices, _ := st["prices"].([]any)
		if len(prices) != 2 || st["prices_error"] != nil {
			t.Fatalf("state %v", r["state"])
		}
		p := prices[1].(map[string]any)
		if p["id"] != "ethereum" || p["symbol"] != "eth" || p["name"] != "Ethereum" || p["price_usd"] != 67187.3 || p["change_24h"] != -1.25 || p["quoted_at"] == nil {
			t.Fatalf("ethereum %v", p)
		}
	}
	f.JSON("GET /api/v3/simple/price", 503, []byte(`maintenance`))
	run = wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	st, _ := run["state"].(map[string]any)
	if e, _ := st["prices_error"].(string); !strings.HasPrefix(e, "ERROR: CoinGecko") || len(st["prices"].([]any)) != 0 {
		t.Fatalf("state after a failed quote %v", run["state"])
	}
}
