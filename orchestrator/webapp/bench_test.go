package webapp_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkPages times each page of the app against the JSON API reads it is made of (the session,
// the instance, the place and the page's own lists), made by a client with the same session over
// HTTP, in the same run, and reports page / reads as x-<page>. The data: one organisation of 3
// guilds of 3 agents, a run of 50 calls, 6 issues (smaller than the 3 × 10 × 10 × 20 × 50,
// which takes minutes to seed through the API).
func BenchmarkPages(b *testing.B) {
	a := newApp(b, nil)
	a.account("ada@example.com", "Ada", true)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	var guild, agent, run string
	for g := 0; g < 3; g++ {
		gid := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": fmt.Sprintf("Guild %d", g)})["id"].(string)
		for n := 0; n < 3; n++ {
			aid := a.api(201, "POST", "/api/guilds/"+gid+"/agents", map[string]any{"name": fmt.Sprintf("Agent %d.%d", g, n)})["id"].(string)
			if guild == "" {
				guild, agent = gid, aid
			}
		}
	}
	run = a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	for i := 0; i < 50; i++ {
		name, args := "note_write", map[string]any{"level": "agent", "key": fmt.Sprintf("n%d.md", i), "content": "a note"}
		if i%9 == 0 {
			name, args = "report_issue", map[string]any{"kind": "tool_failure", "message": fmt.Sprintf("failure %d", i)}
		}
		a.api(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": name, "arguments": args})
	}
	c := a.newClient("ada@example.com")
	common := []string{"/api/sessions/current", "/api/instance"}
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
		{"issues", "/guilds/" + guild + "/issues", []string{guildR, orgR, guildR + "/issues", guildR + "/agents"}},
		{"admin-accounts", "/admin/accounts", []string{"/api/accounts", "/api/orgs"}},
		{"admin-audit", "/admin/audit", []string{"/api/admin/audit?limit=50"}},
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
		for _, p := range pages {
			get(p.page) // warm
			var page, reads time.Duration
			for r := 0; r < reps; r++ {
				t0 := time.Now()
				get(p.page)
				t1 := time.Now()
				for _, path := range append(append([]string(nil), common...), p.reads...) {
					get(path)
				}
				page, reads = page+t1.Sub(t0), reads+time.Since(t1)
			}
			ratio := float64(page) / float64(reads)
			b.ReportMetric(ratio, "x-"+p.name)
			b.Logf("%-7s page %6.2f ms, its %d API reads %6.2f ms: %.2fx", p.name,
				float64(page.Microseconds())/1000/reps, len(common)+len(p.reads), float64(reads.Microseconds())/1000/reps, ratio)
		}
	}
}
