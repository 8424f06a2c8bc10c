package wallet

import (
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
)

// pool is anvil with two tokens and a TestSwap pool holding plenty of the second.
type pool struct {
	node            *wallettest.Node
	tokA, tokB, swp string
}

func newPool(t *testing.T) *pool {
	node := wallettest.Anvil(t, 1, alchemyKey)
	p := &pool{node: node, tokA: node.DeployToken(t, big.NewInt(1_000_000_000)), tokB: node.DeployToken(t, big.NewInt(1_000_000_000_000)), swp: node.DeploySwap(t)}
	node.TransferToken(t, p.tokB, wallettest.DevAddr, p.swp, big.NewInt(500_000_000_000))
	for _, a := range []*string{&p.tokA, &p.tokB, &p.swp} {
		*a = common.HexToAddress(*a).Hex()
	}
	return p
}

func sel(sig string) string { return fmt.Sprintf("%x", crypto.Keccak256([]byte(sig))[:4]) }

func pad(s string) string { return fmt.Sprintf("%064s", strings.ToLower(strings.TrimPrefix(s, "0x"))) }

// calldata is the pool call a quote routes through.
func (p *pool) calldata(fromToken, toToken string, amount *big.Int) string {
	if fromToken == nativeEVM {
		return "0x" + sel("swapNative(address,uint256)") + pad(toToken) + fmt.Sprintf("%064x", 0)
	}
	return "0x" + sel("swapTokens(address,uint256,address,uint256)") + pad(fromToken) + fmt.Sprintf("%064x", amount) + pad(toToken) + fmt.Sprintf("%064x", 0)
}

// lifiFake is LiFi's /v1/quote on loopback, in its published Step shape, routing through the
// pool; tamper may change the quote before it is answered.
func lifiFake(t *testing.T, p *pool, tamper *func(map[string]any)) *adapterstest.Fake {
	f := adapterstest.NewFake(t, func(*http.Request) bool { return true })
	f.Handle("GET /v1/quote", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		amt, _ := new(big.Int).SetString(q.Get("fromAmount"), 10)
		value := "0x0"
		out := new(big.Int).Mul(amt, big.NewInt(2))
		if q.Get("fromToken") == nativeEVM {
			value = fmt.Sprintf("0x%x", amt)
			out = new(big.Int).Div(amt, big.NewInt(1_000_000_000_000))
		}
		min := new(big.Int).Div(new(big.Int).Mul(out, big.NewInt(995)), big.NewInt(1000))
		quote := map[string]any{
			"type": "lifi", "id": "a7c1e2d4-quote", "tool": "testswap", "toolDetails": map[string]any{"key": "testswap", "name": "TestSwap"},
			"action": map[string]any{"fromChainId": 1, "toChainId": 1, "fromAmount": q.Get("fromAmount"), "slippage": 0.005,
				"fromToken":   map[string]any{"address": q.Get("fromToken"), "chainId": 1, "decimals": 6, "symbol": "TUSD"},
				"toToken":     map[string]any{"address": q.Get("toToken"), "chainId": 1, "decimals": 6, "symbol": "TUSD"},
				"fromAddress": q.Get("fromAddress"), "toAddress": q.Get("toAddress")},
			"estimate": map[string]any{"tool": "testswap", "approvalAddress": p.swp, "fromAmount": q.Get("fromAmount"), "toAmount": out.String(), "toAmountMin": min.String(),
				"executionDuration": 30, "feeCosts": []any{}, "gasCosts": []any{map[string]any{"type": "SEND", "amount": "100000000000000"}}},
			"transactionRequest": map[string]any{"from": q.Get("fromAddress"), "to": p.swp, "chainId": 1, "data": p.calldata(q.Get("fromToken"), q.Get("toToken"), amt),
				"value": value, "gasPrice": "0x77359400", "gasLimit": "0x493e0"},
		}
		if tamper != nil && *tamper != nil {
			(*tamper)(quote)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = jsonEncode(w, quote)
	})
	return f
}

