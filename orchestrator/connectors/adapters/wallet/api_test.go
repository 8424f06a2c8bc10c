package wallet_test

import (
	"crypto/ed25519"
	"encoding/json"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

const (
	walletAlchemyKey = "alch-e2e-key-4c1d9a"
	walletOpenSeaKey = "os-e2e-key-77b20f"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// walletSetup is serve with the Wallet's every endpoint at loopback fakes: ethereum (and base,
// to see a chain-id mismatch) at a real anvil behind a key-checking proxy, solana at a JSON-RPC
// fake, OpenSea's chain list checking X-API-KEY.
type walletSetup struct {
	api, org, agent string
	node            *wallettest.Node
	sol             *wallettest.Solana
	creds           map[string]any
}

func newWalletSetup(t testing.TB) *walletSetup {
	t.Helper()
	api := wiretest.ServeIn(t, "local").API
	node := wallettest.Anvil(t, 1, walletAlchemyKey)
	sol := wallettest.NewSolana(t, walletAlchemyKey)
	os := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("X-API-KEY") == walletOpenSeaKey })
	os.JSON("GET /api/v2/chains", 200, []byte(`{"chains":[{"chain":"ethereum","name":"Ethereum","symbol":"ETH"}]}`))
	eps := map[string]any{"ethereum": node.Proxy + "/eth", "base": node.Proxy + "/base", "solana": sol.URL + "/sol", "opensea": os.URL}
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/wallet", map[string]any{"endpoints": eps})
	org, agent := wiretest.ScopesAt(t, api)
	k := ed25519.NewKeyFromSeed([]byte("wallet-e2e-solana-seed-32-bytes!"))
	creds := map[string]any{wallet.FieldEVMKey: "0x" + wallettest.DevKey, wallet.FieldSolanaKey: wallet.Base58Encode(k),
		wallet.FieldAlchemyKey: walletAlchemyKey, wallet.FieldOpenSeaKey: walletOpenSeaKey}
	sol.Fund(wallet.SolanaAddress(k), 2_500_000_001)
	return &walletSetup{api: api, org: org, agent: agent, node: node, sol: sol, creds: creds}
}

func (w *walletSetup) connect(t testing.TB, creds map[string]any) (int, map[string]any) {
	return wiretest.Request(t, "POST", w.api+"/api/mcp/connections", map[string]any{"server": "wallet", "scope": "org", "scope_id": w.org, "credentials": creds})
}

func (w *walletSetup) with(k, v string) map[string]any {
	c := map[string]any{}
	for a, b := range w.creds {
		c[a] = b
	}
	c[k] = v
	return c
}

