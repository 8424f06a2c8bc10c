package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/guildsai/guilds/orchestrator/tools/group"
	"github.com/guildsai/guilds/orchestrator/tools/issues"
	"github.com/guildsai/guilds/orchestrator/tools/schedules"
	"github.com/guildsai/guilds/orchestrator/tools/search"
	"github.com/guildsai/guilds/orchestrator/tools/secrets"
)

// platformEnv is the API over a fresh database with the real platform tools registered and the
// platform store set; extra registers more tools and may set the run service's secrets source.
func platformEnv(t *testing.T, set integrations.Set, extra func(*registry.Registry, *postgres.Store, *runs.Service)) *env {
	t.Helper()
	return platformEnvWith(t, set, extra, nil)
}

// platformEnvWith is platformEnv whose server server completes before the API is built.
func platformEnvWith(t *testing.T, set integrations.Set, extra func(*registry.Registry, *postgres.Store, *runs.Service), server func(*httpapi.Server)) *env {
	t.Helper()
	e := &env{t: t, pool: pgtest.NewDB(t), logs: &syncBuffer{}, order: &seqLog{}}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := postgres.NewStore(e.pool)
	reg := registry.New()
	if err := (&issues.Tools{Store: store}).Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := (&group.Tools{Store: store}).Register(reg); err != nil {
		t.Fatal(err)
	}
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	sec := &secrets.Service{Store: store, Box: box}
	if err := sec.Register(reg); err != nil {
		t.Fatal(err)
	}
	// say prints its text: it stands for any tool whose output carries a secret value.
	if err := reg.Register(registry.Tool{Name: "say", Family: orchestrator.FamilyNotes, Description: "Print text.",
		Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Handler: func(_ context.Context, c *registry.Call) (string, error) {
			var a struct{ Text string }
			err := json.Unmarshal(c.Args, &a)
			return "said: " + a.Text, err
		}}); err != nil {
		t.Fatal(err)
	}
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Secrets: sec, Log: log}
	if extra != nil {
		extra(reg, store, svc)
	}
	cat, policy := catalogFor(t, store, reg, set, log)
	svc.Offer = policy
	srv := guarded(&httpapi.Server{Scopes: store, Runs: svc, Bindings: cat, Artifacts: store, Platform: store, Secrets: sec, Integrations: set, Log: log}, store)
	if server != nil {
		server(srv)
	}
	e.app = httpapi.New(srv)
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
	if first["message"] != "api 500" || first["run_id"] != run || first["status"] != "open" || first["agent_name"] != agent["name"] || first["guild_name"] == nil {
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

	// Pages: newest first, next_after on a full page, null once nothing follows.
	var paged []string
	for after := ""; ; {
		out := e.must(200, "GET", "/api/orgs/"+org+"/issues?limit=2"+after, nil)
		for _, is := range out["issues"].([]any) {
			paged = append(paged, is.(map[string]any)["message"].(string))
		}
		next, _ := out["next_after"].(string)
		if next == "" {
			break
		}
		after = "&after=" + next
	}
	if want := []string{"x", "api 500", "result cut", "shell hung"}; !slices.Equal(paged, want) {
		t.Fatalf("the org's issues two at a time: %q, want %q", paged, want)
	}
	for _, q := range []string{"limit=0", "limit=501", "limit=x", "after=iss_missing", "after=a%20b"} {
		if st, out := e.do("GET", "/api/guilds/"+guild+"/issues?"+q, nil); st != 422 || errCode(out) != "EINVALID" {
			t.Errorf("%s: %d %v, want 422 EINVALID", q, st, out)
		}
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

// TestSecretsEndToEnd: an operator's secret and one the agent stores are sealed at rest, never
// returned, and redacted from every result and stored call; secret_request is answered by PUT.
func TestSecretsEndToEnd(t *testing.T) {
	e := platformEnv(t, nil, nil)
	agent := e.agent(nil)
	const opValue, agentValue = "sk-operator-Value-0042", "agent-made-T0ken-7777"

	// The agent asks; the operator sees the pending request and answers it.
	direct := e.run(agent, map[string]any{"kind": "direct"})
	out := e.must(200, "POST", "/api/runs/"+direct+"/calls", map[string]any{"name": "secret_request", "arguments": map[string]any{"name": "STRIPE_KEY", "reason": "to read invoices"}})
	if !strings.Contains(out["result"].(string), "asked the operator for secret STRIPE_KEY") {
		t.Fatalf("secret_request: %v", out["result"])
	}
	list := e.must(200, "GET", "/api/agents/"+agent+"/secrets", nil)
	if reqs := list["requests"].([]any); len(reqs) != 1 || reqs[0].(map[string]any)["name"] != "STRIPE_KEY" {
		t.Fatalf("pending requests %v", list)
	}
	put := e.must(200, "PUT", "/api/agents/"+agent+"/secrets/STRIPE_KEY", map[string]any{"value": opValue})
	if put["name"] != "STRIPE_KEY" || strings.Contains(jsonText(put), opValue) {
		t.Fatalf("put answer %v", put)
	}
	list = e.must(200, "GET", "/api/agents/"+agent+"/secrets", nil)
	if len(list["requests"].([]any)) != 0 || len(list["secrets"].([]any)) != 1 || strings.Contains(jsonText(list), opValue) {
		t.Fatalf("after answer %v", list)
	}

	// The agent stores one it produced; the stored call's arguments hold no value.
	out = e.must(200, "POST", "/api/runs/"+direct+"/calls", map[string]any{"name": "secret_store", "arguments": map[string]any{"name": "MADE", "value": agentValue}})
	if !strings.Contains(out["result"].(string), "stored secret MADE") {
		t.Fatalf("secret_store: %v", out["result"])
	}
	// Both values come back redacted from a later tool's output, in this run and a new one.
	for _, run := range []string{direct, e.run(agent, map[string]any{"kind": "schedule"})} {
		res := e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "say", "arguments": map[string]any{"text": opValue + " and " + agentValue}})["result"].(string)
		if strings.Contains(res, opValue) || strings.Contains(res, agentValue) || !strings.Contains(res, "said: ") {
			t.Fatalf("not redacted: %q", res)
		}
		calls := e.must(200, "GET", "/api/runs/"+run+"/calls", nil)
		if s := jsonText(calls); strings.Contains(s, opValue) || strings.Contains(s, agentValue) {
			t.Fatalf("stored calls hold a secret value: %s", s)
		}
	}
	// At rest the values are sealed.
	var n int
	if err := e.pool.QueryRow(context.Background(), "SELECT count(*) FROM agent_secrets WHERE position($1::bytea in sealed) > 0 OR position($2::bytea in sealed) > 0",
		[]byte(opValue), []byte(agentValue)).Scan(&n); err != nil || n != 0 {
		t.Fatalf("plaintext at rest: n=%d err=%v", n, err)
	}
	// secret_request is offered on direct runs only.
	sched := e.must(200, "GET", "/api/runs/"+e.run(agent, map[string]any{"kind": "schedule"}), nil)
	if names := strings.Join(offered(sched), ","); strings.Contains(names, "secret_request") || !strings.Contains(names, "secret_store") {
		t.Fatalf("schedule run offers %s", names)
	}

	// Bad input: clear errors, nothing stored.
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"PUT", "/api/agents/" + agent + "/secrets/lower-case-dash", map[string]any{"value": "x"}, 422, "must match"},
		{"PUT", "/api/agents/" + agent + "/secrets/OK", map[string]any{"value": ""}, 422, "value is empty"},
		{"PUT", "/api/agents/" + agent + "/secrets/TINY", map[string]any{"value": "hi"}, 422, "at least 8 bytes, since its value is masked"},
		{"PUT", "/api/agents/" + agent + "/secrets/OK", map[string]any{"value": strings.Repeat("v", secrets.MaxValueBytes+1)}, 422, "at most"},
		{"PUT", "/api/agents/" + agent + "/secrets/OK", map[string]any{"valu": "x"}, 422, "valu"},
		{"PUT", "/api/agents/agt_missing/secrets/OK", map[string]any{"value": "x"}, 404, "agent"},
		{"DELETE", "/api/agents/" + agent + "/secrets/NOPE", nil, 404, "NOPE"},
	} {
		st, out := e.do(tc.method, tc.path, tc.body)
		if st != tc.status || !strings.Contains(errMessage(out), tc.want) {
			t.Errorf("%s %s: %d %v, want %d containing %q", tc.method, tc.path, st, out, tc.status, tc.want)
		}
	}
	e.must(200, "DELETE", "/api/agents/"+agent+"/secrets/MADE", nil)
	if got := len(e.must(200, "GET", "/api/agents/"+agent+"/secrets", nil)["secrets"].([]any)); got != 1 {
		t.Fatalf("after delete: %d secrets", got)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTavilyOfferAndRedaction: with TAVILY_API_KEY the run offers tavily_search, the request reaches
// the local fake, and the key is redacted even when the answer echoes it; without it the tool is not
// offered and the instance view names the variable.
func TestTavilyOfferAndRedaction(t *testing.T) {
	const key = "tvly-instance-Key-31337"
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Header.Get("Authorization")+" "+string(b))
		io.WriteString(w, `{"results":[{"title":"Leaky page","url":"https://example.com","content":"someone pasted `+key+` here"}]}`)
	}))
	defer srv.Close()
	env := map[string]string{search.KeyVar: key, search.BaseURLVar: srv.URL}
	e := platformEnv(t, integrations.SetOf(env), func(reg *registry.Registry, _ *postgres.Store, svc *runs.Service) {
		web := &search.Tavily{Key: env[search.KeyVar], BaseURL: env[search.BaseURLVar]}
		if err := web.Register(reg); err != nil {
			t.Fatal(err)
		}
		svc.Secrets = bindingsJoin(svc.Secrets, web)
	})
	agent := e.agent(nil)
	run := e.run(agent, map[string]any{"kind": "direct"})
	out := e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "tavily_search", "arguments": map[string]any{"query": "leaks"}})
	res := out["result"].(string)
	if strings.Contains(res, key) || !strings.Contains(res, "1. Leaky page") || !strings.Contains(res, "https://example.com") {
		t.Fatalf("result %q", res)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "Bearer "+key+" ") || !strings.Contains(got[0], `"search_depth":"advanced"`) {
		t.Fatalf("fake saw %q", got)
	}

	// Without the key: not offered, and the instance view says web-search is off, naming the variable.
	off := platformEnv(t, nil, func(reg *registry.Registry, _ *postgres.Store, _ *runs.Service) {
		if err := (&search.Tavily{}).Register(reg); err != nil {
			t.Fatal(err)
		}
	})
	r := off.must(201, "POST", "/api/agents/"+off.agent(nil)+"/runs", map[string]any{"kind": "direct"})
	if strings.Contains(strings.Join(offered(r), ","), "tavily_search") {
		t.Fatalf("offered without the key: %v", offered(r))
	}
	found := false
	for _, ig := range off.must(200, "GET", "/api/instance", nil)["integrations"].([]any) {
		m := ig.(map[string]any)
		if m["name"] == "web-search" {
			found = true
			if m["state"] != "off" || !strings.Contains(jsonText(m["variables"]), search.KeyVar) {
				t.Fatalf("web-search %v", m)
			}
		}
	}
	if !found {
		t.Fatal("no web-search integration in /api/instance")
	}
}

