package runs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// lockedBuffer is a log sink safe for the service's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestModelMistakesLogAtInfo: a call the tool refuses as the model's mistake (bad arguments, a
// missing or forbidden thing, a conflict) is logged at INFO (arguments its schema refuses are not
// logged at all); a tool that breaks is logged at WARN.
func TestModelMistakesLogAtInfo(t *testing.T) {
	pool := pgtest.NewDB(t)
	store := postgres.NewStore(pool)
	reg := registry.New()
	for name, err := range map[string]error{
		"invalid":   orchestrator.Errorf(orchestrator.EINVALID, "key must end in .md"),
		"missing":   orchestrator.Errorf(orchestrator.ENOTFOUND, "no record r1"),
		"forbidden": orchestrator.Errorf(orchestrator.EFORBIDDEN, "read-only collection"),
		"conflict":  orchestrator.Errorf(orchestrator.ECONFLICT, "unique value taken"),
		"args":      &registry.ArgsError{Problems: []string{"argument xs: got string, want array"}},
		"broken":    errors.New("upstream connection reset"),
	} {
		reg.MustRegister(registry.Tool{Name: name, Family: orchestrator.FamilyAlways, Description: "Fails.",
			Schema:  json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, *registry.Call) (string, error) { return "", err }})
	}
	logs := &lockedBuffer{}
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Log: slog.New(slog.NewJSONHandler(logs, nil))}
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	run, err := svc.StartRun(ctx, seedAgent(t, store, "l"), runs.StartRequest{Kind: orchestrator.KindDirect})
	must(err)
	want := map[string]string{"invalid": "INFO", "missing": "INFO", "forbidden": "INFO", "conflict": "INFO", "args": "", "broken": "WARN"}
	for name := range want {
		res, err := svc.Call(ctx, run.ID, runs.CallRequest{Name: name, Arguments: json.RawMessage(`{}`)})
		must(err)
		if !strings.HasPrefix(res.Result, "ERROR: ") {
			t.Fatalf("%s: %q", name, res.Result)
		}
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Level, Msg, Tool string }
		must(json.Unmarshal([]byte(line), &rec))
		if rec.Msg == "tool handler failed" {
			got[rec.Tool] = rec.Level
		}
	}
	for name, level := range want {
		if got[name] != level {
			t.Errorf("%s logged at %q, want %s (log: %v)", name, got[name], level, got)
		}
	}
}
