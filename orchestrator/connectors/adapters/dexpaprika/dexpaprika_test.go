package dexpaprika_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/dexpaprika"
)

const key = "dp_live_7c1e2b9f4a"

var now = time.Date(2025, 6, 18, 9, 30, 0, 0, time.UTC)

// fakes are DexPaprika's main and pro hosts on loopback; both want the key as the whole
// Authorization header.
func fakes(t testing.TB) (main, pro *adapterstest.Fake, l adapters.Login) {
	check := func(r *http.Request) bool { return r.Header.Get("Authorization") == key }
	main, pro = adapterstest.NewFake(t, check), adapterstest.NewFake(t, check)
	for route, file := range map[string]string{
		"GET /usage":  "usage.json",
		"GET /search": "search.json",
		"GET /networks/ethereum/tokens/0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2":             "token.json",
		"GET /networks/ethereum/multi/prices":                                                  "prices.json",
		"GET /networks/ethereum/pools/0x88e6a0c2ddd26feeb64f039a2c41296fcb3f5640":              "pool.json",
		"GET /networks/ethereum/pools":                                                         "pools.json",
		"GET /networks/ethereum/tokens/0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2/pools":       "pools.json",
		"GET /networks/ethereum/pools/0x88e6a0c2ddd26feeb64f039a2c41296fcb3f5640/transactions": "swaps.json",
	} {
		main.JSON(route, 200, adapterstest.Testdata(t, file))
	}
	main.Handle("GET /networks/ethereum/pools/0x88e6a0c2ddd26feeb64f039a2c41296fcb3f5640/ohlcv", candles)
	main.JSON("GET /networks/ethereum/tokens/0xdead", 404, []byte(`{"error":"Token not found"}`))
	return main, pro, adapters.Login{Credentials: map[string]string{"api_key": key}, URL: main.URL,
		Endpoints: map[string]string{"pro": pro.URL}, Client: main.Client(), Now: func() time.Time { return now }}
}

// candles answers limit candles of the interval from start, as DexPaprika's /ohlcv does.
func candles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	start, _ := time.Parse(time.RFC3339, q.Get("start"))
	step := map[string]time.Duration{"1h": time.Hour, "10m": 10 * time.Minute}[q.Get("interval")]
	var n int
	fmt.Sscan(q.Get("limit"), &n)
	var rows []string
	for i := range n {
		o := start.Add(time.Duration(i) * step)
		p := 3400 + float64(i%7)
		rows = append(rows, fmt.Sprintf(`{"time_open":"%s","time_close":"%s","open":%v,"high":%v,"low":%v,"close":%v,"volume":%d}`,
			o.Format(time.RFC3339), o.Add(step).Format(time.RFC3339), p, p+5, p-4, p+1, 1000+i))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, "["+strings.Join(rows, ",")+"]")
}

func TestVerify(t *testing.T) {
	main, pro, l := fakes(t)
	v, err := dexpaprika.Adapter{}.Verify(context.Background(), l)
	if err != nil || v.AccountHint != "starter plan" {
		t.Fatalf("good key: %+v, %v", v, err)
	}
	main.JSON("GET /usage", 200, adapterstest.Testdata(t, "usage_keyless.json"))
	if _, err := (dexpaprika.Adapter{}).Verify(context.Background(), l); !adapters.IsRejected(err) || !strings.Contains(err.Error(), "keyless") {
		t.Errorf("keyless plan: %v", err)
	}
	for _, body := range []string{`{"plan":{"name":"Keyless","requests_limit":10000}}`, `{"tier":"anonymous"}`, `{"key":{"authenticated":false}}`} {
		main.JSON("GET /usage", 200, []byte(body))
		if _, err := (dexpaprika.Adapter{}).Verify(context.Background(), l); !adapters.IsRejected(err) {
			t.Errorf("%s: %v, want rejected", body, err)
		}
	}
	main.JSON("GET /usage", 200, []byte(`{"requests_used":3,"message":"public data is keyless-friendly"}`))
	if v, err := (dexpaprika.Adapter{}).Verify(context.Background(), l); err != nil || v.AccountHint != "" {
		t.Errorf("a plan-less answer: %+v, %v; want accepted without a hint", v, err)
	}
	main.JSON("GET /usage", 403, []byte(`{"error":"forbidden"}`))
	if _, err := (dexpaprika.Adapter{}).Verify(context.Background(), l); !adapters.IsRejected(err) {
		t.Errorf("403: %v", err)
	}
	bad := l
	bad.Credentials = map[string]string{"api_key": "dp_wrong_0000"}
	if _, err := (dexpaprika.Adapter{}).Verify(context.Background(), bad); !adapters.IsRejected(err) {
		t.Errorf("wrong key: %v", err)
	}
	if pro.Count() != 0 {
		t.Errorf("Verify went to the pro endpoint %d times; /usage is never retried elsewhere", pro.Count())
	}
}

