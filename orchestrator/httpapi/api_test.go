package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/registry"
)

func TestAuth(t *testing.T) {
	e := newEnv(t, nil)
	if st, out := e.do("GET", "/healthz", nil, ""); st != 200 || out["status"] != "ok" {
		t.Fatalf("healthz without token: %d %v", st, out)
	}
	tests := []struct {
		name, auth string
		want       int
	}{
		{"missing", "", 401},
		{"wrong token", "Bearer nope", 401},
		{"token one byte short", "Bearer " + token[:len(token)-1], 401},
		{"wrong scheme", "Basic " + token, 401},
		{"right", "Bearer " + token, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/api/orgs", "/api/instance"} {
				st, out := e.do("GET", path, nil, tt.auth)
				if st != tt.want {
					t.Fatalf("%s: status %d, want %d (%v)", path, st, tt.want, out)
				}
				if tt.want == 401 && (errCode(out) != "EUNAUTHORIZED" || errMessage(out) == "") {
					t.Fatalf("%s: error %v", path, out)
				}
			}
		})
	}
	// The API's document holds no data: it needs no token.
	if st, out := e.do("GET", "/api/openapi.json", nil, ""); st != 200 || out["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json without a token: %d", st)
	}
	// An unknown /api route is still behind the token.
	if st, _ := e.do("GET", "/api/nope", nil, ""); st != 401 {
		t.Fatalf("unknown /api route without token: %d", st)
	}
}

func TestScopes(t *testing.T) {
	e := newEnv(t, nil)
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})
	orgID := org["id"].(string)
	if !strings.HasPrefix(orgID, "org_") {
		t.Fatalf("org id %q", orgID)
	}
	if got := e.must(200, "GET", "/api/orgs/"+orgID, nil); got["name"] != "Acme" {
		t.Fatalf("get org: %v", got)
	}
	g := e.must(201, "POST", "/api/orgs/"+orgID+"/guilds", map[string]any{"name": "Builders"})
	gid := g["id"].(string)
	if g["org_id"] != orgID || !strings.HasPrefix(gid, "gld_") {
		t.Fatalf("guild %v", g)
	}
	a := e.must(201, "POST", "/api/guilds/"+gid+"/agents", map[string]any{"name": "Ada"})
	if a["org_id"] != orgID || a["guild_id"] != gid || !strings.HasPrefix(a["id"].(string), "agt_") {
		t.Fatalf("agent %v", a)
	}
	if list := e.must(200, "GET", "/api/orgs", nil)["orgs"].([]any); len(list) != 1 {
		t.Fatalf("orgs %v", list)
	}
	if list := e.must(200, "GET", "/api/orgs/"+orgID+"/guilds", nil)["guilds"].([]any); len(list) != 1 {
		t.Fatalf("guilds %v", list)
	}
	if list := e.must(200, "GET", "/api/guilds/"+gid+"/agents", nil)["agents"].([]any); len(list) != 1 {
		t.Fatalf("agents %v", list)
	}
	e.must(200, "GET", "/api/guilds/"+gid, nil)
	e.must(200, "GET", "/api/agents/"+a["id"].(string), nil)

	bad := []struct {
		name, method, path string
		body               any
		status             int
		code, msg          string
	}{
		{"missing org", "GET", "/api/orgs/org_missing", nil, 404, "ENOTFOUND", `organisation "org_missing" not found`},
		{"malformed id", "GET", "/api/orgs/has%20space", nil, 404, "ENOTFOUND", "not found"},
		{"guild in missing org", "POST", "/api/orgs/org_missing/guilds", map[string]any{"name": "x"}, 404, "ENOTFOUND", "organisation"},
		{"guilds of missing org", "GET", "/api/orgs/org_missing/guilds", nil, 404, "ENOTFOUND", "organisation"},
		{"missing guild", "GET", "/api/guilds/gld_missing", nil, 404, "ENOTFOUND", "guild"},
		{"agent in missing guild", "POST", "/api/guilds/gld_missing/agents", map[string]any{"name": "x"}, 404, "ENOTFOUND", "guild"},
		{"agents of missing guild", "GET", "/api/guilds/gld_missing/agents", nil, 404, "ENOTFOUND", "guild"},
		{"missing agent", "GET", "/api/agents/agt_missing", nil, 404, "ENOTFOUND", "agent"},
		{"malformed JSON", "POST", "/api/orgs", `{"name": `, 400, "EMALFORMED", "not valid JSON"},
		{"not an object", "POST", "/api/orgs", `["x"]`, 400, "EMALFORMED", "JSON object"},
		{"trailing data", "POST", "/api/orgs", `{"name":"a"} {}`, 400, "EMALFORMED", "nothing after"},
		{"empty body", "POST", "/api/orgs", "", 400, "EMALFORMED", "empty"},
		{"unknown field", "POST", "/api/orgs", map[string]any{"name": "a", "color": "red"}, 422, "EINVALID", `unknown field "color"; the fields are name`},
		{"wrong type", "POST", "/api/orgs", map[string]any{"name": 5}, 422, "EINVALID", "field name must be a string"},
		{"blank name", "POST", "/api/orgs", map[string]any{"name": "  "}, 422, "EINVALID", "blank"},
		{"missing name", "POST", "/api/orgs", map[string]any{}, 422, "EINVALID", "1 to 200"},
		{"agent without name", "POST", "/api/guilds/" + gid + "/agents", map[string]any{}, 422, "EINVALID", "name is required"},
		{"unknown route", "GET", "/api/nothing/here", nil, 404, "ENOTFOUND", "no route"},
		{"wrong method", "DELETE", "/api/orgs", nil, 405, "EMETHOD", "method DELETE is not allowed on /api/orgs"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			st, out := e.do(tt.method, tt.path, tt.body)
			if st != tt.status || errCode(out) != tt.code || !strings.Contains(errMessage(out), tt.msg) {
				t.Fatalf("got %d %v, want %d %s containing %q", st, out, tt.status, tt.code, tt.msg)
			}
		})
	}
	// Nothing half-written: the failed creates left no rows.
	var n int
	if err := e.pool.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM orgs) + (SELECT count(*) FROM guilds) + (SELECT count(*) FROM agents)").Scan(&n); err != nil || n != 3 {
		t.Fatalf("rows after bad requests: %d %v, want 3", n, err)
	}
}

