package httpapi_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/connectors/mcp"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// coinsAdapter stands in, at the bindings seam, for the Pinned prices adapter (whose HTTP side
// its own package tests over a loopback CoinGecko): it quotes two known coins.
type coinsAdapter struct{}

var knownCoins = []orchestrator.Coin{{ID: "bitcoin", Symbol: "btc", Name: "Bitcoin"}, {ID: "ethereum", Symbol: "eth", Name: "Ethereum"}}

func (coinsAdapter) Serves(slug string) bool { return slug == "pinned_prices" }
func (coinsAdapter) Verify(context.Context, orchestrator.MCPServer, map[string]string, []string) (connections.Verification, error) {
	return connections.Verification{Checked: true}, nil
}
func (coinsAdapter) Call(context.Context, connections.LocalCall) (string, error) { return "", nil }
func (coinsAdapter) SearchCoins(_ context.Context, _ orchestrator.MCPServer, _ map[string]string, q string) ([]orchestrator.Coin, error) {
	var out []orchestrator.Coin
	for _, c := range knownCoins {
		if strings.Contains(c.Name+" "+c.Symbol, q) {
			out = append(out, c)
		}
	}
	return out, nil
}
func (coinsAdapter) CheckCoins(context.Context, orchestrator.MCPServer, map[string]string, []string) error {
	return nil
}
func (coinsAdapter) QuoteCoins(_ context.Context, _ orchestrator.MCPServer, _ map[string]string, coins []orchestrator.Coin) ([]orchestrator.PinnedPrice, error) {
	out := make([]orchestrator.PinnedPrice, len(coins))
	for i, c := range coins {
		out[i] = orchestrator.PinnedPrice{Coin: c, QuotedAt: time.Now().UTC()}
	}
	return out, nil
}

// TestPinnedPricesRoutesAnswerAsDocumented: the coin picker before and after Connect and the
// replacement of a login's coins answer what openapi.json documents (env.do checks each answer).
func TestPinnedPricesRoutesAnswerAsDocumented(t *testing.T) {
	e := &env{t: t, pool: pgtest.NewDB(t), logs: &syncBuffer{}, order: &seqLog{}}
	log := slog.New(slog.NewJSONHandler(e.logs, nil))
	store := postgres.NewStore(e.pool)
	reg := testTools(t, e.order)
	manifests, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	pool := mcp.New(mcp.Config{Logger: log})
	t.Cleanup(func() { pool.Close() })
	remote := &connections.Caller{Store: store, Box: box, Client: mcp.Client{Pool: pool}, Local: coinsAdapter{}, Log: log}
	policy := &bindings.Policy{Store: store, Caller: remote, Log: log}
	cat := &bindings.Service{Service: &lifecycle.Service{Store: store, Manifests: manifests, Box: box, Caller: remote, Log: log},
		Store: store, Registry: reg, Policy: policy, Log: log}
	if err := cat.Seed(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: policy, MCP: remote, Log: log}
	e.app = httpapi.New(guarded(&httpapi.Server{Scopes: store, Runs: svc, Bindings: cat, Artifacts: store, Log: log}, store))

	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	found := e.must(200, "POST", "/api/mcp/pinned-prices/search", map[string]any{"api_key": "CG-live-test-key-0042", "q": "Bit"})
	if !strings.Contains(jsonText(found), "bitcoin") {
		t.Fatalf("search before Connect: %v", found)
	}
	conn := e.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "pinned_prices", "scope": "org", "scope_id": org,
		"credentials": map[string]any{"api_key": "CG-live-test-key-0042"}, "coins": []map[string]string{{"id": "bitcoin", "symbol": "btc", "name": "Bitcoin"}}})
	id := conn["id"].(string)
	if again := e.must(200, "GET", "/api/mcp/connections/"+id+"/pinned-prices/search?q=Eth", nil); !strings.Contains(jsonText(again), "ethereum") {
		t.Fatalf("search after Connect: %v", again)
	}
	put := e.must(200, "PUT", "/api/mcp/connections/"+id+"/pinned-prices", map[string]any{"coins": knownCoins})
	if !strings.Contains(jsonText(put), "ethereum") {
		t.Fatalf("replace coins: %v", put)
	}
}
