package wallet

import (
	"context"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
)

// chainLogin is a Wallet login whose ethereum and base endpoints reach one anvil of chain id 1.
func chainLogin(t *testing.T) (*wallettest.Node, adapters.Login) {
	node := wallettest.Anvil(t, 1, alchemyKey)
	l := login(t, node.Proxy, "http://127.0.0.1:1", goodCreds(t))
	return node, l
}

func call(t *testing.T, l adapters.Login, tool string, args map[string]any) (string, error) {
	t.Helper()
	return Adapter{}.Call(context.Background(), l, tool, args)
}

// field reads one field of a key/value result.
func field(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == name {
			return v
		}
	}
	return ""
}

func ether(s string) *big.Int { n, _ := ParseAmount(s, 18, true); return n }

func TestEVMNativeSend(t *testing.T) {
	node, l := chainLogin(t)
	to := "0x000000000000000000000000000000000000bEEF"
	before := node.Balance(t, wallettest.DevAddr)
	out, err := call(t, l, "send", map[string]any{"chain": "ethereum", "to": to, "amount": "1.234567890123456789"})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Balance(t, to); got.Cmp(ether("1.234567890123456789")) != 0 {
		t.Fatalf("the recipient got %s wei", got)
	}
	hash := field(out, "hash")
	if field(out, "status") != "success" || !regexp.MustCompile(`^0x[0-9a-f]{64}$`).MatchString(hash) || field(out, "explorer") != "https://etherscan.io/tx/"+hash || field(out, "chain") != "ethereum (chain id 1)" {
		t.Fatalf("result %q", out)
	}
	// The sender paid the amount plus the gas the receipt says, not a wei more.
	var rc struct {
		Gas   string `json:"gasUsed"`
		Price string `json:"effectiveGasPrice"`
		Type  string `json:"type"`
	}
	decode(t, node.Must(t, "eth_getTransactionReceipt", hash), &rc)
	fee := new(big.Int).Mul(hexutil.MustDecodeBig(rc.Gas), hexutil.MustDecodeBig(rc.Price))
	spent := new(big.Int).Sub(before, node.Balance(t, wallettest.DevAddr))
	if want := new(big.Int).Add(ether("1.234567890123456789"), fee); spent.Cmp(want) != 0 || rc.Type != "0x2" {
		t.Fatalf("spent %s, want %s (type %s)", spent, want, rc.Type)
	}
	if strings.Contains(out, devKey) || strings.Contains(out, alchemyKey) {
		t.Fatalf("a key in the result: %q", out)
	}
	bal, err := call(t, l, "get_balance", map[string]any{"chain": "ethereum", "address": to})
	if err != nil || !strings.Contains(bal, "ethereum\t"+to+"\tnative\tETH\t1.234567890123456789\t18\t1234567890123456789") {
		t.Fatalf("get_balance %q %v", bal, err)
	}
}

func TestEVMToken(t *testing.T) {
	node, l := chainLogin(t)
	tok := node.DeployToken(t, big.NewInt(1_000_000_000)) // 1,000 TUSD
	to := "0x000000000000000000000000000000000000cafE"
	bal, err := call(t, l, "get_balance", map[string]any{"chain": "ethereum", "token": tok})
	if err != nil || !strings.Contains(bal, "\tTUSD\t1000\t6\t1000000000") {
		t.Fatalf("get_balance %q %v", bal, err)
	}
	out, err := call(t, l, "send", map[string]any{"chain": "ethereum", "to": to, "amount": "12.345678", "token": tok})
	if err != nil || field(out, "status") != "success" || !strings.HasPrefix(field(out, "amount"), "12.345678 TUSD") {
		t.Fatalf("send %q %v", out, err)
	}
	if got := node.TokenBalance(t, tok, to); got.Int64() != 12_345_678 {
		t.Fatalf("the recipient holds %s", got)
	}
	n := node.Nonce(t, wallettest.DevAddr)
	for _, tc := range []struct{ amount, says string }{
		{"12.3456789", "7 decimal places; this asset has 6"},
		{"5000", "less than 5000"},
		{"0", "zero"},
		{"max", "not accepted"},
	} {
		if _, err := call(t, l, "send", map[string]any{"chain": "ethereum", "to": to, "amount": tc.amount, "token": tok}); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %q", tc.amount, err, tc.says)
		}
	}
	if node.Nonce(t, wallettest.DevAddr) != n {
		t.Fatal("a refused send was broadcast")
	}
}

