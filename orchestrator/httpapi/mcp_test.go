package httpapi_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

const (
	goodKey = "sk-test-good-0123456789abcdef"
	badKey  = "sk-test-bad-9876543210zyxwvu"
)

// connectBody is a token Connect of server at the org.
func connectBody(server, org, key string) map[string]any {
	body := map[string]any{"server": server, "scope": "org", "scope_id": org, "credentials": map[string]any{}}
	if key != "" {
		body["credentials"] = map[string]any{"api_key": key}
	}
	return body
}

// toolNames lists the names of a tools answer.
func toolNames(list []any) []string {
	var out []string
	for _, t := range list {
		out = append(out, t.(map[string]any)["name"].(string))
	}
	slices.Sort(out)
	return out
}

// TestMCPCustomServerEndToEnd: an admin adds a server; a refused key writes nothing; a good key
// connects over streamable HTTP; a run offers its tools, calls one, and the stamped, redacted
// result is in the run's calls; bad arguments never reach the server; the test call and the
// refresh route work, and a failed refresh keeps the stored list.
func TestMCPCustomServerEndToEnd(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	f := newMCPFake(t, "X-Test-Key", goodKey, "echo", "whoami", "broken")
	org, _, agent := e.scopes()

	for _, tc := range []struct {
		name string
		body map[string]any
		want int
	}{
		{"bad slug", map[string]any{"slug": "Bad_Slug", "name": "X", "url": f.URL, "auth": "none"}, 422},
		{"ftp url", map[string]any{"slug": "my-srv", "name": "X", "url": "ftp://example.com", "auth": "none"}, 422},
		{"oauth with a header", map[string]any{"slug": "my-srv", "name": "X", "url": f.URL, "auth": "oauth", "header": "X-Key"}, 422},
		{"a manifest's slug", map[string]any{"slug": "cigale", "name": "X", "url": f.URL, "auth": "token"}, 409},
	} {
		if st, out := e.do("POST", "/api/admin/mcp/servers", tc.body); st != tc.want {
			t.Fatalf("%s: %d %v", tc.name, st, out)
		}
	}
	srv := e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "my-srv", "name": "My server", "url": f.URL,
		"auth": "token", "header": "X-Test-Key", "scheme": "", "description": "A loopback fake."})
	if srv["custom"] != true || srv["url"] != f.URL {
		t.Fatalf("created %v", srv)
	}
	if st, _ := e.do("POST", "/api/admin/mcp/servers", map[string]any{"slug": "my-srv", "name": "Again", "url": f.URL, "auth": "none"}); st != 409 {
		t.Fatalf("duplicate slug: %d", st)
	}

	// A refused key is a 422 naming the server and what it answered, and writes nothing.
	st, out := e.do("POST", "/api/mcp/connections", connectBody("my-srv", org, badKey))
	if st != 422 || !strings.Contains(errMessage(out), "My server") || !strings.Contains(errMessage(out), "401") || strings.Contains(errMessage(out), badKey) {
		t.Fatalf("refused key: %d %v", st, out)
	}
	if n := e.count("SELECT count(*) FROM mcp_connections"); n != 0 {
		t.Fatalf("a refused key wrote %d connections", n)
	}
	if n := e.count("SELECT count(*) FROM bindings WHERE catalog_kind <> 'native_tool'"); n != 0 {
		t.Fatalf("a refused key wrote %d bindings", n)
	}

	conn := e.must(201, "POST", "/api/mcp/connections", connectBody("my-srv", org, goodKey))
	connID := conn["id"].(string)
	if conn["transport"] != "streamable-http" || conn["tool_count"] != float64(3) || conn["verified_at"] == nil {
		t.Fatalf("connection %v", conn)
	}
	tools := toolNames(e.must(200, "GET", "/api/mcp/connections/"+connID+"/tools", nil)["tools"].([]any))
	if !slices.Equal(tools, []string{"my_srv_broken", "my_srv_echo", "my_srv_whoami"}) {
		t.Fatalf("listed %v", tools)
	}
	// The custom server publishes as listed.
	for _, s := range e.must(200, "GET", "/api/mcp/servers", nil)["servers"].([]any) {
		if s := s.(map[string]any); s["slug"] == "my-srv" && len(s["tools"].([]any)) != 3 {
			t.Fatalf("published copy %v", s)
		}
	}

	// A run offers the tools; a call goes to the server and comes back stamped.
	run := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	if names := offered(run); !slices.Contains(names, "my_srv_echo") || !slices.Contains(names, "my_srv_whoami") {
		t.Fatalf("offered %v", names)
	}
	res := e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "my_srv_echo", "arguments": map[string]any{"text": "hello", "mode": ""}})
	if got := res["result"].(string); got != "echo: hello mode=unset\n\nremaining_tool_calls: 99" {
		t.Fatalf("call result %q", got)
	}
	// The login's key joins the run's redaction set.
	res = e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "my_srv_whoami", "arguments": map[string]any{"text": "x"}})
	if got := res["result"].(string); strings.Contains(got, goodKey) || !strings.HasPrefix(got, "you sent ") {
		t.Fatalf("whoami result %q", got)
	}
	// isError becomes ERROR: <text>.
	res = e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "my_srv_broken", "arguments": map[string]any{"text": "x"}})
	if got := res["result"].(string); !strings.HasPrefix(got, "ERROR: upstream quota exhausted") {
		t.Fatalf("tool error result %q", got)
	}
	// A bad argument is an ERROR: naming it, and never reaches the server.
	calls := f.count("tools/call")
	res = e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "my_srv_echo", "arguments": map[string]any{"mode": "x"}})
	if got := res["result"].(string); !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, "text") {
		t.Fatalf("bad arguments result %q", got)
	}
	if f.count("tools/call") != calls {
		t.Fatal("a bad call reached the server")
	}
	stored := e.must(200, "GET", "/api/runs/"+runID+"/calls", nil)["calls"].([]any)
	if len(stored) != 4 || !strings.HasPrefix(stored[0].(map[string]any)["result"].(string), "echo: hello") {
		t.Fatalf("stored calls %v", stored)
	}
	for _, c := range stored {
		if strings.Contains(c.(map[string]any)["result"].(string), goodKey) {
			t.Fatalf("the key was stored: %v", c)
		}
	}

	// The test call: redacted, capped; 404 unknown connection or tool; 409 not connected.
	tc := e.must(200, "POST", "/api/mcp/connections/"+connID+"/call", map[string]any{"name": "my_srv_whoami", "arguments": map[string]any{"text": "x"}})
	if got := tc["result"].(string); strings.Contains(got, goodKey) || !strings.HasPrefix(got, "you sent ") || tc["is_error"] != false {
		t.Fatalf("test call %v", tc)
	}
	tc = e.must(200, "POST", "/api/mcp/connections/"+connID+"/call", map[string]any{"name": "my_srv_echo", "arguments": map[string]any{}})
	if tc["is_error"] != true || !strings.Contains(tc["result"].(string), "text") {
		t.Fatalf("test call with a missing argument %v", tc)
	}
	if st, out := e.do("POST", "/api/mcp/connections/"+connID+"/call", map[string]any{"name": "my_srv_nope"}); st != 404 {
		t.Fatalf("unknown tool: %d %v", st, out)
	}
	if st, out := e.do("POST", "/api/mcp/connections/conn_missing/call", map[string]any{"name": "my_srv_echo"}); st != 404 {
		t.Fatalf("unknown connection: %d %v", st, out)
	}

	// Refresh: a new tool is added; a refused listing is a 502 that keeps the stored list.
	f.AddTool("extra")
	diff := e.must(200, "POST", "/api/mcp/connections/"+connID+"/refresh", nil)
	if a := diff["added"].([]any); len(a) != 1 || a[0] != "my_srv_extra" || len(diff["removed"].([]any)) != 0 {
		t.Fatalf("refresh diff %v", diff)
	}
	e.mcp.Forget(connID) // the next request opens a session, which the fake now refuses
	f.setAuth("X-Test-Key", "another-key-entirely")
	st, out = e.do("POST", "/api/mcp/connections/"+connID+"/refresh", nil)
	if st != 502 || !strings.Contains(errMessage(out), "401") || strings.Contains(errMessage(out), goodKey) {
		t.Fatalf("failed refresh: %d %v", st, out)
	}
	view := e.must(200, "GET", "/api/mcp/connections/"+connID, nil)
	if view["tool_count"] != float64(4) || !strings.Contains(view["list_error"].(string), "401") || view["transport"] != "streamable-http" || view["listed_at"] == nil {
		t.Fatalf("connection view after a failed refresh %v", view)
	}
	f.setAuth("X-Test-Key", goodKey)
	// The access views show the same per connection.
	for _, s := range e.must(200, "GET", "/api/orgs/"+org+"/tools", nil)["mcp_servers"].([]any) {
		if s := s.(map[string]any); s["slug"] == "my-srv" {
			if s["transport"] != "streamable-http" || s["tool_count"] != float64(4) || !strings.Contains(s["list_error"].(string), "401") || s["listed_at"] == nil {
				t.Fatalf("access view %v", s)
			}
		}
	}

	// Not connected: 409 for the test call and the refresh.
	if _, err := e.env.pool.Exec(context.Background(), "UPDATE mcp_connections SET status = 'disconnected' WHERE id = $1", connID); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.do("POST", "/api/mcp/connections/"+connID+"/call", map[string]any{"name": "my_srv_echo", "arguments": map[string]any{"text": "x"}}); st != 409 {
		t.Fatalf("test call on a disconnected login: %d", st)
	}
	if st, _ := e.do("POST", "/api/mcp/connections/"+connID+"/refresh", nil); st != 409 {
		t.Fatalf("refresh of a disconnected login: %d", st)
	}
	if strings.Contains(e.logs.String(), goodKey) || strings.Contains(e.logs.String(), badKey) {
		t.Fatal("a key appears in the log")
	}
}

