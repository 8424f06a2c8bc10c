package schedules_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/tools/schedules"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clock is a settable clock.
type clock struct{ t atomic.Pointer[time.Time] }

func (c *clock) set(t time.Time)     { c.t.Store(&t) }
func (c *clock) now() time.Time      { return *c.t.Load() }
func (c *clock) add(d time.Duration) { c.set(c.now().Add(d)) }

type world struct {
	t     testing.TB
	ctx   context.Context
	pool  *pgxpool.Pool
	store *postgres.Store
	reg   *registry.Registry
	svc   *runs.Service
	clk   *clock
}

func newWorld(t testing.TB) *world {
	w := &world{t: t, ctx: context.Background(), pool: pgtest.NewDB(t), reg: registry.New(), clk: &clock{}}
	w.store = postgres.NewStore(w.pool)
	w.clk.set(time.Date(2027, 5, 3, 8, 2, 0, 0, time.UTC))
	now := w.clk.now()
	must(t, w.store.CreateOrg(w.ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}))
	must(t, w.store.CreateGuild(w.ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}))
	for _, id := range []string{"a1", "a2"} {
		cfg := orchestrator.DefaultAgentConfig()
		cfg.MaxSchedules = orchestrator.MaxMaxSchedules
		must(t, w.store.CreateAgent(w.ctx, orchestrator.Agent{ID: id, GuildID: "g1", OrgID: "o1", Name: id, Config: cfg, CreatedAt: now, UpdatedAt: now}))
	}
	must(t, (&schedules.Tools{Store: w.store, Now: w.clk.now, Rand: rand.New(rand.NewPCG(1, 2))}).Register(w.reg))
	w.svc = &runs.Service{Scopes: w.store, Runs: w.store, Registry: w.reg, Offer: runs.DefaultOffer{}, Now: w.clk.now}
	return w
}

func (w *world) call(agent, tool, args string) (string, error) {
	return w.reg.Invoke(w.ctx, tool, &registry.Call{AgentID: agent, GuildID: "g1", OrgID: "o1", Args: json.RawMessage(args), Meta: map[string]any{}})
}

func (w *world) ok(agent, tool, args string) string {
	w.t.Helper()
	out, err := w.call(agent, tool, args)
	if err != nil {
		w.t.Fatalf("%s %s: %v", tool, args, err)
	}
	return out
}

func (w *world) count(sql string, args ...any) int {
	w.t.Helper()
	var n int
	must(w.t, w.pool.QueryRow(w.ctx, sql, args...).Scan(&n))
	return n
}

// closeRuns closes every open run, as their clients would once done.
func (w *world) closeRuns() {
	w.t.Helper()
	rows, err := w.pool.Query(w.ctx, "SELECT id FROM runs WHERE status = 'open'")
	must(w.t, err)
	var ids []string
	for rows.Next() {
		var id string
		must(w.t, rows.Scan(&id))
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		_, err := w.svc.CloseRun(w.ctx, id, orchestrator.CloseOperator)
		must(w.t, err)
	}
}

func (w *world) scheduler() *schedules.Scheduler {
	return &schedules.Scheduler{Store: w.store, Runs: w.svc, Now: w.clk.now}
}