// bindingsJoin joins two redaction sources.
func bindingsJoin(a, b orchestrator.RunSecrets) orchestrator.RunSecrets {
	return orchestrator.JoinSecrets(a, b)
}

func TestGroupChat(t *testing.T) {
	e := platformEnv(t, nil, nil)
	agent := e.must(200, "GET", "/api/agents/"+e.agent(nil), nil)
	guild := agent["guild_id"].(string)
	run := e.run(agent["id"].(string), map[string]any{"kind": "group_chat"})
	for i := 1; i <= 5; i++ {
		out := e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "group_post", "arguments": map[string]any{"text": "message " + string(rune('0'+i))}})
		if !strings.Contains(out["result"].(string), "posted message") {
			t.Fatalf("group_post: %v", out["result"])
		}
	}
	bad := e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "group_post", "arguments": map[string]any{"text": "   "}})
	if !strings.HasPrefix(bad["result"].(string), "ERROR: text is empty") {
		t.Fatalf("empty post: %v", bad["result"])
	}
	page := e.must(200, "GET", "/api/guilds/"+guild+"/chat?limit=2", nil)["messages"].([]any)
	if len(page) != 2 || page[0].(map[string]any)["text"] != "message 4" || page[1].(map[string]any)["text"] != "message 5" {
		t.Fatalf("newest page %v", page)
	}
	if page[0].(map[string]any)["run_id"] != run || page[0].(map[string]any)["agent_id"] != agent["id"] {
		t.Fatalf("message %v", page[0])
	}
	before := int(page[0].(map[string]any)["id"].(float64))
	older := e.must(200, "GET", "/api/guilds/"+guild+"/chat?limit=10&before="+strconv.Itoa(before), nil)["messages"].([]any)
	if len(older) != 3 || older[0].(map[string]any)["text"] != "message 1" {
		t.Fatalf("older page %v", older)
	}
	for _, q := range []string{"?limit=0", "?limit=201", "?before=x"} {
		if st, out := e.do("GET", "/api/guilds/"+guild+"/chat"+q, nil); st != 422 {
			t.Errorf("%s: %d %v", q, st, out)
		}
	}
}

