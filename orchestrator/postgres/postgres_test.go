package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv("PGTEST_HELPER_CLUSTER") != "" {
		helperCluster(os.Getenv("PGTEST_HELPER_CLUSTER"))
		return
	}
	pgtest.Main(m)
}

// TestMigrateConcurrentOnce runs Migrate from several goroutines on a fresh database: each
// migration is applied exactly once and a second run applies nothing.
func TestMigrateConcurrentOnce(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	if _, err := pool.Exec(ctx, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"); err != nil {
		t.Fatal(err)
	}
	ms, err := postgres.Migrations()
	if err != nil || len(ms) == 0 {
		t.Fatalf("migrations: %v %v", ms, err)
	}
	var wg sync.WaitGroup
	applied := make([][]string, 4)
	errs := make([]error, 4)
	for i := range applied {
		wg.Go(func() { applied[i], errs[i] = postgres.Migrate(ctx, pool) })
	}
	wg.Wait()
	total := 0
	for i := range applied {
		if errs[i] != nil {
			t.Fatalf("migrate %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	if total != len(ms) {
		t.Fatalf("applied %d migrations over 4 concurrent runs, want %d (each once)", total, len(ms))
	}
	again, err := postgres.Migrate(ctx, pool)
	if err != nil || len(again) != 0 {
		t.Fatalf("second migrate applied %v (err %v), want nothing", again, err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != len(ms) {
		t.Fatalf("schema_migrations has %d rows (err %v), want %d", n, err, len(ms))
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("pg_trgm not enabled: %d %v", n, err)
	}
}

// TestStoreScopesAndRuns exercises the store: not-found errors carry ENOTFOUND, agents take their
// guild's organisation, and RecordCall refuses out-of-order, closed and spent runs writing nothing.
func TestStoreScopesAndRuns(t *testing.T) {
	ctx := context.Background()
	s := postgres.NewStore(pgtest.NewDB(t))
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := s.CreateGuild(ctx, orchestrator.Guild{ID: "gld_x", OrgID: "org_missing", Name: "g", CreatedAt: now}); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Fatalf("guild in missing org: %v", err)
	}
	must(t, s.CreateOrg(ctx, orchestrator.Org{ID: "org_1", Name: "Org", CreatedAt: now}))
	must(t, s.CreateGuild(ctx, orchestrator.Guild{ID: "gld_1", OrgID: "org_1", Name: "G", CreatedAt: now}))
	must(t, s.CreateAgent(ctx, orchestrator.Agent{ID: "agt_1", GuildID: "gld_1", Name: "A", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now}))
	a, err := s.GetAgent(ctx, "agt_1")
	if err != nil || a.OrgID != "org_1" || !a.Config.Memory || a.Config.Coding {
		t.Fatalf("agent %+v %v", a, err)
	}
	if _, err := s.GetRun(ctx, "run_nope"); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Fatalf("missing run: %v", err)
	}
	run := orchestrator.Run{ID: "run_1", AgentID: "agt_1", GuildID: "gld_1", OrgID: "org_1", Kind: orchestrator.KindDirect,
		Status: orchestrator.RunOpen, ToolCallBudget: 2, CreatedAt: now}
	must(t, s.CreateRun(ctx, run))
	call := func(seq int64) orchestrator.ToolCall {
		return orchestrator.ToolCall{RunID: "run_1", Seq: seq, CallID: fmt.Sprintf("call_%d", seq), Name: "t",
			Arguments: json.RawMessage(`{}`), Result: "ok", Metadata: json.RawMessage(`{}`), StartedAt: now, FinishedAt: now}
	}
	if err := s.RecordCall(ctx, call(2)); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		t.Fatalf("out-of-order call: %v", err)
	}
	must(t, s.RecordCall(ctx, call(1)))
	must(t, s.RecordCall(ctx, call(2)))
	if err := s.RecordCall(ctx, call(3)); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		t.Fatalf("call past budget: %v", err)
	}
	got, err := s.GetRun(ctx, "run_1")
	if err != nil || got.ToolCallsUsed != 2 || got.Remaining() != 0 {
		t.Fatalf("run after calls: %+v %v", got, err)
	}
	calls, err := s.ListCalls(ctx, "run_1")
	if err != nil || len(calls) != 2 || calls[0].Seq != 1 || calls[1].Seq != 2 {
		t.Fatalf("calls: %+v %v", calls, err)
	}
	run.ID, run.ToolCallBudget = "run_2", 5
	must(t, s.CreateRun(ctx, run))
	closed, err := s.CloseRun(ctx, "run_2", now)
	if err != nil || closed.Status != orchestrator.RunClosed || closed.ClosedAt == nil {
		t.Fatalf("close: %+v %v", closed, err)
	}
	c := call(1)
	c.RunID, c.CallID = "run_2", "call_r2"
	if err := s.RecordCall(ctx, c); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		t.Fatalf("call on closed run: %v", err)
	}
	if calls, _ := s.ListCalls(ctx, "run_2"); len(calls) != 0 {
		t.Fatalf("closed run stored %d calls", len(calls))
	}
}

// TestClusterWatchdogStopsOrphan starts a cluster in a child process, kills that process with
// SIGKILL (no chance to clean up), and checks the watchdog stopped the server.
func TestClusterWatchdogStopsOrphan(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second PostgreSQL cluster")
	}
	root, err := os.MkdirTemp("", "pgwatch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "pg")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PGTEST_HELPER_CLUSTER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "started") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper did not start the cluster: %q", buf[:n])
	}
	pidFile := filepath.Join(dir, "data", "postmaster.pid")
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("server not running: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(pidFile); os.IsNotExist(err) {
			return // the server shut down and removed its pid file
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres still running 30s after its owner was killed")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// helperCluster runs in the child process of TestClusterWatchdogStopsOrphan: start, report, wait.
func helperCluster(dir string) {
	c, err := postgres.StartCluster(context.Background(), dir, postgres.ClusterOptions{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	_ = c
	fmt.Println("started")
	time.Sleep(time.Hour)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