func TestTools(t *testing.T) {
	main, _, l := fakes(t)
	const weth, usdc, uni = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2", "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48", "0x88e6a0c2ddd26feeb64f039a2c41296fcb3f5640"
	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		path       string
		query      map[string]string
	}{
		{"search", "search", map[string]any{"query": "usdc"}, "/search", map[string]string{"query": "usdc"}},
		{"token", "token", map[string]any{"network": "ethereum", "address": weth}, "/networks/ethereum/tokens/" + weth, nil},
		{"prices", "prices", map[string]any{"network": "ethereum", "addresses": []any{weth, usdc, "0xnotatoken"}}, "/networks/ethereum/multi/prices", map[string]string{"tokens": weth + "," + usdc + ",0xnotatoken"}},
		{"pool", "pool", map[string]any{"network": "ethereum", "address": uni}, "/networks/ethereum/pools/" + uni, nil},
		{"pools", "pools", map[string]any{"network": "ethereum"}, "/networks/ethereum/pools", map[string]string{"limit": "15", "order_by": "volume_usd", "sort": "desc"}},
		{"pools_token", "pools", map[string]any{"network": "ethereum", "token": weth, "order_by": "liquidity_usd", "limit": 3.0}, "/networks/ethereum/tokens/" + weth + "/pools", map[string]string{"limit": "3", "order_by": "liquidity_usd"}},
		{"ohlcv", "ohlcv", map[string]any{"network": "ethereum", "pool": uni}, "/networks/ethereum/pools/" + uni + "/ohlcv", map[string]string{"interval": "1h", "limit": "24", "start": "2025-06-17T09:30:00Z", "end": "2025-06-18T09:30:00Z"}},
		{"ohlcv_7d", "ohlcv", map[string]any{"network": "ethereum", "pool": uni, "start": "2025-06-11T09:30:00Z"}, "/networks/ethereum/pools/" + uni + "/ohlcv", map[string]string{"limit": "168"}},
		{"swaps", "swaps", map[string]any{"network": "ethereum", "pool": uni, "limit": 2.0}, "/networks/ethereum/pools/" + uni + "/transactions", map[string]string{"limit": "2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dexpaprika.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.Golden(t, tt.name, got)
			main.CheckLast(t, tt.path, tt.query)
		})
	}
	if main.Denied != 0 {
		t.Errorf("%d requests without the key as Authorization", main.Denied)
	}
}

// TestOHLCVAggregates checks 168 hourly candles become 48 with OHLC taken correctly.
func TestOHLCVAggregates(t *testing.T) {
	_, _, l := fakes(t)
	got, err := dexpaprika.Adapter{}.Call(context.Background(), l, "ohlcv", map[string]any{"network": "ethereum", "pool": "0x88e6a0c2ddd26feeb64f039a2c41296fcb3f5640", "start": "2025-06-11T09:30:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 1+48+1 {
		t.Fatalf("%d lines, want header, 48 candles and a note", len(lines))
	}
	if !strings.HasPrefix(lines[1], "2025-06-11T09:30:00Z\t") || !strings.Contains(lines[48], "\t2025-06-18T09:30:00Z\t") {
		t.Errorf("first %q, last %q", lines[1], lines[48])
	}
}

func TestRetryPro(t *testing.T) {
	main, pro, l := fakes(t)
	main.JSON("GET /networks/ethereum/multi/prices", 403, []byte(`{"error":"this endpoint needs a pro key"}`))
	pro.JSON("GET /networks/ethereum/multi/prices", 200, adapterstest.Testdata(t, "prices.json"))
	got, err := dexpaprika.Adapter{}.Call(context.Background(), l, "prices", map[string]any{"network": "ethereum", "addresses": []any{"0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"}})
	if err != nil || !strings.Contains(got, "3412.4573") {
		t.Fatalf("retried on pro: %q, %v", got, err)
	}
	if pro.Count() != 1 || pro.Denied != 0 {
		t.Errorf("pro saw %d requests (%d without the key), want 1", pro.Count(), pro.Denied)
	}
	pro.JSON("GET /networks/ethereum/multi/prices", 403, []byte(`{"error":"forbidden"}`))
	_, err = dexpaprika.Adapter{}.Call(context.Background(), l, "prices", map[string]any{"network": "ethereum", "addresses": []any{"0xc02a"}})
	if !adapters.IsRejected(err) || pro.Count() != 2 {
		t.Errorf("403 on both: %v after %d pro requests, want rejected after one more", err, pro.Count())
	}
}

func TestErrors(t *testing.T) {
	main, _, l := fakes(t)
	main.Handle("GET /search", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":"bad request from %s"}`, r.Header.Get("Authorization"))
	})
	var eleven []any
	for i := range 11 {
		eleven = append(eleven, fmt.Sprintf("0x%02d", i))
	}
	for _, tt := range []struct {
		tool string
		args map[string]any
		kind adapters.Kind
		says string
	}{
		{"token", map[string]any{"network": "ethereum", "address": "0xdead"}, adapters.KindNotFound, "token 0xdead on ethereum"},
		{"search", map[string]any{"query": "x"}, adapters.KindUpstream, "bad request from [redacted]"},
		{"prices", map[string]any{"network": "ethereum", "addresses": eleven}, adapters.KindInvalid, "at most 10"},
		{"ohlcv", map[string]any{"network": "ethereum", "pool": "0x1", "interval": "2h"}, adapters.KindInvalid, "interval"},
		{"pool", map[string]any{"network": "ethereum"}, adapters.KindInvalid, "address is required"},
	} {
		_, err := dexpaprika.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
		if k, _ := adapters.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v (kind %v), want kind %v saying %q", tt.tool, err, k, tt.kind, tt.says)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("%s: the key leaked: %v", tt.tool, err)
		}
	}
}

// BenchmarkAdapterCall measures a 30-row pools list against the fake's own response time.
func BenchmarkAdapterCall(b *testing.B) {
	main, _, l := fakes(b)
	main.JSON("GET /networks/ethereum/pools", 200, adapterstest.Testdata(b, "pools30.json"))
	adapterstest.Compare(b, "list", main.URL+"/networks/ethereum/pools?limit=30", http.Header{"Authorization": {key}}, func() error {
		_, err := dexpaprika.Adapter{}.Call(context.Background(), l, "pools", map[string]any{"network": "ethereum", "limit": 30.0})
		return err
	})
}