func TestAgentConfigPatch(t *testing.T) {
	e := newEnv(t, nil)
	id := e.agent(nil)
	a := e.must(200, "GET", "/api/agents/"+id, nil)
	want := map[string]any{"browser": false, "coding": false, "scripting": true, "memory": true, "max_scripts": float64(10), "max_schedules": float64(10)}
	if fmt.Sprint(a["config"]) != fmt.Sprint(want) {
		t.Fatalf("default config %v, want %v", a["config"], want)
	}
	a = e.must(200, "PATCH", "/api/agents/"+id, map[string]any{"config": map[string]any{"coding": true}})
	want["coding"] = true
	if fmt.Sprint(a["config"]) != fmt.Sprint(want) || a["name"] != "Ada" {
		t.Fatalf("after coding patch: %v", a)
	}
	a = e.must(200, "PATCH", "/api/agents/"+id, map[string]any{"config": map[string]any{"memory": false}, "name": "Ada II"})
	want["memory"] = false
	if fmt.Sprint(a["config"]) != fmt.Sprint(want) || a["name"] != "Ada II" {
		t.Fatalf("after memory patch: %v", a)
	}
	a = e.must(200, "PATCH", "/api/agents/"+id, map[string]any{"config": map[string]any{"max_scripts": 25, "max_schedules": 4}})
	want["max_scripts"], want["max_schedules"] = float64(25), float64(4)
	if fmt.Sprint(a["config"]) != fmt.Sprint(want) {
		t.Fatalf("after max_scripts patch: %v", a)
	}
	for _, tt := range []struct {
		name string
		body any
		code string
		msg  string
	}{
		{"unknown key", map[string]any{"config": map[string]any{"gpu": true}}, "EINVALID", "config.gpu: unknown key"},
		{"max_scripts zero", map[string]any{"config": map[string]any{"max_scripts": 0}}, "EINVALID", "config.max_scripts: must be a whole number from 1 to 100"},
		{"max_scripts too many", map[string]any{"config": map[string]any{"max_scripts": 1000}}, "EINVALID", "got 1000"},
		{"max_scripts fraction", map[string]any{"config": map[string]any{"max_scripts": 2.5}}, "EINVALID", "got 2.5"},
		{"max_scripts string", map[string]any{"config": map[string]any{"max_scripts": "5"}}, "EINVALID", `got "5"`},
		{"max_schedules zero", map[string]any{"config": map[string]any{"max_schedules": 0}}, "EINVALID", "config.max_schedules: must be a whole number from 1 to 100"},
		{"not a bool", map[string]any{"config": map[string]any{"browser": "yes"}}, "EINVALID", "config.browser: must be true or false"},
		{"config not an object", map[string]any{"config": []any{}}, "EINVALID", "config must be an object"},
		{"unknown top field", map[string]any{"flags": map[string]any{}}, "EINVALID", "unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, out := e.do("PATCH", "/api/agents/"+id, tt.body)
			if st != 422 || errCode(out) != tt.code || !strings.Contains(errMessage(out), tt.msg) {
				t.Fatalf("got %d %v", st, out)
			}
		})
	}
	if got := e.must(200, "GET", "/api/agents/"+id, nil); fmt.Sprint(got["config"]) != fmt.Sprint(want) {
		t.Fatalf("refused patches changed the config: %v", got["config"])
	}
	if st, out := e.do("PATCH", "/api/agents/agt_missing", map[string]any{"config": map[string]any{"coding": true}}); st != 404 {
		t.Fatalf("patch missing agent: %d %v", st, out)
	}
	// max_scripts on create; a run start cannot override it (it is the agent's, not a run's).
	b := e.must(201, "POST", "/api/guilds/"+a["guild_id"].(string)+"/agents", map[string]any{"name": "Bo", "config": map[string]any{"max_scripts": 3}})
	if cfg := b["config"].(map[string]any); cfg["max_scripts"] != float64(3) {
		t.Fatalf("create with max_scripts: %v", b)
	}
	if st, out := e.do("POST", "/api/agents/"+id+"/runs", map[string]any{"kind": "direct", "config": map[string]any{"max_scripts": 50}}); st != 422 || !strings.Contains(errMessage(out), "config.max_scripts is the agent's setting") {
		t.Fatalf("run start with max_scripts: %d %v", st, out)
	}
}