func TestScheduleTools(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct{ tool, args, want string }{
		{"schedule_create_cron", `{"cron":"*/4 * * * *","description":"x"}`, "at least 5 minutes apart"},
		{"schedule_create_cron", `{"cron":"0,3 * * * *","description":"x"}`, "at least 5 minutes apart"},
		{"schedule_create_cron", `{"cron":"0 * * * * *","description":"x"}`, "6 fields"},
		{"schedule_create_cron", `{"cron":"*/5 * * * *","description":"` + strings.Repeat("d", 401) + `"}`, "at most 400"},
		{"schedule_create_cron", `{"cron":"*/5 * * * *","description":"  "}`, "description is empty"},
		{"schedule_create_cron", `{"cron":"*/5 * * * *","description":"x","instruction":"` + strings.Repeat("i", 2001) + `"}`, "at most 2000"},
		{"schedule_create_window", `{"timezone":"Nowhere/City","start":"09:00","end":"10:00","max_wakes":2,"description":"x"}`, "IANA"},
		{"schedule_create_window", `{"timezone":"UTC","start":"10:00","end":"09:00","max_wakes":2,"description":"x"}`, "not after start"},
		{"schedule_create_window", `{"timezone":"UTC","start":"09:00","end":"09:10","max_wakes":4,"description":"x"}`, "at least 15 minutes"},
		{"schedule_pause", `{"id":"sch_nope"}`, "not found"},
	} {
		if _, err := w.call("a1", tc.tool, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %.80s: %v, want %q", tc.tool, tc.args, err, tc.want)
		}
	}
	if n := w.count("SELECT count(*) FROM schedules"); n != 0 {
		t.Fatalf("bad input stored %d schedules", n)
	}

	out := w.ok("a1", "schedule_create_cron", `{"cron":"*/5 * * * *","description":"check the inbox","instruction":"Read **new** mail."}`)
	if !strings.Contains(out, "next: 2027-05-03 08:05 UTC") {
		t.Fatalf("create: %s", out)
	}
	id := strings.Fields(strings.TrimPrefix(out, "created "))[0]
	out = w.ok("a1", "schedule_create_window", `{"timezone":"Europe/Paris","start":"09:00","end":"12:00","max_wakes":3,"description":"post a tip"}`)
	if !strings.Contains(out, "window 09:00-12:00 Europe/Paris, 3 wake-ups a day") {
		t.Fatalf("window: %s", out)
	}
	if list := w.ok("a2", "schedule_list", `{}`); !strings.Contains(list, "no schedules") {
		t.Fatalf("another agent sees: %s", list)
	}
	if _, err := w.call("a2", "schedule_pause", `{"id":"`+id+`"}`); err == nil {
		t.Fatal("another agent paused a1's schedule")
	}
	if out := w.ok("a1", "schedule_pause", `{"id":"`+id+`"}`); !strings.Contains(out, "[paused]") {
		t.Fatalf("pause: %s", out)
	}
	// Paused: no firing however late it gets.
	w.clk.add(time.Hour)
	_, err := w.scheduler().Tick(w.ctx) // the window schedule may fire; the paused one must not
	must(t, err)
	if w.count("SELECT count(*) FROM schedule_firings WHERE schedule_id = $1", id) != 0 {
		t.Fatal("a paused schedule fired")
	}
	// Resume recomputes next_run_at from now (09:02 → 09:05).
	if out := w.ok("a1", "schedule_resume", `{"id":"`+id+`"}`); !strings.Contains(out, "[active]") || !strings.Contains(out, "next: 2027-05-03 09:05 UTC") {
		t.Fatalf("resume: %s", out)
	}
	w.ok("a1", "schedule_delete", `{"id":"`+id+`"}`)
	if list := w.ok("a1", "schedule_list", `{}`); strings.Contains(list, id) || !strings.Contains(list, "post a tip") {
		t.Fatalf("after delete: %s", list)
	}
}

