package httpapi_test

import (
	"context"
	"strings"
	"testing"
)

// TestDeleteScopes: DELETE of an agent, a guild and an organisation is refused while a run under
// it is open (naming the run), then removes it with what stands under it: its agents and runs, the
// connections it owns and the bindings at it or pointing at those connections; what belongs to
// another scope stays.
func TestDeleteScopes(t *testing.T) {
	e := platformEnv(t, nil, nil)
	ctx := context.Background()
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	g1 := e.must(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "One"})["id"].(string)
	g2 := e.must(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Two"})["id"].(string)
	a1 := e.must(201, "POST", "/api/guilds/"+g1+"/agents", map[string]any{"name": "Ada"})["id"].(string)
	a2 := e.must(201, "POST", "/api/guilds/"+g1+"/agents", map[string]any{"name": "Alan"})["id"].(string)
	b1 := e.must(201, "POST", "/api/guilds/"+g2+"/agents", map[string]any{"name": "Bea"})["id"].(string)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO mcp_connections (id, server_slug, scope, scope_id, org_id, guild_id, agent_id, status) VALUES
		('con_a1', 'coingecko', 'agent', $3, $1, $2, $3, 'connected'),
		('con_g1', 'coingecko', 'guild', $2, $1, $2, NULL, 'connected'),
		('con_org', 'coingecko', 'org', $1, $1, NULL, NULL, 'connected')`, org, g1, a1)
	exec(`INSERT INTO bindings (scope, scope_id, catalog_kind, catalog_id, enabled, connection_id, org_id, guild_id, agent_id) VALUES
		('guild', $3, 'mcp', 'coingecko', true, 'con_a1', $1, $3, NULL),
		('agent', $4, 'native_tool', 'note_get', false, NULL, $1, $2, $4),
		('org', $1, 'mcp', 'coingecko', true, 'con_org', $1, NULL, NULL)`, org, g1, g2, a2)
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := e.pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	left := func() string {
		t.Helper()
		var agents, conns, binds string
		if err := e.pool.QueryRow(ctx, `SELECT
			coalesce((SELECT string_agg(name, ',' ORDER BY name) FROM agents), ''),
			coalesce((SELECT string_agg(id, ',' ORDER BY id) FROM mcp_connections), ''),
			coalesce((SELECT string_agg(scope || ':' || catalog_id, ',' ORDER BY scope, catalog_id) FROM bindings WHERE scope <> 'platform'), '')`).
			Scan(&agents, &conns, &binds); err != nil {
			t.Fatal(err)
		}
		return agents + " | " + conns + " | " + binds
	}

	run := e.run(a1, map[string]any{"kind": "direct"})
	for _, path := range []string{"/api/agents/" + a1, "/api/guilds/" + g1, "/api/orgs/" + org} {
		st, out := e.do("DELETE", path, nil)
		if st != 409 || !strings.Contains(errMessage(out), run) || !strings.Contains(errMessage(out), "close them first") {
			t.Fatalf("DELETE %s with run %s open: %d %v", path, run, st, out)
		}
	}
	if got := left(); got != "Ada,Alan,Bea | con_a1,con_g1,con_org | agent:note_get,guild:coingecko,org:coingecko" {
		t.Fatalf("a refused delete removed something: %s", got)
	}
	e.must(200, "POST", "/api/runs/"+run+"/close", nil)

	if out := e.must(200, "DELETE", "/api/agents/"+a1, nil); out["deleted"] != a1 {
		t.Fatalf("delete agent: %v", out)
	}
	if st, _ := e.do("GET", "/api/agents/"+a1, nil); st != 404 {
		t.Fatalf("deleted agent answers %d", st)
	}
	if got := left(); got != "Alan,Bea | con_g1,con_org | agent:note_get,org:coingecko" {
		t.Fatalf("after the agent: %s", got)
	}
	if n := count("SELECT count(*) FROM runs WHERE agent_id = $1", a1); n != 0 {
		t.Fatalf("the agent's runs stay: %d", n)
	}

	e.must(200, "DELETE", "/api/guilds/"+g1, nil)
	if got := left(); got != "Bea | con_org | org:coingecko" {
		t.Fatalf("after the guild: %s", got)
	}
	e.must(200, "GET", "/api/agents/"+b1, nil)

	e.must(200, "DELETE", "/api/orgs/"+org, nil)
	if got := left(); got != " |  | " || count("SELECT count(*) FROM guilds") != 0 {
		t.Fatalf("after the organisation: %s", got)
	}
	for _, path := range []string{"/api/agents/" + a1, "/api/guilds/" + g1, "/api/orgs/" + org} {
		if st, out := e.do("DELETE", path, nil); st != 404 || !strings.Contains(errMessage(out), "not found") {
			t.Fatalf("DELETE %s again: %d %v", path, st, out)
		}
	}
}
