package identity

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Audit writing: rows wait in a queue and are written in batches behind the requests, so writing
// never fails a request nor slows it. A queue that stays full while the database is down drops the
// newest rows, counts them and says so in the log once per outage.
const (
	auditQueue = 65536
	auditBatch = 500
	auditRetry = 500 * time.Millisecond
)

// AuditStore is where audit rows go (postgres.Store implements it).
type AuditStore interface {
	AppendAudit(ctx context.Context, rows []orchestrator.AuditEntry) error
}

// Auditor queues audit rows and writes them behind the requests.
type Auditor struct {
	Store AuditStore
	Log   *slog.Logger

	once    sync.Once
	queue   chan orchestrator.AuditEntry
	dropped atomic.Int64
	pending atomic.Int64 // rows queued and not yet written (or given up)
}

func (a *Auditor) init() {
	a.once.Do(func() { a.queue = make(chan orchestrator.AuditEntry, auditQueue) })
}

// Record queues one row; it never blocks.
func (a *Auditor) Record(e orchestrator.AuditEntry) {
	a.init()
	a.pending.Add(1)
	select {
	case a.queue <- e:
	default:
		a.pending.Add(-1)
		if a.dropped.Add(1) == 1 && a.Log != nil {
			a.Log.Error("audit queue full: dropping audit rows until the database takes them again")
		}
	}
}

// Dropped counts the rows dropped because the queue was full.
func (a *Auditor) Dropped() int64 { return a.dropped.Load() }

// Run writes queued rows until ctx ends, then writes what is left (bounded by drain).
func (a *Auditor) Run(ctx context.Context, drain time.Duration) {
	a.init()
	for {
		select {
		case e := <-a.queue:
			a.write(ctx, a.batch(e))
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
			defer cancel()
			for {
				select {
				case e := <-a.queue:
					a.write(dctx, a.batch(e))
				default:
					return
				}
			}
		}
	}
}

// batch takes e and whatever else is queued, up to auditBatch rows.
func (a *Auditor) batch(e orchestrator.AuditEntry) []orchestrator.AuditEntry {
	rows := []orchestrator.AuditEntry{e}
	for len(rows) < auditBatch {
		select {
		case e := <-a.queue:
			rows = append(rows, e)
		default:
			return rows
		}
	}
	return rows
}

// write stores a batch, retrying while the database refuses it and ctx lasts.
func (a *Auditor) write(ctx context.Context, rows []orchestrator.AuditEntry) {
	defer a.pending.Add(-int64(len(rows)))
	for {
		err := a.Store.AppendAudit(ctx, rows)
		if err == nil {
			if a.dropped.Swap(0) > 0 && a.Log != nil {
				a.Log.Warn("audit rows are written again")
			}
			return
		}
		if a.Log != nil {
			a.Log.Warn("write audit rows", "rows", len(rows), "err", err.Error())
		}
		select {
		case <-ctx.Done():
			if a.Log != nil {
				a.Log.Error("audit rows lost at shutdown", "rows", len(rows))
			}
			return
		case <-time.After(auditRetry):
		}
	}
}

// Flush waits (up to ctx) until no row is waiting: a read of the log after it sees the requests
// answered before it.
func (a *Auditor) Flush(ctx context.Context) {
	for a.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Millisecond):
		}
	}
}
