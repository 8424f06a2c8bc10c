package wallet

import (
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
)

// TestPublicFallback: on polygon, Alchemy refusing the network for the key (403) sends the calls to the
// polygon_public endpoint, which the send then completes on.
func TestPublicFallback(t *testing.T) {
	node := wallettest.Anvil(t, 137, "") // the public RPC: no key
	var refused atomic.Int64
	alchemy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refused.Add(1)
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"POLYGON_MAINNET is not enabled for this app."}}`))
	}))
	t.Cleanup(alchemy.Close)
	l := login(t, alchemy.URL, "http://127.0.0.1:1", goodCreds(t))
	l.Endpoints["polygon"], l.Endpoints["polygon_public"] = alchemy.URL+"/polygon", node.Proxy+"/rpc"
	to := "0x000000000000000000000000000000000000bEEF"
	out, err := call(t, l, "send", map[string]any{"chain": "polygon", "to": to, "amount": "2"})
	if err != nil || field(out, "status") != "success" || field(out, "explorer") != "https://polygonscan.com/tx/"+field(out, "hash") {
		t.Fatalf("send %q %v", out, err)
	}
	if want, _ := ParseAmount("2", 18, false); node.Balance(t, to).Cmp(want) != 0 || refused.Load() == 0 {
		t.Fatalf("balance %s after %d refusals", node.Balance(t, to), refused.Load())
	}
	// A chain without a fallback answers the refusal, which does not disconnect the login.
	l.Endpoints["base"] = alchemy.URL + "/base"
	if _, err := call(t, l, "get_balance", map[string]any{"chain": "base"}); err == nil || !strings.Contains(err.Error(), "not enabled for this app") || adapters.Disconnects(err) {
		t.Fatalf("base: %v", err)
	}
}

// TestRPCFaults: a malformed answer, a node that is down, and an error object each give one clear
// line and sign nothing.
func TestRPCFaults(t *testing.T) {
	node := newJSONRPC(t)
	node.answer("eth_chainId", "0x1")
	node.answer("eth_getBlockByNumber", map[string]any{"baseFeePerGas": "0x3b9aca00"})
	node.answer("eth_maxPriorityFeePerGas", "0x3b9aca00")
	node.answer("eth_estimateGas", "0x5208")
	node.answer("eth_getBalance", "not a number")
	l := login(t, node.URL, "http://127.0.0.1:1", goodCreds(t))
	args := map[string]any{"chain": "ethereum", "to": "0x000000000000000000000000000000000000bEEF", "amount": "1"}
	if _, err := call(t, l, "send", args); err == nil || !strings.Contains(err.Error(), "eth_getBalance with something that is not a quantity") {
		t.Fatalf("malformed balance: %v", err)
	}
	node.answer("eth_getBalance", "0xde0b6b3a7640000000")
	node.answer("eth_chainId", []int{1})
	if _, err := call(t, l, "send", args); err == nil || !strings.Contains(err.Error(), "eth_chainId with a result that is not the expected shape") {
		t.Fatalf("malformed chain id: %v", err)
	}
	node.answer("eth_chainId", "0x1")
	node.on("eth_estimateGas", func([]json.RawMessage) (any, *rpcError) {
		return nil, &rpcError{Code: -32000, Message: "insufficient funds for gas * price + value"}
	})
	if _, err := call(t, l, "send", args); err == nil || !strings.Contains(err.Error(), "simulation on ethereum failed, so nothing was signed or sent: insufficient funds") {
		t.Fatalf("estimate refused: %v", err)
	}
	// A node that echoes its URL (the key in the path) shows no key.
	node.on("eth_estimateGas", func([]json.RawMessage) (any, *rpcError) {
		return nil, &rpcError{Code: -32000, Message: "bad request to /ethereum/" + alchemyKey}
	})
	if _, err := call(t, l, "send", args); err == nil || strings.Contains(err.Error(), alchemyKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("echoed key: %v", err)
	}
	for _, m := range node.seen {
		if m == "eth_sendRawTransaction" {
			t.Fatal("a faulty answer led to a broadcast")
		}
	}
	node.Close()
	if _, err := call(t, l, "send", args); orchestrator.ErrorCode(err) != orchestrator.EUPSTREAM || !strings.Contains(err.Error(), "could not be reached") {
		t.Fatalf("down: %v", err)
	}
}

// TestDroppedTransaction: a node that accepts a transaction and then forgets it answers pending
// after the receipt wait; the next send reuses the dropped nonce rather than leaving a gap.
func TestDroppedTransaction(t *testing.T) {
	node := wallettest.Anvil(t, 1, alchemyKey)
	node.Must(t, "evm_setAutomine", false)
	old := ReceiptWait
	ReceiptWait = time.Second
	t.Cleanup(func() { ReceiptWait = old })
	l := login(t, node.Proxy, "http://127.0.0.1:1", goodCreds(t))
	to := "0x000000000000000000000000000000000000bEEF"
	start := node.Nonce(t, wallettest.DevAddr)
	out, err := call(t, l, "send", map[string]any{"chain": "ethereum", "to": to, "amount": "1"})
	if err != nil || !strings.HasPrefix(field(out, "status"), "pending") || field(out, "hash") == "" {
		t.Fatalf("send %q %v", out, err)
	}
	// The node drops it: the pool is emptied, nothing was mined.
	node.Must(t, "anvil_dropTransaction", field(out, "hash"))
	node.Must(t, "evm_setAutomine", true)
	out, err = call(t, l, "send", map[string]any{"chain": "ethereum", "to": to, "amount": "0.25"})
	if err != nil || field(out, "status") != "success" || field(out, "nonce") != big.NewInt(int64(start)).String() {
		t.Fatalf("after the drop %q %v", out, err)
	}
	if want, _ := ParseAmount("0.25", 18, false); node.Balance(t, to).Cmp(want) != 0 {
		t.Fatalf("balance %s", node.Balance(t, to))
	}
}
