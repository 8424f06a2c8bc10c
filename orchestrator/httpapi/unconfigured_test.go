package httpapi_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/httpapi"
)

// TestUnconfiguredServices: a server built without a service answers that service's routes with
// a 500 naming what is not configured, not a panic.
func TestUnconfiguredServices(t *testing.T) {
	logs := &syncBuffer{}
	e := &env{t: t, logs: logs}
	e.app = httpapi.New(guarded(&httpapi.Server{Log: slog.New(slog.NewJSONHandler(logs, nil))}, nil))
	for _, tc := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"POST", "/api/agents/a1/runs", map[string]any{}, "the run service is not configured"},
		{"GET", "/api/runs/r1", nil, "the run service is not configured"},
		{"POST", "/api/runs/r1/close", nil, "the run service is not configured"},
		{"POST", "/api/runs/r1/calls", map[string]any{"name": "note_list"}, "the run service is not configured"},
		{"GET", "/api/runs/r1/calls", nil, "the run service is not configured"},
		{"POST", "/api/runs/r1/generations", nil, "the run service is not configured"},
		{"GET", "/api/mcp/servers", nil, "the catalog and bindings service is not configured"},
		{"GET", "/api/collections/c1", nil, "the artifact store is not configured"},
		{"GET", "/api/guilds/g1/issues", nil, "the platform store is not configured"},
		{"GET", "/api/agents/a1/secrets", nil, "the secrets service is not configured"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			e.t = t
			status, out := e.do(tc.method, tc.path, tc.body)
			if status != http.StatusInternalServerError || !strings.Contains(out["error"].(map[string]any)["message"].(string), tc.want) {
				t.Fatalf("got %d %v, want 500 %q", status, out, tc.want)
			}
		})
	}
	if strings.Contains(logs.String(), "handler panicked") {
		t.Fatalf("a handler panicked:\n%s", logs.String())
	}
}
