package scripts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestMigration0305Upgrade applies the migrations before 0305 in a schema of their own, stores
// what the first pass left (an agent config without max_scripts, open and closed runs without a
// snapshot, a run whose lazy snapshot holds an older source), then applies 0305: open runs without
// a snapshot get one from the catalog, the existing snapshot keeps its source and gains the
// description and parameters, closed runs get none, and the agent gets max_scripts 10.
func TestMigration0305Upgrade(t *testing.T) {
	ctx := context.Background()
	conn, err := pgtest.NewDB(t).Acquire(ctx)
	must(t, err)
	defer conn.Release()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%.60s: %v", sql, err)
		}
	}
	exec("CREATE SCHEMA up")
	exec("SET search_path = up, public")
	ms, err := postgres.Migrations()
	must(t, err)
	var m0305 string
	for _, m := range ms {
		switch {
		case m.Version < "0305":
			exec(m.SQL)
		case strings.HasPrefix(m.Version, "0305_"):
			m0305 = m.SQL
		}
	}
	if m0305 == "" {
		t.Fatal("migration 0305 not embedded")
	}
	now := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	exec("INSERT INTO orgs (id, name) VALUES ('o1', 'O')")
	exec("INSERT INTO guilds (id, org_id, name) VALUES ('g1', 'o1', 'G')")
	exec(`INSERT INTO agents (id, guild_id, org_id, name, config) VALUES ('a1', 'g1', 'o1', 'A', '{"browser":false,"coding":false,"scripting":true,"memory":true}')`)
	for _, r := range []struct{ id, status string }{{"run_open", "open"}, {"run_closed", "closed"}, {"run_lazy", "open"}} {
		exec(`INSERT INTO runs (id, agent_id, guild_id, org_id, kind, status, config, tool_call_budget, offered_tools)
			VALUES ($1, 'a1', 'g1', 'o1', 'direct', $2, '{}', 100, '[]')`, r.id, r.status)
	}
	exec(`INSERT INTO artifacts (id, kind, level, org_id, guild_id, agent_id, key, content) VALUES ('art_1', 'script', 'agent', 'o1', 'g1', 'a1', 'echo', 'print(2)')`)
	exec(`INSERT INTO script_details (artifact_id, description, parameters, hash) VALUES ('art_1', 'echo v2', '{"type":"object"}', 'h2')`)
	exec(`INSERT INTO run_script_snapshots (run_id, taken_at) VALUES ('run_lazy', $1)`, now)
	exec(`INSERT INTO run_scripts (run_id, name, source, hash) VALUES ('run_lazy', 'echo', 'print(1)', 'h1')`)

	exec(m0305)

	type row struct{ run, name, source, hash, desc, params string }
	rows, err := conn.Query(ctx, `SELECT rs.run_id, rs.name, rs.source, rs.hash, rs.description, coalesce(rs.parameters::text, '')
		FROM run_scripts rs JOIN run_script_snapshots s ON s.run_id = rs.run_id AND s.agent_id = 'a1' ORDER BY rs.run_id`)
	must(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.run, &x.name, &x.source, &x.hash, &x.desc, &x.params)
	})
	must(t, err)
	want := []row{
		{"run_lazy", "echo", "print(1)", "h1", "echo v2", `{"type": "object"}`},
		{"run_open", "echo", "print(2)", "h2", "echo v2", `{"type": "object"}`},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("snapshots after 0305:\n got %+v\nwant %+v", got, want)
	}
	var closedSnap bool
	var cfg string
	must(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM run_script_snapshots WHERE run_id = 'run_closed')").Scan(&closedSnap))
	must(t, conn.QueryRow(ctx, "SELECT config->>'max_scripts' FROM agents WHERE id = 'a1'").Scan(&cfg))
	if closedSnap || cfg != "10" {
		t.Fatalf("closed run snapshotted %v; max_scripts %q, want 10", closedSnap, cfg)
	}
	// The snapshot no longer needs its run row: deleting the agent takes the snapshots along.
	exec("DELETE FROM agents WHERE id = 'a1'")
	var left int
	must(t, conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM run_script_snapshots) + (SELECT count(*) FROM run_scripts)").Scan(&left))
	if left != 0 {
		t.Fatalf("%d snapshot rows outlive their agent", left)
	}
}
