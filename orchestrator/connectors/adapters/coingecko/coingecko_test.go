package coingecko_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/coingecko"
)

const key = "CG-test-pro-key-5f3a9c"

// fake is CoinGecko Pro on loopback under /api/v3, answering the published examples.
func fake(t testing.TB) (*adapterstest.Fake, adapters.Login) {
	f := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("x-cg-pro-api-key") == key })
	f.Deny = []byte(`{"status":{"error_code":10002,"error_message":"API Key Missing"}}`)
	for route, file := range map[string]string{
		"GET /api/v3/ping":                                   "ping.json",
		"GET /api/v3/search":                                 "search.json",
		"GET /api/v3/coins/bitcoin":                          "coin_bitcoin.json",
		"GET /api/v3/simple/price":                           "simple_price.json",
		"GET /api/v3/coins/list/new":                         "new.json",
		"GET /api/v3/coins/top_gainers_losers":               "movers.json",
		"GET /api/v3/coins/bitcoin/circulating_supply_chart": "supply.json",
		"GET /api/v3/coins/bitcoin/total_supply_chart":       "total_supply.json",
		"GET /api/v3/coins/bitcoin/market_chart":             "chart.json",
		"GET /api/v3/search/trending":                        "trending.json",
	} {
		f.JSON(route, 200, adapterstest.Testdata(t, file))
	}
	s := adapterstest.Series(2000, 1711843200000, 300000, func(i int) float64 { return 60000 + float64(i)/3 })
	f.JSON("GET /api/v3/coins/long/market_chart", 200, fmt.Appendf(nil, `{"prices":%s,"market_caps":%s,"total_volumes":%s}`, s, s, s))
	f.JSON("GET /api/v3/coins/nope", 404, []byte(`{"error":"coin not found"}`))
	return f, adapters.Login{Credentials: map[string]string{"api_key": key}, URL: f.URL + "/api/v3", Client: f.Client()}
}

func TestVerify(t *testing.T) {
	f, l := fake(t)
	if _, err := (coingecko.Adapter{}).Verify(context.Background(), l); err != nil {
		t.Fatalf("good key: %v", err)
	}
	bad := l
	bad.Credentials = map[string]string{"api_key": "CG-wrong-key-000"}
	_, err := coingecko.Adapter{}.Verify(context.Background(), bad)
	if !adapters.IsRejected(err) || !strings.Contains(err.Error(), "API Key Missing") {
		t.Errorf("wrong key: %v", err)
	}
	f.JSON("GET /api/v3/ping", 503, []byte(`<html>maintenance</html>`))
	if _, err := (coingecko.Adapter{}).Verify(context.Background(), l); !adapters.IsDown(err) {
		t.Errorf("503: %v, want down", err)
	}
}

func TestTools(t *testing.T) {
	f, l := fake(t)
	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		path       string
		query      map[string]string
	}{
		{"search", "search", map[string]any{"query": "eth", "limit": 4.0}, "/api/v3/search", map[string]string{"query": "eth"}},
		{"coin", "coin", map[string]any{"id": "bitcoin"}, "/api/v3/coins/bitcoin", map[string]string{"localization": "false", "tickers": "false"}},
		{"coin_eur", "coin", map[string]any{"id": "bitcoin", "vs_currency": "EUR"}, "/api/v3/coins/bitcoin", nil},
		{"prices", "prices", map[string]any{"ids": []any{"bitcoin", "not-a-coin"}}, "/api/v3/simple/price", map[string]string{"ids": "bitcoin,not-a-coin", "vs_currencies": "usd", "include_24hr_change": "true"}},
		{"new", "new", map[string]any{"limit": 2.0}, "/api/v3/coins/list/new", nil},
		{"movers", "movers", map[string]any{"duration": "1y"}, "/api/v3/coins/top_gainers_losers", map[string]string{"duration": "1y", "vs_currency": "usd"}},
		{"supply", "supply", map[string]any{"id": "bitcoin"}, "/api/v3/coins/bitcoin/circulating_supply_chart", map[string]string{"days": "30"}},
		{"supply_total", "supply", map[string]any{"id": "bitcoin", "kind": "total", "days": 7.0}, "/api/v3/coins/bitcoin/total_supply_chart", map[string]string{"days": "7"}},
		{"chart", "chart", map[string]any{"id": "bitcoin"}, "/api/v3/coins/bitcoin/market_chart", map[string]string{"days": "7", "vs_currency": "usd"}},
		{"chart_2000", "chart", map[string]any{"id": "long", "days": 7.0}, "/api/v3/coins/long/market_chart", nil},
		{"trending", "trending", map[string]any{}, "/api/v3/search/trending", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := coingecko.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.Golden(t, tt.name, got)
			f.CheckLast(t, tt.path, tt.query)
		})
	}
	if f.Denied != 0 {
		t.Errorf("%d requests without x-cg-pro-api-key", f.Denied)
	}
}

