package runs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guildsai/guilds/orchestrator/pipeline"
)

// errCancelled is the cause of a call's context once its client cancelled it.
var errCancelled = errors.New("cancelled by the client")

// cancellable is ctx, cancelled with errCancelled once cancel is closed; release ends the watch.
func cancellable(ctx context.Context, cancel <-chan struct{}) (context.Context, func()) {
	if cancel == nil {
		return ctx, func() {}
	}
	ctx, stop := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-cancel:
			stop(errCancelled)
		case <-done:
		}
	}()
	return ctx, func() { close(done); stop(nil) }
}

// closed reports whether ch is closed (nil never is).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return ch != nil
	default:
		return false
	}
}

// beat reports a call's progress to its caller: ProgressAfter after the call began, then every
// ProgressEvery, with the elapsed time and the latest line the tool reported, redacted with the
// run's set. A nil beat (nobody asked) does nothing.
type beat struct {
	report func(Progress)
	start  time.Time
	latest atomic.Pointer[string]
	red    atomic.Pointer[pipeline.Redactor]
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex    // one report at a time, each later than the one before
	last   time.Duration // the elapsed time last reported
}

// beat starts the reports to p; nil when p is.
func (s *Service) beat(p func(Progress)) *beat {
	if p == nil {
		return nil
	}
	b := &beat{report: p, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

func (b *beat) run() {
	defer close(b.done)
	t := time.NewTimer(ProgressAfter)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		b.send(b.message())
		t.Reset(ProgressEvery)
	}
}

// message is the latest line, redacted; "" before the run's redaction set is known.
func (b *beat) message() string {
	line, red := b.latest.Load(), b.red.Load()
	if line == nil || red == nil {
		return ""
	}
	return red.Redact(*line)
}

// redactWith sets the redaction set the lines pass through.
func (b *beat) redactWith(red *pipeline.Redactor) {
	if b != nil {
		b.red.Store(red)
	}
}

// reporter is the registry.Call.Progress a tool reports its lines to; nil when nobody asked.
func (b *beat) reporter() func(string) {
	if b == nil {
		return nil
	}
	return func(line string) { b.latest.Store(&line) }
}

// send reports the elapsed time, always more than the last report's, with message.
func (b *beat) send(message string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.stop:
		return // the call ended: nothing follows its result
	default:
	}
	elapsed := max(time.Since(b.start), b.last+time.Millisecond)
	b.last = elapsed
	b.report(Progress{Elapsed: elapsed, Message: message})
}

// waiting is what reports a wait for an approval (at once, then every few seconds) through the
// beat, so the caller hears one rising series; nil when nobody asked.
func (b *beat) waiting() func(Progress) {
	if b == nil {
		return nil
	}
	return func(p Progress) {
		b.latest.Store(&p.Message)
		b.send(p.Message)
	}
}

// waited forgets the wait's message once the call goes on.
func (b *beat) waited() {
	if b != nil {
		b.latest.Store(nil)
	}
}

// end stops the reports and waits until none is being made: none follows.
func (b *beat) end() {
	if b == nil {
		return
	}
	b.once.Do(func() { close(b.stop) })
	<-b.done
}