// TestSchedulerFiresOnceAndCatchesUp: three schedulers racing on one database start exactly one
// run per due wake-up, round after round; a schedule that missed hours of wake-ups fires once,
// carrying its instruction, and its next wake-up is after now.
func TestSchedulerFiresOnceAndCatchesUp(t *testing.T) {
	w := newWorld(t)
	const n = 60
	for i := 0; i < n; i++ {
		agent := []string{"a1", "a2"}[i%2]
		w.ok(agent, "schedule_create_cron", `{"cron":"*/5 * * * *","description":"s","instruction":"wake `+agent+`"}`)
	}
	race := func(round int) int64 {
		var wg sync.WaitGroup
		var started atomic.Int64
		for _, s := range []*schedules.Scheduler{w.scheduler(), w.scheduler(), w.scheduler()} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 3; k++ {
					got, err := s.Tick(w.ctx)
					if err != nil {
						t.Errorf("round %d: %v", round, err)
					}
					started.Add(int64(got))
				}
			}()
		}
		wg.Wait()
		return started.Load()
	}
	w.clk.add(3 * time.Hour) // downtime: 36 missed wake-ups each
	if got := race(0); got != n {
		t.Fatalf("schedulers report %d runs, want %d", got, n)
	}
	if got := w.count("SELECT count(*) FROM runs WHERE kind = 'schedule'"); got != n {
		t.Fatalf("%d schedule runs, want %d", got, n)
	}
	if got := w.count("SELECT count(DISTINCT schedule_id) FROM schedule_firings"); got != n {
		t.Fatalf("%d schedules fired, want %d", got, n)
	}
	if got := w.count("SELECT count(*) FROM schedules WHERE next_run_at <= $1 OR next_run_at > $2", w.clk.now(), w.clk.now().Add(5*time.Minute)); got != 0 {
		t.Fatalf("%d schedules not moved to the next wake-up after now", got)
	}
	if got := w.count("SELECT count(*) FROM schedule_firings f JOIN runs r ON r.id = f.run_id WHERE f.instruction = 'wake ' || r.agent_id"); got != n {
		t.Fatalf("%d firings carry their schedule's instruction for its agent, want %d", got, n)
	}
	// Nothing is due until the clock moves.
	if got, _ := w.scheduler().Tick(w.ctx); got != 0 {
		t.Fatalf("fired %d again", got)
	}
	// Every next wake-up, raced again: one run each, never two for one (schedule, due time).
	for round := 1; round <= 3; round++ {
		w.closeRuns() // a schedule whose last run is open skips its wake-up (TestScheduleSkipsWhileItsRunIsOpen)
		w.clk.add(5 * time.Minute)
		if got := race(round); got != n {
			t.Fatalf("round %d: next wake-up fired %d, want %d", round, got, n)
		}
		if got := w.count("SELECT count(*) FROM runs WHERE kind = 'schedule'"); got != n*(round+1) {
			t.Fatalf("round %d: %d schedule runs, want %d", round, got, n*(round+1))
		}
	}
	if got := w.count("SELECT count(*) FROM (SELECT DISTINCT schedule_id, due_at FROM schedule_firings) f"); got != 4*n {
		t.Fatalf("%d distinct (schedule, due time) firings, want %d", got, 4*n)
	}
	if got := w.count("SELECT count(*) FROM schedule_wakeups"); got != 0 {
		t.Fatalf("%d wake-ups left", got)
	}
	if got := w.count("SELECT count(*) FROM schedules s JOIN schedule_firings f ON f.run_id = s.last_run_id"); got != n {
		t.Fatalf("%d schedules name their last run, want %d", got, n)
	}
}

// injected wraps the runs service with failures at the points a crash or an outage would hit.
type injected struct {
	schedules.RunStarter
	mu         sync.Mutex
	failStarts int          // this many StartRun calls fail with an internal error before doing anything
	failWith   error        // when set, every StartRun fails with it before doing anything
	afterStart func() error // after a successful StartRun: its error replaces the success (a crash right after the run row)
}

func (i *injected) StartRun(ctx context.Context, agentID string, req runs.StartRequest) (orchestrator.Run, error) {
	i.mu.Lock()
	fail := i.failStarts > 0
	if fail {
		i.failStarts--
	}
	i.mu.Unlock()
	switch {
	case fail:
		return orchestrator.Run{}, errors.New("injected: connection refused")
	case i.failWith != nil:
		return orchestrator.Run{}, i.failWith
	}
	r, err := i.RunStarter.StartRun(ctx, agentID, req)
	if err == nil && i.afterStart != nil {
		return r, i.afterStart()
	}
	return r, err
}

