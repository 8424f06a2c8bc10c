package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// session is one initialised MCP client session of one connection.
type session struct {
	p         *Pool
	id        string // connection id
	slug      string
	url       string
	transport Transport
	client    *client.Client
	tr        transport.Interface
	w         *wire
	log       *slog.Logger
	ctx       context.Context // lives as long as the session: the GET stream and cancel notices use it
	cancel    context.CancelFunc
	unlisten  context.CancelFunc // stops a streamable HTTP session's GET stream alone
	nextID    atomic.Int64
	lastUsed  atomic.Int64 // unix nanoseconds on the pool's clock
	inflight  atomic.Int32 // guarded by Pool.mu for the increment that matters (idle close)
	dead      atomic.Bool  // its event stream broke (the server restarted or forgot it): the next caller reopens
	retired   atomic.Bool  // out of use: it closes once its requests in flight end
	closeOnce sync.Once
}

// firstRequestID keeps our JSON-RPC ids clear of the ones mcp-go's client numbers from 1.
const firstRequestID = 1 << 20

// open starts a session on conn, trying the transport that worked last time first and falling
// back to the other one when the first answers like a server that does not speak it.
func (p *Pool) open(conn Connection) (*session, error) {
	u, err := url.Parse(conn.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcp server %q: the URL is not an http(s) URL", conn.Slug)
	}
	order := []Transport{StreamableHTTP, SSE}
	if conn.Transport == SSE {
		order = []Transport{SSE, StreamableHTTP}
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.InitTimeout)
	defer cancel()
	var errs []error
	for _, t := range order {
		s, retry, err := p.start(ctx, conn, u, t)
		if err != nil && dropped(err) && ctx.Err() == nil {
			// A kept-alive connection the server had just closed takes the initialize down with it
			// (a POST is not retried by net/http). No session exists yet, so one more try on a
			// fresh connection is safe.
			s, retry, err = p.start(ctx, conn, u, t)
		}
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
		if !retry || ctx.Err() != nil {
			break
		}
		p.log.Info("mcp: trying the other transport", "server", conn.Slug, "connection", conn.ID, "failed", string(t))
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	prefix := fmt.Sprintf("mcp server %q: ", conn.Slug)
	return nil, &bothFailed{msg: errs[0].Error() + "; then " + strings.TrimPrefix(errs[1].Error(), prefix), errs: errs}
}

// bothFailed is the error of an open that failed over both transports.
type bothFailed struct {
	msg  string
	errs []error
}

func (e *bothFailed) Error() string   { return e.msg }
func (e *bothFailed) Unwrap() []error { return e.errs }

// start opens and initialises one session over t. retry reports whether the answer suggests the
// server speaks the other transport.
func (p *Pool) start(ctx context.Context, conn Connection, u *url.URL, t Transport) (s *session, retry bool, err error) {
	w := newWire(u, conn.Headers, p.cfg.MaxResponseBytes)
	hc := &http.Client{Transport: &roundTripper{base: p.base, w: w}, CheckRedirect: w.checkRedirect}
	libLog := slog.New(&scrubHandler{h: p.log.Handler(), w: w, demote: true}).With("server", conn.Slug)
	sctx, scancel := context.WithCancel(p.ctx)
	s = &session{
		p: p, id: conn.ID, slug: conn.Slug, url: conn.URL, transport: t, w: w,
		log: slog.New(&scrubHandler{h: p.log.Handler(), w: w}).With("server", conn.Slug, "connection", conn.ID),
		ctx: sctx, cancel: scancel,
	}
	s.nextID.Store(firstRequestID)
	s.touch()

	switch t {
	case SSE:
		longest := max(p.cfg.CallMax, p.cfg.ListTimeout, p.cfg.InitTimeout)
		s.tr, err = transport.NewSSE(conn.URL, transport.WithHTTPClient(hc), transport.WithSSELogger(libLog),
			transport.WithEndpointTimeout(p.cfg.InitTimeout), transport.WithResponseTimeout(longest))
	default:
		w.onStream = s.streamFault
		s.tr, err = transport.NewStreamableHTTP(conn.URL, transport.WithHTTPBasicClient(hc),
			transport.WithContinuousListening(), transport.WithHTTPLogger(libLog))
	}
	if err != nil {
		scancel()
		return nil, false, fmt.Errorf("mcp server %q: %s transport: %s", conn.Slug, t, w.clean(err.Error()))
	}
	s.client = client.NewClient(s.tr, client.WithProtocolVersion(mcpgo.LATEST_LEGACY_PROTOCOL_VERSION))
	s.client.OnNotification(s.notify)
	if t == SSE {
		s.client.OnConnectionLost(s.lost)
	}

	pr := &probe{}
	ictx := context.WithValue(ctx, probeKey{}, pr)
	// Start gets the session's own context, as the event stream must outlive initialise; while
	// Start runs (the SSE transport waits there for its endpoint) initialise's deadline ends it.
	// A streamable HTTP session's context there is the GET stream's alone, which streamFault
	// stops without ending the session.
	lctx, unlisten := context.WithCancel(sctx)
	s.unlisten = unlisten
	stop := context.AfterFunc(ctx, scancel)
	err = s.client.Start(lctx)
	if !stop() {
		err = errors.Join(err, ctx.Err())
	}
	if err == nil {
		_, err = s.client.Initialize(ictx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
			ProtocolVersion: mcpgo.LATEST_LEGACY_PROTOCOL_VERSION,
			ClientInfo:      mcpgo.Implementation{Name: p.cfg.ClientName, Version: p.cfg.ClientVersion},
		}})
	}
	if err != nil {
		s.close()
		st := int(pr.status.Load())
		rejected := st == http.StatusUnauthorized || st == http.StatusForbidden || errors.Is(err, transport.ErrAuthorizationRequired)
		retry = !rejected && ctx.Err() == nil &&
			(t == SSE || errors.Is(err, transport.ErrLegacySSEServer) || st == http.StatusNotFound || st == http.StatusMethodNotAllowed)
		timeout := ""
		if ctx.Err() != nil && p.ctx.Err() == nil {
			timeout = fmt.Sprintf("timed out after %s: the server did not answer initialize in time", p.cfg.InitTimeout)
		}
		return nil, retry, s.describe("initialize over "+string(t), err, pr, timeout)
	}
	return s, false, nil
}

