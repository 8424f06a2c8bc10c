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
