package lifecycle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
)

// TestConnectStoresSealedCredentials: a token Connect marks the login connected, stores the
// credentials sealed to that row (never in clear, never in the answer), lists the curated tools,
// writes the enabled binding at the owner, and says the credentials were not checked yet.
func TestConnectStoresSealedCredentials(t *testing.T) {
	w := newWorld(t)
	c := w.connect("coingecko", "guild", "g1", cgKey)
	if c.Status != orchestrator.ConnConnected || c.Scope != "guild" || c.ScopeID != "g1" || c.OrgID != "o1" || c.ToolCount != 8 || c.VerifiedAt != nil || c.ListedAt == nil {
		t.Fatalf("connection %+v", c)
	}
	if b, _ := json.Marshal(c); bytes.Contains(b, []byte("CG-pro-key")) {
		t.Fatalf("the answer carries the credential: %s", b)
	}
	sealedCreds, err := w.store.SealedCredentials(w.ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealedCreds, []byte("CG-pro-key")) {
		t.Fatal("credentials stored in clear")
	}
	plain, err := w.box.Open(sealedCreds, connections.SealedFor(c.ID))
	if err != nil || string(plain) != `{"api_key":"CG-pro-key-0123456789"}` {
		t.Fatalf("open: %q %v", plain, err)
	}
	if _, err := w.box.Open(sealedCreds, connections.SealedFor("conn_other")); err == nil {
		t.Fatal("sealed credentials open on another row")
	}
	tools, err := w.svc.ConnectionTools(w.ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := listedNames(tools); !slices.Equal(got, []string{"coingecko_chart", "coingecko_coin", "coingecko_movers", "coingecko_new", "coingecko_prices", "coingecko_search", "coingecko_supply", "coingecko_trending"}) {
		t.Fatalf("listed %v", got)
	}
	rows, err := w.binds.ListBindings(w.ctx, "guild", "g1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].CatalogKind != "mcp" || rows[0].CatalogID != "coingecko" || !rows[0].Enabled || rows[0].ConnectionID != c.ID {
		t.Fatalf("bindings at g1: %+v", rows)
	}
}

func listedNames(ts []orchestrator.ListedTool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// TestConnectConflictAndRetry: a second Connect while a connected login exists is a 409 that
// writes nothing; Connect over a disconnected (or pending) login retries it in place.
func TestConnectConflictAndRetry(t *testing.T) {
	w := newWorld(t)
	c := w.connect("coingecko", "agent", "a1", cgKey)
	before := w.count("mcp_connections")
	_, err := w.svc.Connect(w.ctx, lifecycle.ConnectRequest{Server: "coingecko", Scope: "agent", ScopeID: "a1", Credentials: map[string]string{"api_key": "CG-second"}})
	wantErr(t, err, orchestrator.ECONFLICT, "already has a connected CoinGecko login")
	if w.count("mcp_connections") != before {
		t.Fatal("the 409 wrote a connection")
	}
	// Another owner may connect the same server.
	w.connect("coingecko", "agent", "a2", cgKey)
	for _, status := range []string{orchestrator.ConnDisconnected, orchestrator.ConnPending} {
		if _, err := w.store.SetConnectionStatus(w.ctx, c.ID, status, time.Now()); err != nil {
			t.Fatal(err)
		}
		again := w.connect("coingecko", "agent", "a1", map[string]string{"api_key": "CG-rotated"})
		if again.ID != c.ID || again.Status != orchestrator.ConnConnected {
			t.Fatalf("retry over %s: %+v", status, again)
		}
		sc, _ := w.store.SealedCredentials(w.ctx, c.ID)
		if plain, _ := w.box.Open(sc, connections.SealedFor(c.ID)); string(plain) != `{"api_key":"CG-rotated"}` {
			t.Fatalf("retry over %s kept the old credentials: %s", status, plain)
		}
	}
}

// TestConnectRefuses: bad Connects are clear 4xx answers and write nothing.
func TestConnectRefuses(t *testing.T) {
	w := newWorld(t)
	noKey := &lifecycle.Service{Store: w.store, Manifests: w.svc.Manifests}
	tests := []struct {
		name string
		svc  *lifecycle.Service
		req  lifecycle.ConnectRequest
		code string
		msg  string
	}{
		{"unknown server", w.svc, lifecycle.ConnectRequest{Server: "myspace", Scope: "org", ScopeID: "o1"}, orchestrator.ENOTFOUND, `no catalog server "myspace"`},
		{"platform scope is reserved", w.svc, lifecycle.ConnectRequest{Server: "coingecko", Scope: "platform", Credentials: cgKey}, orchestrator.EFORBIDDEN, "platform-scope Connect is reserved"},
		{"unknown scope", w.svc, lifecycle.ConnectRequest{Server: "coingecko", Scope: "team", ScopeID: "o1", Credentials: cgKey}, orchestrator.EINVALID, "scope must be one of"},
		{"missing guild", w.svc, lifecycle.ConnectRequest{Server: "coingecko", Scope: "guild", ScopeID: "g404", Credentials: cgKey}, orchestrator.ENOTFOUND, `guild "g404" not found`},
		{"oauth server", w.svc, lifecycle.ConnectRequest{Server: "notion", Scope: "org", ScopeID: "o1"}, orchestrator.EINVALID, "browser OAuth login, which this orchestrator does not offer yet"},
		{"github", w.svc, lifecycle.ConnectRequest{Server: "github", Scope: "org", ScopeID: "o1"}, orchestrator.EINVALID, "GitHub App"},
		{"missing field", w.svc, lifecycle.ConnectRequest{Server: "qonto", Scope: "org", ScopeID: "o1", Credentials: map[string]string{"login": "acme-1234"}}, orchestrator.EINVALID, "credentials.secret_key (Secret key) is required"},
		{"blank field", w.svc, lifecycle.ConnectRequest{Server: "coingecko", Scope: "org", ScopeID: "o1", Credentials: map[string]string{"api_key": "  "}}, orchestrator.EINVALID, "credentials.api_key"},
		{"unknown field", w.svc, lifecycle.ConnectRequest{Server: "coingecko", Scope: "org", ScopeID: "o1", Credentials: map[string]string{"api_key": "k", "password": "p"}}, orchestrator.EINVALID, "credentials.password is not a field of CoinGecko"},
		{"coins on another server", w.svc, lifecycle.ConnectRequest{Server: "coingecko", Scope: "org", ScopeID: "o1", Credentials: cgKey, PinnedPrices: connections.PinnedPrices{Coins: []orchestrator.Coin{{ID: "bitcoin", Symbol: "btc", Name: "Bitcoin"}}}}, orchestrator.EINVALID, "coins are only for Pinned prices"},
		{"pinned prices without coins", w.svc, lifecycle.ConnectRequest{Server: "pinned_prices", Scope: "org", ScopeID: "o1", Credentials: cgKey}, orchestrator.EINVALID, "pins 1 to 20 coins"},
		{"pinned prices duplicate coin", w.svc, lifecycle.ConnectRequest{Server: "pinned_prices", Scope: "org", ScopeID: "o1", Credentials: cgKey,
			PinnedPrices: connections.PinnedPrices{Coins: []orchestrator.Coin{{ID: "bitcoin", Symbol: "btc", Name: "Bitcoin"}, {ID: "bitcoin", Symbol: "btc", Name: "Bitcoin"}}}}, orchestrator.EINVALID, "pinned twice"},
		{"no GUILDS_SECRET_KEY", noKey, lifecycle.ConnectRequest{Server: "coingecko", Scope: "org", ScopeID: "o1", Credentials: cgKey}, orchestrator.EINVALID, "GUILDS_SECRET_KEY is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.svc.Connect(w.ctx, tt.req)
			wantErr(t, err, tt.code, tt.msg)
			if n := w.count("mcp_connections") + w.count("bindings WHERE scope <> 'platform'"); n != 0 {
				t.Fatalf("a refused Connect wrote %d rows", n)
			}
		})
	}
}

// TestConnectDefaultOffOverlays: Wallet's spend tools (and uniswap_swap only with its key) are
// written Off at the owner on first appearance; a later sync leaves an operator's overlay alone.
func TestConnectDefaultOffOverlays(t *testing.T) {
	w := newWorld(t)
	creds := map[string]string{"evm_private_key": "0xevm", "solana_private_key": "sol", "alchemy_api_key": "alc", "opensea_api_key": "os"}
	c := w.connect("wallet", "guild", "g1", creds)
	if c.ToolCount != 11 {
		t.Fatalf("wallet without a Uniswap key lists %d tools, want 11", c.ToolCount)
	}
	offRows := func() []string {
		rows, err := w.binds.ListBindings(w.ctx, "guild", "g1")
		if err != nil {
			t.Fatal(err)
		}
		var off []string
		for _, r := range rows {
			if r.CatalogKind == "mcp_tool" && !r.Enabled {
				off = append(off, r.CatalogID)
			}
		}
		return off
	}
	want := []string{"wallet_call", "wallet_opensea_accept_offer", "wallet_opensea_buy", "wallet_opensea_cancel_order", "wallet_opensea_collection_offer", "wallet_opensea_list", "wallet_send", "wallet_submit", "wallet_swap"}
	if got := offRows(); !slices.Equal(got, want) {
		t.Fatalf("default-off overlays %v\nwant %v", got, want)
	}
	// The operator turns send on; a later sync with a Uniswap key adds uniswap_swap Off and keeps send on.
	w.put("guild", "g1", "mcp_tool", "wallet_send", true, "")
	if _, err := w.store.SetConnectionStatus(w.ctx, c.ID, orchestrator.ConnDisconnected, time.Now()); err != nil {
		t.Fatal(err)
	}
	creds["uniswap_api_key"] = "uni"
	c = w.connect("wallet", "guild", "g1", creds)
	if c.ToolCount != 12 {
		t.Fatalf("wallet with a Uniswap key lists %d tools, want 12", c.ToolCount)
	}
	want = []string{"wallet_call", "wallet_opensea_accept_offer", "wallet_opensea_buy", "wallet_opensea_cancel_order", "wallet_opensea_collection_offer", "wallet_opensea_list", "wallet_submit", "wallet_swap", "wallet_uniswap_swap"}
	if got := offRows(); !slices.Equal(got, want) {
		t.Fatalf("after resync %v\nwant %v", got, want)
	}
	// Gmail's send_message is default-off too (its manifest rule), though Gmail's OAuth Connect is not here yet.
	for _, m := range w.svc.Manifests {
		if m.Slug == "gmail" && !m.Config.IsDefaultOff("send_message") {
			t.Fatal("gmail send_message is not default-off")
		}
	}
}

// TestDeleteCascades: deleting a connection, an agent or a guild deletes the bindings pointing at it.
func TestDeleteCascades(t *testing.T) {
	w := newWorld(t)
	c := w.connect("coingecko", "org", "o1", cgKey)
	w.put("guild", "g1", "mcp", "coingecko", true, c.ID)
	w.put("agent", "a1", "mcp", "coingecko", false, c.ID)
	w.put("agent", "a1", "native_tool", "note_get", false, "")
	w.put("guild", "g2", "native_tool", "note_get", false, "")
	pointing := func() int {
		var n int
		if err := w.pool.QueryRow(w.ctx, "SELECT count(*) FROM bindings WHERE connection_id = $1", c.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if pointing() != 3 {
		t.Fatalf("%d bindings point at the connection", pointing())
	}
	if err := w.svc.DeleteConnection(w.ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if pointing() != 0 || w.count("mcp_tools") != 0 {
		t.Fatal("bindings or tools of the deleted connection remain")
	}
	wantErr(t, w.svc.DeleteConnection(w.ctx, c.ID), orchestrator.ENOTFOUND, "not found")
	if w.count("bindings WHERE scope = 'agent'") != 1 {
		t.Fatal("the agent's native binding should remain")
	}
	if _, err := w.pool.Exec(w.ctx, "DELETE FROM agents WHERE id = 'a1'"); err != nil {
		t.Fatal(err)
	}
	if w.count("bindings WHERE scope = 'agent'") != 0 {
		t.Fatal("deleting the agent left its bindings")
	}
	gc := w.connect("coingecko", "guild", "g2", cgKey)
	if _, err := w.pool.Exec(w.ctx, "DELETE FROM guilds WHERE id = 'g2'"); err != nil {
		t.Fatal(err)
	}
	if w.count("bindings WHERE scope = 'guild' AND scope_id = 'g2'") != 0 {
		t.Fatal("deleting the guild left its bindings")
	}
	if _, err := w.store.GetConnection(w.ctx, gc.ID); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Fatalf("the deleted guild's login remains: %v", err)
	}
}

// verifierFunc adapts a function to connections.Verifier, to test the seam the live checks plug into.
type verifierFunc func(orchestrator.MCPServer, map[string]string) (connections.Verification, error)

func (f verifierFunc) Verify(_ context.Context, s orchestrator.MCPServer, c map[string]string) (connections.Verification, error) {
	return f(s, c)
}

// TestVerifierSeam: a server's Verifier decides whether Connect stores the login (a refusal writes
// nothing), what it lists, its account hint, and verified_at.
func TestVerifierSeam(t *testing.T) {
	w := newWorld(t)
	w.svc.Verifiers = map[string]connections.Verifier{
		"etherscan": verifierFunc(func(s orchestrator.MCPServer, c map[string]string) (connections.Verification, error) {
			if c["api_key"] != "good" {
				return connections.Verification{}, errors.New("HTTP 401 from https://mcp.etherscan.io/mcp: invalid API key")
			}
			return connections.Verification{Checked: true, AccountHint: "free plan", Tools: []orchestrator.CatalogTool{
				{Name: "get.balance", Description: "Balance of an address.", InputSchema: []byte(`{"type":"object","properties":{"address":{"type":"string"}},"required":["address"]}`)},
			}}, nil
		}),
	}
	_, err := w.svc.Connect(w.ctx, lifecycle.ConnectRequest{Server: "etherscan", Scope: "org", ScopeID: "o1", Credentials: map[string]string{"api_key": "bad"}})
	wantErr(t, err, orchestrator.EINVALID, "Etherscan refused the login: HTTP 401")
	if w.count("mcp_connections") != 0 {
		t.Fatal("a refused login was stored")
	}
	c := w.connect("etherscan", "org", "o1", map[string]string{"api_key": "good"})
	if c.VerifiedAt == nil || c.AccountHint != "free plan" || c.ToolCount != 1 {
		t.Fatalf("verified connection %+v", c)
	}
	tools, _ := w.svc.ConnectionTools(w.ctx, c.ID)
	if len(tools) != 1 || tools[0].Name != "etherscan_get_balance" || tools[0].RemoteName != "get.balance" {
		t.Fatalf("dots become _ in the namespaced name: %+v", tools)
	}
	// Without a Verifier a remote server lists nothing until the MCP client lists it.
	cig := w.connect("cigale", "org", "o1", map[string]string{"api_key": "cg"})
	if cig.ToolCount != 0 || cig.VerifiedAt != nil {
		t.Fatalf("unverified remote login %+v", cig)
	}
}

// TestConnectPinnedPrices: the coins live on the login's settings; it lists no model tools.
func TestConnectPinnedPrices(t *testing.T) {
	w := newWorld(t)
	c, err := w.svc.Connect(w.ctx, lifecycle.ConnectRequest{Server: "pinned_prices", Scope: "guild", ScopeID: "g1", Credentials: cgKey,
		PinnedPrices: connections.PinnedPrices{Coins: []orchestrator.Coin{{ID: "bitcoin", Symbol: "btc", Name: "Bitcoin"}, {ID: "apple-xstock", Symbol: "aaplx", Name: "Apple xStock"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Coins []orchestrator.Coin `json:"coins"`
	}
	if err := json.Unmarshal(c.Settings, &settings); err != nil || len(settings.Coins) != 2 || settings.Coins[1].ID != "apple-xstock" || c.ToolCount != 0 {
		t.Fatalf("connection %+v (%v)", c, err)
	}
	if got := w.offered("a1", "direct"); slices.ContainsFunc(got, func(n string) bool { return len(n) > 14 && n[:14] == "pinned_prices_" }) {
		t.Fatalf("pinned prices offered tools: %v", got)
	}
}
