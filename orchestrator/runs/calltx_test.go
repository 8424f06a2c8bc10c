package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// TestTransactionalCalls: a transactional native tool's writes and its call's completion commit
// together: a call that succeeds keeps its write, a call that fails has it rolled back (its ERROR
// stored), and when the completion cannot be stored the write is gone with it.
func TestTransactionalCalls(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	store := postgres.NewStore(pool)
	reg := registry.New()
	write := func(fail, spoil bool) registry.Handler {
		return func(ctx context.Context, c *registry.Call) (string, error) {
			var a struct {
				Org string `json:"org"`
			}
			_ = json.Unmarshal(c.Args, &a)
			if err := store.CreateOrg(ctx, orchestrator.Org{ID: a.Org, Name: a.Org, CreatedAt: time.Now().UTC()}); err != nil {
				return "", err
			}
			if spoil { // the call's row changes behind the transaction: its completion fails
				if _, err := pool.Exec(context.Background(), "UPDATE tool_calls SET status = 'interrupted', finished_at = now() WHERE call_id = $1", c.CallID); err != nil {
					return "", err
				}
			}
			if fail {
				return "", errors.New("failed after writing")
			}
			return "wrote " + a.Org, nil
		}
	}
	schema := json.RawMessage(`{"type":"object","properties":{"org":{"type":"string","description":"id"}}}`)
	for name, h := range map[string]registry.Handler{"jot": write(false, false), "jot_fail": write(true, false), "jot_spoil": write(false, true)} {
		reg.MustRegister(registry.Tool{Name: name, Family: orchestrator.FamilyAlways, Description: "Writes an org.", Schema: schema, Handler: h, Transactional: true})
	}
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	run, err := svc.StartRun(ctx, seedAgent(t, store, "t"), runs.StartRequest{Kind: orchestrator.KindDirect})
	must(err)
	exists := func(id string) bool {
		_, err := store.GetOrg(ctx, id)
		return err == nil
	}
	for _, c := range []struct {
		tool, org string
		kept      bool
		stored    string // the stored result's start; "" when the call is refused
	}{
		{"jot", "org_kept", true, "wrote org_kept"},
		{"jot_fail", "org_failed", false, "ERROR: failed after writing"},
		{"jot_spoil", "org_spoiled", false, ""},
	} {
		res, err := svc.Call(ctx, run.ID, runs.CallRequest{Name: c.tool, Arguments: json.RawMessage(`{"org":"` + c.org + `"}`)})
		if got := exists(c.org); got != c.kept {
			t.Errorf("%s: the write is there: %v, want %v (result %q, err %v)", c.tool, got, c.kept, res.Result, err)
		}
		switch {
		case c.stored == "" && err == nil:
			t.Errorf("%s: answered %q, want an error", c.tool, res.Result)
		case c.stored != "" && (err != nil || len(res.Result) < len(c.stored) || res.Result[:len(c.stored)] != c.stored):
			t.Errorf("%s: %q %v, want a result starting %q", c.tool, res.Result, err, c.stored)
		}
	}
	calls, err := svc.ListCalls(ctx, run.ID, orchestrator.CallPage{})
	must(err)
	if len(calls) != 3 || calls[0].Status != orchestrator.CallCompleted || calls[1].Status != orchestrator.CallCompleted || !calls[1].IsError || calls[2].Status != orchestrator.CallInterrupted {
		t.Fatalf("stored calls: %+v", calls)
	}
}
