package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Pool holds one MCP client session per connection id, opened on first use and shared by every
// caller, and closes a session once it has been idle for Config.IdleTimeout.
type Pool struct {
	cfg       Config
	log       *slog.Logger
	base      http.RoundTripper
	ownsBase  bool
	ctx       context.Context // ends at Close: every session's context derives from it
	cancel    context.CancelFunc
	flight    singleflight.Group
	wg        sync.WaitGroup // background closes and cancel notices
	mu        sync.Mutex
	closed    bool
	sessions  map[string]*session
	changed   map[string]bool // connection ids that sent tools/list_changed since their last listing
	failing   map[string]int  // connection ids whose session cannot open: failures this incident
	progress  sync.Map        // progress token → func renewing its call's deadline
	janitorOn bool
}

// New returns a Pool; cfg's zero fields take their defaults.
func New(cfg Config) *Pool {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.IdleTimeout = orDefault(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.CallTimeout = orDefault(cfg.CallTimeout, DefaultCallTimeout)
	cfg.CallMax = max(orDefault(cfg.CallMax, DefaultCallMax), cfg.CallTimeout)
	cfg.ListTimeout = orDefault(cfg.ListTimeout, DefaultListTimeout)
	cfg.InitTimeout = orDefault(cfg.InitTimeout, DefaultInitTimeout)
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxTools <= 0 {
		cfg.MaxTools = DefaultMaxTools
	}
	if cfg.ClientName == "" {
		cfg.ClientName = "guilds"
	}
	if cfg.ClientVersion == "" {
		cfg.ClientVersion = "1"
	}
	p := &Pool{cfg: cfg, log: cfg.Logger, base: cfg.HTTPTransport, sessions: map[string]*session{}, changed: map[string]bool{}, failing: map[string]int{}}
	if p.log == nil {
		p.log = slog.New(discardHandler{})
	}
	if p.base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 16
		p.base, p.ownsBase = t, true
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Changed reports whether the connection's server sent notifications/tools/list_changed since
// the last successful ListTools of that connection.
func (p *Pool) Changed(connectionID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed[connectionID]
}

func (p *Pool) markChanged(id string) {
	p.mu.Lock()
	p.changed[id] = true
	p.mu.Unlock()
}

// takeChanged clears and returns the connection's changed mark.
func (p *Pool) takeChanged(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.changed[id]
	delete(p.changed, id)
	return was
}

// Forget closes the connection's session, if any, and drops its changed mark: for a deleted
// connection or one whose login changed.
func (p *Pool) Forget(connectionID string) {
	p.mu.Lock()
	s := p.sessions[connectionID]
	delete(p.sessions, connectionID)
	delete(p.changed, connectionID)
	delete(p.failing, connectionID)
	p.mu.Unlock()
	p.closeStale(s)
}

// CloseIdle closes every session without a request in flight whose last use is IdleTimeout or
// more ago on the pool's clock, and returns how many it closed. The pool runs it periodically.
func (p *Pool) CloseIdle() int {
	now := p.cfg.Now()
	var idle []*session
	p.mu.Lock()
	for id, s := range p.sessions {
		if s.inflight.Load() == 0 && now.Sub(time.Unix(0, s.lastUsed.Load())) >= p.cfg.IdleTimeout {
			delete(p.sessions, id)
			idle = append(idle, s)
		}
	}
	p.mu.Unlock()
	for _, s := range idle {
		s.log.Debug("mcp: closing an idle session")
		p.goTracked(s.close)
	}
	return len(idle)
}

// Close closes every session (each sends its DELETE) and waits for them; later calls fail with
// ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	all := p.sessions
	p.sessions = map[string]*session{}
	p.mu.Unlock()

	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
	p.cancel()
	p.wg.Wait()
	if ci, ok := p.base.(interface{ CloseIdleConnections() }); ok && p.ownsBase {
		ci.CloseIdleConnections()
	}
	return nil
}

// goTracked runs f in a goroutine Close waits for; once the pool is closing it runs f inline.
func (p *Pool) goTracked(f func()) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		f()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// janitorLocked starts the goroutine that closes idle sessions, once; p.mu is held.
func (p *Pool) janitorLocked() {
	if p.janitorOn {
		return
	}
	p.janitorOn = true
	every := min(max(p.cfg.IdleTimeout/10, time.Second), time.Minute)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-t.C:
				p.CloseIdle()
			}
		}
	}()
}

