package wallet

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
)

// uniswapFake is the Trading API on loopback (check_approval, quote, swap in their published
// shapes, x-api-key checked), routing CLASSIC swaps through the pool; tamper edits an answer by
// its path before it is sent.
func uniswapFake(t *testing.T, p *pool, tamper *func(path string, v map[string]any)) *adapterstest.Fake {
	f := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("x-api-key") == uniswapKey })
	answer := func(path string, w http.ResponseWriter, v map[string]any) {
		if *tamper != nil {
			(*tamper)(path, v)
		}
		_ = jsonEncode(w, v)
	}
	f.Handle("POST /v1/check_approval", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Wallet string `json:"walletAddress"`
			Token  string `json:"token"`
			Amount string `json:"amount"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		amt, _ := new(big.Int).SetString(req.Amount, 10)
		// Uniswap approves more than asked; the wallet sends its own exact approve instead.
		data := "0x095ea7b3" + pad(p.swp) + fmt.Sprintf("%064x", new(big.Int).Mul(amt, big.NewInt(1000)))
		answer("check_approval", w, map[string]any{"requestId": "req-appr-1", "approval": map[string]any{"to": req.Token, "from": req.Wallet, "data": data, "value": "0", "chainId": 1}, "cancel": nil})
	})
	f.Handle("POST /v1/quote", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		amt, _ := new(big.Int).SetString(req["amount"].(string), 10)
		out := new(big.Int).Mul(amt, big.NewInt(2))
		answer("quote", w, map[string]any{"requestId": "req-q-1", "routing": "CLASSIC", "permitData": nil, "quote": map[string]any{
			"chainId": 1, "swapper": req["swapper"], "tradeType": "EXACT_INPUT", "slippage": req["slippageTolerance"], "quoteId": "q-1",
			"input":  map[string]any{"amount": amt.String(), "token": req["tokenIn"]},
			"output": map[string]any{"amount": out.String(), "token": req["tokenOut"], "recipient": req["swapper"]},
			"gasFee": "120000000000000", "gasUseEstimate": "150000", "routeString": "[V3] 100.00% = TUSD -- 0.05% --> TUSD"}})
	})
	f.Handle("POST /v1/swap", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Quote struct {
				Swapper string `json:"swapper"`
				Input   struct{ Amount, Token string }
				Output  struct{ Token string }
			} `json:"quote"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		amt, _ := new(big.Int).SetString(req.Quote.Input.Amount, 10)
		answer("swap", w, map[string]any{"requestId": "req-s-1", "swap": map[string]any{"to": p.swp, "from": req.Quote.Swapper, "chainId": 1,
			"data": p.calldata(req.Quote.Input.Token, req.Quote.Output.Token, amt), "value": "0x00", "gasLimit": "300000"}})
	})
	return f
}

func TestUniswapSwap(t *testing.T) {
	p := newPool(t)
	var tamper func(string, map[string]any)
	f := uniswapFake(t, p, &tamper)
	creds := goodCreds(t)
	creds[FieldUniswapKey] = uniswapKey
	l := login(t, p.node.Proxy, f.URL, creds)
	me := wallettest.DevAddr
	beforeA, beforeB := p.node.TokenBalance(t, p.tokA, me), p.node.TokenBalance(t, p.tokB, me)
	out, err := call(t, l, "uniswap_swap", map[string]any{"chain": "ethereum", "from_token": p.tokA, "to_token": p.tokB, "amount": "7.5"})
	if err != nil || field(out, "status") != "success" || !strings.Contains(field(out, "approval"), "approve 7.5 TUSD to "+p.swp) {
		t.Fatalf("swap %q %v", out, err)
	}
	if a, b := p.node.TokenBalance(t, p.tokA, me), p.node.TokenBalance(t, p.tokB, me); new(big.Int).Sub(beforeA, a).Int64() != 7_500_000 || new(big.Int).Sub(b, beforeB).Int64() != 15_000_000 {
		t.Fatalf("balances moved by %s and %s", new(big.Int).Sub(beforeA, a), new(big.Int).Sub(b, beforeB))
	}
	// The allowance left is zero: the wallet approved exactly, not Uniswap's thousandfold.
	data := "0x" + sel("allowance(address,address)") + pad(me) + pad(p.swp)
	var left string
	decode(t, p.node.Must(t, "eth_call", map[string]any{"to": p.tokA, "data": data}, "latest"), &left)
	if strings.Trim(strings.TrimPrefix(left, "0x"), "0") != "" {
		t.Fatalf("allowance left %s", left)
	}
	n := p.node.Nonce(t, me)
	for _, tc := range []struct {
		name   string
		tamper func(string, map[string]any)
		says   string
	}{
		{"another chain", func(path string, v map[string]any) {
			if path == "swap" {
				v["swap"].(map[string]any)["chainId"] = 8453
			}
		}, "chain id 8453, not ethereum (1)"},
		{"unstated value", func(path string, v map[string]any) {
			if path == "swap" {
				v["swap"].(map[string]any)["value"] = "1000"
			}
		}, "but the swap states 0"},
		{"another swapper", func(path string, v map[string]any) {
			if path == "swap" {
				v["swap"].(map[string]any)["from"] = wallettest.Dev2Addr
			}
		}, "spends from " + wallettest.Dev2Addr},
		{"a Permit2 route", func(path string, v map[string]any) {
			if path == "quote" {
				v["permitData"] = map[string]any{"domain": map[string]any{"name": "Permit2"}}
			}
		}, "Permit2 signature"},
		{"a UniswapX route", func(path string, v map[string]any) {
			if path == "quote" {
				v["routing"] = "DUTCH_V2"
			}
		}, "CLASSIC routes only"},
		{"approval for another spender", func(path string, v map[string]any) {
			if path == "check_approval" {
				v["approval"].(map[string]any)["data"] = "0x095ea7b3" + pad(wallettest.Dev2Addr) + fmt.Sprintf("%064x", 1)
			}
		}, "not the contract its swap calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tamper = tc.tamper
			defer func() { tamper = nil }()
			if _, err := call(t, l, "uniswap_swap", map[string]any{"chain": "ethereum", "from_token": p.tokA, "to_token": p.tokB, "amount": "1"}); err == nil || !strings.Contains(adapters.Message(err), tc.says) {
				t.Fatalf("%v, want %q", err, tc.says)
			}
		})
	}
	if p.node.Nonce(t, me) != n {
		t.Fatal("a refused answer sent a transaction")
	}
	delete(l.Credentials, FieldUniswapKey)
	if _, err := call(t, l, "uniswap_swap", map[string]any{"chain": "ethereum", "from_token": p.tokA, "to_token": p.tokB, "amount": "1"}); err == nil || !strings.Contains(err.Error(), "no Uniswap API key") {
		t.Fatalf("no key: %v", err)
	}
}
