package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// flakyStore is the run store with writes of answered calls' records that fail while failing is
// set (a start then goes through without the record it carries), counting what each path carried.
type flakyStore struct {
	*postgres.Store
	failing           atomic.Bool
	startsWithRecords atomic.Int64 // starts that carried a record
	batched           atomic.Int64 // records written on their own
}

func (f *flakyStore) StartCallAfter(ctx context.Context, c orchestrator.ToolCall, done *orchestrator.ToolCall) (int64, bool, error) {
	if done != nil && f.failing.Load() { // the start goes through, the record it carries does not
		seq, err := f.Store.StartCall(ctx, c)
		return seq, false, err
	}
	seq, stored, err := f.Store.StartCallAfter(ctx, c, done)
	if done != nil && stored {
		f.startsWithRecords.Add(1)
	}
	return seq, stored, err
}

func (f *flakyStore) CompleteCalls(ctx context.Context, done []orchestrator.ToolCall) (int64, error) {
	if f.failing.Load() {
		return 0, errors.New("the database is unreachable")
	}
	n, err := f.Store.CompleteCalls(ctx, done)
	if err == nil {
		f.batched.Add(int64(len(done)))
	}
	return n, err
}

// storedStatus reads a call's row straight from the database, as another replica would.
func storedStatus(t *testing.T, store *postgres.Store, runID string, seq int64) string {
	t.Helper()
	calls, err := store.ListCalls(context.Background(), runID, orchestrator.CallPage{After: seq - 1, Limit: 1})
	if err != nil || len(calls) != 1 {
		t.Fatalf("read call %d: %v %v", seq, calls, err)
	}
	return calls[0].Status
}

// TestAnsweredCallsAreWrittenBehind: a call is answered once its tool ran; its completed record is
// carried by the next call's start, or written on its own within the linger, and every reader of
// the run's calls in this process sees it completed at once. A failed write is retried; a retry
// under the same call_id right after the answer replays the result without running the tool again.
func TestAnsweredCallsAreWrittenBehind(t *testing.T) {
	ctx := context.Background()
	svc, _, agent := benchService(t)
	store := &flakyStore{Store: svc.Runs.(*postgres.Store)}
	var ran atomic.Int64
	svc.Registry.MustRegister(registryTool("count", func() string { ran.Add(1); return "counted" }))
	svc = &runs.Service{Scopes: svc.Scopes, Runs: store, Registry: svc.Registry}
	run := newRun(t, svc, agent)

	// Back to back: each start carries the previous call's record.
	for range 5 {
		if _, err := svc.Call(ctx, run, runs.CallRequest{Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := store.startsWithRecords.Load(); got != 4 {
		t.Errorf("starts that carried the previous record: %d, want 4", got)
	}
	// The last one is written on its own after the linger.
	deadline := time.Now().Add(30 * time.Second) // a hang guard over the 2 ms linger
	for storedStatus(t, store.Store, run, 5) != orchestrator.CallCompleted {
		if time.Now().After(deadline) {
			t.Fatal("the last call's record was not written after the linger")
		}
		time.Sleep(runs.Linger)
	}

	// Listing right after the answer sees it completed, with its result.
	res, err := svc.Call(ctx, run, runs.CallRequest{Name: "echo", Arguments: json.RawMessage(`{"text":"listed"}`)})
	if err != nil {
		t.Fatal(err)
	}
	calls, err := svc.ListCalls(ctx, run, orchestrator.CallPage{After: res.Seq - 1})
	if err != nil || len(calls) != 1 || calls[0].Status != orchestrator.CallCompleted || calls[0].Result != res.Result {
		t.Fatalf("listing right after the answer: %+v %v", calls, err)
	}

	// A retry right after the answer replays it.
	first, err := svc.Call(ctx, run, runs.CallRequest{Name: "count", CallID: "toolu_once"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.Call(ctx, run, runs.CallRequest{Name: "count", CallID: "toolu_once"})
	if err != nil || !again.Replayed || again.Result != first.Result || again.Seq != first.Seq || ran.Load() != 1 {
		t.Fatalf("retry right after the answer: %+v %v (the tool ran %d times)", again, err, ran.Load())
	}

	// Writes failing: calls are still answered, their records retried until the database is back.
	store.failing.Store(true)
	var seqs []int64
	for range 3 {
		res, err := svc.Call(ctx, run, runs.CallRequest{Name: "echo", Arguments: json.RawMessage(`{"text":"outage"}`)})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, res.Seq)
	}
	time.Sleep(50 * time.Millisecond)
	if got := storedStatus(t, store.Store, run, seqs[0]); got != orchestrator.CallStarted {
		t.Fatalf("during the outage the first answered call is %q, want still started", got)
	}
	store.failing.Store(false)
	drain, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	before := store.batched.Load()
	svc.Drain(drain)
	if store.batched.Load()-before < 3 {
		t.Errorf("records written on their own after the outage: %d, want the 3 answered during it", store.batched.Load()-before)
	}
	for _, seq := range seqs {
		if got := storedStatus(t, store.Store, run, seq); got != orchestrator.CallCompleted {
			t.Errorf("call %d after the outage: %q, want completed", seq, got)
		}
	}
	stored, err := store.Store.ListCalls(ctx, run, orchestrator.CallPage{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range stored {
		if c.Seq != int64(i+1) || c.Status != orchestrator.CallCompleted {
			t.Errorf("stored call %d: seq %d status %q", i, c.Seq, c.Status)
		}
	}
}

// TestWriteBehindUnderConcurrency: many clients on several runs; afterwards (Drain) every call of
// every run is completed, with contiguous seqs, and each run's counter equals its calls.
func TestWriteBehindUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	svc, pool, agent := benchService(t)
	var runIDs []string
	for range 4 {
		runIDs = append(runIDs, newRun(t, svc, agent))
	}
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := svc.Call(ctx, runIDs[c%len(runIDs)], runs.CallRequest{Name: "echo", Arguments: json.RawMessage(`{"text":"y"}`)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	drain, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	svc.Drain(drain)
	for _, id := range runIDs {
		var n, completed, maxSeq, used int64
		if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'completed'), coalesce(max(seq), 0),
			(SELECT tool_calls_used FROM runs WHERE id = $1) FROM tool_calls WHERE run_id = $1`, id).Scan(&n, &completed, &maxSeq, &used); err != nil {
			t.Fatal(err)
		}
		if n != 100 || completed != 100 || maxSeq != 100 || used != 100 {
			t.Errorf("run %s: %d calls, %d completed, max seq %d, counter %d; want 100 of each", id, n, completed, maxSeq, used)
		}
	}
}

// registryTool is a tool of no arguments answering what f returns.
func registryTool(name string, f func() string) registry.Tool {
	return registry.Tool{Name: name, Family: orchestrator.FamilyAlways, Description: "Answers.",
		Schema:  json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *registry.Call) (string, error) { return f(), nil }}
}
