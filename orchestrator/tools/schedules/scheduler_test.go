package schedules_test

import (
	"context"
	"encoding/json"
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
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	store *postgres.Store
	reg   *registry.Registry
	svc   *runs.Service
	clk   *clock
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, ctx: context.Background(), pool: pgtest.NewDB(t), reg: registry.New(), clk: &clock{}}
	w.store = postgres.NewStore(w.pool)
	w.clk.set(time.Date(2027, 5, 3, 8, 2, 0, 0, time.UTC))
	now := w.clk.now()
	must(t, w.store.CreateOrg(w.ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}))
	must(t, w.store.CreateGuild(w.ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}))
	for _, id := range []string{"a1", "a2"} {
		must(t, w.store.CreateAgent(w.ctx, orchestrator.Agent{ID: id, GuildID: "g1", OrgID: "o1", Name: id, Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}))
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

// TestSchedulerFiresOnceAndCatchesUp: two schedulers racing on one database start exactly one run
// per due schedule; a schedule that missed hours of wake-ups fires once, carrying its instruction,
// and its next wake-up is after now.
func TestSchedulerFiresOnceAndCatchesUp(t *testing.T) {
	w := newWorld(t)
	const n = 40
	for i := 0; i < n; i++ {
		agent := []string{"a1", "a2"}[i%2]
		w.ok(agent, "schedule_create_cron", `{"cron":"*/5 * * * *","description":"s","instruction":"wake `+agent+`"}`)
	}
	w.clk.add(3 * time.Hour) // downtime: 36 missed wake-ups each
	var wg sync.WaitGroup
	var started atomic.Int64
	for _, s := range []*schedules.Scheduler{w.scheduler(), w.scheduler(), w.scheduler()} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 3; k++ {
				got, err := s.Tick(w.ctx)
				if err != nil {
					t.Error(err)
				}
				started.Add(int64(got))
			}
		}()
	}
	wg.Wait()
	if started.Load() != n {
		t.Fatalf("schedulers report %d runs, want %d", started.Load(), n)
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
	w.clk.add(5 * time.Minute)
	if got, _ := w.scheduler().Tick(w.ctx); got != n {
		t.Fatalf("next wake-up fired %d, want %d", got, n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
