package httpapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestCatalogConnectBindAndRun drives the catalog, connection, binding, access and generation
// routes end to end over HTTP.
func TestCatalogConnectBindAndRun(t *testing.T) {
	e := newEnv(t, nil)
	agentID := e.agent(nil)
	agent := e.must(200, "GET", "/api/agents/"+agentID, nil)
	guildID, orgID := agent["guild_id"].(string), agent["org_id"].(string)

	servers := e.must(200, "GET", "/api/mcp/servers", nil)["servers"].([]any)
	if len(servers) != 16 {
		t.Fatalf("%d published servers", len(servers))
	}
	desc := "Our CoinGecko Pro plan."
	srv := e.must(200, "PATCH", "/api/admin/mcp/servers/coingecko", map[string]any{"description": desc})
	if srv["description"] != desc || srv["copy_source"] != "admin" || len(srv["tools"].([]any)) != 8 {
		t.Fatalf("patched %v", srv)
	}
	st, out := e.do("PATCH", "/api/admin/mcp/servers/coingecko", map[string]any{"colour": "red"})
	if st != 422 || !strings.Contains(errMessage(out), "unknown field") {
		t.Fatalf("%d %v", st, out)
	}
	tool := e.must(200, "PATCH", "/api/admin/mcp/servers/coingecko/tools/trending", map[string]any{"published": false})
	for _, tl := range tool["tools"].([]any) {
		if tl := tl.(map[string]any); tl["name"] == "trending" && (tl["published"] != false || tl["copy_source"] != "admin") {
			t.Fatalf("patched tool %v", tl)
		}
	}
	if st, _ := e.do("PATCH", "/api/admin/mcp/servers/coingecko/tools/moon", map[string]any{"published": false}); st != 404 {
		t.Fatalf("unknown tool: %d", st)
	}
	if st, _ := e.do("PATCH", "/api/admin/mcp/servers/myspace", map[string]any{"description": "x"}); st != 404 {
		t.Fatalf("unknown slug: %d", st)
	}
	if all := e.must(200, "GET", "/api/admin/mcp/servers", nil)["servers"].([]any); len(all) != 16 {
		t.Fatalf("admin list %d", len(all))
	}

	connect := map[string]any{"server": "coingecko", "scope": "guild", "scope_id": guildID, "credentials": map[string]any{"api_key": "CG-http-secret-42"}, "account_hint": "ops plan"}
	conn := e.must(201, "POST", "/api/mcp/connections", connect)
	raw, _ := json.Marshal(conn)
	if strings.Contains(string(raw), "CG-http-secret-42") || conn["status"] != "connected" || conn["verified_at"] != nil || conn["account_hint"] != "ops plan" {
		t.Fatalf("connect answer %s", raw)
	}
	connID := conn["id"].(string)
	for _, tc := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{connect, 409, "ECONFLICT"},
		{map[string]any{"server": "coingecko", "scope": "platform", "scope_id": "", "credentials": map[string]any{"api_key": "k"}}, 403, "EFORBIDDEN"},
		{map[string]any{"server": "notion", "scope": "org", "scope_id": orgID, "credentials": map[string]any{}}, 422, "EINVALID"},
		{map[string]any{"server": "coingecko", "scope": "org", "scope_id": orgID, "credentials": map[string]any{"api_key": 7}}, 422, "EINVALID"},
	} {
		st, out := e.do("POST", "/api/mcp/connections", tc.body)
		if st != tc.status || errCode(out) != tc.code {
			t.Fatalf("connect %v: %d %v", tc.body, st, out)
		}
	}
	got := e.must(200, "GET", "/api/mcp/connections/"+connID, nil)
	raw, _ = json.Marshal(got)
	if strings.Contains(string(raw), "CG-http") || got["tool_count"].(float64) != 8 {
		t.Fatalf("get %s", raw)
	}
	list := e.must(200, "GET", "/api/mcp/connections?scope=guild&scope_id="+guildID, nil)["connections"].([]any)
	if len(list) != 1 {
		t.Fatalf("list %v", list)
	}
	tools := e.must(200, "GET", "/api/mcp/connections/"+connID+"/tools", nil)["tools"].([]any)
	if len(tools) != 8 || tools[0].(map[string]any)["name"] != "coingecko_chart" {
		t.Fatalf("tools %v", tools)
	}

	// Bindings: an overlay at the agent, a refused kind, a refused scope.
	e.must(200, "PUT", "/api/bindings", map[string]any{"scope": "agent", "scope_id": agentID, "catalog_kind": "mcp_tool", "catalog_id": "coingecko_new", "enabled": false})
	if st, out := e.do("PUT", "/api/bindings", map[string]any{"scope": "agent", "scope_id": agentID, "catalog_kind": "plugin", "catalog_id": "x", "enabled": true}); st != 422 {
		t.Fatalf("bad kind: %d %v", st, out)
	}
	other := e.must(201, "POST", "/api/orgs/"+orgID+"/guilds", map[string]any{"name": "Other"})
	if st, out := e.do("PUT", "/api/bindings", map[string]any{"scope": "guild", "scope_id": other["id"], "catalog_kind": "mcp", "catalog_id": "coingecko", "enabled": true, "connection_id": connID}); st != 403 {
		t.Fatalf("invisible login: %d %v", st, out)
	}
	rows := e.must(200, "GET", "/api/bindings?scope=agent&scope_id="+agentID, nil)["bindings"].([]any)
	if len(rows) != 1 {
		t.Fatalf("agent rows %v", rows)
	}

	view := e.must(200, "GET", "/api/agents/"+agentID+"/tools", nil)
	for _, s := range view["mcp_servers"].([]any) {
		s := s.(map[string]any)
		if s["slug"] == "coingecko" && (s["decided_by"] != "guild" || s["connection_id"] != connID) {
			t.Fatalf("agent view of coingecko %v", s)
		}
	}
	e.must(200, "GET", "/api/guilds/"+guildID+"/tools", nil)
	e.must(200, "GET", "/api/orgs/"+orgID+"/tools", nil)

	// A run offers the listed tools the overlays leave on; calling one says its local adapter is not built yet.
	run := e.must(201, "POST", "/api/agents/"+agentID+"/runs", map[string]any{"kind": "direct"})
	names := offered(run)
	if !slices.Contains(names, "coingecko_coin") || slices.Contains(names, "coingecko_new") || !slices.Contains(names, "echo") {
		t.Fatalf("offered %v", names)
	}
	res := e.must(200, "POST", "/api/runs/"+run["id"].(string)+"/calls", map[string]any{"name": "coingecko_coin", "arguments": map[string]any{"id": "bitcoin"}})
	if !strings.Contains(res["result"].(string), "local adapter is not built in this orchestrator yet") {
		t.Fatalf("MCP call %v", res)
	}

	// A later turn drops a native tool whose binding turned off.
	e.must(200, "PUT", "/api/bindings", map[string]any{"scope": "guild", "scope_id": guildID, "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": false})
	gen := e.must(200, "POST", "/api/runs/"+run["id"].(string)+"/generations", nil)
	if d := gen["dropped_tools"].([]any); len(d) != 1 || d[0] != "echo" {
		t.Fatalf("generation %v", gen)
	}

	// Deleting the connection removes the bindings pointing at it; DELETE /api/bindings makes a scope inherit.
	e.must(200, "DELETE", "/api/mcp/connections/"+connID, nil)
	if st, _ := e.do("GET", "/api/mcp/connections/"+connID, nil); st != 404 {
		t.Fatalf("deleted connection: %d", st)
	}
	if rows := e.must(200, "GET", "/api/bindings?scope=guild&scope_id="+guildID, nil)["bindings"].([]any); len(rows) != 1 {
		t.Fatalf("guild rows after delete %v", rows)
	}
	e.must(200, "DELETE", "/api/bindings", map[string]any{"scope": "guild", "scope_id": guildID, "catalog_kind": "native_tool", "catalog_id": "echo"})
	if st, out := e.do("DELETE", "/api/bindings", map[string]any{"scope": "guild", "scope_id": guildID, "catalog_kind": "native_tool", "catalog_id": "echo"}); st != 404 {
		t.Fatalf("second delete %d %v", st, out)
	}
}
