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
// guild's organisation, StartCall takes contiguous seqs and refuses closed and spent runs (and a
// duplicate client call id) writing nothing, CompleteCall and InterruptCalls finish started calls,
// and ListCalls pages.
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
		Status: orchestrator.RunOpen, ToolCallBudget: 3, CreatedAt: now}
	must(t, s.CreateRun(ctx, run))
	call := func(runID, id, client string) orchestrator.ToolCall {
		return orchestrator.ToolCall{RunID: runID, CallID: id, ClientCallID: client, Name: "t", RequestHash: "h-" + id,
			Arguments: json.RawMessage(`{"a":1}`), StartedAt: now}
	}
	for i, client := range []string{"", "toolu_1"} {
		seq, err := s.StartCall(ctx, call("run_1", fmt.Sprintf("call_%d", i+1), client))
		if err != nil || seq != int64(i+1) {
			t.Fatalf("start call %d: seq %d, %v", i+1, seq, err)
		}
	}
	if _, err := s.StartCall(ctx, call("run_1", "call_dup", "toolu_1")); err != orchestrator.ErrDuplicateCall {
		t.Fatalf("duplicate client call id: %v", err)
	}
	got, err := s.GetRun(ctx, "run_1")
	if err != nil || got.ToolCallsUsed != 2 {
		t.Fatalf("the duplicate moved the counter: %+v %v", got, err)
	}
	stored, err := s.GetClientCall(ctx, "run_1", "toolu_1")
	if err != nil || stored.Seq != 2 || stored.Status != orchestrator.CallStarted || stored.FinishedAt != nil || stored.RequestHash != "h-call_2" {
		t.Fatalf("client call: %+v %v", stored, err)
	}
	if _, err := s.GetClientCall(ctx, "run_1", "toolu_nope"); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Fatalf("missing client call: %v", err)
	}
	done := call("run_1", "call_1", "")
	done.Seq, done.Result, done.Metadata, done.FinishedAt, done.DurationMS = 1, "ok", json.RawMessage(`{"k":"v"}`), &now, 1.5
	must(t, s.CompleteCall(ctx, done))
	if err := s.CompleteCall(ctx, done); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		t.Fatalf("completing a completed call: %v", err)
	}
	if _, err := s.StartCall(ctx, call("run_1", "call_3", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartCall(ctx, call("run_1", "call_4", "")); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		t.Fatalf("call past budget: %v", err)
	}
	n, err := s.InterruptCalls(ctx, now.Add(time.Second), "ERROR: interrupted", now.Add(-time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("interrupt: %d %v", n, err)
	}
	calls, err := s.ListCalls(ctx, "run_1", orchestrator.CallPage{})
	if err != nil || len(calls) != 3 {
		t.Fatalf("calls: %+v %v", calls, err)
	}
	for i, want := range []string{orchestrator.CallCompleted, orchestrator.CallInterrupted, orchestrator.CallInterrupted} {
		c := calls[i]
		if c.Seq != int64(i+1) || c.Status != want || c.FinishedAt == nil {
			t.Fatalf("call %d: %+v, want status %s", i+1, c, want)
		}
	}
	if calls[0].Result != "ok" || calls[1].Result != "ERROR: interrupted" || !calls[1].IsError || calls[1].DurationMS != 1000 || calls[1].ClientCallID != "toolu_1" {
		t.Fatalf("stored calls: %+v", calls)
	}
	page, err := s.ListCalls(ctx, "run_1", orchestrator.CallPage{After: 1, Limit: 1})
	if err != nil || len(page) != 1 || page[0].Seq != 2 {
		t.Fatalf("page after 1, limit 1: %+v %v", page, err)
	}
	run.ID, run.ToolCallBudget = "run_2", 5
	must(t, s.CreateRun(ctx, run))
	closed, err := s.CloseRun(ctx, "run_2", now, orchestrator.CloseOperator)
	if err != nil || closed.Status != orchestrator.RunClosed || closed.ClosedAt == nil {
		t.Fatalf("close: %+v %v", closed, err)
	}
	if _, err := s.StartCall(ctx, call("run_2", "call_r2", "")); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		t.Fatalf("call on closed run: %v", err)
	}
	if calls, _ := s.ListCalls(ctx, "run_2", orchestrator.CallPage{}); len(calls) != 0 {
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

// TestInterruptOnlyCallsOfGoneProcesses: replicas on one database never interrupt each other's
// running calls; a call is interrupted once its process stops beating (or never registered, or
// ended), and a beat after the row was removed registers the process again.
func TestInterruptOnlyCallsOfGoneProcesses(t *testing.T) {
	ctx := context.Background()
	s := postgres.NewStore(pgtest.NewDB(t))
	now := time.Now().UTC().Truncate(time.Microsecond)
	must(t, s.CreateOrg(ctx, orchestrator.Org{ID: "org_1", Name: "Org", CreatedAt: now}))
	must(t, s.CreateGuild(ctx, orchestrator.Guild{ID: "gld_1", OrgID: "org_1", Name: "G", CreatedAt: now}))
	must(t, s.CreateAgent(ctx, orchestrator.Agent{ID: "agt_1", GuildID: "gld_1", Name: "A", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now}))
	must(t, s.CreateRun(ctx, orchestrator.Run{ID: "run_1", AgentID: "agt_1", GuildID: "gld_1", OrgID: "org_1", Kind: orchestrator.KindDirect,
		Status: orchestrator.RunOpen, ToolCallBudget: 10, CreatedAt: now}))
	live := orchestrator.Process{ID: "prc_live", Host: "a", PID: 1, StartedAt: now}
	gone := orchestrator.Process{ID: "prc_gone", Host: "b", PID: 2, StartedAt: now}
	must(t, s.BeatProcess(ctx, live, now))
	must(t, s.BeatProcess(ctx, gone, now.Add(-2*time.Minute)))
	for i, proc := range []string{"prc_live", "prc_gone", "prc_never_registered", ""} {
		if _, err := s.StartCall(ctx, orchestrator.ToolCall{RunID: "run_1", CallID: fmt.Sprintf("call_%d", i), Name: "t",
			Arguments: json.RawMessage(`{}`), StartedAt: now, Process: proc}); err != nil {
			t.Fatal(err)
		}
	}
	status := func() []string {
		calls, err := s.ListCalls(ctx, "run_1", orchestrator.CallPage{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range calls {
			out = append(out, c.Status)
		}
		return out
	}
	n, err := s.InterruptCalls(ctx, now, "ERROR: interrupted", now.Add(-45*time.Second))
	if got := fmt.Sprint(status()); err != nil || n != 3 || got != "[started interrupted interrupted interrupted]" {
		t.Fatalf("first recovery: %d %v, statuses %s", n, err, got)
	}
	// The live process stops beating: a peer's later recovery interrupts its call.
	n, err = s.InterruptCalls(ctx, now.Add(time.Minute), "ERROR: interrupted", now.Add(time.Minute-45*time.Second))
	if got := fmt.Sprint(status()); err != nil || n != 1 || got != "[interrupted interrupted interrupted interrupted]" {
		t.Fatalf("after the live process went silent: %d %v, statuses %s", n, err, got)
	}
	// A clean stop removes the row; a beat registers it again.
	must(t, s.EndProcess(ctx, live.ID))
	must(t, s.BeatProcess(ctx, live, now.Add(2*time.Minute)))
	if _, err := s.StartCall(ctx, orchestrator.ToolCall{RunID: "run_1", CallID: "call_9", Name: "t", Arguments: json.RawMessage(`{}`),
		StartedAt: now, Process: live.ID}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.InterruptCalls(ctx, now.Add(2*time.Minute), "x", now.Add(2*time.Minute-45*time.Second)); err != nil || n != 0 {
		t.Fatalf("a beating process's call was interrupted: %d %v", n, err)
	}
}

// TestSeedServerWithoutEndpoints: a seeded server that names no endpoints reads back with none
// (its stored endpoints are {}, so the admin's overlay joins an object, not null).
func TestSeedServerWithoutEndpoints(t *testing.T) {
	ctx := context.Background()
	s := postgres.NewStore(pgtest.NewDB(t))
	srv := orchestrator.MCPServer{Slug: "plain", Name: "Plain", Kind: orchestrator.ServerRemote, Transport: "http",
		URL: "https://plain.example/mcp", Auth: orchestrator.AuthNone, Published: true}
	if err := s.SeedCatalog(ctx, []orchestrator.MCPServer{srv}, time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetServer(ctx, "plain")
	if err != nil {
		t.Fatalf("read a seeded server without endpoints: %v", err)
	}
	if len(got.Endpoints) != 0 || got.URL != srv.URL {
		t.Fatalf("server read back as %+v", got)
	}
}
