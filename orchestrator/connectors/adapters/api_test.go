package adapters_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

const (
	cgKey       = "CG-e2e-pro-key-7d1c40"
	qontoLogin  = "acme-e2e-8412"
	qontoSecret = "sk_qonto_e2e_31f9a0"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// adapterServe serves the orchestrator as wired on a fresh database with a secret key, in the
// sandbox backend given.
func adapterServe(t testing.TB, backend string) (*wiretest.Served, string) {
	t.Helper()
	s := wiretest.ServeIn(t, backend)
	return s, s.API
}

// coingeckoFake is CoinGecko Pro on loopback: ping, and a search whose one coin is named after
// the key it was sent (an echo, so redaction can be seen), plus simple/price for Pinned prices.
func coingeckoFake(t testing.TB) *adapterstest.Fake {
	f := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("x-cg-pro-api-key") == cgKey })
	f.Deny = []byte(`{"status":{"error_code":10002,"error_message":"API Key Missing"}}`)
	f.JSON("GET /api/v3/ping", 200, []byte(`{"gecko_says":"(V3) To the Moon!"}`))
	f.Handle("GET /api/v3/search", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"coins": []any{map[string]any{"id": "bitcoin", "name": "Bitcoin " + r.Header.Get("x-cg-pro-api-key"), "symbol": "BTC", "market_cap_rank": 1}}})
	})
	f.Handle("GET /api/v3/simple/price", func(w http.ResponseWriter, r *http.Request) {
		out := map[string]any{}
		for _, id := range strings.Split(r.URL.Query().Get("ids"), ",") {
			if id == "bitcoin" || id == "ethereum" {
				out[id] = map[string]any{"usd": 67187.3, "usd_24h_change": -1.25, "last_updated_at": 1711843200}
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	return f
}

// TestAdaptersEndToEnd: through the HTTP API with a loopback CoinGecko, a rejected key writes
// nothing, a provider that is down is a 502, a good key lists the curated tools, a run offers and
// calls them with the key redacted from the stored result, the test-call route answers, and a
// 401 on the key itself disconnects the login.
func TestAdaptersEndToEnd(t *testing.T) {
	s, api := adapterServe(t, "local")
	_ = s
	f := coingeckoFake(t)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/coingecko", map[string]any{"url": f.URL + "/api/v3"})
	org, agent := wiretest.ScopesAt(t, api)

	body := func(key string) map[string]any {
		return map[string]any{"server": "coingecko", "scope": "org", "scope_id": org, "credentials": map[string]any{"api_key": key}}
	}
	st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body("CG-wrong-key-0000"))
	if st != 422 || !strings.Contains(wiretest.ErrText(out), "CoinGecko") || !strings.Contains(wiretest.ErrText(out), "API Key Missing") || strings.Contains(wiretest.ErrText(out), "CG-wrong-key-0000") {
		t.Fatalf("rejected key: %d %v", st, out)
	}
	if conns := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections", nil); len(conns["connections"].([]any)) != 0 {
		t.Fatalf("a rejected key wrote %v", conns)
	}
	f.JSON("GET /api/v3/ping", 503, []byte(`<html>maintenance</html>`))
	if st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body(cgKey)); st != 502 || !strings.Contains(wiretest.ErrText(out), "down") {
		t.Fatalf("provider down: %d %v", st, out)
	}
	f.JSON("GET /api/v3/ping", 200, []byte(`{"gecko_says":"(V3) To the Moon!"}`))

	conn := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", body(cgKey))
	id := conn["id"].(string)
	if conn["verified_at"] == nil || conn["status"] != "connected" {
		t.Fatalf("connection %v", conn)
	}
	var tools []string
	for _, x := range wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id+"/tools", nil)["tools"].([]any) {
		tools = append(tools, x.(map[string]any)["name"].(string))
	}
	if !slices.Contains(tools, "coingecko_search") || !slices.Contains(tools, "coingecko_trending") {
		t.Fatalf("listed %v", tools)
	}

	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	if names := wiretest.OfferedNames(run); !slices.Contains(names, "coingecko_search") {
		t.Fatalf("offered %v", names)
	}
	res := wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": "coingecko_search", "arguments": map[string]any{"query": "btc"}})
	got := res["result"].(string)
	if !strings.Contains(got, "bitcoin\t") || strings.Contains(got, cgKey) || !strings.Contains(got, "Bitcoin [REDACTED]") || !strings.Contains(got, "remaining_tool_calls") {
		t.Fatalf("call result %q", got)
	}
	// Arguments are checked against the listed schema before the provider is asked.
	n := f.Count()
	res = wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": "coingecko_search", "arguments": map[string]any{"limit": 3}})
	if got := res["result"].(string); !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, "query") || f.Count() != n {
		t.Fatalf("bad arguments: %q (%d requests, was %d)", got, f.Count(), n)
	}
	for _, c := range wiretest.Must(t, 200, "GET", api+"/api/runs/"+runID+"/calls", nil)["calls"].([]any) {
		if b, _ := json.Marshal(c); strings.Contains(string(b), cgKey) {
			t.Fatalf("the key was stored: %s", b)
		}
	}

	tc := wiretest.Must(t, 200, "POST", api+"/api/mcp/connections/"+id+"/call", map[string]any{"name": "coingecko_search", "arguments": map[string]any{"query": "btc"}})
	if r := tc["result"].(string); tc["is_error"] != false || !strings.Contains(r, "Bitcoin [REDACTED]") || strings.Contains(r, cgKey) {
		t.Fatalf("test call %v", tc)
	}

	// A 401 on the key itself answers ERROR: and disconnects the login.
	f.Check = func(*http.Request) bool { return false }
	res = wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": "coingecko_search", "arguments": map[string]any{"query": "btc"}})
	if got := res["result"].(string); !strings.HasPrefix(got, "ERROR: CoinGecko") {
		t.Fatalf("refused call %q", got)
	}
	if c := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil); c["status"] != "disconnected" {
		t.Fatalf("after a 401: %v", c)
	}
}

