package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// wire is what one session's HTTP requests share: where credentials may go, the func that makes
// them, and every secret value seen, for scrubbing text.
type wire struct {
	origin   *url.URL
	headers  atomic.Value // HeaderFunc
	mu       sync.Mutex
	secrets  atomic.Pointer[[]string]
	maxBytes int64
	// overflowed is set when a response that answers no request of ours (an event stream)
	// passed maxBytes.
	overflowed atomic.Bool
	// onStream, when set (a streamable HTTP session), is told when the GET stream fails: an
	// HTTP error other than 405 (status), no answer, or a body that broke (err).
	onStream func(status int, err error)
	// streamOpened is set once a GET stream was accepted on this session.
	streamOpened atomic.Bool
	// quiet is set once the session is out of use (broken or closing): the library's lines about
	// it go to the debug log.
	quiet atomic.Bool
}

func newWire(u *url.URL, h HeaderFunc, maxBytes int64) *wire {
	w := &wire{origin: u, maxBytes: maxBytes}
	w.headers.Store(h)
	var secrets []string
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			secrets = appendSecret(secrets, pw)
		}
		secrets = appendSecret(secrets, u.User.Username())
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			secrets = appendSecret(secrets, v)
		}
	}
	w.secrets.Store(&secrets)
	return w
}

func (w *wire) headerFunc() HeaderFunc { return w.headers.Load().(HeaderFunc) }

// note records the values of h as secrets, cheaply when they are known already.
func (w *wire) note(h http.Header) {
	known := *w.secrets.Load()
	fresh := false
	for _, vs := range h {
		for _, v := range vs {
			if len(v) >= minSecretLen && !contains(known, v) {
				fresh = true
			}
		}
	}
	if !fresh {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	merged := append([]string(nil), *w.secrets.Load()...)
	for _, s := range secretsOf(h) {
		merged = appendSecret(merged, s)
	}
	w.secrets.Store(&merged)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// scrub replaces every secret in s.
func (w *wire) scrub(s string) string {
	for _, secret := range *w.secrets.Load() {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

// clean scrubs s and makes it one line of at most maxErrorText bytes, for an error text.
func (w *wire) clean(s string) string {
	s = w.scrub(s)
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return clip(s, maxErrorText)
}

// maxErrorText bounds the part of an error text that comes from a server.
const maxErrorText = 600

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// checkRedirect refuses a redirect to another origin when the connection carries credentials.
func (w *wire) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if w.headerFunc() != nil && !sameOrigin(req.URL, via[0].URL) {
		return fmt.Errorf("%w (to %s)", ErrRedirectRefused, req.URL.Host)
	}
	return nil
}

// sameOrigin reports whether a and b have one scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// probeKey carries a *probe in a request's context.
type probeKey struct{}

// probe records what the HTTP layer saw under one JSON-RPC request, which mcp-go's errors do not
// always keep: the failing status and the start of its body, whether it answered a request in a
// session, an oversized body.
type probe struct {
	status      atomic.Int32
	withSession atomic.Bool
	tooLarge    atomic.Bool
	body        atomic.Pointer[string]
}

// answer is the start of the failing response's body, "" when none was read.
func (pr *probe) answer() string {
	if b := pr.body.Load(); b != nil {
		return *b
	}
	return ""
}

// answerPeek is how much of a failing response's body a probe keeps.
const answerPeek = 300

func probeFrom(ctx context.Context) *probe {
	pr, _ := ctx.Value(probeKey{}).(*probe)
	return pr
}

// roundTripper puts a session's credentials on each request to the server's origin, the closing
// DELETE included, and bounds what is read of each response.
type roundTripper struct {
	base http.RoundTripper
	w    *wire
}

// sessionHeader is the streamable HTTP session header.
const sessionHeader = "Mcp-Session-Id"

// RoundTrip implements http.RoundTripper.
func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req
	if fn := t.w.headerFunc(); fn != nil && sameOrigin(req.URL, t.w.origin) {
		h, err := fn(req.Context())
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("credentials: %w", err)
		}
		t.w.note(h)
		out = req.Clone(req.Context())
		for k, vs := range h {
			out.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	stream := req.Method == http.MethodGet && t.w.onStream != nil
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		if stream && req.Context().Err() == nil {
			t.w.onStream(0, err)
		}
		return nil, err
	}
	pr := probeFrom(req.Context())
	if pr != nil && resp.StatusCode >= 400 {
		pr.status.Store(int32(resp.StatusCode))
		pr.withSession.Store(req.Header.Get(sessionHeader) != "")
		if resp.Body != nil && resp.Body != http.NoBody {
			peek, _ := io.ReadAll(io.LimitReader(resp.Body, answerPeek))
			text := string(peek)
			pr.body.Store(&text)
			resp.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(peek), resp.Body), Closer: resp.Body}
		}
	}
	switch {
	case stream && resp.StatusCode < 300:
		t.w.streamOpened.Store(true)
	case stream && resp.StatusCode != http.StatusMethodNotAllowed:
		t.w.onStream(resp.StatusCode, nil)
	}
	if resp.Body != nil && resp.Body != http.NoBody {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		lb := &limitedBody{rc: resp.Body, limit: t.w.maxBytes, events: mt == "text/event-stream", pr: pr, w: t.w, lineStart: true}
		if stream && resp.StatusCode < 300 {
			lb.broke = func(err error) {
				if req.Context().Err() == nil {
					t.w.onStream(0, err)
				}
			}
		}
		resp.Body = lb
	}
	return resp, nil
}

// readCloser joins a reader and the closer of the body it reads.
type readCloser struct {
	io.Reader
	io.Closer
}

// limitedBody fails a read once a body passes limit bytes; on an event stream the limit holds
// per event, so a long-lived stream is not cut for its total.
type limitedBody struct {
	rc        io.ReadCloser
	limit     int64
	n         int64
	events    bool
	lineStart bool
	over      bool
	pr        *probe
	w         *wire
	broke     func(error) // the GET stream's: told of a read error other than the end of the stream
}

// errBodyTooLarge is what a read past the limit returns.
var errBodyTooLarge = fmt.Errorf("%w: the response passed the size limit", ErrTooLarge)

// Read implements io.Reader.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, errBodyTooLarge
	}
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && b.broke != nil {
		b.broke(err)
		b.broke = nil
	}
	if !b.events {
		b.n += int64(n)
	} else {
		for _, c := range p[:n] {
			switch {
			case c == '\n' && b.lineStart:
				b.n = 0 // a blank line ends the event
			case c == '\n':
				b.lineStart = true
			case c != '\r':
				b.lineStart = false
			}
			b.n++
		}
	}
	if b.n > b.limit {
		b.over = true
		if b.pr != nil {
			b.pr.tooLarge.Store(true)
		} else {
			b.w.overflowed.Store(true)
		}
		return 0, errBodyTooLarge
	}
	return n, err
}

// Close implements io.Closer.
func (b *limitedBody) Close() error { return b.rc.Close() }