// TestSchedulerCrashBetweenClaimAndStart: a scheduler claims due wake-ups and dies before starting
// their runs; after hours of downtime a fresh scheduler starts each claimed wake-up once (the
// missed wake-ups fold into it, no burst), and nothing is lost.
func TestSchedulerCrashBetweenClaimAndStart(t *testing.T) {
	w := newWorld(t)
	const n = 5
	for i := 0; i < n; i++ {
		w.ok("a1", "schedule_create_cron", `{"cron":"*/5 * * * *","description":"s","instruction":"go"}`)
	}
	w.clk.add(5 * time.Minute) // 08:07: the 08:05 wake-ups are due
	due := time.Date(2027, 5, 3, 8, 5, 0, 0, time.UTC)
	advanced, claimed, skipped, err := w.store.ClaimDue(w.ctx, w.clk.now(), 50, func(sc orchestrator.Schedule) *time.Time {
		next, _ := schedules.NextAfter(sc, w.clk.now())
		return next
	})
	must(t, err)
	// The crash: the claim committed, no run was started.
	if advanced != n || claimed != n || skipped != 0 || w.count("SELECT count(*) FROM schedule_wakeups WHERE state = 'pending' AND due_at = $1", due) != n || w.count("SELECT count(*) FROM runs") != 0 {
		t.Fatalf("after the claim: advanced %d, claimed %d, %d pending, %d runs", advanced, claimed, w.count("SELECT count(*) FROM schedule_wakeups"), w.count("SELECT count(*) FROM runs"))
	}
	w.clk.add(3 * time.Hour) // downtime
	// The first start after the restart hits an outage: the wake-ups stay pending, with the reason.
	flaky := &injected{RunStarter: w.svc, failStarts: n}
	s := w.scheduler()
	s.Runs = flaky
	if got, err := s.Tick(w.ctx); err != nil || got != 0 {
		t.Fatalf("tick during the outage: %d %v", got, err)
	}
	if got := w.count("SELECT count(*) FROM schedule_wakeups WHERE state = 'pending' AND attempts = 1 AND last_error LIKE '%connection refused%' AND due_at = $1", due); got != n {
		t.Fatalf("%d wake-ups kept pending with their first failure, want %d", got, n)
	}
	if got, err := s.Tick(w.ctx); err != nil || got != n {
		t.Fatalf("tick after the outage: %d %v, want %d", got, err, n)
	}
	if got := w.count("SELECT count(*) FROM runs WHERE kind = 'schedule'"); got != n {
		t.Fatalf("%d runs, want %d (one per claimed wake-up, none for the missed ones)", got, n)
	}
	if got := w.count("SELECT count(*) FROM schedule_firings WHERE due_at = $1", due); got != n {
		t.Fatalf("%d firings of the claimed wake-ups, want %d", got, n)
	}
	if got := w.count("SELECT count(*) FROM schedule_wakeups"); got != 0 {
		t.Fatalf("%d wake-ups left", got)
	}
	if got := w.count("SELECT count(*) FROM schedules WHERE next_run_at <= $1", w.clk.now()); got != 0 {
		t.Fatalf("%d schedules still due", got)
	}
}

// TestSchedulerCrashAfterRunStarted: the run is written, then the process dies before the firing
// is recorded (the transaction that drops the wake-up never commits). The next scheduler finds the
// run under the wake-up's id and records the firing: one run, not two.
func TestSchedulerCrashAfterRunStarted(t *testing.T) {
	w := newWorld(t)
	w.ok("a1", "schedule_create_cron", `{"cron":"*/5 * * * *","description":"s","instruction":"once"}`)
	w.clk.add(5 * time.Minute)
	ctx, crash := context.WithCancel(w.ctx)
	defer crash()
	s := w.scheduler()
	s.Runs = &injected{RunStarter: w.svc, afterStart: func() error { crash(); return context.Canceled }}
	if _, err := s.Tick(ctx); err == nil {
		t.Fatal("the crashed tick reported success")
	}
	if w.count("SELECT count(*) FROM runs") != 1 || w.count("SELECT count(*) FROM schedule_firings") != 0 || w.count("SELECT count(*) FROM schedule_wakeups WHERE state = 'pending'") != 1 {
		t.Fatalf("after the crash: %d runs, %d firings, %d pending", w.count("SELECT count(*) FROM runs"), w.count("SELECT count(*) FROM schedule_firings"), w.count("SELECT count(*) FROM schedule_wakeups"))
	}
	w.clk.add(time.Minute) // restarted a minute later; the schedule is not due again yet
	if got, err := w.scheduler().Tick(w.ctx); err != nil || got != 1 {
		t.Fatalf("recovery tick: %d %v, want the one wake-up", got, err)
	}
	if got := w.count("SELECT count(*) FROM runs"); got != 1 {
		t.Fatalf("%d runs after recovery, want 1", got)
	}
	if got := w.count("SELECT count(*) FROM schedule_firings f JOIN runs r ON r.id = f.run_id WHERE f.instruction = 'once'"); got != 1 {
		t.Fatalf("%d firings recorded for the run, want 1", got)
	}
	if got := w.count("SELECT count(*) FROM schedule_wakeups"); got != 0 {
		t.Fatalf("%d wake-ups left", got)
	}
}

