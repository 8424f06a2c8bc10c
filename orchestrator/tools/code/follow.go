package code

import (
	"context"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/shared/shape"
)

// followEvery is how often a shell call's log is read while its caller wants progress; the runs
// service reports the latest line once a second.
const followEvery = 500 * time.Millisecond

// followTail is how much of the log's end is read for its latest line.
const followTail = 4 << 10

// followLog wraps shell's handler: while a call whose caller asked for progress runs (call.Progress
// set), it reads the end of the command's log (.runs/<run id>/<call id>.log, which guilds-code
// keeps flushed while the command prints) and reports its latest line. Without a caller, or in a
// sandbox that cannot read a file's end, the call runs as it is.
func followLog(p sandbox.Provider, next registry.Handler) registry.Handler {
	return func(ctx context.Context, call *registry.Call) (string, error) {
		if call.Progress == nil || p == nil {
			return next(ctx, call)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			follow(ctx, p, call, done)
		}()
		out, err := next(ctx, call)
		close(done)
		wg.Wait()
		return out, err
	}
}

// follow reports the log's latest line every followEvery until done.
func follow(ctx context.Context, p sandbox.Provider, call *registry.Call, done <-chan struct{}) {
	box, err := p.Open(ctx, call.AgentID)
	if err != nil {
		return
	}
	tr, ok := box.(sandbox.TailReader)
	if !ok {
		return
	}
	log := path.Join(box.Places().Home, ".runs", call.RunID, call.CallID+".log")
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		tail, err := tr.ReadTail(ctx, log, followTail)
		if err != nil {
			continue // not written yet
		}
		if line := latestLine(tail); line != "" {
			call.Progress(line)
		}
	}
}

// latestLine is the last line of a log's end with text, as a terminal shows it, at most 200
// characters.
func latestLine(tail []byte) string {
	lines := strings.Split(shape.Terminal(tail), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return shape.ClipLine(l, 200)
		}
	}
	return ""
}
