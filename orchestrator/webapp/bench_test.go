package webapp_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

// BenchmarkPages times each page of the app against the JSON API reads it is made of (the session,
// the instance, the place and the page's own lists), made by a client with the same session over
// HTTP, in the same run, and reports page / reads as x-<page>. The data is the issue's: 3
// organisations × 10 guilds × 10 agents (made through the API), each agent with 20 runs of 50
// calls (one run made through the API, with its calls and issues; the rest copied from it in SQL,
// since 300 000 calls take an hour through the API), and a guild's collection of 50 records.
func BenchmarkPages(b *testing.B) {
	_, dsn := pgtest.NewDBWithDSN(b)
	a := newApp(b, map[string]string{"DATABASE_URL": dsn})
	a.account("ada@example.com", "Ada", true)
	var org, guild, agent string
	for o := 0; o < 3; o++ {
		oid := a.api(201, "POST", "/api/orgs", map[string]any{"name": fmt.Sprintf("Org %d", o)})["id"].(string)
		for g := 0; g < 10; g++ {
			gid := a.api(201, "POST", "/api/orgs/"+oid+"/guilds", map[string]any{"name": fmt.Sprintf("Guild %d.%d", o, g)})["id"].(string)
			for n := 0; n < 10; n++ {
				aid := a.api(201, "POST", "/api/guilds/"+gid+"/agents", map[string]any{"name": fmt.Sprintf("Agent %d.%d.%d", o, g, n)})["id"].(string)
				if org == "" {
					org, guild, agent = oid, gid, aid
				}
			}
		}
	}
	run := a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	for i := 0; i < 50; i++ {
		name, args := "note_write", map[string]any{"level": "agent", "key": fmt.Sprintf("n%d.md", i), "content": "a note"}
		if i%9 == 0 {
			name, args = "report_issue", map[string]any{"kind": "tool_failure", "message": fmt.Sprintf("failure %d", i)}
		}
		a.api(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": name, "arguments": args})
	}
	a.api(200, "POST", "/api/runs/"+run+"/close", nil)
	copies := copyRun(b, dsn, run)
	fmt.Printf("BenchmarkPages data: 3 orgs, 30 guilds, 300 agents, %d runs, %d calls, %d issues\n", copies.runs, copies.calls, copies.issues)
	records := a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string) // not copied
	coll := a.api(201, "POST", "/api/guilds/"+guild+"/collections", map[string]any{"name": "tasks",
		"columns": []map[string]any{{"name": "title", "type": "text"}, {"name": "points", "type": "number"}}})["id"].(string)
	for i := 0; i < 50; i++ {
		a.api(200, "POST", "/api/runs/"+records+"/calls", map[string]any{"name": "record_add", "arguments": map[string]any{"collection": "tasks",
			"body": map[string]any{"title": fmt.Sprintf("task %d", i), "points": i}}})
	}
	a.api(200, "POST", "/api/runs/"+records+"/close", nil)
	c := a.newClient("ada@example.com")
	common := []string{"/api/sessions/current", "/api/instance", "/api/approvals/pending"} // the session, the banners
	orgR, guildR, agentR := "/api/orgs/"+org, "/api/guilds/"+guild, "/api/agents/"+agent
	pages := []struct {
		name, page string
		reads      []string
	}{
		{"orgs", "/orgs", []string{"/api/orgs"}},
		{"org", "/orgs/" + org, []string{orgR, orgR + "/guilds"}},
		{"guild", "/guilds/" + guild, []string{guildR, orgR, guildR + "/agents"}},
		{"agent", "/agents/" + agent, []string{agentR, guildR, orgR}},
		{"tools", "/agents/" + agent + "/tools", []string{agentR, guildR, orgR, agentR + "/tools", "/api/bindings?scope=agent&scope_id=" + agent, "/api/mcp/servers"}},
		{"runs", "/agents/" + agent + "/runs", []string{agentR, guildR, orgR, agentR + "/runs"}},
		{"run", "/runs/" + run, []string{"/api/runs/" + run, agentR, guildR, orgR, "/api/runs/" + run + "/calls?limit=50"}},
		{"issues", "/guilds/" + guild + "/issues", []string{guildR, orgR, guildR + "/issues?limit=50&status=open"}},
		{"org-issues", "/orgs/" + org + "/issues", []string{orgR, orgR + "/issues?limit=50&status=open"}},
		{"admin-accounts", "/admin/accounts", []string{"/api/accounts", "/api/orgs"}},
		{"admin-audit", "/admin/audit", []string{"/api/admin/audit?limit=50"}},
		{"admin-catalog", "/admin/catalog", []string{"/api/admin/mcp/servers"}},
		{"collections", "/guilds/" + guild + "/collections", []string{guildR, orgR, guildR + "/collections"}},
		{"collection", "/collections/" + coll, []string{"/api/collections/" + coll, guildR, orgR, guildR + "/agents", "/api/collections/" + coll + "/records?limit=50&offset=0"}},
	}
	get := func(path string) {
		resp, body := c.get(path)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %.300s", path, resp.StatusCode, body)
		}
	}
	const reps = 20
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		page, reads := make([]time.Duration, len(pages)), make([]time.Duration, len(pages))
		for r := -1; r < reps; r++ { // a round to warm up, then each page in turn, round after round
			for k, p := range pages {
				t0 := time.Now()
				get(p.page)
				t1 := time.Now()
				for _, path := range append(append([]string(nil), common...), p.reads...) {
					get(path)
				}
				if r >= 0 {
					page[k], reads[k] = page[k]+t1.Sub(t0), reads[k]+time.Since(t1)
				}
			}
		}
		for k, p := range pages {
			ratio := float64(page[k]) / float64(reads[k])
			b.ReportMetric(ratio, "x-"+p.name)
			fmt.Printf("BenchmarkPages %-14s page %6.2f ms, its %d API reads %6.2f ms: %.2fx\n", p.name,
				float64(page[k].Microseconds())/1000/reps, len(common)+len(p.reads), float64(reads[k].Microseconds())/1000/reps, ratio)
		}
	}
}