// request sends one JSON-RPC request on the session and returns its result. A request whose
// context ends first is cancelled at the server with notifications/cancelled.
func (s *session) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := mcpgo.NewRequestId(s.nextID.Add(1))
	resp, err := s.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcpgo.JSONRPC_VERSION, ID: id, Method: method, Params: params})
	if err != nil {
		if ctx.Err() != nil {
			s.cancelRequest(id, context.Cause(ctx))
		}
		return nil, err
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: s.w.clean(resp.Error.Message)}
	}
	if len(resp.Result) == 0 {
		return nil, errors.New("malformed JSON-RPC response: neither a result nor an error")
	}
	return resp.Result, nil
}

// cancelNoticeTimeout bounds the sending of one notifications/cancelled.
const cancelNoticeTimeout = 5 * time.Second

// cancelRequest tells the server, off the caller's path, to stop working on request id.
func (s *session) cancelRequest(id mcpgo.RequestId, cause error) {
	reason := "cancelled by the client"
	if errors.Is(cause, context.DeadlineExceeded) {
		reason = "timed out"
	}
	n := mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{
		Method: string(mcpgo.MethodNotificationCancelled),
		Params: mcpgo.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
	}}
	s.p.goTracked(func() {
		ctx, cancel := context.WithTimeout(s.ctx, cancelNoticeTimeout)
		defer cancel()
		if err := s.tr.SendNotification(ctx, n); err != nil {
			s.log.Debug("mcp: notifications/cancelled not delivered", "err", err)
		}
	})
}

// notify handles a server notification: tools/list_changed marks the connection's listing stale,
// progress renews its call's deadline, and progress and log messages go to the debug log.
func (s *session) notify(n mcpgo.JSONRPCNotification) {
	switch n.Method {
	case string(mcpgo.MethodNotificationToolsListChanged):
		s.p.markChanged(s.id)
		s.log.Debug("mcp: tools/list_changed")
	case "notifications/progress":
		f := n.Params.AdditionalFields
		if token, ok := f["progressToken"].(string); ok {
			s.p.renew(token)
		}
		s.log.Debug("mcp: progress", "progress", f["progress"], "total", f["total"], "message", f["message"])
	case "notifications/message":
		f := n.Params.AdditionalFields
		s.log.Debug("mcp: server log", "level", f["level"], "data", clip(fmt.Sprint(f["data"]), 500))
	}
}

// lost marks an SSE session whose event stream broke, and fails its pending requests now rather
// than at their deadlines.
func (s *session) lost(err error) {
	s.dead.Store(true)
	s.log.Warn("mcp: event stream lost", "err", err)
	_ = s.tr.Close()
}

// streamFault is told by the wire when the GET stream of a streamable HTTP session fails: its
// request was refused (status) or could not be sent, or its body broke (err). When the stream
// had worked on this session, the server restarted or forgot the session: the session is
// retired (the next request opens a new one) and that is logged once. When it never worked,
// the server keeps no stream for it: listening stops, and the session serves on without
// tools/list_changed (lists are relisted by age). Either way the library does not retry every
// second.
func (s *session) streamFault(status int, err error) {
	s.unlisten()
	if s.p.ctx.Err() != nil || s.ctx.Err() != nil {
		return // closing
	}
	what := "the request failed: " + s.w.clean(fmt.Sprint(err))
	if status != 0 {
		what = fmt.Sprintf("the server answered HTTP %d", status)
	}
	if !s.w.streamOpened.Load() {
		s.log.Info("mcp: the server keeps no event stream for the session; tools/list_changed will not arrive, and lists are relisted by age", "stream", what)
		return
	}
	if s.dead.Swap(true) {
		return
	}
	s.w.quiet.Store(true)
	s.p.retire(s)
	s.log.Warn("mcp: the server dropped the session's event stream (it restarted or forgot the session); the next request opens a new session", "stream", what)
}

