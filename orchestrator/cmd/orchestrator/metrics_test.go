package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// TestMetrics: GET /metrics needs the token on the API's listener and none on
// GUILDS_METRICS_LISTEN, and counts calls by tool and outcome, their latency, API errors by code
// and the database pool.
func TestMetrics(t *testing.T) {
	_, dsn := pgtest.NewDBWithDSN(t)
	metricsAddr := freeAddr(t)
	tools := func(r *registry.Registry) error {
		return r.Register(registry.Tool{Name: "hello", Family: orchestrator.FamilyAlways, Description: "Says hello.",
			Schema:  json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, *registry.Call) (string, error) { return "hello", nil }})
	}
	s := startServe(t, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken,
		"GUILDS_SANDBOX": "local", "GUILDS_METRICS_LISTEN": metricsAddr}, tools)
	defer s.stop(t)
	base := "http://" + s.addr
	runID := setupRun(t, base, 10)
	for range 3 {
		if st, out := request(t, "POST", base+"/api/runs/"+runID+"/calls", map[string]any{"name": "hello"}); st != 200 {
			t.Fatalf("call: %d %v", st, out)
		}
	}
	request(t, "POST", base+"/api/runs/"+runID+"/calls", map[string]any{"name": "hello", "arguments": map[string]any{"x": 1}, "call_id": "bad id"})
	if resp, err := http.Get(base + "/metrics"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("/metrics without the token: %v %v", resp, err)
	}
	get := func(url, token string) string {
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", url, resp.StatusCode, b)
		}
		return string(b)
	}
	for _, text := range []string{get(base+"/metrics", testToken), get("http://"+metricsAddr+"/metrics", "")} {
		for _, want := range []string{
			`guilds_tool_calls_total{outcome="ok",tool="hello"} 3`,
			`guilds_tool_call_duration_seconds_count{tool="hello"} 3`,
			`guilds_api_errors_total{code="EINVALID"} 1`,
			`guilds_db_pool_connections_max `,
			`go_goroutines `,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("metrics lack %q:\n%.2000s", want, text)
			}
		}
	}
}

// TestTransactionalNoteWrite: note_write, marked transactional by serve, writes its note and its
// call's completion in one transaction through the real wiring; note_get then reads it.
func TestTransactionalNoteWrite(t *testing.T) {
	_, dsn := pgtest.NewDBWithDSN(t)
	s := startServe(t, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken, "GUILDS_SANDBOX": "local"}, nil)
	defer s.stop(t)
	base := "http://" + s.addr
	runID := setupRun(t, base, 10)
	st, out := request(t, "POST", base+"/api/runs/"+runID+"/calls", map[string]any{"name": "note_write", "call_id": "toolu_note",
		"arguments": map[string]any{"level": "agent", "key": "plan.md", "content": "step one"}})
	if st != 200 || strings.HasPrefix(fmt.Sprint(out["result"]), "ERROR") {
		t.Fatalf("note_write: %d %v", st, out)
	}
	st, out = request(t, "POST", base+"/api/runs/"+runID+"/calls", map[string]any{"name": "note_get", "arguments": map[string]any{"path": "agent/plan.md"}})
	if st != 200 || !strings.Contains(fmt.Sprint(out["result"]), "step one") {
		t.Fatalf("note_get: %d %v", st, out)
	}
	calls := checkCounter(t, base, runID)
	if len(calls) != 2 || calls[0]["status"] != "completed" || calls[0]["client_call_id"] != "toolu_note" {
		t.Fatalf("stored calls: %v", calls)
	}
}

// TestUnknownToolNameIsRedactedAndUnlabelled: a call whose name is one of the agent's secret values
// (a tool the run does not offer) is stored with the name redacted, in the API's view and in the
// tool_calls row, and counted under the one label _not_offered: /metrics never carries the secret,
// and distinct unknown names add no series.
func TestUnknownToolNameIsRedactedAndUnlabelled(t *testing.T) {
	db, dsn := pgtest.NewDBWithDSN(t)
	s := startServe(t, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken,
		"GUILDS_SANDBOX": "local"}, nil)
	defer s.stop(t)
	base := "http://" + s.addr
	const secret = "sk_live_9f8e7d6c5b4a3210"
	_, org := request(t, "POST", base+"/api/orgs", map[string]any{"name": "o"})
	_, g := request(t, "POST", base+"/api/orgs/"+org["id"].(string)+"/guilds", map[string]any{"name": "g"})
	_, a := request(t, "POST", base+"/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": "a"})
	agent := a["id"].(string)
	if st, out := request(t, "PUT", base+"/api/agents/"+agent+"/secrets/STRIPE_KEY", map[string]any{"value": secret}); st != 200 {
		t.Fatalf("put secret: %d %v", st, out)
	}
	st, run := request(t, "POST", base+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct", "tool_call_budget": 20})
	if st != 201 {
		t.Fatalf("start run: %d %v", st, run)
	}
	runID := run["id"].(string)
	for _, name := range []string{secret, "made_up_tool_one", "made_up_tool_two", "schedule_list"} {
		st, out := request(t, "POST", base+"/api/runs/"+runID+"/calls", map[string]any{"name": name})
		if st != 200 {
			t.Fatalf("call %q: %d %v", name, st, out)
		}
		if strings.Contains(fmt.Sprint(out), secret) {
			t.Fatalf("the answer carries the secret: %v", out)
		}
	}
	calls := storedCalls(t, base, runID)
	if len(calls) != 4 || strings.Contains(fmt.Sprint(calls[0]["name"]), secret) || !strings.Contains(fmt.Sprint(calls[0]["name"]), "[REDACTED]") {
		t.Fatalf("stored call names: %v", calls)
	}
	var rowsWithSecret, rows int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE name LIKE '%' || $2 || '%' OR arguments::text LIKE '%' || $2 || '%'
		OR result LIKE '%' || $2 || '%' OR metadata::text LIKE '%' || $2 || '%'), count(*) FROM tool_calls WHERE run_id = $1`, runID, secret).Scan(&rowsWithSecret, &rows); err != nil {
		t.Fatal(err)
	}
	if rows != 4 || rowsWithSecret != 0 {
		t.Fatalf("tool_calls rows: %d, %d of them carry the secret", rows, rowsWithSecret)
	}
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	text := string(body)
	if strings.Contains(text, secret) || strings.Contains(text, "made_up_tool") {
		t.Fatalf("/metrics carries an unknown tool name:\n%s", text)
	}
	for _, want := range []string{`guilds_tool_calls_total{outcome="not_offered",tool="_not_offered"} 3`, `guilds_tool_calls_total{outcome="ok",tool="schedule_list"} 1`} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(text, "guilds_tool_calls_total"))
		}
	}
}

// grepLines keeps the lines of text that contain sub.
func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
