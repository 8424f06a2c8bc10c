package wallet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
	"github.com/guildsai/guilds/shared/benchtest"
)

// BenchmarkWalletThroughAPI times get_balance and a dry-run send on a real anvil through serve's
// whole API (the run, the login's keys unsealed, the adapter, the pipeline, the stored call)
// against the same JSON-RPC calls made directly to the same endpoint by a plain client, in one
// alternating run (target <= 1.3x); then 20 concurrent sends through the API, which must land
// with 20 consecutive nonces.
func BenchmarkWalletThroughAPI(b *testing.B) {
	w := newWalletSetup(b)
	wiretest.Must(b, 201, "POST", w.api+"/api/mcp/connections", map[string]any{"server": "wallet", "scope": "org", "scope_id": w.org, "credentials": w.creds})
	wiretest.Must(b, 200, "PUT", w.api+"/api/bindings", map[string]any{"scope": "org", "scope_id": w.org, "catalog_kind": "mcp_tool", "catalog_id": "wallet_send", "enabled": true})
	run := wiretest.Must(b, 201, "POST", w.api+"/api/agents/"+w.agent+"/runs", map[string]any{"kind": "direct", "tool_call_budget": 100000})["id"].(string)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	post := wiretest.CallPoster(b, hc, w.api, run)
	nativeCall := post([]byte(`{"name":"note_find","arguments":{}}`), "remaining_tool_calls")
	rpcURL := w.node.Proxy + "/eth/" + walletAlchemyKey
	direct := func(calls ...string) func() {
		return func() {
			for i, c := range calls {
				resp, err := hc.Post(rpcURL, "application/json", strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, i, c)))
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(out, []byte(`"result"`)) {
					b.Fatalf("direct %s: %d %s", c, resp.StatusCode, out)
				}
			}
		}
	}
	to := "0x000000000000000000000000000000000000bEEF"
	from := wallettest.DevAddr
	tx := fmt.Sprintf(`{"from":%q,"to":%q,"value":"0x6f05b59d3b20000"}`, from, to)
	shapes := []struct {
		name, label string
		api         func() string
		raw         func()
	}{
		{"get_balance", "get_balance (eth_getBalance)", post([]byte(`{"name":"wallet_get_balance","arguments":{"chain":"ethereum"}}`), `native\tETH`),
			direct(fmt.Sprintf(`"method":"eth_getBalance","params":[%q,"latest"]`, from))},
		{"dry_run_send", "dry-run send (eth_chainId, eth_getBlockByNumber, eth_maxPriorityFeePerGas, eth_estimateGas, eth_getBalance)",
			post([]byte(`{"name":"wallet_send","arguments":{"chain":"ethereum","to":"`+to+`","amount":"0.5","dry_run":true}}`), "dry_run: simulated"),
			direct(`"method":"eth_chainId","params":[]`, `"method":"eth_getBlockByNumber","params":["latest",false]`, `"method":"eth_maxPriorityFeePerGas","params":[]`,
				`"method":"eth_estimateGas","params":[`+tx+`]`, fmt.Sprintf(`"method":"eth_getBalance","params":[%q,"pending"]`, from))},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			api := func() { sh.api() }
			native := func() { nativeCall() }
			for range 20 {
				api()
				sh.raw()
				native()
			}
			b.ResetTimer()
			for range b.N {
				m := benchtest.Alternate(200, api, sh.raw, native)
				ratio := float64(m[0]) / float64(m[1])
				b.ReportMetric(benchtest.MS(m[0]), "api_p50_ms")
				b.ReportMetric(benchtest.MS(m[1]), "raw_p50_ms")
				b.ReportMetric(benchtest.MS(m[2]), "native_api_p50_ms")
				b.ReportMetric(ratio, "x_vs_raw")
				b.Logf("Wallet %s through the API: p50 %.3f ms | the same JSON-RPC calls made directly, one after another: p50 %.3f ms | %.2fx; target <= 1.3x: %s | a native tool's call through the same API: p50 %.3f ms",
					sh.label, benchtest.MS(m[0]), benchtest.MS(m[1]), ratio, wiretest.MetOr(ratio <= 1.3), benchtest.MS(m[2]))
			}
		})
	}
	b.Run("concurrent_sends", func(b *testing.B) {
		send := post([]byte(`{"name":"wallet_send","arguments":{"chain":"ethereum","to":"`+to+`","amount":"0.001"}}`), `status\tsuccess`)
		for range b.N {
			start := w.node.Nonce(b, from)
			const n = 20
			nonces := make([]uint64, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var res struct {
						Result string `json:"result"`
					}
					_ = json.Unmarshal([]byte(send()), &res)
					for _, line := range strings.Split(res.Result, "\n") {
						if v, ok := strings.CutPrefix(line, "nonce\t"); ok {
							nonces[i], _ = strconv.ParseUint(v, 10, 64)
						}
					}
				}()
			}
			wg.Wait()
			slices.Sort(nonces)
			consecutive := w.node.Nonce(b, from) == start+n
			for i, v := range nonces {
				consecutive = consecutive && v == start+uint64(i)
			}
			if !consecutive {
				b.Fatalf("nonces %v from %d", nonces, start)
			}
			b.Logf("Wallet: 20 concurrent sends through the API landed with nonces %d..%d, consecutive", nonces[0], nonces[n-1])
		}
	})
}
