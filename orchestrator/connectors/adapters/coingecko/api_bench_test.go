package coingecko_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/shared/benchtest"
)

// BenchmarkAdapterCallThroughAPI times one CoinGecko call of each shape (a 30-row list; a 48-point
// chart from a 2,000-point series) through serve's whole API (auth, the run, the login's key
// unsealed, the adapter, the pipeline with the key in the redaction set, the stored call) against
// the loopback fake's own answer to the same request read by a plain HTTP client, alternating in
// one run. Target: at most 1.3x and at most 2 ms added at the median. A native tool's call through
// the same API is measured beside them, as the floor the API itself costs.
func BenchmarkAdapterCallThroughAPI(b *testing.B) {
	_, api := adapterServe(b, "local")
	f := coingeckoFake(b)
	var coins []string
	for i := range 40 {
		coins = append(coins, fmt.Sprintf(`{"id":"coin-%d","name":"Coin %d","symbol":"C%d","market_cap_rank":%d}`, i, i, i, i+1))
	}
	f.JSON("GET /api/v3/search", 200, []byte(`{"coins":[`+strings.Join(coins, ",")+`],"exchanges":[],"categories":[]}`))
	s := adapterstest.Series(2000, 1711843200000, 300000, func(i int) float64 { return 60000 + float64(i)/3 })
	f.JSON("GET /api/v3/coins/long/market_chart", 200, fmt.Appendf(nil, `{"prices":%s,"market_caps":%s,"total_volumes":%s}`, s, s, s))
	wiretest.Must(b, 200, "PATCH", api+"/api/admin/mcp/servers/coingecko", map[string]any{"url": f.URL + "/api/v3"})
	org, agent := wiretest.ScopesAt(b, api)
	wiretest.Must(b, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "coingecko", "scope": "org", "scope_id": org, "credentials": map[string]any{"api_key": cgKey}})
	run := wiretest.Must(b, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct", "tool_call_budget": 100000})["id"].(string)

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	post := wiretest.CallPoster(b, hc, api, run)
	raw := func(path string) func() {
		return func() {
			req, _ := http.NewRequest("GET", f.URL+path, nil)
			req.Header.Set("x-cg-pro-api-key", cgKey)
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("raw GET %s: %d", path, resp.StatusCode)
			}
		}
	}
	nativeCall := post([]byte(`{"name":"note_find","arguments":{}}`), "remaining_tool_calls")
	native := func() { nativeCall() }
	shapes := []struct {
		name      string
		call      func() string
		raw       func()
		rawLabel  string
		callLabel string
	}{
		{"list30", post([]byte(`{"name":"coingecko_search","arguments":{"query":"coin","limit":30}}`), "coin-29"), raw("/api/v3/search?query=coin"), "search", "30-row list"},
		{"chart48", post([]byte(`{"name":"coingecko_chart","arguments":{"id":"long","days":7}}`), "downsampled from 2000 points to 48"), raw("/api/v3/coins/long/market_chart?vs_currency=usd&days=7"), "market_chart", "48-point chart of 2,000 points"},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			api := func() { sh.call() }
			for range 30 {
				api()
				sh.raw()
				native()
			}
			b.ResetTimer()
			for range b.N {
				m := benchtest.Alternate(300, api, sh.raw, native)
				viaAPI, direct, floor := m[0], m[1], m[2]
				added := viaAPI - direct
				ratio := float64(viaAPI) / float64(direct)
				b.ReportMetric(benchtest.MS(viaAPI), "api_p50_ms")
				b.ReportMetric(benchtest.MS(direct), "raw_p50_ms")
				b.ReportMetric(benchtest.MS(floor), "native_api_p50_ms")
				b.ReportMetric(benchtest.MS(added), "added_p50_ms")
				b.ReportMetric(ratio, "x_vs_raw")
				b.Logf("CoinGecko %s through the API: p50 %.3f ms | the fake's own %s answer to a plain client: p50 %.3f ms | %.2fx, %.3f ms added; target <= 1.3x: %s, <= 2 ms added: %s | a native tool's call through the same API: p50 %.3f ms",
					sh.callLabel, benchtest.MS(viaAPI), sh.rawLabel, benchtest.MS(direct), ratio, benchtest.MS(added), wiretest.MetOr(ratio <= 1.3), wiretest.MetOr(added <= 2*time.Millisecond), benchtest.MS(floor))
			}
		})
	}
}