// qontoFake is Qonto's Business API on loopback: the organization, one transaction, and an
// upload that attaches at once, keeping what it received.
type qontoFake struct {
	*adapterstest.Fake
	mu       sync.Mutex
	attached []string
	files    [][]byte
}

func newQontoFake(t *testing.T) *qontoFake {
	q := &qontoFake{}
	q.Fake = adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == qontoLogin+":"+qontoSecret })
	q.JSON("GET /v2/organization", 200, []byte(`{"organization":{"slug":"acme-e2e-8412","legal_name":"ACME SAS","bank_accounts":[
		{"id":"acc-1","name":"Main `+qontoLogin+` `+qontoSecret+`","iban":"FR7616958000013234567890180","currency":"EUR","balance":48213.57,"status":"active"}]}}`))
	q.Handle("GET /v2/transactions/tx-0001", func(w http.ResponseWriter, _ *http.Request) {
		q.mu.Lock()
		defer q.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"transaction": map[string]any{"id": "tx-0001", "transaction_id": "tx-0001",
			"attachment_ids": append([]string{}, q.attached...), "status": "completed", "side": "debit", "amount": 12.5, "currency": "EUR"}})
	})
	q.Handle("POST /v2/transactions/tx-0001/attachments", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			w.WriteHeader(400)
			return
		}
		file, _, err := r.FormFile("file")
		if err != nil {
			w.WriteHeader(400)
			return
		}
		data, _ := io.ReadAll(file)
		q.mu.Lock()
		defer q.mu.Unlock()
		q.files = append(q.files, data)
		q.attached = append(q.attached, fmt.Sprintf("att-%d", len(q.attached)+1))
		_ = json.NewEncoder(w).Encode(map[string]any{"attachment": map[string]any{"id": q.attached[len(q.attached)-1]}})
	})
	return q
}