func TestRunOffers(t *testing.T) {
	e := newEnv(t, nil)
	id := e.agent(nil)
	run := e.must(201, "POST", "/api/agents/"+id+"/runs", map[string]any{"kind": "direct"})
	if got := offered(run); !slices.Equal(got, []string{"boom", "echo", "fail", "fetch_token", "report_issue", "schedule_list"}) {
		t.Fatalf("direct run offers %v", got)
	}
	if run["tool_call_budget"] != float64(100) || run["remaining_tool_calls"] != float64(100) || run["status"] != "open" {
		t.Fatalf("run %v", run)
	}
	// The offered schema is the shaped one: additionalProperties:false dropped, format stripped from
	// the optional note, and the optional string told it may be omitted.
	var echo map[string]any
	for _, tool := range run["offered_tools"].([]any) {
		if tool.(map[string]any)["name"] == "echo" {
			echo = tool.(map[string]any)
		}
	}
	shaped, _ := registry.ShapeSchema(json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to echo"},"times":{"type":"integer","minimum":1,"maximum":3},"note":{"type":"string","format":"uri"}},"required":["text"],"additionalProperties":false}`))
	var wantSchema any
	_ = json.Unmarshal(shaped, &wantSchema)
	if fmt.Sprint(echo["input_schema"]) != fmt.Sprint(wantSchema) || echo["description"] != "Echo text back." {
		t.Fatalf("echo offered as %v, want schema %v", echo, wantSchema)
	}
	if s := fmt.Sprint(echo["input_schema"]); strings.Contains(s, "additionalProperties") || strings.Contains(s, "format:uri") {
		t.Fatalf("schema not shaped: %s", s)
	}
	again := e.must(200, "GET", "/api/runs/"+run["id"].(string), nil)
	if fmt.Sprint(again["offered_tools"]) != fmt.Sprint(run["offered_tools"]) {
		t.Fatalf("GET run offers differ")
	}

	// A run's config overrides the agent's flags for that run only; a group run drops the schedules.
	run = e.must(201, "POST", "/api/agents/"+id+"/runs", map[string]any{"kind": "group", "config": map[string]any{"browser": true}, "tool_call_budget": 5})
	if got := offered(run); !slices.Equal(got, []string{"boom", "browser_snapshot", "echo", "fail", "fetch_token", "report_issue"}) {
		t.Fatalf("group run with browser offers %v", got)
	}
	if run["config"].(map[string]any)["browser"] != true || run["tool_call_budget"] != float64(5) {
		t.Fatalf("run snapshot %v", run)
	}
	if a := e.must(200, "GET", "/api/agents/"+id, nil); a["config"].(map[string]any)["browser"] != false {
		t.Fatalf("run override changed the agent: %v", a["config"])
	}
	// Snapshot: changing the agent afterwards leaves the run's offer alone.
	e.must(200, "PATCH", "/api/agents/"+id, map[string]any{"config": map[string]any{"browser": true}})
	if got := offered(e.must(200, "GET", "/api/runs/"+run["id"].(string), nil)); slices.Contains(got, "schedule_list") || !slices.Contains(got, "browser_snapshot") {
		t.Fatalf("snapshot changed: %v", got)
	}

	for _, tt := range []struct {
		name string
		body any
		msg  string
	}{
		{"bad kind", map[string]any{"kind": "chat"}, `kind must be one of direct, group, schedule, group_chat, got "chat"`},
		{"missing kind", map[string]any{}, "kind must be one of"},
		{"zero budget", map[string]any{"kind": "direct", "tool_call_budget": 0}, "tool_call_budget must be 1 to 100000, got 0"},
		{"huge budget", map[string]any{"kind": "direct", "tool_call_budget": 1e9}, "tool_call_budget must be 1 to 100000"},
		{"fractional budget", map[string]any{"kind": "direct", "tool_call_budget": 1.5}, "field tool_call_budget must be a number"},
		{"bad config", map[string]any{"kind": "direct", "config": map[string]any{"turbo": true}}, "config.turbo: unknown key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, out := e.do("POST", "/api/agents/"+id+"/runs", tt.body)
			if st != 422 || !strings.Contains(errMessage(out), tt.msg) {
				t.Fatalf("got %d %v, want 422 containing %q", st, out, tt.msg)
			}
		})
	}
	if st, _ := e.do("POST", "/api/agents/agt_missing/runs", map[string]any{"kind": "direct"}); st != 404 {
		t.Fatalf("run of missing agent: %d", st)
	}
	if st, _ := e.do("GET", "/api/runs/run_missing", nil); st != 404 {
		t.Fatalf("missing run: %d", st)
	}
}