// TestWalletEndToEnd: through the HTTP API, a malformed or refused key writes nothing; a good
// login lists the tools with every spend tool Off at the owner; a call to send is refused until
// the operator turns it On; then send moves exactly the amount on the chain; no key is in any
// result or stored call.
func TestWalletEndToEnd(t *testing.T) {
	w := newWalletSetup(t)
	for _, tc := range []struct {
		name   string
		creds  map[string]any
		says   []string
		secret string
	}{
		{"malformed EVM key", w.with(wallet.FieldEVMKey, "0xdeadbeefcafe0123456789"), []string{"credentials.evm_private_key", "64 hex digits"}, "deadbeefcafe0123456789"},
		{"malformed Solana key", w.with(wallet.FieldSolanaKey, "[1,2,3]"), []string{"credentials.solana_private_key", "base58"}, ""},
		{"refused Alchemy key", w.with(wallet.FieldAlchemyKey, "alch-wrong-key-0000"), []string{"Alchemy ethereum RPC", "Must be authenticated!"}, "alch-wrong-key-0000"},
		{"refused OpenSea key", w.with(wallet.FieldOpenSeaKey, "os-wrong-key-0000"), []string{"OpenSea", "refused"}, "os-wrong-key-0000"},
	} {
		st, out := w.connect(t, tc.creds)
		msg := wiretest.ErrText(out)
		if st != 422 || (tc.secret != "" && strings.Contains(msg, tc.secret)) || strings.Contains(msg, wallettest.DevKey) {
			t.Fatalf("%s: %d %v", tc.name, st, out)
		}
		for _, s := range tc.says {
			if !strings.Contains(msg, s) {
				t.Fatalf("%s: %q does not say %q", tc.name, msg, s)
			}
		}
	}
	if conns := wiretest.Must(t, 200, "GET", w.api+"/api/mcp/connections", nil); len(conns["connections"].([]any)) != 0 {
		t.Fatalf("a refused Connect wrote %v", conns)
	}

	conn := wiretest.Must(t, 201, "POST", w.api+"/api/mcp/connections", map[string]any{"server": "wallet", "scope": "org", "scope_id": w.org, "credentials": w.creds})
	id := conn["id"].(string)
	if conn["verified_at"] == nil || !strings.HasPrefix(conn["account_hint"].(string), "0xf39f…2266 · ") {
		t.Fatalf("connection %v", conn)
	}
	var tools []string
	for _, x := range wiretest.Must(t, 200, "GET", w.api+"/api/mcp/connections/"+id+"/tools", nil)["tools"].([]any) {
		tools = append(tools, x.(map[string]any)["name"].(string))
	}
	if len(tools) != 11 || slices.Contains(tools, "wallet_uniswap_swap") || !slices.Contains(tools, "wallet_send") {
		t.Fatalf("listed %v", tools)
	}
	off := map[string]bool{}
	for _, b := range wiretest.Must(t, 200, "GET", w.api+"/api/bindings?scope=org&scope_id="+w.org, nil)["bindings"].([]any) {
		b := b.(map[string]any)
		if b["catalog_kind"] == "mcp_tool" && b["enabled"] == false {
			off[b["catalog_id"].(string)] = true
		}
	}
	for _, name := range []string{"wallet_send", "wallet_call", "wallet_submit", "wallet_swap", "wallet_opensea_buy", "wallet_opensea_list", "wallet_opensea_accept_offer", "wallet_opensea_collection_offer", "wallet_opensea_cancel_order"} {
		if !off[name] {
			t.Errorf("%s is not Off at the owner: %v", name, off)
		}
	}
	if off["wallet_get_balance"] || off["wallet_get_address"] {
		t.Fatalf("a read tool is Off: %v", off)
	}

	run := wiretest.Must(t, 201, "POST", w.api+"/api/agents/"+w.agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	names := wiretest.OfferedNames(run)
	if !slices.Contains(names, "wallet_get_balance") || slices.Contains(names, "wallet_send") {
		t.Fatalf("offered %v", names)
	}
	callRun := func(runID, name string, args map[string]any) (int, map[string]any) {
		return wiretest.Request(t, "POST", w.api+"/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": args})
	}
	to := "0x000000000000000000000000000000000000dEaD"
	sendArgs := map[string]any{"chain": "ethereum", "to": to, "amount": "0.75"}
	nonce := w.node.Nonce(t, wallettest.DevAddr)
	st, out := callRun(runID, "wallet_send", sendArgs)
	if res, _ := out["result"].(string); st == 200 && !strings.HasPrefix(res, "ERROR:") {
		t.Fatalf("send while Off: %d %v", st, out)
	}
	if w.node.Nonce(t, wallettest.DevAddr) != nonce || w.node.Balance(t, to).Sign() != 0 {
		t.Fatal("a send while Off reached the chain")
	}

	res := wiretest.Must(t, 200, "POST", w.api+"/api/runs/"+runID+"/calls", map[string]any{"name": "wallet_get_balance", "arguments": map[string]any{"chain": "solana"}})
	if got := res["result"].(string); !strings.Contains(got, "\tnative\tSOL\t2.500000001\t9\t2500000001") {
		t.Fatalf("solana balance %q", got)
	}
	res = wiretest.Must(t, 200, "POST", w.api+"/api/runs/"+runID+"/calls", map[string]any{"name": "wallet_get_address", "arguments": map[string]any{}})
	if got := res["result"].(string); !strings.Contains(got, "evm\t"+wallettest.DevAddr) {
		t.Fatalf("address %q", got)
	}

	// The operator turns send On at the owner: a new run is offered it and it moves the amount.
	wiretest.Must(t, 200, "PUT", w.api+"/api/bindings", map[string]any{"scope": "org", "scope_id": w.org, "catalog_kind": "mcp_tool", "catalog_id": "wallet_send", "enabled": true})
	// A later sync (the refresh route) checks the stored keys again and rewrites the list: the
	// operator's On stays, the other spend tools stay Off.
	if diff := wiretest.Must(t, 200, "POST", w.api+"/api/mcp/connections/"+id+"/refresh", nil); len(diff["added"].([]any))+len(diff["removed"].([]any)) != 0 {
		t.Fatalf("refresh of an unchanged login: %v", diff)
	}
	run = wiretest.Must(t, 201, "POST", w.api+"/api/agents/"+w.agent+"/runs", map[string]any{"kind": "direct"})
	runID = run["id"].(string)
	if !slices.Contains(wiretest.OfferedNames(run), "wallet_send") || slices.Contains(wiretest.OfferedNames(run), "wallet_call") {
		t.Fatalf("offered after On %v", wiretest.OfferedNames(run))
	}
	res = wiretest.Must(t, 200, "POST", w.api+"/api/runs/"+runID+"/calls", map[string]any{"name": "wallet_send", "arguments": sendArgs})
	got := res["result"].(string)
	if !strings.Contains(got, "status\tsuccess") || !strings.Contains(got, "https://etherscan.io/tx/0x") {
		t.Fatalf("send %q", got)
	}
	if want, _ := wallet.ParseAmount("0.75", 18, false); w.node.Balance(t, to).Cmp(want) != 0 {
		t.Fatalf("the recipient holds %s wei, want %s", w.node.Balance(t, to), want)
	}
	// On solana too: the bank (which verifies every signature) moves exactly the lamports.
	solTo := wallet.Base58Encode(ed25519.NewKeyFromSeed([]byte("wallet-e2e-solana-recipient-32b!"))[32:])
	res = wiretest.Must(t, 200, "POST", w.api+"/api/runs/"+runID+"/calls", map[string]any{"name": "wallet_send", "arguments": map[string]any{"chain": "solana", "to": solTo, "amount": "0.5"}})
	if got := res["result"].(string); !strings.Contains(got, "status\tsuccess (confirmed)") || !strings.Contains(got, "https://solscan.io/tx/") || w.sol.Balance(solTo) != 500_000_000 {
		t.Fatalf("solana send %q (recipient %d lamports)", got, w.sol.Balance(solTo))
	}
	// A send on base reaches the same node (chain id 1): refused before signing.
	res = wiretest.Must(t, 200, "POST", w.api+"/api/runs/"+runID+"/calls", map[string]any{"name": "wallet_send", "arguments": map[string]any{"chain": "base", "to": to, "amount": "1"}})
	if got := res["result"].(string); !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, "chain id 8453") {
		t.Fatalf("base %q", got)
	}
	if w.node.Balance(t, to).Cmp(big.NewInt(750_000_000_000_000_000)) != 0 {
		t.Fatal("a refused send moved funds")
	}

	secrets := []string{wallettest.DevKey, walletAlchemyKey, walletOpenSeaKey, w.creds[wallet.FieldSolanaKey].(string)}
	for _, r := range []string{runID, run["id"].(string)} {
		for _, c := range wiretest.Must(t, 200, "GET", w.api+"/api/runs/"+r+"/calls", nil)["calls"].([]any) {
			b, _ := json.Marshal(c)
			for _, s := range secrets {
				if strings.Contains(string(b), s) {
					t.Fatalf("a key was stored: %s", b)
				}
			}
		}
	}
}