func TestErrors(t *testing.T) {
	f, l := fake(t)
	plan := []byte(`{"status":{"error_code":10005,"error_message":"You may not have access to this endpoint. e.g. 'This request is limited Pro API subscribers'."}}`)
	for _, route := range []string{"GET /api/v3/coins/list/new", "GET /api/v3/coins/top_gainers_losers", "GET /api/v3/coins/bitcoin/circulating_supply_chart"} {
		f.JSON(route, 401, plan)
	}
	f.Handle("GET /api/v3/search", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":"bad query for key %s"}`, r.Header.Get("x-cg-pro-api-key"))
	})
	f.Handle("GET /api/v3/simple/price", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(429)
	})
	for _, tt := range []struct {
		tool string
		args map[string]any
		kind adapters.Kind
		says string
	}{
		{"new", nil, adapters.KindPlan, "new needs the CoinGecko Analyst plan"},
		{"movers", nil, adapters.KindPlan, "Analyst plan"},
		{"supply", map[string]any{"id": "bitcoin"}, adapters.KindPlan, "Analyst plan"},
		{"coin", map[string]any{"id": "nope"}, adapters.KindNotFound, "coin nope"},
		{"search", map[string]any{"query": "x"}, adapters.KindUpstream, "bad query for key [redacted]"},
		{"prices", map[string]any{"ids": []any{"bitcoin"}}, adapters.KindRateLimited, "retry after 60 s"},
		{"coin", map[string]any{}, adapters.KindInvalid, "id is required"},
		{"nosuch", nil, adapters.KindInvalid, "no tool"},
	} {
		_, err := coingecko.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
		if k, _ := adapters.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v (kind %v), want kind %v saying %q", tt.tool, err, k, tt.kind, tt.says)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("%s: the key leaked: %v", tt.tool, err)
		}
	}
}

// BenchmarkAdapterCall measures a 30-row list and a 48-point chart from a 2,000-point series
// against the fake's own response time for the same request.
func BenchmarkAdapterCall(b *testing.B) {
	f, l := fake(b)
	var coins []string
	for i := range 40 {
		coins = append(coins, fmt.Sprintf(`{"id":"coin-%d","name":"Coin %d","symbol":"C%d","market_cap_rank":%d}`, i, i, i, i+1))
	}
	f.JSON("GET /api/v3/search", 200, []byte(`{"coins":[`+strings.Join(coins, ",")+`],"exchanges":[],"categories":[]}`))
	h := http.Header{"X-Cg-Pro-Api-Key": {key}}
	b.Run("list30", func(b *testing.B) {
		adapterstest.Compare(b, "list", f.URL+"/api/v3/search?query=coin", h, func() error {
			out, err := coingecko.Adapter{}.Call(context.Background(), l, "search", map[string]any{"query": "coin", "limit": 30.0})
			if err == nil && strings.Count(out, "\n") != 31 {
				err = fmt.Errorf("list has %d lines", strings.Count(out, "\n"))
			}
			return err
		})
	})
	b.Run("chart48", func(b *testing.B) {
		adapterstest.Compare(b, "chart", f.URL+"/api/v3/coins/long/market_chart?vs_currency=usd&days=7", h, func() error {
			_, err := coingecko.Adapter{}.Call(context.Background(), l, "chart", map[string]any{"id": "long", "days": 7.0})
			return err
		})
	})
}
