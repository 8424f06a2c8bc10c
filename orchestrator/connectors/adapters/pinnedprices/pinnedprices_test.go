package pinnedprices_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/pinnedprices"
)

const key = "CG-pinned-key-8d2e11"

// fake is CoinGecko Pro on loopback: ping, /simple/price quoting bitcoin and ethereum only, search.
func fake(t testing.TB) (*adapterstest.Fake, adapters.Login) {
	f := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("x-cg-pro-api-key") == key })
	f.Deny = []byte(`{"status":{"error_code":10002,"error_message":"API Key Missing"}}`)
	f.JSON("GET /api/v3/ping", 200, adapterstest.Testdata(t, "ping.json"))
	f.JSON("GET /api/v3/simple/price", 200, adapterstest.Testdata(t, "simple_price.json"))
	f.JSON("GET /api/v3/search", 200, adapterstest.Testdata(t, "search.json"))
	return f, adapters.Login{Credentials: map[string]string{"api_key": key}, URL: f.URL + "/api/v3", Client: f.Client(),
		Now: func() time.Time { return time.Date(2024, 3, 25, 9, 0, 0, 0, time.UTC) }}
}

func TestVerify(t *testing.T) {
	f, l := fake(t)
	for _, tt := range []struct {
		name  string
		key   string
		coins []string
		kind  adapters.Kind
		says  string
	}{
		{"quoted", key, []string{"bitcoin", "ethereum"}, -1, ""},
		{"no_coins", key, nil, -1, ""},
		{"unquoted", key, []string{"bitcoin", "not-a-coin"}, adapters.KindInvalid, "does not quote not-a-coin"},
		{"wrong_key", "CG-wrong-0000", []string{"bitcoin"}, adapters.KindRejected, "API Key Missing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := l
			l.Credentials = map[string]string{"api_key": tt.key}
			l.Coins = tt.coins
			_, err := pinnedprices.Adapter{}.Verify(context.Background(), l)
			if tt.kind < 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if k, _ := adapters.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%v (kind %v), want kind %v saying %q", err, k, tt.kind, tt.says)
			}
		})
	}
	asked := false
	for _, r := range f.Requests {
		asked = asked || r.URL.Path == "/api/v3/simple/price" && r.URL.Query().Get("ids") == "bitcoin,not-a-coin"
	}
	if !asked {
		t.Error("no /simple/price request named the pinned ids")
	}
}

func TestQuote(t *testing.T) {
	f, l := fake(t)
	ps, err := pinnedprices.Adapter{}.Quote(context.Background(), l, []orchestrator.Coin{{ID: "ethereum", Symbol: "ETH", Name: "Ethereum"}, {ID: "bitcoin", Symbol: "BTC", Name: "Bitcoin"}, {ID: "gone-coin", Symbol: "GONE", Name: "Gone"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Count() != 1 || f.Last().URL.Query().Get("ids") != "ethereum,bitcoin,gone-coin" {
		t.Errorf("%d requests, ids=%q; want one request for all", f.Count(), f.Last().URL.Query().Get("ids"))
	}
	if len(ps) != 3 || ps[0].ID != "ethereum" || *ps[0].USD != 3529.81 || *ps[1].Change24h != 3.63727894677354 || ps[2].USD != nil {
		t.Fatalf("quotes %+v", ps)
	}
	if !ps[1].QuotedAt.Equal(time.Unix(1711356300, 0)) || !ps[2].QuotedAt.Equal(time.Date(2024, 3, 25, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("quoted_at %v, %v", ps[1].QuotedAt, ps[2].QuotedAt)
	}
	f.JSON("GET /api/v3/simple/price", 503, nil)
	if _, err := (pinnedprices.Adapter{}).Quote(context.Background(), l, []orchestrator.Coin{{ID: "bitcoin", Symbol: "BTC", Name: "Bitcoin"}}); !adapters.IsDown(err) {
		t.Errorf("503: %v", err)
	}
}

func TestSearch(t *testing.T) {
	f, l := fake(t)
	coins, err := pinnedprices.Adapter{}.Search(context.Background(), l, "eth")
	if err != nil {
		t.Fatal(err)
	}
	if len(coins) != 3 || coins[0] != (orchestrator.Coin{ID: "ethereum", Symbol: "ETH", Name: "Ethereum"}) {
		t.Errorf("coins %+v", coins)
	}
	if f.Last().URL.Query().Get("query") != "eth" || f.Denied != 0 {
		t.Errorf("query %q, %d denied", f.Last().URL.Query().Get("query"), f.Denied)
	}
	if _, err := (pinnedprices.Adapter{}).Call(context.Background(), l, "prices", nil); err == nil {
		t.Error("Pinned prices answered a tool call")
	}
}

// TestCoinsByLookup checks a caller reaches the picker and quotes through the registry alone.
func TestCoinsByLookup(t *testing.T) {
	_, l := fake(t)
	a, ok := adapters.Lookup(pinnedprices.Slug)
	c, isCoins := a.(adapters.Coins)
	if !ok || !isCoins {
		t.Fatalf("Lookup(%s) = %T, not adapters.Coins", pinnedprices.Slug, a)
	}
	if err := c.Check(context.Background(), l, []string{"bitcoin", "ethereum"}); err != nil {
		t.Fatal(err)
	}
	if ps, err := c.Quote(context.Background(), l, []orchestrator.Coin{{ID: "bitcoin", Symbol: "BTC", Name: "Bitcoin"}}); err != nil || len(ps) != 1 || ps[0].USD == nil {
		t.Fatalf("quote %+v, %v", ps, err)
	}
}
