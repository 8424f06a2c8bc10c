package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/pipeline"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// benchService is a run service over a fresh database with an echo tool and a 100 ms wait tool.
func benchService(b testing.TB) (*runs.Service, *pgxpool.Pool, string) {
	pool := pgtest.NewDB(b)
	store := postgres.NewStore(pool)
	reg := registry.New()
	reg.MustRegister(registry.Tool{Name: "echo", Family: orchestrator.FamilyAlways, Description: "Echo.",
		Schema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what"}}}`),
		Handler: func(_ context.Context, c *registry.Call) (string, error) { return string(c.Args), nil }})
	reg.MustRegister(registry.Tool{Name: "wait", Family: orchestrator.FamilyAlways, Description: "Waits 100 ms.",
		Schema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, _ *registry.Call) (string, error) {
			time.Sleep(100 * time.Millisecond)
			return "waited", nil
		}})
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg}
	return svc, pool, seedAgent(b, store, "b")
}

// seedAgent creates org_<x>, its guild gld_<x> and its agent agt_<x>, and returns the agent's id.
func seedAgent(t testing.TB, store *postgres.Store, x string) string {
	t.Helper()
	ctx, now := context.Background(), time.Now().UTC()
	for _, err := range []error{
		store.CreateOrg(ctx, orchestrator.Org{ID: "org_" + x, Name: x, CreatedAt: now}),
		store.CreateGuild(ctx, orchestrator.Guild{ID: "gld_" + x, OrgID: "org_" + x, Name: "g", CreatedAt: now}),
		store.CreateAgent(ctx, orchestrator.Agent{ID: "agt_" + x, GuildID: "gld_" + x, Name: "a", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return "agt_" + x
}

// newRun starts a run with the largest budget.
func newRun(b testing.TB, svc *runs.Service, agent string) string {
	budget := orchestrator.MaxToolCallBudget
	run, err := svc.StartRun(context.Background(), agent, runs.StartRequest{Kind: orchestrator.KindDirect, Budget: &budget})
	if err != nil {
		b.Fatal(err)
	}
	return run.ID
}

// previousRecordSQL is the single statement that stored a call after it ran, before calls were
// recorded as started and completed: the baseline of BenchmarkCallRecords.
const previousRecordSQL = `WITH bump AS (
	UPDATE runs SET tool_calls_used = $2
	WHERE id = $1 AND status = 'open' AND tool_calls_used = $2 - 1 AND tool_call_budget >= $2
	RETURNING id)
INSERT INTO tool_calls (run_id, seq, call_id, name, arguments, result, metadata, is_error, started_at, finished_at, duration_ms)
SELECT id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM bump`

// oneStatement is the run store with the completion dropped: the service then costs one statement
// per call, as the previous path did (its one statement bumped the counter and inserted the call,
// as StartCall does), with the rest of the service's work the same.
type oneStatement struct{ *postgres.Store }

// CompleteCall stores nothing.
func (oneStatement) CompleteCall(context.Context, orchestrator.ToolCall) error { return nil }

// StartCallAfter is StartCall alone: the completions it is handed are dropped.
func (o oneStatement) StartCallAfter(ctx context.Context, c orchestrator.ToolCall, _ *orchestrator.ToolCall) (int64, bool, error) {
	seq, err := o.StartCall(ctx, c)
	return seq, true, err
}

// CompleteCalls stores nothing.
func (oneStatement) CompleteCalls(_ context.Context, done []orchestrator.ToolCall) (int64, error) {
	return int64(len(done)), nil
}

// BenchmarkCallRecords: one client's calls through the service, which records each call as started
// before it runs and completed after (the completion carried by the next call's start, or written
// on its own after runs.Linger), against the previous path measured in the same run, twice:
// the same service with one statement per call, and the bare minimum (registry invoke, stamp and
// the previous statement, nothing else). Target: at most 1.1x.
func BenchmarkCallRecords(b *testing.B) {
	svc, pool, agent := benchService(b)
	ctx := context.Background()
	const rounds, each = 10, 150 // interleaved, so a busy machine's drift weighs on both alike
	args := json.RawMessage(`{"text":"hello"}`)
	red := pipeline.NewRedactor(nil)
	for range b.N {
		one := &runs.Service{Scopes: svc.Scopes, Runs: oneStatement{svc.Runs.(*postgres.Store)}, Registry: svc.Registry}
		run, prev, oneRun := newRun(b, svc, agent), newRun(b, svc, agent), newRun(b, svc, agent)
		var current, previous, single time.Duration
		seq := int64(0)
		for range rounds {
			t0 := time.Now()
			for range each {
				if _, err := svc.Call(ctx, run, runs.CallRequest{Name: "echo", Arguments: args}); err != nil {
					b.Fatal(err)
				}
			}
			current += time.Since(t0)
			t0 = time.Now()
			for range each {
				seq++
				rc := &registry.Call{RunID: prev, CallID: orchestrator.NewID(orchestrator.PrefixCall), Seq: seq, Args: args, Meta: map[string]any{}}
				started := time.Now()
				raw, err := svc.Registry.Invoke(ctx, "echo", rc)
				if err != nil {
					b.Fatal(err)
				}
				result := pipeline.Stamp(raw, pipeline.Options{Redactor: red, Remaining: orchestrator.MaxToolCallBudget - int(seq)})
				meta, _ := json.Marshal(rc.Meta)
				finished := time.Now()
				if _, err := pool.Exec(ctx, previousRecordSQL, prev, seq, rc.CallID, "echo", []byte(red.Redact(string(args))), result, meta, false, started, finished, 0.1); err != nil {
					b.Fatal(err)
				}
			}
			previous += time.Since(t0)
			t0 = time.Now()
			for range each {
				if _, err := one.Call(ctx, oneRun, runs.CallRequest{Name: "echo", Arguments: args}); err != nil {
					b.Fatal(err)
				}
			}
			single += time.Since(t0)
		}
		current, previous, single = current/(rounds*each), previous/(rounds*each), single/(rounds*each)
		ratio, bare := float64(current)/float64(single), float64(current)/float64(previous)
		b.ReportMetric(float64(current.Microseconds()), "call_us")
		b.ReportMetric(float64(single.Microseconds()), "one_statement_call_us")
		b.ReportMetric(float64(previous.Microseconds()), "bare_previous_call_us")
		b.ReportMetric(ratio, "x_vs_one_statement")
		b.ReportMetric(bare, "x_vs_bare_previous")
		b.Logf("call with started and completed records: %s per call; the service with one statement per call: %s, ratio %.2fx (target <= 1.1x): %s; the bare previous path: %s, ratio %.2fx",
			current, single, ratio, verdict(ratio <= 1.1), previous, bare)
	}
}

// BenchmarkParallelCallsOneRun: five calls of one run at once (a 100 ms tool) against one call
// alone. Target: at most 1.3x.
func BenchmarkParallelCallsOneRun(b *testing.B) {
	svc, _, agent := benchService(b)
	ctx := context.Background()
	for range b.N {
		run := newRun(b, svc, agent)
		t0 := time.Now()
		if _, err := svc.Call(ctx, run, runs.CallRequest{Name: "wait"}); err != nil {
			b.Fatal(err)
		}
		one := time.Since(t0)
		t0 = time.Now()
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if _, err := svc.Call(ctx, run, runs.CallRequest{Name: "wait"}); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		five := time.Since(t0)
		ratio := float64(five) / float64(one)
		b.ReportMetric(ratio, "x_five_vs_one")
		b.Logf("five parallel calls of one run: %s; one call: %s; ratio %.2fx (target <= 1.3x): %s", five, one, ratio, verdict(ratio <= 1.3))
	}
}

// verdict names whether a target was met.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return fmt.Sprintf("MISSED")
}