// acquire returns the connection's session, opening it if there is none, with one more request
// counted in flight; release must follow.
func (p *Pool) acquire(ctx context.Context, conn Connection) (*session, error) {
	if conn.ID == "" {
		return nil, errors.New("mcp: a connection needs an id")
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		s, stale := p.current(conn)
		if s != nil {
			s.inflight.Add(1)
		}
		p.mu.Unlock()
		p.closeStale(stale)
		if s != nil {
			s.touch()
			s.w.headers.Store(conn.Headers)
			return s, nil
		}

		ch := p.flight.DoChan(conn.ID, func() (any, error) { return p.openAndStore(conn) })
		select {
		case r := <-ch:
			if r.Err != nil {
				return nil, r.Err
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("mcp server %q: waiting for the session: %w", conn.Slug, ctx.Err())
		}
	}
}

// current returns the connection's live session for conn's URL, and removes a dead or outdated
// one, returned as stale for the caller to close once p.mu is released; p.mu is held.
func (p *Pool) current(conn Connection) (live, stale *session) {
	s := p.sessions[conn.ID]
	if s == nil {
		return nil, nil
	}
	if s.dead.Load() || s.url != conn.URL {
		delete(p.sessions, conn.ID)
		return nil, s
	}
	return s, nil
}

func (p *Pool) closeStale(s *session) {
	if s != nil {
		p.goTracked(s.close)
	}
}

// openAndStore opens a session for conn unless another caller just did, and makes it current.
func (p *Pool) openAndStore(conn Connection) (*session, error) {
	p.mu.Lock()
	live, stale := p.current(conn)
	p.mu.Unlock()
	p.closeStale(stale)
	if live != nil {
		return live, nil
	}
	s, err := p.open(conn)
	if err != nil {
		p.failed(conn, "mcp: the session cannot be opened; every request tries again and answers why until it opens", err)
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.close()
		return nil, ErrClosed
	}
	p.sessions[conn.ID] = s
	p.janitorLocked()
	failures := p.failing[conn.ID]
	delete(p.failing, conn.ID)
	p.mu.Unlock()
	if failures > 0 {
		s.log.Info("mcp: session open again", "transport", string(s.transport), "failures", failures)
	} else {
		s.log.Debug("mcp: session opened", "transport", string(s.transport))
	}
	if p.cfg.OnOpen != nil {
		p.cfg.OnOpen(conn.ID, s.transport)
	}
	return s, nil
}

func (p *Pool) release(s *session) {
	s.touch()
	if s.inflight.Add(-1) == 0 && s.retired.Load() {
		p.goTracked(s.close)
	}
}

// failed records that the connection's session cannot open: the first failure of an incident is
// logged with what happened (WARN; INFO for refused credentials, the login's to fix, not the
// server's fault), the next ones at DEBUG until the session opens again, so a server that stays
// down does not fill the log.
func (p *Pool) failed(conn Connection, msg string, err error) {
	p.mu.Lock()
	p.failing[conn.ID]++
	n := p.failing[conn.ID]
	p.mu.Unlock()
	lvl := slog.LevelWarn
	switch {
	case n > 1:
		lvl = slog.LevelDebug
	case errors.Is(err, ErrRejected):
		lvl = slog.LevelInfo
	}
	p.log.Log(context.Background(), lvl, msg, "server", conn.Slug, "connection", conn.ID, "failures", n, "err", err.Error())
}

// discard closes s, in the background, if it is still its connection's session.
func (p *Pool) discard(s *session) {
	p.mu.Lock()
	if p.sessions[s.id] == s {
		delete(p.sessions, s.id)
	}
	p.mu.Unlock()
	p.goTracked(s.close)
}

// retire takes s out of use: the next request opens a new session, and s closes once its
// requests in flight have ended.
func (p *Pool) retire(s *session) {
	p.mu.Lock()
	if p.sessions[s.id] == s {
		delete(p.sessions, s.id)
	}
	p.mu.Unlock()
	s.retired.Store(true)
	if s.inflight.Load() == 0 {
		p.goTracked(s.close)
	}
}

// limit bounds one request: a deadline of idle, which the request's progress notices (token)
// renew while most has not passed since it started; most <= idle or no token makes idle fixed.
// what names the limits in the error of a request that passes them.
type limit struct {
	idle, most time.Duration
	token      string
	what       func(idle bool) string
}

// errLimit is the cause of a request context that passed its limit; it is a deadline.
type errLimit struct{ idle bool }

func (errLimit) Error() string        { return "the request passed its time limit" }
func (errLimit) Is(target error) bool { return target == context.DeadlineExceeded }

// bound derives the request's context under l; stop releases it.
func (p *Pool) bound(ctx context.Context, l limit) (rctx context.Context, stop func()) {
	if l.most <= l.idle || l.token == "" {
		c, cancel := context.WithTimeoutCause(ctx, l.idle, errLimit{idle: true})
		return c, cancel
	}
	idleCtx, cancelIdle := context.WithCancelCause(ctx)
	c, cancel := context.WithTimeoutCause(idleCtx, l.most, errLimit{})
	t := time.AfterFunc(l.idle, func() { cancelIdle(errLimit{idle: true}) })
	p.progress.Store(l.token, func() { t.Reset(l.idle) })
	return c, func() {
		p.progress.Delete(l.token)
		t.Stop()
		cancel()
		cancelIdle(nil)
	}
}

// renew restarts the idle deadline of the call that sent progress under token.
func (p *Pool) renew(token string) {
	if f, ok := p.progress.Load(token); ok {
		f.(func())()
	}
}

// do runs fn on the connection's session under l. A session the server forgot (a 404, or a 400
// to a request that carried the session's id, whatever the body says) is reopened and fn retried
// once; a broken one is replaced for the next caller.
func (p *Pool) do(ctx context.Context, conn Connection, op string, l limit, fn func(context.Context, *session) error) (*session, error) {
	for attempt := 0; ; attempt++ {
		s, err := p.acquire(ctx, conn)
		if err != nil {
			return nil, err
		}
		pr := &probe{}
		rctx, stop := p.bound(context.WithValue(ctx, probeKey{}, pr), l)
		err = fn(rctx, s)
		var over errLimit
		ended := rctx.Err() != nil
		timedOut := errors.As(context.Cause(rctx), &over) && ctx.Err() == nil
		stop()
		p.release(s)
		if err == nil {
			return s, nil
		}
		timeout := ""
		if timedOut {
			timeout = l.what(over.idle)
		}
		fault := s.classify(err, pr)
		if ended {
			// The request's own context ended (its limit, or the caller): whatever the library
			// made of that (it may answer "unexpected nil response"), the session is fine.
			fault = keep
			if ctx.Err() != nil {
				err = ctx.Err()
			}
		}
		switch fault {
		case expired:
			if attempt == 0 {
				p.discard(s)
				s.log.Info("mcp: the server forgot the session; reopening it and sending the request again", "op", op, "status", pr.status.Load())
				continue
			}
			// A session opened for this retry was refused the same way: the answer is the
			// request's, not the session's, which stays.
		case broken:
			p.discard(s)
		}
		return s, s.describe(op, err, pr, timeout)
	}
}