// TestQontoUploadFromBubblewrapWorkspace: upload_invoice reads a real PDF the agent wrote in its
// bubblewrap workspace (by a path relative to the run's working directory), attaches it, and
// refuses a .pdf that is really a shell script and a path outside /home/agent.
func TestQontoUploadFromBubblewrapWorkspace(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil || os.Geteuid() != 0 || os.Getenv("GUILDS_BIN_DIR") == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root with bubblewrap installed and GUILDS_BIN_DIR set")
		}
		t.Skip("needs root, bubblewrap and GUILDS_BIN_DIR")
	}
	_, api := adapterServe(t, "bubblewrap")
	q := newQontoFake(t)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/qonto", map[string]any{"url": q.URL})
	org, agent := wiretest.ScopesAt(t, api)
	conn := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "qonto", "scope": "org", "scope_id": org,
		"credentials": map[string]any{"login": qontoLogin, "secret_key": qontoSecret}})
	if conn["verified_at"] == nil {
		t.Fatalf("connection %v", conn)
	}
	wiretest.Must(t, 200, "PATCH", api+"/api/agents/"+agent, map[string]any{"config": map[string]any{"coding": true}})
	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	if !slices.Contains(wiretest.OfferedNames(run), "qonto_upload_invoice") {
		t.Fatalf("offered %v", wiretest.OfferedNames(run))
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		return wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": args})["result"].(string)
	}
	pdf := "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
	sh := "#!/bin/sh\necho pwned " + qontoSecret + "\n"
	out := call("shell", map[string]any{"command": "mkdir -p invoices && cd invoices && printf '%s' '" + pdf + "' > june.pdf && printf '%s' '" + sh + "' > fake.pdf && pwd"})
	if !strings.Contains(out, "/home/agent/invoices") {
		t.Fatalf("shell: %q", out)
	}

	// Both the login and the secret key join the run's redaction (the fake echoes them in an account name).
	if got := call("qonto_list_bank_accounts", map[string]any{}); !strings.Contains(got, "Main [REDACTED] [REDACTED]") || strings.Contains(got, qontoSecret) {
		t.Fatalf("bank accounts: %q", got)
	}
	got := call("qonto_upload_invoice", map[string]any{"transaction_id": "tx-0001", "file_path": "june.pdf"})
	if !strings.Contains(got, "tx-0001\tjune.pdf\tapplication/pdf\tatt-1\ttrue") {
		t.Fatalf("upload: %q", got)
	}
	q.mu.Lock()
	if len(q.files) != 1 || string(q.files[0]) != pdf {
		t.Fatalf("the fake received %q", q.files)
	}
	q.mu.Unlock()
	for _, bad := range []struct{ path, says string }{
		{"fake.pdf", "not a PDF, JPEG or PNG"},
		{"/etc/passwd", "under /home/agent"},
		{"../../../etc/passwd", "outside"},
	} {
		got := call("qonto_upload_invoice", map[string]any{"transaction_id": "tx-0001", "file_path": bad.path})
		if !strings.HasPrefix(got, "ERROR: Qonto") || !strings.Contains(got, bad.says) || strings.Contains(got, qontoSecret) {
			t.Errorf("%s: %q", bad.path, got)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.files) != 1 {
		t.Fatalf("a refused file reached Qonto: %d uploads", len(q.files))
	}
}

// TestPinnedPricesEndToEnd: the coin picker before and after Connect, Connect's coin checks, a
// new list checked id by id, and state.prices at run start (in the answer and in GET
// /api/runs/{id}), or an error line there when the quote fails while the run starts anyway.
func TestPinnedPricesEndToEnd(t *testing.T) {
	_, api := adapterServe(t, "local")
	f := coingeckoFake(t)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/pinned_prices", map[string]any{"url": f.URL + "/api/v3"})
	org, agent := wiretest.ScopesAt(t, api)

	found := wiretest.Must(t, 200, "POST", api+"/api/mcp/pinned-prices/search", map[string]any{"api_key": cgKey, "q": "btc"})["coins"].([]any)
	if len(found) != 1 || found[0].(map[string]any)["id"] != "bitcoin" {
		t.Fatalf("search before Connect: %v", found)
	}
	if st, out := wiretest.Request(t, "POST", api+"/api/mcp/pinned-prices/search", map[string]any{"api_key": "CG-wrong-key-0000", "q": "btc"}); st != 422 || strings.Contains(wiretest.ErrText(out), "CG-wrong-key-0000") {
		t.Fatalf("search with a refused key: %d %v", st, out)
	}
	btc := map[string]any{"id": "bitcoin", "symbol": "btc", "name": "Bitcoin"}
	eth := map[string]any{"id": "ethereum", "symbol": "eth", "name": "Ethereum"}
	nope := map[string]any{"id": "not-a-coin", "symbol": "nac", "name": "Nope"}
	body := func(coins ...any) map[string]any {
		return map[string]any{"server": "pinned_prices", "scope": "org", "scope_id": org, "credentials": map[string]any{"api_key": cgKey}, "coins": coins}
	}
	if st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body(btc, nope)); st != 422 || !strings.Contains(wiretest.ErrText(out), "not-a-coin") {
		t.Fatalf("an unquoted id: %d %v", st, out)
	}
	if st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body()); st != 422 {
		t.Fatalf("no coins: %d %v", st, out)
	}
	conn := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", body(btc))
	id := conn["id"].(string)
	if conn["verified_at"] == nil {
		t.Fatalf("connection %v", conn)
	}
	found = wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id+"/pinned-prices/search?q=btc", nil)["coins"].([]any)
	if len(found) != 1 {
		t.Fatalf("search after Connect: %v", found)
	}
	if st, out := wiretest.Request(t, "PUT", api+"/api/mcp/connections/"+id+"/pinned-prices", map[string]any{"coins": []any{btc, nope}}); st != 422 || !strings.Contains(wiretest.ErrText(out), "not-a-coin") {
		t.Fatalf("PUT an unquoted id: %d %v", st, out)
	}
	put := wiretest.Must(t, 200, "PUT", api+"/api/mcp/connections/"+id+"/pinned-prices", map[string]any{"coins": []any{btc, eth}})
	if b, _ := json.Marshal(put["settings"]); !strings.Contains(string(b), "ethereum") {
		t.Fatalf("PUT answered %v", put)
	}

	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	for _, r := range []map[string]any{run, wiretest.Must(t, 200, "GET", api+"/api/runs/"+run["id"].(string), nil)} {
		st, _ := r["state"].(map[string]any)
		prices, _ := st["prices"].([]any)
		if len(prices) != 2 || st["prices_error"] != nil {
			t.Fatalf("state %v", r["state"])
		}
		p := prices[1].(map[string]any)
		if p["id"] != "ethereum" || p["symbol"] != "eth" || p["name"] != "Ethereum" || p["price_usd"] != 67187.3 || p["change_24h"] != -1.25 || p["quoted_at"] == nil {
			t.Fatalf("ethereum %v", p)
		}
	}
	f.JSON("GET /api/v3/simple/price", 503, []byte(`maintenance`))
	run = wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	st, _ := run["state"].(map[string]any)
	if e, _ := st["prices_error"].(string); !strings.HasPrefix(e, "ERROR: CoinGecko") || len(st["prices"].([]any)) != 0 {
		t.Fatalf("state after a failed quote %v", run["state"])
	}
}

