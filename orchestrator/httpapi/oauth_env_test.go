package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth/oauthtest"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/jackc/pgx/v5/pgxpool"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// oauthMCP is a real MCP server (mcp-go's, stateful streamable HTTP) behind a loopback
// authorization server that takes only its live access tokens. Its whoami tool answers with the
// Authorization header it was sent, so a test sees that redaction hides the token.
func oauthMCP(t testing.TB, clk *clock) *oauthtest.Server {
	t.Helper()
	s := server.NewMCPServer("fake", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithDescription("Echoes."), mcpgo.WithString("text", mcpgo.Required())),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
		})
	s.AddTool(mcpgo.NewTool("whoami", mcpgo.WithDescription("Says who called.")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("you sent " + req.Header.Get("Authorization")), nil
		})
	as := oauthtest.New(server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))))
	as.Now = clk.Now
	t.Cleanup(as.Close)
	return as
}

// oauthEnv is newMCPEnv with browser OAuth logins wired the way serve wires them.
type oauthEnv struct {
	*mcpEnv
	oauth *connections.OAuth
	box   *sealed.Box
}

func newOAuthEnv(t testing.TB, db *pgxpool.Pool, clk *clock, box *sealed.Box) *oauthEnv {
	t.Helper()
	e := newMCPEnv(t, db, clk, box)
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o := &connections.OAuth{Store: postgres.NewStore(e.env.pool), Box: box, Protocol: &oauth.Client{Now: clk.Now}, Now: clk.Now, Log: log}
	e.remote.OAuth = o
	return &oauthEnv{mcpEnv: e, oauth: o, box: box}
}