// TestMCPAuthNoneServer: an auth none server connects with no credentials.
func TestMCPAuthNoneServer(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	f := newMCPFake(t, "", "", "echo")
	org, _, agent := e.scopes()
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "open", "name": "Open", "url": f.URL, "auth": "none"})
	conn := e.must(201, "POST", "/api/mcp/connections", connectBody("open", org, ""))
	if conn["tool_count"] != float64(1) {
		t.Fatalf("connection %v", conn)
	}
	run := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	res := e.must(200, "POST", "/api/runs/"+run["id"].(string)+"/calls", map[string]any{"name": "open_echo", "arguments": map[string]any{"text": "hi"}})
	if !strings.HasPrefix(res["result"].(string), "echo: hi") {
		t.Fatalf("call %v", res)
	}
}

// TestMCPSSEFallback: a server that offers only the older HTTP+SSE transport is reached over it,
// and the connection records so.
func TestMCPSSEFallback(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	f := newSSEFake(t, "Authorization", "Bearer "+goodKey, "echo")
	org, _, agent := e.scopes()
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "legacy", "name": "Legacy", "url": f.URL, "auth": "token"})
	conn := e.must(201, "POST", "/api/mcp/connections", connectBody("legacy", org, goodKey))
	if conn["transport"] != "sse" || conn["tool_count"] != float64(1) {
		t.Fatalf("connection %v", conn)
	}
	run := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	res := e.must(200, "POST", "/api/runs/"+run["id"].(string)+"/calls", map[string]any{"name": "legacy_echo", "arguments": map[string]any{"text": "old"}})
	if !strings.HasPrefix(res["result"].(string), "echo: old") {
		t.Fatalf("call over SSE %v", res)
	}
	if got := e.must(200, "GET", "/api/mcp/connections/"+conn["id"].(string), nil)["transport"]; got != "sse" {
		t.Fatalf("transport after the call's session opened: %v", got)
	}
}

