package wire_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// adapterServe serves the orchestrator as wired on a fresh database with a secret key, in the
// sandbox backend given.
func adapterServe(t testing.TB, backend string) (*wiretest.Served, string) {
	t.Helper()
	s := wiretest.ServeIn(t, backend)
	return s, s.API
}

// TestEveryAdapterConnects: each of the seven adapters is linked and answers Connect through its
// catalog row (its url and every named endpoint pointed at a fake): a provider refusing every
// request is a 422 carrying its answer, with nothing written.
func TestEveryAdapterConnects(t *testing.T) {
	_, api := adapterServe(t, "local")
	org, _ := wiretest.ScopesAt(t, api)
	f := adapterstest.NewFake(t, func(*http.Request) bool { return false })
	rows := map[string]map[string]any{}
	for _, s := range wiretest.Must(t, 200, "GET", api+"/api/admin/mcp/servers", nil)["servers"].([]any) {
		s := s.(map[string]any)
		rows[s["slug"].(string)] = s
	}
	for _, tc := range []struct {
		slug  string
		creds map[string]any
		extra map[string]any
	}{
		{"coingecko", map[string]any{"api_key": "k-coingecko-0001"}, nil},
		{"pinned_prices", map[string]any{"api_key": "k-pinned-0001"}, map[string]any{"coins": []any{map[string]any{"id": "bitcoin", "symbol": "btc", "name": "Bitcoin"}}}},
		{"alchemy", map[string]any{"api_key": "k-alchemy-0001"}, nil},
		{"x", map[string]any{"bearer_token": "k-x-bearer-0001"}, nil},
		{"twitterapi", map[string]any{"api_key": "k-twitterapi-0001"}, nil},
		{"qonto", map[string]any{"login": "acme-0001", "secret_key": "sk-qonto-0001"}, nil},
		{"dexpaprika", map[string]any{"api_key": "k-dexpaprika-0001"}, nil},
	} {
		row := rows[tc.slug]
		if row == nil {
			t.Fatalf("%s is not in the catalog", tc.slug)
		}
		endpoints := map[string]any{}
		for name := range row["endpoints"].(map[string]any) {
			endpoints[name] = f.URL
		}
		wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/"+tc.slug, map[string]any{"url": f.URL, "endpoints": endpoints})
		body := map[string]any{"server": tc.slug, "scope": "org", "scope_id": org, "credentials": tc.creds}
		for k, v := range tc.extra {
			body[k] = v
		}
		n := f.Count()
		st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body)
		msg := wiretest.ErrText(out)
		if st != 422 || f.Count() == n || !strings.Contains(msg, "nothing was written") {
			t.Errorf("%s: %d %v (%d requests)", tc.slug, st, out, f.Count()-n)
		}
		for _, v := range tc.creds {
			if strings.Contains(msg, v.(string)) {
				t.Errorf("%s: the error shows a credential: %s", tc.slug, msg)
			}
		}
	}
	if conns := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections", nil); len(conns["connections"].([]any)) != 0 {
		t.Fatalf("refused logins wrote %v", conns)
	}
}