// page sends a request without the operator token and returns the status and body.
func (e *env) page(path string) (int, string) {
	e.t.Helper()
	resp, err := e.app.Test(httptest.NewRequest("GET", path, nil), -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// browse follows an authorization URL as a browser would, up to the redirect to the callback,
// and returns the callback's path and query.
func browse(t testing.TB, authURL string) string {
	t.Helper()
	var got string
	hc := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == orchestrator.OAuthCallbackPath {
			got = req.URL.RequestURI()
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got == "" {
		t.Fatalf("the authorization server did not send the browser to the callback (status %d)", resp.StatusCode)
	}
	return got
}

// login connects server at the org through the browser flow and returns the connection id.
func (e *oauthEnv) login(server, orgID string) string {
	e.t.Helper()
	start := e.must(201, "POST", "/api/mcp/connections", map[string]any{"server": server, "scope": "org", "scope_id": orgID})
	conn := start["connection"].(map[string]any)
	if conn["status"] != "pending" || !strings.HasPrefix(start["authorization_url"].(string), "http://127.0.0.1") {
		e.t.Fatalf("Connect of an OAuth server answered %v", start)
	}
	st, body := e.page(browse(e.t, start["authorization_url"].(string)))
	if st != 200 || !strings.Contains(body, "Connected") {
		e.t.Fatalf("callback: %d %s", st, body)
	}
	return conn["id"].(string)
}

// storedTokens opens a connection's sealed credentials.
func (e *oauthEnv) storedTokens(id string) map[string]string {
	e.t.Helper()
	var b []byte
	if err := e.env.pool.QueryRow(context.Background(), "SELECT credentials FROM mcp_connections WHERE id = $1", id).Scan(&b); err != nil {
		e.t.Fatal(err)
	}
	plain, err := e.box.Open(b, connections.SealedFor(id))
	if err != nil {
		e.t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(plain, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// TestOAuthLoginEndToEnd: Connect → authorize → callback → connected → listed → call → refresh
// before expiry → rotated token stored → refresh after a 401 → revoked → disconnected → the next
// generation fails at start; no token, code or verifier anywhere it could leak.
func TestOAuthLoginEndToEnd(t *testing.T) {
	clk := newClock()
	as := oauthMCP(t, clk)
	as.Extra = map[string]any{"email_domain": "acme.example"}
	e := newOAuthEnv(t, nil, clk, newBox(t))
	orgID, _, agentID := e.scopes()
	e.must(200, "PATCH", "/api/admin/mcp/servers/notion", map[string]any{"url": as.Resource})

	var servers []any
	for _, s := range e.must(200, "GET", "/api/mcp/servers", nil)["servers"].([]any) {
		servers = append(servers, s)
		m := s.(map[string]any)
		want := map[string]string{"notion": "dynamic", "sentry": "dynamic", "drive": "unsupported", "cigale": "not_applicable", "github": "unsupported", "gmail": "unsupported"}[m["slug"].(string)]
		if want != "" && m["oauth_setup_state"] != want {
			t.Errorf("%s oauth_setup_state %v, want %s", m["slug"], m["oauth_setup_state"], want)
		}
	}

	connID := e.login("notion", orgID)
	conn := e.must(200, "GET", "/api/mcp/connections/"+connID, nil)
	if conn["status"] != "connected" || conn["account_hint"] != "acme.example" || conn["tool_count"].(float64) != 2 {
		t.Fatalf("connection after the callback %v", conn)
	}
	if as.Count("/register") != 1 {
		t.Fatalf("registered %d clients, want 1", as.Count("/register"))
	}
	for _, s := range e.must(200, "GET", "/api/agents/"+agentID+"/tools", nil)["mcp_servers"].([]any) {
		if m := s.(map[string]any); m["slug"] == "notion" && (m["enabled"] != true || m["connection_id"] != connID || m["oauth_setup_state"] != "dynamic") {
			t.Fatalf("agent view of notion %v", m)
		}
	}
	first := e.storedTokens(connID)

	run := e.must(201, "POST", "/api/agents/"+agentID+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	if names := offered(run); !slices.Contains(names, "notion_echo") || !slices.Contains(names, "notion_whoami") {
		t.Fatalf("offered %v", names)
	}
	call := func(name string) string {
		t.Helper()
		res := e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": map[string]any{"text": "hi"}})
		return res["result"].(string)
	}
	if out := call("notion_echo"); !strings.HasPrefix(out, "echo: hi") {
		t.Fatalf("call %q", out)
	}
	if out := call("notion_whoami"); !strings.HasPrefix(out, "you sent Bearer ") || strings.Contains(out, first["access_token"]) {
		t.Fatalf("whoami answered %q: the access token must be redacted", out)
	}
	if as.Refreshes() != 0 {
		t.Fatalf("%d refreshes of a fresh token", as.Refreshes())
	}

	// 50 s before the hour-long token ends, the next call renews it first: one refresh, rotated pair stored.
	// That call's own result, which shows the renewed token, is redacted too.
	clk.Advance(time.Hour - 50*time.Second)
	renewedOut := call("notion_whoami")
	second := e.storedTokens(connID)
	if !strings.HasPrefix(renewedOut, "you sent Bearer ") || strings.Contains(renewedOut, second["access_token"]) {
		t.Fatalf("whoami during a renewal answered %q: the renewed token must be redacted", renewedOut)
	}
	if as.Refreshes() != 1 || second["refresh_token"] == first["refresh_token"] || second["access_token"] == first["access_token"] {
		t.Fatalf("after the renewal: %d refreshes, stored pair rotated: %v", as.Refreshes(), second["refresh_token"] != first["refresh_token"])
	}
	if as.LastToken().Get("resource") != as.Resource {
		t.Fatal("the refresh did not carry resource")
	}

	// The server drops the access token early: the 401 renews once and the call succeeds.
	as.ExpireAccess()
	if out := call("notion_echo"); !strings.HasPrefix(out, "echo: hi") {
		t.Fatalf("call after a 401 %q", out)
	}
	if as.Refreshes() != 2 || e.storedTokens(connID)["refresh_token"] == second["refresh_token"] {
		t.Fatalf("after the 401: %d refreshes", as.Refreshes())
	}

	// Revoked: the 401's refresh is invalid_grant, the login is disconnected, the next generation fails.
	as.Revoke()
	if out := call("notion_echo"); !strings.HasPrefix(out, "ERROR:") || !strings.Contains(out, "invalid_grant") || !strings.Contains(out, "connect it again") {
		t.Fatalf("call on a revoked login %q", out)
	}
	if c := e.must(200, "GET", "/api/mcp/connections/"+connID, nil); c["status"] != "disconnected" {
		t.Fatalf("revoked login is %v", c["status"])
	}
	st, gen := e.do("POST", "/api/runs/"+runID+"/generations", nil)
	if st != 409 || !strings.Contains(errMessage(gen), "disconnected") {
		t.Fatalf("generation over a revoked login: %d %v", st, gen)
	}

	// Nothing secret leaked: not in the logs, the stored calls, the API's answers.
	stored, _ := json.Marshal(e.must(200, "GET", "/api/runs/"+runID+"/calls", nil))
	views, _ := json.Marshal([]any{servers, e.must(200, "GET", "/api/mcp/connections", nil), e.must(200, "GET", "/api/agents/"+agentID+"/tools", nil)})
	secrets := as.Tokens()
	if len(secrets) < 8 {
		t.Fatalf("the authorization server saw only %d codes, tokens and verifiers", len(secrets))
	}
	for _, tok := range secrets {
		for where, text := range map[string]string{"log": e.logs.String(), "stored calls": string(stored), "API": string(views)} {
			if strings.Contains(text, tok) {
				t.Errorf("a token appears in the %s", where)
			}
		}
	}
}

// TestOAuthCallbackFaults: denied, replayed, unknown and expired states, a token answer without
// access_token, a denied retry over a disconnected login; each a 400 page and nothing half-written.
func TestOAuthCallbackFaults(t *testing.T) {
	clk := newClock()
	as := oauthMCP(t, clk)
	e := newOAuthEnv(t, nil, clk, newBox(t))
	orgID, _, _ := e.scopes()
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "acme-docs", "name": "Acme Docs", "url": as.Resource, "auth": "oauth"})
	conns := func() int { return e.count("SELECT count(*) FROM mcp_connections") }
	start := func() (id, authURL string) {
		t.Helper()
		out := e.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "acme-docs", "scope": "org", "scope_id": orgID})
		return out["connection"].(map[string]any)["id"].(string), out["authorization_url"].(string)
	}

	// Denied: a 400 page saying so, and the new pending connection is gone.
	as.Set(func(s *oauthtest.Server) { s.Deny = true })
	_, authURL := start()
	st, body := e.page(browse(t, authURL))
	if st != 400 || !strings.Contains(body, "access_denied") || !strings.Contains(body, "pending connection was deleted") || conns() != 0 {
		t.Fatalf("denied login: %d %s (%d connections)", st, body, conns())
	}
	as.Set(func(s *oauthtest.Server) { s.Deny = false })

	// What the query says is shown as text, and the page is never cached, framed or referred from.
	resp, err := e.app.Test(httptest.NewRequest("GET", orchestrator.OAuthCallbackPath+"?state=nope&error=access_denied&error_description=%3Cscript%3Ealert(1)%3C%2Fscript%3E", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(raw), "<script>") || resp.Header.Get("Content-Security-Policy") != "default-src 'none'; frame-ancestors 'none'" ||
		resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("callback page: %s %v", raw, resp.Header)
	}

	// Unknown state, no state.
	for _, q := range []string{"?state=nope&code=x", "?code=x", ""} {
		if st, body := e.page(orchestrator.OAuthCallbackPath + q); st != 400 || !strings.Contains(body, "Start again with Connect") {
			t.Fatalf("callback %q: %d %s", q, st, body)
		}
	}

	// Expired: 11 minutes later the state is refused and the pending connection stays as it was.
	id, authURL := start()
	cb := browse(t, authURL)
	clk.Advance(11 * time.Minute)
	if st, body := e.page(cb); st != 400 || !strings.Contains(body, "expired") {
		t.Fatalf("expired state: %d %s", st, body)
	}
	if c := e.must(200, "GET", "/api/mcp/connections/"+id, nil); c["status"] != "pending" {
		t.Fatalf("an expired state changed the connection: %v", c)
	}

	// A token answer without access_token: a 400 page naming it; the pending connection is gone.
	_, authURL = start()
	cb = browse(t, authURL)
	as.Set(func(s *oauthtest.Server) { s.Answer = func(m map[string]any) { delete(m, "access_token") } })
	if st, body := e.page(cb); st != 400 || !strings.Contains(body, "no access_token") || conns() != 0 {
		t.Fatalf("token answer without access_token: %d %s (%d connections)", st, body, conns())
	}
	as.Set(func(s *oauthtest.Server) { s.Answer = nil })

	// Success, then a replay of the same state changes nothing.
	id, authURL = start()
	cb = browse(t, authURL)
	if st, body := e.page(cb); st != 200 {
		t.Fatalf("login: %d %s", st, body)
	}
	if st, body := e.page(cb); st != 400 || !strings.Contains(body, "already used") {
		t.Fatalf("replayed state: %d %s", st, body)
	}
	if c := e.must(200, "GET", "/api/mcp/connections/"+id, nil); c["status"] != "connected" || c["account_hint"] != "127.0.0.1" {
		t.Fatalf("connection after a replay %v", c)
	}
	if st, out := e.do("POST", "/api/mcp/connections", map[string]any{"server": "acme-docs", "scope": "org", "scope_id": orgID}); st != 409 {
		t.Fatalf("Connect over a connected login: %d %v", st, out)
	}

	// Over a disconnected login, a denied retry leaves it disconnected with its binding.
	if _, err := e.env.pool.Exec(context.Background(), "UPDATE mcp_connections SET status = 'disconnected' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	as.Set(func(s *oauthtest.Server) { s.Deny = true })
	again, authURL := start()
	if again != id {
		t.Fatalf("a retry made connection %s, not %s", again, id)
	}
	if st, body := e.page(browse(t, authURL)); st != 400 || !strings.Contains(body, "left disconnected") {
		t.Fatalf("denied retry: %d %s", st, body)
	}
	if c := e.must(200, "GET", "/api/mcp/connections/"+id, nil); c["status"] != "disconnected" {
		t.Fatalf("denied retry changed the login: %v", c)
	}
	if n := e.count("SELECT count(*) FROM bindings WHERE connection_id = $1", id); n != 1 {
		t.Fatalf("denied retry left %d bindings", n)
	}
	if as.Count("/register") != 1 {
		t.Fatalf("%d registrations: the client must be reused", as.Count("/register"))
	}
}

// TestOAuthConnectFaults: metadata missing, malformed or naming an http:// issuer off loopback,
// and a refused registration are 4xx answers that write nothing.
func TestOAuthConnectFaults(t *testing.T) {
	var mu sync.Mutex
	docs := map[string]string{}
	status := map[string]int{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		body, ok := docs[r.URL.Path]
		code := status[r.URL.Path]
		mu.Unlock()
		if r.URL.Path == "/mcp" {
			w.WriteHeader(401)
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		if code != 0 {
			w.WriteHeader(code)
		}
		_, _ = w.Write([]byte(body))
	}))
	defer ts.Close()
	o := ts.URL
	prm := `{"resource":"` + o + `/mcp","authorization_servers":["` + o + `"]}`
	asm := `{"issuer":"` + o + `","authorization_endpoint":"` + o + `/authorize","token_endpoint":"` + o + `/token","registration_endpoint":"` + o + `/register"}`
	cases := []struct {
		name string
		docs map[string]string
		code map[string]int
		want string
	}{
		{"no metadata", nil, nil, "names no protected-resource metadata"},
		{"malformed metadata", map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":`}, nil, "not a JSON object"},
		{"http issuer off loopback", map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"` + o + `/mcp","authorization_servers":["http://as.example.com"]}`}, nil,
			"http:// on a host that is not loopback"},
		{"registration refused", map[string]string{"/.well-known/oauth-protected-resource/mcp": prm, "/.well-known/oauth-authorization-server": asm,
			"/register": `{"error":"invalid_client_metadata","error_description":"registration is closed"}`}, map[string]int{"/register": 400}, "registration is closed"},
	}
	e := newOAuthEnv(t, nil, nil, newBox(t))
	orgID, _, _ := e.scopes()
	e.must(200, "PATCH", "/api/admin/mcp/servers/sentry", map[string]any{"url": o + "/mcp"})
	for _, tc := range cases {
		mu.Lock()
		docs, status = tc.docs, tc.code
		mu.Unlock()
		st, out := e.do("POST", "/api/mcp/connections", map[string]any{"server": "sentry", "scope": "org", "scope_id": orgID})
		if st != 422 || !strings.Contains(errMessage(out), tc.want) || !strings.Contains(errMessage(out), "nothing was written") {
			t.Errorf("%s: %d %v", tc.name, st, out)
		}
		if n := e.count("SELECT count(*) FROM mcp_connections") + e.count("SELECT count(*) FROM mcp_oauth_clients"); n != 0 {
			t.Errorf("%s: %d rows written", tc.name, n)
		}
	}
	if st, out := e.do("POST", "/api/mcp/connections", map[string]any{"server": "sentry", "scope": "org", "scope_id": orgID, "credentials": map[string]string{"api_key": "x"}}); st != 422 {
		t.Errorf("credentials on an OAuth Connect: %d %v", st, out)
	}
	if st, out := e.do("POST", "/api/mcp/connections", map[string]any{"server": "drive", "scope": "org", "scope_id": orgID}); st != 422 || out["error"].(map[string]any)["setup_state"] != "unsupported" || !strings.Contains(errMessage(out), "GMAIL_OAUTH_CLIENT_ID") {
		t.Errorf("Drive Connect without the box's Google client: %d %v", st, out)
	}
}

// TestOAuthRefreshAcrossReplicas: two orchestrators on one database call one login whose token is
// due at the same moment: one refresh request reaches the authorization server, both calls succeed.
func TestOAuthRefreshAcrossReplicas(t *testing.T) {
	clk := newClock()
	as := oauthMCP(t, clk)
	box := newBox(t)
	a := newOAuthEnv(t, nil, clk, box)
	b := newOAuthEnv(t, a.env.pool, clk, box)
	orgID, _, agentID := a.scopes()
	a.must(200, "PATCH", "/api/admin/mcp/servers/notion", map[string]any{"url": as.Resource})
	connID := a.login("notion", orgID)
	runIDs := []string{a.run(agentID, map[string]any{"kind": "direct"}), b.run(agentID, map[string]any{"kind": "direct"})}
	for i, e := range []*oauthEnv{a, b} { // both warm: sessions open, tokens cached
		e.must(200, "POST", "/api/runs/"+runIDs[i]+"/calls", map[string]any{"name": "notion_echo", "arguments": map[string]any{"text": "warm"}})
	}
	clk.Advance(time.Hour - 30*time.Second)
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i, e := range []*oauthEnv{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, res := e.do("POST", "/api/runs/"+runIDs[i]+"/calls", map[string]any{"name": "notion_echo", "arguments": map[string]any{"text": "race"}})
			results[i], _ = res["result"].(string)
			if st != 200 {
				results[i] = fmt.Sprint(st, res)
			}
		}()
	}
	wg.Wait()
	for i, r := range results {
		if !strings.HasPrefix(r, "echo: race") {
			t.Errorf("replica %d's call answered %q", i, r)
		}
	}
	if as.Refreshes() != 1 {
		t.Fatalf("%d refresh requests reached the authorization server, want 1", as.Refreshes())
	}
	if c := a.must(200, "GET", "/api/mcp/connections/"+connID, nil); c["status"] != "connected" {
		t.Fatalf("login after the race: %v", c)
	}
}

// TestOAuthRenewalTiming: a token living under two minutes is renewed once less than half its
// life remains; a token endpoint that is down leaves the login connected: a call whose token still
// lives goes out with it, one whose token has ended fails alone, and the next call renews.
func TestOAuthRenewalTiming(t *testing.T) {
	clk := newClock()
	as := oauthMCP(t, clk)
	as.TokenTTL = 90 * time.Second
	e := newOAuthEnv(t, nil, clk, newBox(t))
	orgID, _, agentID := e.scopes()
	e.must(200, "PATCH", "/api/admin/mcp/servers/notion", map[string]any{"url": as.Resource})
	connID := e.login("notion", orgID)
	runID := e.run(agentID, map[string]any{"kind": "direct", "tool_call_budget": 1000})
	call := func() string {
		t.Helper()
		return e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "notion_echo", "arguments": map[string]any{"text": "hi"}})["result"].(string)
	}
	// While the endpoint is down, the session's own event stream may ask for the token too and try
	// a renewal of its own, so those steps count at least the requests the call made.
	steps := []struct {
		advance   time.Duration
		status    int // the token endpoint's answer; 0 is a normal one
		refreshes int // refresh requests so far (at least, while the endpoint is down)
		ok        bool
	}{
		{40 * time.Second, 0, 0, true},    // 50 s of 90 left: more than half
		{10 * time.Second, 0, 1, true},    // 40 s left: renewed first
		{50 * time.Second, 503, 2, true},  // 40 s left of the new token, endpoint down: sent as it is
		{45 * time.Second, 503, 3, false}, // ended, endpoint down: this call fails, the login stays
		{0, 0, 4, true},                   // endpoint back: renewed, the call goes out
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		as.Set(func(a *oauthtest.Server) { a.TokenStatus = s.status })
		out := call()
		n := as.Refreshes()
		if strings.HasPrefix(out, "echo: hi") != s.ok || n < s.refreshes || (i < 2 && n != s.refreshes) {
			t.Fatalf("step %d: %q after %d refreshes, want ok=%v after %d", i, out, as.Refreshes(), s.ok, s.refreshes)
		}
		if !s.ok && !strings.Contains(out, "stays connected") {
			t.Fatalf("step %d: the failed call says %q", i, out)
		}
		if c := e.must(200, "GET", "/api/mcp/connections/"+connID, nil); c["status"] != "connected" {
			t.Fatalf("step %d: login is %v", i, c["status"])
		}
	}
}

// TestOAuthCallbackURL: PUBLIC_BASE_URL plus the callback path when it is set (a client
// registered for that redirect URI), else the inbound host's.
func TestOAuthCallbackURL(t *testing.T) {
	clk := newClock()
	as := oauthMCP(t, clk)
	e := newOAuthEnv(t, nil, clk, newBox(t))
	orgID, guildID, _ := e.scopes()
	e.must(200, "PATCH", "/api/admin/mcp/servers/notion", map[string]any{"url": as.Resource})
	redirect := func(out map[string]any) string {
		u, err := url.Parse(out["authorization_url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return u.Query().Get("redirect_uri")
	}
	inbound := e.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "notion", "scope": "org", "scope_id": orgID})
	if got := redirect(inbound); got != "http://example.com/api/mcp/oauth/callback" {
		t.Fatalf("callback from the inbound host: %s", got)
	}
	public := httpapi.New(guarded(&httpapi.Server{Scopes: postgres.NewStore(e.env.pool), Bindings: e.svc,
		PublicBaseURL: "https://guilds.example/"}, postgres.NewStore(e.env.pool)))
	e.app = public
	out := e.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "notion", "scope": "guild", "scope_id": guildID})
	if got := redirect(out); got != "https://guilds.example/api/mcp/oauth/callback" {
		t.Fatalf("callback with PUBLIC_BASE_URL: %s", got)
	}
	if n := e.count("SELECT count(*) FROM mcp_oauth_clients WHERE server_slug = 'notion'"); n != 2 || as.Count("/register") != 2 {
		t.Fatalf("%d stored clients after %d registrations, want one per redirect URI", n, as.Count("/register"))
	}
}