// TestMCPOpenSeaRules: OpenSea's header is X-API-KEY with the raw key; an empty list or one of
// only get_instant_api_key is a rejected key; default-off tools get an Off overlay at the owner on
// first appearance and a later sync leaves overlays alone; listed tools publish.
func TestMCPOpenSeaRules(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	org, _, agent := e.scopes()
	connect := func(f *mcpFake) (int, map[string]any) {
		e.must(200, "PATCH", "/api/admin/mcp/servers/opensea", map[string]any{"url": f.URL})
		return e.do("POST", "/api/mcp/connections", connectBody("opensea", org, goodKey))
	}
	for _, tc := range []struct {
		name  string
		tools []string
		why   string
	}{
		{"empty list", nil, "listed no tools"},
		{"only get_instant_api_key", []string{"get_instant_api_key"}, "listed only get_instant_api_key"},
	} {
		st, out := connect(newMCPFake(t, "X-API-KEY", goodKey, tc.tools...))
		if st != 422 || !strings.Contains(errMessage(out), tc.why) || !strings.Contains(errMessage(out), "OpenSea") {
			t.Fatalf("%s: %d %v", tc.name, st, out)
		}
		if n := e.count("SELECT count(*) FROM mcp_connections"); n != 0 {
			t.Fatalf("%s wrote a connection", tc.name)
		}
	}
	f := newMCPFake(t, "X-API-KEY", goodKey, "get_instant_api_key", "search_collections", "manage_profile", "cancel_orders")
	st, out := connect(f)
	if st != 201 {
		t.Fatalf("connect: %d %v", st, out)
	}
	connID := out["id"].(string)
	off := e.count("SELECT count(*) FROM bindings WHERE scope = 'org' AND scope_id = $1 AND catalog_kind = 'mcp_tool' AND NOT enabled", org)
	if off != 3 {
		t.Fatalf("default-off overlays: %d, want 3", off)
	}
	run := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	if names := offered(run); !slices.Contains(names, "opensea_search_collections") || slices.Contains(names, "opensea_manage_profile") {
		t.Fatalf("offered %v", names)
	}
	// The operator turns manage_profile on; a later sync (with a new default-off tool) leaves that
	// overlay alone and writes Off only for the newcomer.
	e.must(200, "PUT", "/api/bindings", map[string]any{"scope": "org", "scope_id": org, "catalog_kind": "mcp_tool", "catalog_id": "opensea_manage_profile", "enabled": true})
	e.must(200, "DELETE", "/api/bindings", map[string]any{"scope": "org", "scope_id": org, "catalog_kind": "mcp_tool", "catalog_id": "opensea_cancel_orders"})
	f.AddTool("manage_wallets")
	diff := e.must(200, "POST", "/api/mcp/connections/"+connID+"/refresh", nil)
	if a := diff["added"].([]any); len(a) != 1 || a[0] != "opensea_manage_wallets" {
		t.Fatalf("diff %v", diff)
	}
	rows := map[string]bool{}
	for _, b := range e.must(200, "GET", "/api/bindings?scope=org&scope_id="+org, nil)["bindings"].([]any) {
		b := b.(map[string]any)
		if b["catalog_kind"] == "mcp_tool" {
			rows[b["catalog_id"].(string)] = b["enabled"].(bool)
		}
	}
	want := map[string]bool{"opensea_get_instant_api_key": false, "opensea_manage_profile": true, "opensea_manage_wallets": false}
	if len(rows) != len(want) {
		t.Fatalf("overlays after the sync %v", rows)
	}
	for k, v := range want {
		if on, ok := rows[k]; !ok || on != v {
			t.Fatalf("overlays after the sync %v, want %v", rows, want)
		}
	}
	// Listed tools are OpenSea's published copy, default-off marked.
	for _, s := range e.must(200, "GET", "/api/mcp/servers", nil)["servers"].([]any) {
		s := s.(map[string]any)
		if s["slug"] != "opensea" {
			continue
		}
		pub := map[string]bool{}
		for _, t := range s["tools"].([]any) {
			pub[t.(map[string]any)["name"].(string)] = t.(map[string]any)["default_off"].(bool)
		}
		if len(pub) != 5 || pub["search_collections"] || !pub["manage_wallets"] {
			t.Fatalf("published copy %v", pub)
		}
	}
}

