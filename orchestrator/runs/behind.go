package runs

import (
	"context"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// BehindStore is the part of the run store that writes a completed call's record after its
// answer: with the next call's start, in that statement, or several on their own. A call's
// started record, the one that must precede its effects, is always written before it runs.
type BehindStore interface {
	// StartCallAfter is StartCall that also stores done, when not nil, in the same statement;
	// stored says whether done was written (it is not when the statement failed).
	StartCallAfter(ctx context.Context, c orchestrator.ToolCall, done *orchestrator.ToolCall) (seq int64, stored bool, err error)
	// CompleteCalls stores done in one round trip and says how many were still started.
	CompleteCalls(ctx context.Context, done []orchestrator.ToolCall) (int64, error)
}

// Linger is how long a completed call's record waits for the next call's start to carry it
// before it is written on its own (a start carries one); maxBehind bounds the records one write
// of them alone carries.
const (
	Linger    = 2 * time.Millisecond
	maxBehind = 256
)

// callKey names one call of a run.
type callKey struct {
	run string
	seq int64
}

// answered is a completed call whose record is not yet written.
type answered struct {
	call orchestrator.ToolCall
	at   time.Time     // when it was answered: a record failing to be written past completeWait is given up
	done chan struct{} // closed once it is written or given up
}

// behind holds the records of calls answered before they were written. Readers of a run's calls
// (ListCalls, a retry) settle the run first, so they never see one of its answered calls started.
type behind struct {
	mu      sync.Mutex
	queue   []*answered           // waiting for a write to take them
	pending map[callKey]*answered // queued or being written
	timer   *time.Timer           // the linger, then the retry pause after a failed write
	armed   bool
}

// answer queues the completed call's record, to be written within Linger.
func (s *Service) answer(call orchestrator.ToolCall) {
	b := &s.behind
	a := &answered{call: call, at: time.Now(), done: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = map[callKey]*answered{}
	}
	b.pending[callKey{call.RunID, call.Seq}] = a
	b.queue = append(b.queue, a)
	s.armLocked(Linger)
}

// armLocked starts the timer that writes the queue, unless it runs already (b.mu held).
func (s *Service) armLocked(d time.Duration) {
	b := &s.behind
	if b.armed {
		return
	}
	b.armed = true
	if b.timer == nil {
		b.timer = time.AfterFunc(d, func() {
			b.mu.Lock()
			b.armed = false
			b.mu.Unlock()
			s.flushBehind(context.Background())
		})
		return
	}
	b.timer.Reset(d)
}

// takeBehind takes up to max queued records for a write.
func (s *Service) takeBehind(max int) []*answered {
	b := &s.behind
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.queue), max)
	if n == 0 {
		return nil
	}
	taken := append([]*answered(nil), b.queue[:n]...)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	return taken
}

// calls lists the records of taken.
func calls(taken []*answered) []orchestrator.ToolCall {
	out := make([]orchestrator.ToolCall, len(taken))
	for i, a := range taken {
		out[i] = a.call
	}
	return out
}

// wrote ends the taken records once written; after a failure it queues them again for a retry,
// except those past completeWait, which are given up and logged (their calls stay started, and
// are marked interrupted once this process is gone).
func (s *Service) wrote(taken []*answered, err error) {
	if len(taken) == 0 {
		return
	}
	b := &s.behind
	b.mu.Lock()
	defer b.mu.Unlock()
	retry := false
	for _, a := range taken {
		if err != nil && time.Since(a.at) < completeWait {
			b.queue = append(b.queue, a)
			retry = true
			continue
		}
		if err != nil {
			s.log().Error("a call's result could not be stored", "run_id", a.call.RunID, "seq", a.call.Seq, "call_id", a.call.CallID, "err", err.Error())
		}
		delete(b.pending, callKey{a.call.RunID, a.call.Seq})
		close(a.done)
	}
	if retry {
		s.armLocked(200 * time.Millisecond)
	}
}

// requeue puts taken records back at the front of the queue, untried (the start that took them
// failed for its own reason), to be written within Linger.
func (s *Service) requeue(taken []*answered) {
	if len(taken) == 0 {
		return
	}
	b := &s.behind
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(taken, b.queue...)
	s.armLocked(Linger)
}

// flushBehind writes the queued records on their own, maxBehind per statement.
func (s *Service) flushBehind(ctx context.Context) {
	for {
		taken := s.takeBehind(maxBehind)
		if len(taken) == 0 {
			return
		}
		n, err := s.Runs.CompleteCalls(context.WithoutCancel(ctx), calls(taken))
		if err == nil && int(n) < len(taken) {
			s.log().Warn("answered calls were no longer recorded as started when their results were stored (marked interrupted, or their run deleted)", "calls", len(taken), "stored", n)
		}
		s.wrote(taken, err)
		if err != nil {
			return // the retry pause is armed
		}
	}
}

// settle waits until the records of the run's answered calls are written ("" waits for every
// run's), writing the queue now rather than after its linger.
func (s *Service) settle(ctx context.Context, runID string) error {
	b := &s.behind
	b.mu.Lock()
	var waits []chan struct{}
	for k, a := range b.pending {
		if runID == "" || k.run == runID {
			waits = append(waits, a.done)
		}
	}
	b.mu.Unlock()
	if len(waits) == 0 {
		return nil
	}
	s.flushBehind(ctx)
	bound := time.NewTimer(settleWait)
	defer bound.Stop()
	for _, w := range waits {
		select {
		case <-w:
		case <-bound.C:
			return nil // the database is failing: the reader sees them started, and its read likely fails too
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// settleWait bounds how long a reader waits for answered calls' records while writes fail.
const settleWait = 5 * time.Second

// Drain writes the records of every answered call before the process stops (after the API has
// stopped taking calls); it gives up when ctx ends.
func (s *Service) Drain(ctx context.Context) {
	for s.unwritten() > 0 && ctx.Err() == nil {
		_ = s.settle(ctx, "")
	}
}

// unwritten counts the answered calls whose records are not written yet.
func (s *Service) unwritten() int {
	s.behind.mu.Lock()
	defer s.behind.mu.Unlock()
	return len(s.behind.pending)
}