// copied counts the rows copyRun made.
type copied struct{ runs, calls, issues int64 }

// copyRun gives every agent of the database 20 runs like run (the agent that made run, 19 more),
// each with run's calls and issues, closed a minute apart going back in time.
func copyRun(b *testing.B, dsn, run string) copied {
	b.Helper()
	ctx := context.Background()
	pool, err := postgres.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var out copied
	steps := []struct {
		sql   string
		count *int64
	}{
		// Each copy is the template's row with the extra columns naming where it goes, set and dropped.
		{`CREATE TEMP TABLE rc ON COMMIT DROP AS
		  SELECT r.*, a.id AS _agent, a.guild_id AS _guild, a.org_id AS _org, n AS _n
		  FROM runs r, agents a, generate_series(1, 20) n
		  WHERE r.id = $1 AND NOT (a.id = r.agent_id AND n = 20)`, nil},
		{`UPDATE rc SET id = 'run_' || md5(_agent || '/' || _n), agent_id = _agent, guild_id = _guild, org_id = _org,
		  token_hash = NULL, token_sealed = NULL, created_at = created_at - _n * interval '1 minute',
		  closed_at = closed_at - _n * interval '1 minute', active_at = active_at - _n * interval '1 minute'`, nil},
		{`CREATE TEMP TABLE cc ON COMMIT DROP AS SELECT c.*, rc.id AS _run FROM tool_calls c, rc WHERE c.run_id = $1`, nil},
		{`UPDATE cc SET run_id = _run, call_id = call_id || '.' || _run`, nil},
		{`CREATE TEMP TABLE ic ON COMMIT DROP AS SELECT i.*, rc.id AS _run, rc._agent, rc._guild, rc._org FROM issues i, rc WHERE i.run_id = $1`, nil},
		{`UPDATE ic SET id = 'iss_' || md5(id || '/' || _run), run_id = _run, agent_id = _agent, guild_id = _guild, org_id = _org`, nil},
		{`ALTER TABLE rc DROP COLUMN _agent, DROP COLUMN _guild, DROP COLUMN _org, DROP COLUMN _n`, nil},
		{`ALTER TABLE cc DROP COLUMN _run`, nil},
		{`ALTER TABLE ic DROP COLUMN _run, DROP COLUMN _agent, DROP COLUMN _guild, DROP COLUMN _org`, nil},
		{`INSERT INTO runs SELECT * FROM rc`, &out.runs},
		{`INSERT INTO tool_calls SELECT * FROM cc`, &out.calls},
		{`INSERT INTO issues SELECT * FROM ic`, &out.issues},
	}
	for _, st := range steps {
		var args []any
		if strings.Contains(st.sql, "$1") {
			args = []any{run}
		}
		tag, err := tx.Exec(ctx, st.sql, args...)
		if err != nil {
			b.Fatalf("copy the run: %v\n%s", err, st.sql)
		}
		if st.count != nil {
			*st.count = tag.RowsAffected()
		}
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE"); err != nil { // as autovacuum would, before the timing
		b.Fatal(err)
	}
	out.runs, out.calls, out.issues = out.runs+1, out.calls+50, out.issues+6
	return out
}