// TestMCPSeededServers: Cigale (Bearer) keeps its seeded ten published tools while its login
// lists the server's; Etherscan (Bearer) publishes as listed.
func TestMCPSeededServers(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	org, _, _ := e.scopes()
	cig := newMCPFake(t, "Authorization", "Bearer "+goodKey, "search_knowledge_base", "semantic_search")
	e.must(200, "PATCH", "/api/admin/mcp/servers/cigale", map[string]any{"url": cig.URL})
	c := e.must(201, "POST", "/api/mcp/connections", connectBody("cigale", org, goodKey))
	if c["tool_count"] != float64(2) {
		t.Fatalf("cigale connection %v", c)
	}
	eth := newMCPFake(t, "Authorization", "Bearer "+goodKey, "get.balance")
	e.must(200, "PATCH", "/api/admin/mcp/servers/etherscan", map[string]any{"url": eth.URL})
	c = e.must(201, "POST", "/api/mcp/connections", connectBody("etherscan", org, goodKey))
	if tools := toolNames(e.must(200, "GET", "/api/mcp/connections/"+c["id"].(string)+"/tools", nil)["tools"].([]any)); !slices.Equal(tools, []string{"etherscan_get_balance"}) {
		t.Fatalf("etherscan tools %v", tools)
	}
	for _, s := range e.must(200, "GET", "/api/mcp/servers", nil)["servers"].([]any) {
		s := s.(map[string]any)
		n := len(s["tools"].([]any))
		if (s["slug"] == "cigale" && n != 10) || (s["slug"] == "etherscan" && n != 1) {
			t.Fatalf("%s publishes %d tools", s["slug"], n)
		}
	}
}