// TestSchedulesAPI: a schedule the agent creates is listed for the operator, and after the
// scheduler fires it its firing names the run and the instruction it carried.
func TestSchedulesAPI(t *testing.T) {
	var store *postgres.Store
	var svc *runs.Service
	e := platformEnv(t, nil, func(reg *registry.Registry, st *postgres.Store, s *runs.Service) {
		store, svc = st, s
		if err := (&schedules.Tools{Store: st}).Register(reg); err != nil {
			t.Fatal(err)
		}
	})
	agent := e.agent(nil)
	run := e.run(agent, map[string]any{"kind": "direct"})
	out := e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "schedule_create_cron",
		"arguments": map[string]any{"cron": "*/5 * * * *", "description": "digest", "instruction": "Summarise the **inbox**."}})
	if !strings.Contains(out["result"].(string), "created sch_") {
		t.Fatalf("create: %v", out["result"])
	}
	list := e.must(200, "GET", "/api/agents/"+agent+"/schedules", nil)["schedules"].([]any)
	if len(list) != 1 {
		t.Fatalf("schedules %v", list)
	}
	sc := list[0].(map[string]any)
	if sc["cron"] != "*/5 * * * *" || sc["status"] != "active" || sc["instruction"] != "Summarise the **inbox**." || sc["next_run_at"] == nil {
		t.Fatalf("schedule %v", sc)
	}
	later := func() time.Time { return time.Now().Add(6 * time.Minute) }
	if n, err := (&schedules.Scheduler{Store: store, Runs: svc, Now: later}).Tick(context.Background()); err != nil || n != 1 {
		t.Fatalf("tick: %d %v", n, err)
	}
	firings := e.must(200, "GET", "/api/agents/"+agent+"/schedules/"+sc["id"].(string)+"/firings", nil)["firings"].([]any)
	if len(firings) != 1 {
		t.Fatalf("firings %v", firings)
	}
	f := firings[0].(map[string]any)
	fired := e.must(200, "GET", "/api/runs/"+f["run_id"].(string), nil)
	if f["instruction"] != "Summarise the **inbox**." || fired["kind"] != "schedule" || fired["agent_id"] != agent || f["outcome"] != "started" {
		t.Fatalf("firing %v run %v", f, fired)
	}
	// Its run is still open at the next wake-up: skipped, and the skip is listed first.
	muchLater := func() time.Time { return time.Now().Add(11 * time.Minute) }
	if n, err := (&schedules.Scheduler{Store: store, Runs: svc, Now: muchLater}).Tick(context.Background()); err != nil || n != 0 {
		t.Fatalf("tick with the run open: %d %v", n, err)
	}
	firings = e.must(200, "GET", "/api/agents/"+agent+"/schedules/"+sc["id"].(string)+"/firings", nil)["firings"].([]any)
	if len(firings) != 2 {
		t.Fatalf("firings %v", firings)
	}
	if skip := firings[0].(map[string]any); skip["outcome"] != "skipped" || skip["open_run_id"] != f["run_id"] || skip["run_id"] != "" {
		t.Fatalf("skip %v", skip)
	}
	// The agent's max_schedules caps what it keeps, set like max_scripts.
	e.must(200, "PATCH", "/api/agents/"+agent, map[string]any{"config": map[string]any{"max_schedules": 1}})
	out = e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "schedule_create_cron",
		"arguments": map[string]any{"cron": "0 * * * *", "description": "hourly"}})
	if !strings.Contains(out["result"].(string), "ERROR: you already have 1 schedules, the most your config allows (max_schedules 1)") {
		t.Fatalf("create past the cap: %v", out["result"])
	}
	if st, out := e.do("POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct", "config": map[string]any{"max_schedules": 3}}); st != 422 || !strings.Contains(errMessage(out), "config.max_schedules is the agent's setting") {
		t.Fatalf("a run's max_schedules: %d %v", st, out)
	}
	if st, _ := e.do("GET", "/api/agents/"+agent+"/schedules/sch_nope/firings", nil); st != 404 {
		t.Fatalf("missing schedule: %d", st)
	}
}