// TestIntegrationGatedOffer: tavily_search is offered only when TAVILY_API_KEY is set, and
// /api/instance reports which variables are set, never their values.
func TestIntegrationGatedOffer(t *testing.T) {
	env := map[string]string{"TAVILY_API_KEY": "tvly-secret-value", "TYPESAFE_MODEL": "small"}
	e := newEnv(t, integrations.SetOf(env))
	id := e.agent(nil)
	run := e.must(201, "POST", "/api/agents/"+id+"/runs", map[string]any{"kind": "direct"})
	if !slices.Contains(offered(run), "tavily_search") {
		t.Fatalf("tavily_search not offered with TAVILY_API_KEY: %v", offered(run))
	}
	st, inst := e.do("GET", "/api/instance", nil)
	raw, _ := json.Marshal(inst)
	if st != 200 || inst["auth_mode"] != "accounts" || strings.Contains(string(raw), "tvly-secret-value") {
		t.Fatalf("instance: %d %s", st, raw)
	}
	if key, _ := inst["secret_key"].(map[string]any); key["source"] != "none" {
		t.Fatalf("a server without a secret key reports secret_key %v", inst["secret_key"])
	}
	states := map[string]string{}
	for _, in := range inst["integrations"].([]any) {
		m := in.(map[string]any)
		states[m["name"].(string)] = m["state"].(string)
		if m["name"] == "web-search" && fmt.Sprint(m["tools"]) != "[tavily_search]" {
			t.Fatalf("web-search switches on %v", m["tools"])
		}
		if m["name"] == "group-routing" {
			vars := fmt.Sprint(m["variables"])
			if !strings.Contains(vars, "name:TYPESAFE_MODEL required:false set:true") || !strings.Contains(vars, "name:TYPESAFE_API_KEY required:true set:false") {
				t.Fatalf("group-routing variables %s", vars)
			}
		}
	}
	if states["web-search"] != "on" || states["openrouter"] != "off" || len(states) != 7 {
		t.Fatalf("states %v", states)
	}
}