// TestMCPAdminURLsAndEndpoints: an admin's URL reaches the fake and survives a reseed; null
// restores the seed; an unknown endpoint name is a 422 listing the known ones.
func TestMCPAdminURLsAndEndpoints(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	org, _, _ := e.scopes()
	f := newMCPFake(t, "Authorization", "Bearer "+goodKey, "get_balance")
	e.must(200, "PATCH", "/api/admin/mcp/servers/etherscan", map[string]any{"url": f.URL})
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "mine", "name": "Mine", "url": f.URL, "auth": "token"})
	if err := e.svc.Seed(context.Background()); err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{}
	endpoints := map[string]map[string]any{}
	for _, s := range e.must(200, "GET", "/api/admin/mcp/servers", nil)["servers"].([]any) {
		s := s.(map[string]any)
		urls[s["slug"].(string)] = s["url"].(string)
		endpoints[s["slug"].(string)] = s["endpoints"].(map[string]any)
	}
	if urls["etherscan"] != f.URL || urls["mine"] != f.URL || endpoints["dexpaprika"]["pro"] != "https://api-pro.dexpaprika.com" {
		t.Fatalf("after a reseed: %v %v", urls, endpoints["dexpaprika"])
	}
	e.must(201, "POST", "/api/mcp/connections", connectBody("etherscan", org, goodKey))
	if f.count("tools/list") == 0 {
		t.Fatal("Connect did not reach the admin's URL")
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		want int
		msg  string
	}{
		{"unknown endpoint", map[string]any{"endpoints": map[string]any{"nope": "https://x.test"}}, 422, "its endpoints are pro"},
		{"bad endpoint url", map[string]any{"endpoints": map[string]any{"pro": "not a url"}}, 422, "endpoints.pro"},
		{"bad url", map[string]any{"url": "mailto:x@y"}, 422, "url"},
		{"endpoint to a fake", map[string]any{"endpoints": map[string]any{"pro": f.URL}}, 200, ""},
	} {
		st, out := e.do("PATCH", "/api/admin/mcp/servers/dexpaprika", tc.body)
		if st != tc.want || (tc.msg != "" && !strings.Contains(errMessage(out), tc.msg)) {
			t.Fatalf("%s: %d %v", tc.name, st, out)
		}
	}
	if st, out := e.do("PATCH", "/api/admin/mcp/servers/mine", map[string]any{"endpoints": map[string]any{"x": "https://x.test"}}); st != 422 || !strings.Contains(errMessage(out), "none") {
		t.Fatalf("custom server endpoint: %d %v", st, out)
	}
	srv := e.must(200, "PATCH", "/api/admin/mcp/servers/dexpaprika", map[string]any{"endpoints": map[string]any{"pro": nil}})
	if srv["endpoints"].(map[string]any)["pro"] != "https://api-pro.dexpaprika.com" {
		t.Fatalf("restored endpoint %v", srv["endpoints"])
	}
	srv = e.must(200, "PATCH", "/api/admin/mcp/servers/etherscan", map[string]any{"url": nil})
	if srv["url"] != "https://mcp.etherscan.io/mcp" {
		t.Fatalf("restored url %v", srv["url"])
	}
}

