package runs_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/tools/secrets"
)

// TestReplicasShareOneDatabase: two orchestrator processes on one database. A's running call is
// not interrupted by B's start-up recovery; a retry sent to B under A's call_id waits for A's call
// and answers its result without running it again; a restart on A's host after A died (its pid
// gone) interrupts A's call at once.
func TestReplicasShareOneDatabase(t *testing.T) {
	ctx := context.Background()
	store := postgres.NewStore(pgtest.NewDB(t))
	release := make(chan struct{})
	ran := make(chan struct{}, 4)
	reg := registry.New()
	reg.MustRegister(registry.Tool{Name: "slow", Family: orchestrator.FamilyAlways, Description: "Waits to be released.",
		Schema: json.RawMessage(`{"type":"object","properties":{}}`),
		Handler: func(ctx context.Context, c *registry.Call) (string, error) {
			ran <- struct{}{}
			<-release
			return "slow done", nil
		}})
	now := time.Now().UTC()
	replica := func(id string, pid int) *runs.Service {
		return &runs.Service{Scopes: store, Runs: store, Registry: reg,
			Process: orchestrator.Process{ID: id, Host: "host-a", PID: pid, StartedAt: now}}
	}
	a, b := replica("prc_a", 1<<22+1), replica("prc_b", 0)
	b.Process.Host = "host-b"
	if _, err := a.RecoverCalls(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := a.StartRun(ctx, seedAgent(t, store, "r"), runs.StartRequest{Kind: orchestrator.KindDirect})
	if err != nil {
		t.Fatal(err)
	}
	req := runs.CallRequest{Name: "slow", CallID: "toolu_01"}
	first := make(chan runs.CallResult, 1)
	go func() {
		res, err := a.Call(ctx, run.ID, req)
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	<-ran
	// B starts while A's call runs: A beats, so B's recovery leaves the call alone.
	if n, err := b.RecoverCalls(ctx); err != nil || n != 0 {
		t.Fatalf("B's recovery interrupted %d calls of a live replica (%v)", n, err)
	}
	retried := make(chan runs.CallResult, 1)
	go func() {
		res, err := b.Call(ctx, run.ID, req)
		if err != nil {
			t.Error(err)
		}
		retried <- res
	}()
	select {
	case res := <-retried:
		t.Fatalf("the retry on B answered before A's call ended: %+v", res)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	got, again := <-first, <-retried
	if got.Status != orchestrator.CallCompleted || !again.Replayed || again.Seq != got.Seq || again.Result != got.Result || len(ran) != 0 {
		t.Fatalf("first %+v, retry %+v (%d more runs of the tool)", got, again, len(ran))
	}

	// A dies in the middle of a call (its row stays, its pid is gone); its restart on the same host
	// interrupts that call at once instead of after ProcessStale.
	release = make(chan struct{})
	defer close(release)
	go func() { _, _ = a.Call(ctx, run.ID, runs.CallRequest{Name: "slow", CallID: "toolu_02"}) }()
	<-ran
	restarted := replica("prc_a2", 1<<22+2)
	if n, err := restarted.RecoverCalls(ctx); err != nil || n != 1 {
		t.Fatalf("the restart on A's host interrupted %d calls (%v), want A's one", n, err)
	}
	stored, err := store.GetClientCall(ctx, run.ID, "toolu_02")
	if err != nil || stored.Status != orchestrator.CallInterrupted {
		t.Fatalf("A's call after its restart: %+v %v", stored, err)
	}
}

// TestSecretArgsMaskedBeforeTheToolRuns: a tool's SecretArgs (secret_store's value) are masked in
// the call's started record, which is written before the handler runs; the registered
// secret_store declares its value so.
func TestSecretArgsMaskedBeforeTheToolRuns(t *testing.T) {
	ctx := context.Background()
	store := postgres.NewStore(pgtest.NewDB(t))
	running, release := make(chan struct{}), make(chan struct{})
	reg := registry.New()
	reg.MustRegister(registry.Tool{Name: "keep", Family: orchestrator.FamilyAlways, Description: "Keeps a value.",
		Schema:     json.RawMessage(`{"type":"object","properties":{"value":{"type":"string","description":"the secret"}}}`),
		SecretArgs: []string{"value"},
		Handler: func(context.Context, *registry.Call) (string, error) {
			close(running)
			<-release
			return "kept", nil
		}})
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg}
	run, err := svc.StartRun(ctx, seedAgent(t, store, "s"), runs.StartRequest{Kind: orchestrator.KindDirect})
	if err != nil {
		t.Fatal(err)
	}
	const value = "sk_live_masked_before_it_runs_42"
	done := make(chan error, 1)
	go func() {
		_, err := svc.Call(ctx, run.ID, runs.CallRequest{Name: "keep", CallID: "toolu_s", Arguments: json.RawMessage(`{"value":"` + value + `"}`)})
		done <- err
	}()
	<-running
	started, err := store.GetClientCall(ctx, run.ID, "toolu_s")
	close(release)
	if err != nil || started.Status != orchestrator.CallStarted || strings.Contains(string(started.Arguments), value) || !strings.Contains(string(started.Arguments), "value") {
		t.Fatalf("the started record: %+v %v", started, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	all := registry.New()
	if err := (&secrets.Service{Store: store}).Register(all); err != nil {
		t.Fatal(err)
	}
	tool, _ := all.Get("secret_store")
	if !slices.Contains(tool.SecretArgs, "value") || !tool.Transactional {
		t.Fatalf("secret_store declares SecretArgs %v, transactional %v", tool.SecretArgs, tool.Transactional)
	}
}