func TestEVMCallAndRevert(t *testing.T) {
	node, l := chainLogin(t)
	tok := node.DeployToken(t, big.NewInt(1_000_000))
	guarded := hexutil.Encode(crypto.Keccak256([]byte("guarded()"))[:4])
	n := node.Nonce(t, wallettest.DevAddr)
	_, err := call(t, l, "call", map[string]any{"chain": "ethereum", "to": tok, "data": guarded})
	if err == nil || !strings.Contains(err.Error(), "reverted: TestToken: send exactly 1 wei") || !strings.Contains(err.Error(), "nothing was signed or sent") {
		t.Fatalf("revert: %v", err)
	}
	// A transfer beyond the balance, as raw calldata: the contract's own reason.
	data := "0xa9059cbb" + strings.Repeat("0", 24) + "000000000000000000000000000000000000cafe" + fmt.Sprintf("%064x", 2_000_000)
	if _, err := call(t, l, "call", map[string]any{"chain": "ethereum", "to": tok, "data": data}); err == nil || !strings.Contains(err.Error(), "transfer amount exceeds balance") {
		t.Fatalf("transfer revert: %v", err)
	}
	if node.Nonce(t, wallettest.DevAddr) != n {
		t.Fatal("a reverting call was broadcast")
	}
	dry, err := call(t, l, "call", map[string]any{"chain": "ethereum", "to": tok, "data": guarded, "value": "0.000000000000000001", "dry_run": true})
	if err != nil || !strings.HasPrefix(field(dry, "status"), "dry_run") || field(dry, "calldata") != guarded || field(dry, "value") != "0.000000000000000001 ETH" || node.Nonce(t, wallettest.DevAddr) != n {
		t.Fatalf("dry run %q %v", dry, err)
	}
	out, err := call(t, l, "call", map[string]any{"chain": "ethereum", "to": tok, "data": guarded, "value": "0.000000000000000001"})
	if err != nil || field(out, "status") != "success" {
		t.Fatalf("call %q %v", out, err)
	}
	pokes := hexutil.Encode(crypto.Keccak256([]byte("pokes()"))[:4])
	var got string
	decode(t, node.Must(t, "eth_call", map[string]any{"to": tok, "data": pokes}, "latest"), &got)
	if new(big.Int).SetBytes(hexutil.MustDecode(got)).Int64() != 1 {
		t.Fatalf("pokes %s", got)
	}
}

func TestEVMRefusals(t *testing.T) {
	node, l := chainLogin(t)
	n := node.Nonce(t, wallettest.DevAddr)
	to := "0x000000000000000000000000000000000000bEEF"
	for _, tc := range []struct {
		name string
		args map[string]any
		says string
		code string
	}{
		{"another network's RPC", map[string]any{"chain": "base", "to": to, "amount": "1"}, "answers chain id 1, but base is chain id 8453; nothing was signed", orchestrator.EUPSTREAM},
		{"more than the balance", map[string]any{"chain": "ethereum", "to": to, "amount": "100000000"}, "less than 100000000.", orchestrator.EINVALID},
		{"a bad address", map[string]any{"chain": "ethereum", "to": "0x1234", "amount": "1"}, "to is not an EVM address", orchestrator.EINVALID},
		{"an unknown chain", map[string]any{"chain": "dogechain", "to": to, "amount": "1"}, "not one of ethereum", orchestrator.EINVALID},
		{"negative", map[string]any{"chain": "ethereum", "to": to, "amount": "-1"}, "negative", orchestrator.EINVALID},
		{"too many decimals", map[string]any{"chain": "ethereum", "to": to, "amount": "0.0000000000000000001"}, "19 decimal places", orchestrator.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, l, "send", tc.args)
			if err == nil || !strings.Contains(adapters.Message(err), tc.says) || orchestrator.ErrorCode(err) != tc.code {
				t.Fatalf("%v (%s), want %q", err, orchestrator.ErrorCode(err), tc.says)
			}
		})
	}
	if node.Nonce(t, wallettest.DevAddr) != n {
		t.Fatal("a refused send was broadcast")
	}
	// A dry run shows what would be signed and sends nothing.
	dry, err := call(t, l, "send", map[string]any{"chain": "ethereum", "to": to, "amount": "0.5", "dry_run": true})
	if err != nil || field(dry, "gas_limit") != "21000" || field(dry, "value") != "0.5 ETH" || field(dry, "to") != to || field(dry, "hash") != "" || node.Nonce(t, wallettest.DevAddr) != n {
		t.Fatalf("dry run %q %v", dry, err)
	}
}

// TestEVMConcurrentNonces: 20 sends at once from one address take 20 consecutive nonces, each
// mined, none reused or skipped.
func TestEVMConcurrentNonces(t *testing.T) {
	node, l := chainLogin(t)
	start := node.Nonce(t, wallettest.DevAddr)
	const n = 20
	var wg sync.WaitGroup
	outs, errs := make([]string, n), make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = call(t, l, "send", map[string]any{"chain": "ethereum", "to": wallettest.Dev2Addr, "amount": "0.001"})
		}()
	}
	wg.Wait()
	var got []uint64
	for i := range n {
		if errs[i] != nil || field(outs[i], "status") != "success" {
			t.Fatalf("send %d: %q %v", i, outs[i], errs[i])
		}
		v, _ := strconv.ParseUint(field(outs[i], "nonce"), 10, 64)
		got = append(got, v)
	}
	slices.Sort(got)
	for i, v := range got {
		if v != start+uint64(i) {
			t.Fatalf("nonces %v, want %d.. consecutive", got, start)
		}
	}
	if node.Nonce(t, wallettest.DevAddr) != start+n {
		t.Fatalf("the chain's nonce is %d, want %d", node.Nonce(t, wallettest.DevAddr), start+n)
	}
}