// TestMCPRelistAtRunStart: a run start serves a fresh stored list without asking; once it is
// older than the TTL (an injected clock) it relists once; after tools/list_changed it relists; a
// relist that fails keeps the stored list and logs.
func TestMCPRelistAtRunStart(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	f := newMCPFake(t, "Authorization", "Bearer "+goodKey, "echo")
	org, _, agent := e.scopes()
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "srv", "name": "Srv", "url": f.URL, "auth": "token"})
	conn := e.must(201, "POST", "/api/mcp/connections", connectBody("srv", org, goodKey))
	connID := conn["id"].(string)
	lists := f.count("tools/list")
	start := func() []string {
		return offered(e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"}))
	}
	start()
	if f.count("tools/list") != lists {
		t.Fatal("a fresh stored list was relisted")
	}
	e.clock.Advance(11 * time.Minute)
	f.AddTool("later") // no session is open for the login, so no list_changed reaches the pool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { start() })
	}
	wg.Wait()
	if got := f.count("tools/list") - lists; got != 1 {
		t.Fatalf("concurrent run starts after the TTL relisted %d times, want 1", got)
	}
	if names := start(); !slices.Contains(names, "srv_later") {
		t.Fatalf("offered after the relist %v", names)
	}
	lists = f.count("tools/list")

	// list_changed: the login's session (opened by a call) hears it, and the next run start relists.
	run := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	e.must(200, "POST", "/api/runs/"+run["id"].(string)+"/calls", map[string]any{"name": "srv_echo", "arguments": map[string]any{"text": "x"}})
	lists = f.count("tools/list")
	// The session's GET stream opens after the call; a notification the server sends before it
	// has registered the stream is lost, so the tool is added again (each add notifies) until one
	// arrives.
	f.AddTool("newest")
	resend := time.NewTicker(500 * time.Millisecond)
	defer resend.Stop()
	deadline := time.After(30 * time.Second)
	for !e.mcp.Changed(connID) {
		select {
		case <-resend.C:
			f.AddTool("newest")
		case <-deadline:
			t.Fatal("no tools/list_changed reached the pool")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if names := start(); !slices.Contains(names, "srv_newest") || f.count("tools/list") != lists+1 {
		t.Fatalf("after list_changed: offered %v, %d lists", names, f.count("tools/list")-lists)
	}

	// A failing relist keeps the stored list (the run starts with it) and logs.
	e.clock.Advance(11 * time.Minute)
	e.mcp.Forget(connID)
	f.setAuth("Authorization", "Bearer revoked")
	if names := start(); !slices.Contains(names, "srv_newest") {
		t.Fatalf("offered after a failed relist %v", names)
	}
	if !strings.Contains(e.logs.String(), "MCP relist at run start failed") {
		t.Fatal("the failed relist was not logged")
	}
	view := e.must(200, "GET", "/api/mcp/connections/"+connID, nil)
	if !strings.Contains(view["list_error"].(string), "401") {
		t.Fatalf("connection view %v", view)
	}
}

// TestMCPTwoServicesRelistOnce: two orchestrators on one database, run starts on both at once
// after the TTL: the login is relisted once.
func TestMCPTwoServicesRelistOnce(t *testing.T) {
	box := newBox(t)
	clk := newClock()
	a := newMCPEnv(t, nil, clk, box)
	b := newMCPEnv(t, a.env.pool, clk, box)
	f := newMCPFake(t, "Authorization", "Bearer "+goodKey, "echo")
	org, _, agent := a.scopes()
	a.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "srv", "name": "Srv", "url": f.URL, "auth": "token"})
	a.must(201, "POST", "/api/mcp/connections", connectBody("srv", org, goodKey))
	lists := f.count("tools/list")
	clk.Advance(11 * time.Minute)
	var wg sync.WaitGroup
	for i := range 6 {
		e := []*mcpEnv{a, b}[i%2]
		wg.Go(func() {
			st, out := e.do("POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
			if st != 201 {
				t.Errorf("run start: %d %v", st, out)
			}
		})
	}
	wg.Wait()
	if got := f.count("tools/list") - lists; got != 1 {
		t.Fatalf("two services relisted %d times, want 1", got)
	}
}

var _ = orchestrator.ConnConnected
