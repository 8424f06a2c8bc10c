package postgres

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

// RetryAfter is what a caller is told to wait, in seconds, while the database is down.
const RetryAfter = 2

// Monitor watches whether the database answers. It pings it every second (and at once when asked
// after a failure), logs each outage once when it starts and once when it ends, and says while it
// lasts that calls must wait.
type Monitor struct {
	Pool  *pgxpool.Pool
	Log   *slog.Logger
	Where string // what the outage message names: "the embedded PostgreSQL" or "the database at DATABASE_URL"

	mu      sync.Mutex
	down    error     // the ping's error while the database is down; nil while it answers
	since   time.Time // when the outage began
	checked time.Time // the last ping
}

// minCheckGap bounds how often a failing request triggers a ping of its own.
const minCheckGap = 250 * time.Millisecond

// Run pings the database every second until ctx is done.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.check(ctx)
		}
	}
}

// Err returns nil while the database answers, else an EUNAVAILABLE error saying it is down. A
// cause (a handler's internal error) makes it ping first (unless a ping ran in the last 250 ms),
// and a cause that is a lost or refused connection is an outage whatever the ping says: it is
// what a request meets on a pooled connection the server dropped as it went down or restarted.
func (m *Monitor) Err(ctx context.Context, cause error) error {
	if cause != nil && (connectionLost(cause) || fromServer(cause, m.Pool.Config().ConnConfig.Host, m.Pool.Config().ConnConfig.Port)) {
		return m.unavailable(time.Now())
	}
	if cause != nil {
		m.mu.Lock()
		recent := time.Since(m.checked) < minCheckGap
		m.mu.Unlock()
		// A connection cut short says nothing of whose it was: ask the database now, whatever the
		// last ping said a moment ago.
		if !recent || errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrUnexpectedEOF) {
			m.check(ctx)
		}
	}
	m.mu.Lock()
	down, since := m.down, m.since
	m.mu.Unlock()
	if down == nil {
		return nil
	}
	return m.unavailable(since)
}

// unavailable is the EUNAVAILABLE error of an outage that began at since.
func (m *Monitor) unavailable(since time.Time) error {
	return orchestrator.Errorf(orchestrator.EUNAVAILABLE, "%s is unreachable (for %s so far); retry in %d s: calls resume by themselves once it is back",
		m.where(), time.Since(since).Round(time.Second), RetryAfter)
}

// fromServer reports whether err is a network error on a connection to the database's own address
// (host a unix socket folder, or host and port over TCP): a pooled connection the server reset.
func fromServer(err error, host string, port uint16) bool {
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Addr == nil {
		return false
	}
	addr := opErr.Addr.String()
	if strings.HasPrefix(host, "/") {
		return strings.HasPrefix(addr, host)
	}
	return strings.HasSuffix(addr, ":"+strconv.Itoa(int(port)))
}

// connectionLost reports whether err is PostgreSQL's connection that could not be made or was lost
// (pgx's connect, read and write failures, a closed pool), or a server shutting down, starting or
// crashed (SQLSTATE classes 08 and 57P), rather than a fault of the statement. Network errors of
// anything else (an MCP server, a provider's API) are not the database's and do not count.
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.Is(err, puddle.ErrClosedPool) || pgconn.SafeToRetry(err) {
		return true // SafeToRetry: only pgx's own errors say so, of a statement the server never got
	}
	msg := err.Error()
	for _, pgx := range []string{"failed to receive message", "write failed", "failed to write", "conn closed", "failed to connect to `", "failed to deallocate", "closed pool"} {
		if strings.Contains(msg, pgx) {
			return true
		}
	}
	return false
}

// where names the database in messages.
func (m *Monitor) where() string {
	if m.Where != "" {
		return m.Where
	}
	return "the database"
}

// check pings the database and logs a change of state.
func (m *Monitor) check(ctx context.Context) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	err := m.Pool.Ping(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: not an outage
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checked = time.Now()
	switch {
	case err != nil && m.down == nil:
		m.down, m.since = err, time.Now()
		m.log().Error("database unreachable: API calls answer 503 EUNAVAILABLE until it is back", "database", m.where(), "err", err.Error())
	case err == nil && m.down != nil:
		m.log().Info("database reachable again: API calls resume", "database", m.where(), "outage", time.Since(m.since).Round(time.Millisecond).String())
		m.down = nil
	}
}

func (m *Monitor) log() *slog.Logger {
	if m.Log != nil {
		return m.Log
	}
	return slog.New(slog.DiscardHandler)
}