func TestCalls(t *testing.T) {
	e := newEnv(t, nil)
	runID := e.run(e.agent(nil), map[string]any{"kind": "direct"})
	path := "/api/runs/" + runID + "/calls"

	out := e.must(200, "POST", path, map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi", "times": 2}})
	if out["seq"] != float64(1) || out["result"] != "hihi\n\nremaining_tool_calls: 99" || fmt.Sprint(out["metadata"]) != "map[chars:2]" {
		t.Fatalf("echo: %v", out)
	}
	cases := []struct {
		name string
		body map[string]any
		want []string // substrings of the result
		not  string
	}{
		{"every argument problem named", map[string]any{"name": "echo", "arguments": map[string]any{"times": 9, "extra": 1}},
			[]string{"ERROR: invalid arguments", "text", "times", "extra", "remaining_tool_calls: 98"}, ""},
		{"arguments not an object", map[string]any{"name": "echo", "arguments": "hi"}, []string{"ERROR: invalid arguments"}, ""},
		{"handler error", map[string]any{"name": "fail"}, []string{"ERROR: disk is full"}, ""},
		{"panic", map[string]any{"name": "boom"}, []string{"ERROR: boom failed with an internal error", "orchestrator log"}, "frobnicator"},
		{"not offered", map[string]any{"name": "browser_snapshot"}, []string{`ERROR: tool "browser_snapshot" is not offered on this run; call one of: boom, echo`}, ""},
		{"unknown tool", map[string]any{"name": "rm_rf"}, []string{`ERROR: tool "rm_rf" is not offered`}, ""},
	}
	for i, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			out := e.must(200, "POST", path, tt.body)
			res := out["result"].(string)
			for _, w := range tt.want {
				if !strings.Contains(res, w) {
					t.Fatalf("result %q lacks %q", res, w)
				}
			}
			if tt.not != "" && strings.Contains(res, tt.not) {
				t.Fatalf("result %q shows %q", res, tt.not)
			}
			if out["seq"] != float64(i+2) || !strings.HasSuffix(res, fmt.Sprintf("remaining_tool_calls: %d", 100-(i+2))) {
				t.Fatalf("seq/trailer: %v", out)
			}
		})
	}
	if !strings.Contains(e.logs.String(), "frobnicator") || !strings.Contains(e.logs.String(), "goroutine") {
		t.Fatalf("the panic's detail and stack are not in the operational log")
	}
	// Bad requests are refused without a stored call.
	for _, body := range []any{map[string]any{"arguments": map[string]any{}}, map[string]any{"name": "echo", "args": map[string]any{}}, `{"name": "echo",`} {
		if st, out := e.do("POST", path, body); st != 422 && st != 400 {
			t.Fatalf("bad call body %v: %d %v", body, st, out)
		}
	}
	if st, _ := e.do("POST", "/api/runs/run_missing/calls", map[string]any{"name": "echo"}); st != 404 {
		t.Fatalf("call on missing run: %d", st)
	}
	calls := e.must(200, "GET", path, nil)["calls"].([]any)
	if len(calls) != 1+len(cases) {
		t.Fatalf("%d calls stored, want %d", len(calls), 1+len(cases))
	}
	for i, c := range calls {
		m := c.(map[string]any)
		if m["seq"] != float64(i+1) || m["is_error"] != (i > 0) || m["duration_ms"] == nil || m["started_at"] == nil {
			t.Fatalf("call %d: %v", i, m)
		}
	}
	first := calls[0].(map[string]any)
	if fmt.Sprint(first["arguments"]) != "map[text:hi times:2]" || first["result"] != "hihi\n\nremaining_tool_calls: 99" {
		t.Fatalf("stored call %v", first)
	}
	if run := e.must(200, "GET", "/api/runs/"+runID, nil); run["tool_calls_used"] != float64(len(calls)) || run["remaining_tool_calls"] != float64(100-len(calls)) {
		t.Fatalf("run counters %v", run)
	}
}