// TestEveryAdapterConnects: each of the seven adapters is linked and answers Connect through its
// catalog row (its url and every named endpoint pointed at a fake): a provider refusing every
// request is a 422 carrying its answer, with nothing written.
func TestEveryAdapterConnects(t *testing.T) {
	_, api := adapterServe(t, "local")
	org, _ := wiretest.ScopesAt(t, api)
	f := adapterstest.NewFake(t, func(*http.Request) bool { return false })
	rows := map[string]map[string]any{}
	for _, s := range wiretest.Must(t, 200, "GET", api+"/api/admin/mcp/servers", nil)["servers"].([]any) {
		s := s.(map[string]any)
		rows[s["slug"].(string)] = s
	}
	for _, tc := range []struct {
		slug  string
		creds map[string]any
		extra map[string]any
	}{
		{"coingecko", map[string]any{"api_key": "k-coingecko-0001"}, nil},
		{"pinned_prices", map[string]any{"api_key": "k-pinned-0001"}, map[string]any{"coins": []any{map[string]any{"id": "bitcoin", "symbol": "btc", "name": "Bitcoin"}}}},
		{"alchemy", map[string]any{"api_key": "k-alchemy-0001"}, nil},
		{"x", map[string]any{"bearer_token": "k-x-bearer-0001"}, nil},
		{"twitterapi", map[string]any{"api_key": "k-twitterapi-0001"}, nil},
		{"qonto", map[string]any{"login": "acme-0001", "secret_key": "sk-qonto-0001"}, nil},
		{"dexpaprika", map[string]any{"api_key": "k-dexpaprika-0001"}, nil},
	} {
		row := rows[tc.slug]
		if row == nil {
			t.Fatalf("%s is not in the catalog", tc.slug)
		}
		endpoints := map[string]any{}
		for name := range row["endpoints"].(map[string]any) {
			endpoints[name] = f.URL
		}
		wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/"+tc.slug, map[string]any{"url": f.URL, "endpoints": endpoints})
		body := map[string]any{"server": tc.slug, "scope": "org", "scope_id": org, "credentials": tc.creds}
		for k, v := range tc.extra {
			body[k] = v
		}
		n := f.Count()
		st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections", body)
		msg := wiretest.ErrText(out)
		if st != 422 || f.Count() == n || !strings.Contains(msg, "nothing was written") {
			t.Errorf("%s: %d %v (%d requests)", tc.slug, st, out, f.Count()-n)
		}
		for _, v := range tc.creds {
			if strings.Contains(msg, v.(string)) {
				t.Errorf("%s: the error shows a credential: %s", tc.slug, msg)
			}
		}
	}
	if conns := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections", nil); len(conns["connections"].([]any)) != 0 {
		t.Fatalf("refused logins wrote %v", conns)
	}
}
