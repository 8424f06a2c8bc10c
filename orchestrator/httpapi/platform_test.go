package httpapi_test

import (
	"log/slog"
	"testing"

	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/tools/issues"
)

// platformEnv is the API over a fresh database with the real platform tools registered and the
// platform store set; extra registers more tools and may set the run service's secrets source.
func platformEnv(t *testing.T, getenv func(string) string, extra func(*registry.Registry, *postgres.Store, *runs.Service)) *env {
	t.Helper()
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	e := &env{t: t, pool: pgtest.NewDB(t), logs: &syncBuffer{}, order: &seqLog{}}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := postgres.NewStore(e.pool)
	reg := registry.New()
	if err := (&issues.Tools{Store: store}).Register(reg); err != nil {
		t.Fatal(err)
	}
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Log: log}
	if extra != nil {
		extra(reg, store, svc)
	}
	cat, policy := catalogFor(t, store, reg, getenv, log)
	svc.Offer = policy
	e.app = httpapi.New(&httpapi.Server{Scopes: store, Runs: svc, Bindings: cat, Artifacts: store, Platform: store, AdminToken: token, Getenv: getenv, Log: log})
	return e
}

func TestIssuesInbox(t *testing.T) {
	e := platformEnv(t, nil, nil)
	agent := e.must(200, "GET", "/api/agents/"+e.agent(nil), nil)
	guild, org := agent["guild_id"].(string), agent["org_id"].(string)
	run := e.run(agent["id"].(string), map[string]any{"kind": "schedule"})
	for _, msg := range []string{"shell hung", "result cut", "api 500"} {
		out := e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "report_issue", "arguments": map[string]any{"kind": "tool_failure", "message": msg}})
		if res := out["result"].(string); len(res) < 12 || res[:12] != "filed issue " {
			t.Fatalf("report_issue result %q", res)
		}
	}
	// Another guild's issue stays out of this guild's inbox but is in the organisation's.
	g2 := e.must(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Other"})["id"].(string)
	a2 := e.must(201, "POST", "/api/guilds/"+g2+"/agents", map[string]any{"name": "Bob"})["id"].(string)
	e.must(200, "POST", "/api/runs/"+e.run(a2, map[string]any{"kind": "direct"})+"/calls", map[string]any{"name": "report_issue", "arguments": map[string]any{"kind": "api", "message": "x"}})

	count := func(path string) int { return len(e.must(200, "GET", path, nil)["issues"].([]any)) }
	if n := count("/api/guilds/" + guild + "/issues"); n != 3 {
		t.Fatalf("guild issues %d, want 3", n)
	}
	if n := count("/api/orgs/" + org + "/issues"); n != 4 {
		t.Fatalf("org issues %d, want 4", n)
	}
	list := e.must(200, "GET", "/api/guilds/"+guild+"/issues", nil)["issues"].([]any)
	first := list[0].(map[string]any)
	if first["message"] != "api 500" || first["run_id"] != run || first["status"] != "open" {
		t.Fatalf("newest issue %v", first)
	}
	one := e.must(200, "POST", "/api/issues/"+first["id"].(string)+"/resolve", nil)
	if one["status"] != "resolved" || one["resolved_at"] == nil {
		t.Fatalf("resolved %v", one)
	}
	again := e.must(200, "POST", "/api/issues/"+first["id"].(string)+"/resolve", nil)
	if again["resolved_at"] != one["resolved_at"] {
		t.Fatalf("resolving twice moved resolved_at: %v then %v", one["resolved_at"], again["resolved_at"])
	}
	if n := count("/api/guilds/" + guild + "/issues?status=open"); n != 2 {
		t.Fatalf("open issues %d, want 2", n)
	}
	if r := e.must(200, "POST", "/api/guilds/"+guild+"/issues/resolve", nil)["resolved"]; r != float64(2) {
		t.Fatalf("bulk resolved %v, want 2", r)
	}
	if n := count("/api/guilds/" + guild + "/issues?status=open"); n != 0 {
		t.Fatalf("open after bulk resolve %d", n)
	}
	if n := count("/api/guilds/" + guild + "/issues?status=resolved"); n != 3 {
		t.Fatalf("resolved %d, want 3", n)
	}
	if n := count("/api/orgs/" + org + "/issues?status=open"); n != 1 {
		t.Fatalf("the other guild's issue must stay open, got %d open", n)
	}

	st, out := e.do("GET", "/api/guilds/"+guild+"/issues?status=closed", nil)
	if st != 422 || errCode(out) != "EINVALID" {
		t.Fatalf("bad status filter: %d %v", st, out)
	}
	if st, out := e.do("POST", "/api/issues/iss_missing/resolve", nil); st != 404 {
		t.Fatalf("missing issue: %d %v", st, out)
	}
	if st, _ := e.do("GET", "/api/guilds/nope/issues", nil); st != 404 {
		t.Fatalf("missing guild: %d", st)
	}
}
