package coingecko_test

import (
	"encoding/json"
	"net/http"
	"slices"
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

// TestAdaptersEndToEnd: through the HTTP API with a loopback CoinGecko, a rejected key writes
// nothing, a provider that is down is a 502, a good key lists the curated tools, a run offers and
// calls them with the key redacted from the stored result, the test-call route answers, and a
// 401 on the key itself disconnects the login.
func TestAdaptersEndToEnd(t *testing.T) {
	s, api := adapterServe(t, "local")
	_ = s
	f := coingeckoFake(t)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/coingecko", map[string]any{"url": f.URL + "/api/v3"})
	org, agent := wiretest.ScopesAt(t, api)

	body := func(key string) map[string]any {
		return map[string]any{"server": "coingecko", "scope": "org", "scope_id": org, "credentials": map[string]any{"api_key": key}}
	}
	st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body("CG-wrong-key-0000"))
	if st != 422 || !strings.Contains(wiretest.ErrText(out), "CoinGecko") || !strings.Contains(wiretest.ErrText(out), "API Key Missing") || strings.Contains(wiretest.ErrText(out), "CG-wrong-key-0000") {
		t.Fatalf("rejected key: %d %v", st, out)
	}
	if conns := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections", nil); len(conns["connections"].([]any)) != 0 {
		t.Fatalf("a rejected key wrote %v", conns)
	}
	f.JSON("GET /api/v3/ping", 503, []byte(`<html>maintenance</html>`))
	if st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body(cgKey)); st != 502 || !strings.Contains(wiretest.ErrText(out), "down") {
		t.Fatalf("provider down: %d %v", st, out)
	}
	f.JSON("GET /api/v3/ping", 200, []byte(`{"gecko_says":"(V3) To the Moon!"}`))

	conn := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", body(cgKey))
	id := conn["id"].(string)
	if conn["verified_at"] == nil || conn["status"] != "connected" {
		t.Fatalf("connection %v", conn)
	}
	var tools []string
	for _, x := range wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id+"/tools", nil)["tools"].([]any) {
		tools = append(tools, x.(map[string]any)["name"].(string))
	}
	if !slices.Contains(tools, "coingecko_search") || !slices.Contains(tools, "coingecko_trending") {
		t.Fatalf("listed %v", tools)
	}

	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	if names := wiretest.OfferedNames(run); !slices.Contains(names, "coingecko_search") {
		t.Fatalf("offered %v", names)
	}
	res := wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": "coingecko_search", "arguments": map[string]any{"query": "btc"}})
	got := res["result"].(string)
	if !strings.Contains(got, "bitcoin\t") || strings.Contains(got, cgKey) || !strings.Contains(got, "Bitcoin [REDACTED]") || !strings.Contains(got, "remaining_tool_calls") {
		t.Fatalf("call result %q", got)
	}
	// Arguments are checked against the listed schema before the provider is asked.
	n := f.Count()
	res = wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": "coingecko_search", "arguments": map[string]any{"limit": 3}})
	if got := res["result"].(string); !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, "query") || f.Count() != n {
		t.Fatalf("bad arguments: %q (%d requests, was %d)", got, f.Count(), n)
	}
	for _, c := range wiretest.Must(t, 200, "GET", api+"/api/runs/"+runID+"/calls", nil)["calls"].([]any) {
		if b, _ := json.Marshal(c); strings.Contains(string(b), cgKey) {
			t.Fatalf("the key was stored: %s", b)
		}
	}

	tc := wiretest.Must(t, 200, "POST", api+"/api/mcp/connections/"+id+"/call", map[string]any{"name": "coingecko_search", "arguments": map[string]any{"query": "btc"}})
	if r := tc["result"].(string); tc["is_error"] != false || !strings.Contains(r, "Bitcoin [REDACTED]") || strings.Contains(r, cgKey) {
		t.Fatalf("test call %v", tc)
	}

	// A 401 on the key itself answers ERROR: and disconnects the login.
	f.Check = func(*http.Request) bool { return false }
	res = wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": "coingecko_search", "arguments": map[string]any{"query": "btc"}})
	if got := res["result"].(string); !strings.HasPrefix(got, "ERROR: CoinGecko") {
		t.Fatalf("refused call %q", got)
	}
	if c := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil); c["status"] != "disconnected" {
		t.Fatalf("after a 401: %v", c)
	}
}
