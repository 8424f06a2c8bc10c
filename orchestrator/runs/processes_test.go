package runs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// TestZombiePredecessorIsGone: a predecessor killed in the middle of a call whose parent never
// reaps it (a zombie, here a child of this test) counts as gone: its restart on the same host
// interrupts that call at once instead of after ProcessStale.
func TestZombiePredecessorIsGone(t *testing.T) {
	ctx := context.Background()
	store := postgres.NewStore(pgtest.NewDB(t))
	zombie := exec.Command("sleep", "60")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	pid := zombie.Process.Pid
	t.Cleanup(func() { _ = zombie.Wait() }) // reaped only when the test ends
	if err := zombie.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	for i := 0; ; i++ {
		b, err := os.ReadFile(stat)
		if err == nil && bytes.Contains(b, []byte(") Z ")) {
			break
		}
		if i == 250 {
			t.Fatalf("the killed predecessor did not become a zombie: %q %v", b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	release, ran := make(chan struct{}), make(chan struct{}, 1)
	defer close(release)
	reg := registry.New()
	reg.MustRegister(registry.Tool{Name: "slow", Family: orchestrator.FamilyAlways, Description: "Waits to be released.",
		Schema: json.RawMessage(`{"type":"object","properties":{}}`),
		Handler: func(ctx context.Context, c *registry.Call) (string, error) {
			ran <- struct{}{}
			<-release
			return "slow done", nil
		}})
	replica := func(id string, pid int) *runs.Service {
		return &runs.Service{Scopes: store, Runs: store, Registry: reg,
			Process: orchestrator.Process{ID: id, Host: "host-z", PID: pid, StartedAt: time.Now().UTC()}}
	}
	dead := replica("prc_zombie", pid)
	if _, err := dead.RecoverCalls(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := dead.StartRun(ctx, seedAgent(t, store, "z"), runs.StartRequest{Kind: orchestrator.KindDirect})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = dead.Call(ctx, run.ID, runs.CallRequest{Name: "slow", CallID: "toolu_z"}) }()
	<-ran
	restarted := replica("prc_restarted", 1<<22+3)
	if n, err := restarted.RecoverCalls(ctx); err != nil || n != 1 {
		t.Fatalf("the restart beside a zombie predecessor interrupted %d calls (%v), want its one", n, err)
	}
	stored, err := store.GetClientCall(ctx, run.ID, "toolu_z")
	if err != nil || stored.Status != orchestrator.CallInterrupted {
		t.Fatalf("the zombie's call after the restart: %+v %v", stored, err)
	}
}