func TestSwapLiFi(t *testing.T) {
	p := newPool(t)
	var tamper func(map[string]any)
	f := lifiFake(t, p, &tamper)
	l := login(t, p.node.Proxy, "http://127.0.0.1:1", goodCreds(t))
	l.Endpoints[EndpointLiFi] = f.URL + "/v1"
	me := wallettest.DevAddr
	beforeA, beforeB := p.node.TokenBalance(t, p.tokA, me), p.node.TokenBalance(t, p.tokB, me)

	// A dry run: the quote and what would be signed, the approval it needs, nothing sent.
	n := p.node.Nonce(t, me)
	dry, err := call(t, l, "swap", map[string]any{"chain": "ethereum", "from_token": p.tokA, "to_token": p.tokB, "amount": "10", "dry_run": true})
	if err != nil || !strings.Contains(field(dry, "approval"), "approve 10 TUSD to") || field(dry, "buy_estimate") != "20 TUSD" || !strings.HasPrefix(field(dry, "status"), "dry_run") || p.node.Nonce(t, me) != n {
		t.Fatalf("dry run %q %v", dry, err)
	}
	f.CheckLast(t, "/v1/quote", map[string]string{"fromChain": "1", "toChain": "1", "fromToken": p.tokA, "fromAmount": "10000000", "fromAddress": me, "slippage": "0.005"})

	// The swap: the exact approval, then the routed transaction, both mined.
	out, err := call(t, l, "swap", map[string]any{"chain": "ethereum", "from_token": p.tokA, "to_token": p.tokB, "amount": "10"})
	if err != nil || field(out, "status") != "success" || field(out, "approval_hash") == "" {
		t.Fatalf("swap %q %v", out, err)
	}
	if a, b := p.node.TokenBalance(t, p.tokA, me), p.node.TokenBalance(t, p.tokB, me); new(big.Int).Sub(beforeA, a).Int64() != 10_000_000 || new(big.Int).Sub(b, beforeB).Int64() != 20_000_000 {
		t.Fatalf("balances moved by %s and %s", new(big.Int).Sub(beforeA, a), new(big.Int).Sub(b, beforeB))
	}
	// Native in: the value is the stated amount, no approval.
	out, err = call(t, l, "swap", map[string]any{"chain": "ethereum", "from_token": "ETH", "to_token": p.tokB, "amount": "0.5"})
	if err != nil || field(out, "status") != "success" || field(out, "approval") != "" || field(out, "value") != "0.5 ETH" {
		t.Fatalf("native swap %q %v", out, err)
	}

	n = p.node.Nonce(t, me)
	for _, tc := range []struct {
		name   string
		tamper func(map[string]any)
		says   string
	}{
		{"another chain", func(q map[string]any) { q["transactionRequest"].(map[string]any)["chainId"] = 137 }, "chain id 137, not ethereum (1)"},
		{"a bridge", func(q map[string]any) { q["action"].(map[string]any)["toChainId"] = 8453 }, "bridges to chain id 8453"},
		{"unstated value", func(q map[string]any) { q["transactionRequest"].(map[string]any)["value"] = "0xde0b6b3a7640000" }, "sends 1 ETH, but the swap states 0"},
		{"another spender", func(q map[string]any) {
			q["transactionRequest"].(map[string]any)["from"] = wallettest.Dev2Addr
		}, "spends from " + wallettest.Dev2Addr},
		{"another amount", func(q map[string]any) { q["action"].(map[string]any)["fromAmount"] = "99000000" }, "not the stated 10000000"},
		{"approval elsewhere", func(q map[string]any) { q["estimate"].(map[string]any)["approvalAddress"] = wallettest.Dev2Addr }, "not the contract its transaction calls"},
		{"a reverting route", func(q map[string]any) {
			q["transactionRequest"].(map[string]any)["data"] = "0x" + sel("swapTokens(address,uint256,address,uint256)") + pad(p.tokA) + fmt.Sprintf("%064x", 10_000_000) + pad(p.tokB) + fmt.Sprintf("%064x", 1_000_000_000)
		}, "reverted: TestSwap: slippage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tamper = tc.tamper
			defer func() { tamper = nil }()
			// The approval of the first swap was exact and is spent: approve again each time
			// only if the quote passes, so a refused quote sends nothing at all.
			_, err := call(t, l, "swap", map[string]any{"chain": "ethereum", "from_token": p.tokA, "to_token": p.tokB, "amount": "10"})
			if err == nil || !strings.Contains(adapters.Message(err), tc.says) {
				t.Fatalf("%v, want %q", err, tc.says)
			}
		})
	}
	// Only the reverting route got as far as its approval; nothing else was sent.
	if got := p.node.Nonce(t, me); got > n+1 {
		t.Fatalf("refused quotes sent %d transactions", got-n)
	}
	if _, err := call(t, l, "swap", map[string]any{"chain": "arc", "from_token": "USDC", "to_token": p.tokB, "amount": "1"}); err == nil || !strings.Contains(err.Error(), "use uniswap_swap") {
		t.Fatalf("arc: %v", err)
	}
}