func (s *session) touch() { s.lastUsed.Store(s.p.cfg.Now().UnixNano()) }

// close ends the session: mcp-go's Close sends the DELETE, through the round tripper, so with the
// login's credentials.
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.w.quiet.Store(true) // a DELETE the server cannot take is nothing to act on
		_ = s.client.Close()
		s.cancel()
	})
}

// fault is what a failed request says about its session.
type fault int

const (
	keep    fault = iota // the session is fine; the error is the call's
	expired              // the server forgot the session: reopen and retry once
	broken               // the session cannot be trusted: reopen for the next call
)

func (s *session) classify(err error, pr *probe) fault {
	st := int(pr.status.Load())
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return keep
	case errors.Is(err, transport.ErrSessionTerminated):
		return expired
	case s.transport == StreamableHTTP && pr.withSession.Load() && (st == http.StatusNotFound || st == http.StatusBadRequest):
		// Whatever the body says: some servers answer an unknown session with a JSON-RPC error
		// (-32000 "Bad Request: No valid session ID provided"), which must not keep the session.
		return expired
	case s.transport == SSE && (st == http.StatusNotFound || st == http.StatusBadRequest):
		return expired
	case errors.As(err, new(*RPCError)):
		return keep
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return keep
	case pr.tooLarge.Load() && s.transport == StreamableHTTP:
		return keep
	}
	return broken
}

// describe turns a failure of op into an error that names the server, says what happened (with
// what the server answered, when it answered an HTTP error), and carries no credential. timeout,
// when set, says which time limit the request passed.
func (s *session) describe(op string, err error, pr *probe, timeout string) error {
	prefix := fmt.Sprintf("mcp server %q: %s", s.slug, op)
	st := int(pr.status.Load())
	var rpc *RPCError
	switch {
	case pr.tooLarge.Load() || errors.Is(err, ErrTooLarge) || (s.transport == SSE && s.w.overflowed.Load()):
		return fmt.Errorf("%s: %w: the server sent more than %d bytes", prefix, ErrTooLarge, s.p.cfg.MaxResponseBytes)
	case timeout != "":
		return &remoteError{msg: prefix + ": " + timeout, cause: context.DeadlineExceeded}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return &remoteError{msg: prefix + ": " + err.Error(), cause: err}
	case st == http.StatusUnauthorized || st == http.StatusForbidden || errors.Is(err, transport.ErrAuthorizationRequired):
		if st == 0 {
			st = http.StatusUnauthorized
		}
		return fmt.Errorf("%s: %w (HTTP %d)", prefix, ErrRejected, st)
	case errors.As(err, &rpc):
		if st >= 400 {
			return fmt.Errorf("%s: %w (HTTP %d)", prefix, rpc, st)
		}
		return fmt.Errorf("%s: %w", prefix, rpc)
	case errors.As(err, new(*url.Error)) && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
		return &remoteError{msg: prefix + ": the server closed the connection before it answered; try again (the session is reopened)", cause: err}
	}
	msg := s.w.clean(tidy(err.Error()))
	if st >= 400 {
		if answer := s.w.clean(strings.TrimSpace(pr.answer())); !strings.Contains(msg, fmt.Sprint(st)) || (answer != "" && !strings.Contains(msg, answer)) {
			msg += fmt.Sprintf("; the server answered HTTP %d", st)
			if answer != "" {
				msg += ": " + answer
			}
		}
	}
	return &remoteError{msg: prefix + ": " + msg, cause: err}
}

// tidy drops the layers of mcp-go's wrapping that say nothing.
func tidy(msg string) string {
	msg = strings.TrimPrefix(msg, "transport error: ")
	for strings.Contains(msg, "failed to send request: failed to send request: ") {
		msg = strings.ReplaceAll(msg, "failed to send request: failed to send request: ", "failed to send request: ")
	}
	return msg
}

// remoteError is an error whose text was scrubbed; errors.Is still sees its cause, but nothing
// unwraps to the cause's own text.
// dropped reports whether err is a connection the server closed before it answered.
func dropped(err error) bool {
	return errors.As(err, new(*remoteError)) && errors.As(err, new(*url.Error)) &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET))
}

type remoteError struct {
	msg   string
	cause error
}

func (e *remoteError) Error() string { return e.msg }

// Is reports whether the cause is target.
func (e *remoteError) Is(target error) bool { return errors.Is(e.cause, target) }

// Unwrap is the cause, for errors.As.
func (e *remoteError) Unwrap() error { return e.cause }