// TestSchedulerGivesUpAFailingWakeup: a start that cannot succeed (a refusal, not an outage) is
// kept as failed with its reason at once; an outage is retried MaxWakeupAttempts times. The
// schedule itself keeps firing at its next wake-up.
func TestSchedulerGivesUpAFailingWakeup(t *testing.T) {
	w := newWorld(t)
	w.ok("a1", "schedule_create_cron", `{"cron":"*/5 * * * *","description":"s"}`)
	w.clk.add(5 * time.Minute)
	s := w.scheduler()
	s.Runs = &injected{RunStarter: w.svc, failWith: orchestrator.Errorf(orchestrator.EINVALID, "injected refusal")}
	if got, err := s.Tick(w.ctx); err != nil || got != 0 {
		t.Fatalf("refused tick: %d %v", got, err)
	}
	if got := w.count("SELECT count(*) FROM schedule_wakeups WHERE state = 'failed' AND attempts = 1 AND last_error LIKE '%injected refusal%'"); got != 1 {
		t.Fatalf("%d failed wake-ups, want 1", got)
	}
	s.Runs = &injected{RunStarter: w.svc, failStarts: 100}
	w.clk.add(5 * time.Minute)
	for k := 0; k < postgres.MaxWakeupAttempts+2; k++ {
		if got, err := s.Tick(w.ctx); err != nil || got != 0 {
			t.Fatalf("outage tick %d: %d %v", k, got, err)
		}
	}
	if got := w.count("SELECT count(*) FROM schedule_wakeups WHERE state = 'failed' AND attempts = $1", postgres.MaxWakeupAttempts); got != 1 {
		t.Fatalf("%d wake-ups given up after %d attempts, want 1", got, postgres.MaxWakeupAttempts)
	}
	w.clk.add(5 * time.Minute)
	if got, err := w.scheduler().Tick(w.ctx); err != nil || got != 1 {
		t.Fatalf("next wake-up after the failures: %d %v", got, err)
	}
	if got := w.count("SELECT count(*) FROM runs"); got != 1 {
		t.Fatalf("%d runs, want 1", got)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestScheduleFloodIsCapped: 33 schedule_create_cron calls of one run at once (the attack that
// made 32 runs every five minutes) create max_schedules (default 10) schedules; the others are
// tool errors naming the limit and what to do, and the next tick starts 10 runs. Raising the
// agent's max_schedules lets more in.
func TestScheduleFloodIsCapped(t *testing.T) {
	w := newWorld(t)
	now := w.clk.now()
	must(t, w.store.CreateAgent(w.ctx, orchestrator.Agent{ID: "a3", GuildID: "g1", OrgID: "o1", Name: "a3", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}))
	run, err := w.svc.StartRun(w.ctx, "a3", runs.StartRequest{Kind: orchestrator.KindDirect})
	must(t, err)
	var wg sync.WaitGroup
	var created, refused atomic.Int64
	for range 33 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := w.svc.Call(w.ctx, run.ID, runs.CallRequest{Name: "schedule_create_cron",
				Arguments: json.RawMessage(`{"cron":"*/5 * * * *","description":"flood","instruction":"go"}`)})
			switch {
			case err != nil:
				t.Error(err)
			case strings.HasPrefix(res.Result, "created "):
				created.Add(1)
			case strings.Contains(res.Result, "ERROR: you already have 10 schedules, the most your config allows (max_schedules 10); delete one with schedule_delete"):
				refused.Add(1)
			default:
				t.Errorf("unexpected result: %s", res.Result)
			}
		}()
	}
	wg.Wait()
	if created.Load() != orchestrator.DefaultMaxSchedules || refused.Load() != 33-orchestrator.DefaultMaxSchedules {
		t.Fatalf("created %d, refused %d; want %d and %d", created.Load(), refused.Load(), orchestrator.DefaultMaxSchedules, 33-orchestrator.DefaultMaxSchedules)
	}
	if n := w.count("SELECT count(*) FROM schedules WHERE agent_id = 'a3'"); n != orchestrator.DefaultMaxSchedules {
		t.Fatalf("%d schedules stored", n)
	}
	if n := w.count("SELECT count(*) FROM tool_calls WHERE run_id = $1 AND is_error", run.ID); n != 33-orchestrator.DefaultMaxSchedules {
		t.Fatalf("%d refused calls recorded as tool errors", n)
	}
	w.clk.add(5 * time.Minute)
	if got, err := w.scheduler().Tick(w.ctx); err != nil || got != orchestrator.DefaultMaxSchedules {
		t.Fatalf("tick: %d runs, %v", got, err)
	}
	limit := 12
	_, err = w.store.UpdateAgent(w.ctx, "a3", orchestrator.AgentPatch{Config: orchestrator.ConfigPatch{MaxSchedules: &limit}})
	must(t, err)
	for i := 0; i < 3; i++ {
		_, err := w.call("a3", "schedule_create_cron", `{"cron":"*/5 * * * *","description":"more"}`)
		if (i < 2) != (err == nil) {
			t.Fatalf("create %d under max_schedules 12: %v", i+11, err)
		}
		if err != nil && (orchestrator.ErrorCode(err) != orchestrator.ECONFLICT || !strings.Contains(err.Error(), "max_schedules 12")) {
			t.Fatalf("the 13th create: %v", err)
		}
	}
}

// TestScheduleSkipsWhileItsRunIsOpen: a schedule whose last run is still open skips its wake-up,
// recorded with that run on its firings (and no run started); once the run is closed, the next
// wake-up fires again.
func TestScheduleSkipsWhileItsRunIsOpen(t *testing.T) {
	w := newWorld(t)
	out := w.ok("a1", "schedule_create_cron", `{"cron":"*/5 * * * *","description":"s","instruction":"check"}`)
	id := strings.Fields(strings.TrimPrefix(out, "created "))[0]
	w.clk.add(5 * time.Minute) // 08:07: 08:05 is due
	if got, err := w.scheduler().Tick(w.ctx); err != nil || got != 1 {
		t.Fatalf("first tick: %d %v", got, err)
	}
	first := w.count("SELECT count(*) FROM runs WHERE status = 'open'")
	var openRun string
	must(t, w.pool.QueryRow(w.ctx, "SELECT last_run_id FROM schedules WHERE id = $1", id).Scan(&openRun))
	for round := 0; round < 2; round++ { // 08:12 and 08:17 come while that run is open
		w.clk.add(5 * time.Minute)
		if got, err := w.scheduler().Tick(w.ctx); err != nil || got != 0 {
			t.Fatalf("tick with the run open: %d %v", got, err)
		}
	}
	if n := w.count("SELECT count(*) FROM runs"); n != first || first != 1 {
		t.Fatalf("%d runs, want the first one only", n)
	}
	firings, err := w.store.ListFirings(w.ctx, id)
	must(t, err)
	if len(firings) != 3 {
		t.Fatalf("firings: %+v", firings)
	}
	for i, want := range []struct{ outcome, due string }{{"skipped", "08:15"}, {"skipped", "08:10"}, {"started", "08:05"}} {
		f := firings[i]
		if f.Outcome != want.outcome || f.DueAt.Format("15:04") != want.due || f.Instruction != "check" {
			t.Errorf("firing %d: %+v, want %s due %s", i, f, want.outcome, want.due)
		}
		if want.outcome == "skipped" && (f.OpenRunID != openRun || f.RunID != "") {
			t.Errorf("skip %d names run %q (run_id %q), want the open run %s", i, f.OpenRunID, f.RunID, openRun)
		}
	}
	if n := w.count("SELECT count(*) FROM schedules WHERE id = $1 AND next_run_at > $2", id, w.clk.now()); n != 1 {
		t.Fatal("a skipped schedule did not move to its next wake-up")
	}
	w.closeRuns()
	w.clk.add(5 * time.Minute)
	if got, err := w.scheduler().Tick(w.ctx); err != nil || got != 1 {
		t.Fatalf("tick after the run closed: %d %v", got, err)
	}
}