// TestRedaction: a secret a handler registers never reaches the answer or any stored row, in
// plain or encoded form, including when the model pastes it into a later call's arguments.
func TestRedaction(t *testing.T) {
	e := newEnv(t, nil)
	runID := e.run(e.agent(nil), map[string]any{"kind": "direct"})
	path := "/api/runs/" + runID + "/calls"
	out := e.must(200, "POST", path, map[string]any{"name": "fetch_token"})
	if res := out["result"].(string); strings.Contains(res, leakedSecret) || !strings.Contains(res, "got token [REDACTED] ok") {
		t.Fatalf("result %q", res)
	}
	if strings.Contains(fmt.Sprint(out["metadata"]), leakedSecret) {
		t.Fatalf("metadata %v", out["metadata"])
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(leakedSecret))
	out = e.must(200, "POST", path, map[string]any{"name": "echo", "arguments": map[string]any{"text": "pasted " + leakedSecret + " and " + b64}})
	if res := out["result"].(string); strings.Contains(res, leakedSecret) || strings.Contains(res, b64) || strings.Count(res, "[REDACTED]") != 2 {
		t.Fatalf("echo result %q", res)
	}
	// Scan every text and JSON column of every table.
	ctx := context.Background()
	rows, err := e.pool.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type IN ('text', 'jsonb', 'json', 'character varying')`)
	if err != nil {
		t.Fatal(err)
	}
	var cols [][2]string
	for rows.Next() {
		var tbl, col string
		if err := rows.Scan(&tbl, &col); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, [2]string{tbl, col})
	}
	rows.Close()
	if len(cols) < 10 {
		t.Fatalf("only %d text columns found", len(cols))
	}
	for _, c := range cols {
		for _, needle := range []string{leakedSecret, b64} {
			var n int
			q := fmt.Sprintf(`SELECT count(*) FROM %q WHERE %q::text LIKE '%%' || $1 || '%%'`, c[0], c[1])
			if err := e.pool.QueryRow(ctx, q, needle).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				t.Fatalf("%s.%s holds the secret in %d rows", c[0], c[1], n)
			}
		}
	}
	if strings.Contains(e.logs.String(), leakedSecret) {
		t.Fatalf("the operational log holds the secret")
	}
}

func TestBudgetAndWrapUp(t *testing.T) {
	e := newEnv(t, nil)
	runID := e.run(e.agent(nil), map[string]any{"kind": "direct", "tool_call_budget": 10})
	path := "/api/runs/" + runID + "/calls"
	for i := 1; i <= 10; i++ {
		res := e.must(200, "POST", path, map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}})["result"].(string)
		left := 10 - i
		if !strings.HasSuffix(res, fmt.Sprintf("remaining_tool_calls: %d", left)) {
			t.Fatalf("call %d: %q", i, res)
		}
		if wrap := strings.Contains(res, "wrap up") || strings.Contains(res, "final answer"); wrap != (left <= 8) {
			t.Fatalf("call %d (left %d): wrap-up line present=%v: %q", i, left, wrap, res)
		}
	}
	st, out := e.do("POST", path, map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}})
	if st != 409 || errCode(out) != "ECONFLICT" || !strings.Contains(errMessage(out), "used all 10 tool calls") {
		t.Fatalf("call past budget: %d %v", st, out)
	}
	if n := len(e.must(200, "GET", path, nil)["calls"].([]any)); n != 10 {
		t.Fatalf("%d calls stored, want 10", n)
	}
}

func TestClosedRun(t *testing.T) {
	e := newEnv(t, nil)
	runID := e.run(e.agent(nil), map[string]any{"kind": "direct"})
	e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "report_issue"})
	closed := e.must(200, "POST", "/api/runs/"+runID+"/close", nil)
	if closed["status"] != "closed" || closed["closed_at"] == nil {
		t.Fatalf("closed run %v", closed)
	}
	st, out := e.do("POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "report_issue"})
	if st != 409 || errCode(out) != "ECONFLICT" || !strings.Contains(errMessage(out), "is closed") {
		t.Fatalf("call on closed run: %d %v", st, out)
	}
	if n := len(e.must(200, "GET", "/api/runs/"+runID+"/calls", nil)["calls"].([]any)); n != 1 {
		t.Fatalf("%d calls after close, want 1", n)
	}
	if st, _ := e.do("POST", "/api/runs/run_missing/close", nil); st != 404 {
		t.Fatalf("close missing run: %d", st)
	}

	// A run closed behind the service's back (another process, SQL by hand) is still refused,
	// nothing is stored, and the next call reads the closed row.
	runID = e.run(e.agent(nil), map[string]any{"kind": "direct"})
	e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "report_issue"})
	if _, err := e.pool.Exec(context.Background(), "UPDATE runs SET status = 'closed', closed_at = now() WHERE id = $1", runID); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nothing was stored", "is closed"} {
		st, out := e.do("POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "report_issue"})
		if st != 409 || !strings.Contains(errMessage(out), want) {
			t.Fatalf("call on a run closed by SQL: %d %v, want 409 containing %q", st, out, want)
		}
	}
	if n := len(e.must(200, "GET", "/api/runs/"+runID+"/calls", nil)["calls"].([]any)); n != 1 {
		t.Fatalf("%d calls stored, want 1", n)
	}
}
