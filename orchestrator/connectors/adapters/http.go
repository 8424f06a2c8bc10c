package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The frame's HTTP limits, from the spec.
const (
	Timeout      = 30 * time.Second // adapter HTTP stays at 30 seconds
	MaxBodyBytes = 10 << 20         // the most read of any answer
	maxErrorBody = 64 << 10         // the most read of an error answer
)

// defaultClient is the client of a Login without one.
var defaultClient = &http.Client{Timeout: Timeout}

// HTTP is one adapter's view of a login's HTTP: the provider's name for errors and the hook that
// puts the login's credentials on each request.
type HTTP struct {
	Provider string                              // display name in errors, e.g. CoinGecko
	Login    Login                               // the login the requests run with
	Auth     func(h http.Header)                 // sets the credential headers; nil sends none
	Classify func(status int, body []byte) error // optional: an adapter's own reading of a refusal (plan errors); nil falls back to the frame's
}

// Request is one provider request.
type Request struct {
	Method string      // "" is GET
	URL    string      // the full URL without query
	Query  url.Values  // added to URL
	Body   []byte      // sent as is
	Type   string      // Content-Type of Body
	Header http.Header // extra headers (idempotency keys, ...)
	What   string      // what the request looks up, named by a 404: "coin bitcoin"
}

// Get is a GET Request of base+path with a query.
func Get(base, path string, q url.Values, what string) Request {
	return Request{URL: strings.TrimRight(base, "/") + path, Query: q, What: what}
}

// Do sends r and returns the answer's body, mapping every failure to an *Error.
func (c HTTP) Do(ctx context.Context, r Request) ([]byte, error) {
	body, _, err := c.DoStatus(ctx, r)
	return body, err
}

// DoStatus is Do that also returns the HTTP status of a successful answer.
func (c HTTP) DoStatus(ctx context.Context, r Request) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	u := r.URL
	if len(r.Query) > 0 {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + r.Query.Encode()
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	var rd io.Reader
	if r.Body != nil {
		rd = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		// The URL may hold a key (Alchemy's path): name only the provider.
		return nil, 0, &Error{Kind: KindInvalid, Provider: c.Provider, Msg: "the catalog row's URL is not a valid URL"}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "guilds-orchestrator")
	if r.Type != "" {
		req.Header.Set("Content-Type", r.Type)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.Auth != nil {
		c.Auth(req.Header)
	}
	client := c.Login.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
		if err != nil {
			return nil, 0, c.transportError(ctx, err)
		}
		if len(body) > MaxBodyBytes {
			return nil, 0, &Error{Kind: KindMalformed, Provider: c.Provider, Msg: "answered more than 10 MiB; narrow the request"}
		}
		return body, resp.StatusCode, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, resp.StatusCode, c.statusError(resp, body, r.What)
}

// JSON sends r and decodes the answer into out.
func (c HTTP) JSON(ctx context.Context, r Request, out any) error {
	body, err := c.Do(ctx, r)
	if err != nil {
		return err
	}
	return c.Decode(body, out)
}

// Decode decodes a provider body into out, a malformed body being an *Error.
func (c HTTP) Decode(body []byte, out any) error {
	if err := json.Unmarshal(body, out); err != nil {
		return &Error{Kind: KindMalformed, Provider: c.Provider, Msg: "answered a body that is not the expected JSON"}
	}
	return nil
}

// transportError maps a failed round trip: the caller's cancel stays a context error; a deadline
// or a connection failure is the provider being down. The Go error text is never shown (it
// carries the URL, which may hold a key).
func (c HTTP) transportError(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Kind: KindDown, Provider: c.Provider, Msg: "did not answer within 30 s; the provider looks down, try again later"}
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s call canceled: %w", c.Provider, context.Canceled)
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Kind: KindDown, Provider: c.Provider, Msg: "did not answer within 30 s; the provider looks down, try again later"}
	}
	return &Error{Kind: KindDown, Provider: c.Provider, Msg: "could not be reached; the provider looks down, try again later"}
}

// statusError maps a refusal to one line.
func (c HTTP) statusError(resp *http.Response, body []byte, what string) error {
	err := c.statusKind(resp, body, what)
	var e *Error
	if errors.As(err, &e) && e.Status == 0 {
		e.Status = resp.StatusCode
	}
	return err
}

// statusKind is statusError before the status is recorded.
func (c HTTP) statusKind(resp *http.Response, body []byte, what string) error {
	if c.Classify != nil {
		if err := c.Classify(resp.StatusCode, body); err != nil {
			return c.scrubbed(err)
		}
	}
	said := c.said(body)
	with := func(s string) string {
		if said == "" {
			return s
		}
		return s + ": " + said
	}
	st := resp.StatusCode
	switch {
	case st == http.StatusUnauthorized:
		return &Error{Kind: KindRejected, KeyInvalid: true, Provider: c.Provider, Msg: with("refused the login's credentials (HTTP 401)") + "; reconnect the login"}
	case st == http.StatusForbidden:
		return &Error{Kind: KindRejected, Provider: c.Provider, Msg: with("refused the login (HTTP 403)") + "; reconnect the login"}
	case st == http.StatusTooManyRequests:
		ra := strings.TrimSpace(resp.Header.Get("Retry-After"))
		msg := "rate limit reached (HTTP 429)"
		if ra != "" {
			if n, err := strconv.Atoi(ra); err == nil {
				msg += fmt.Sprintf("; retry after %d s", n)
			} else {
				msg += "; retry after " + ra
			}
		} else {
			msg += "; retry later"
		}
		return &Error{Kind: KindRateLimited, Provider: c.Provider, RetryAfter: scrub(ra, c.Login.secrets()), Msg: scrub(msg, c.Login.secrets())}
	case st == http.StatusNotFound:
		if what == "" {
			what = "the requested object"
		}
		return &Error{Kind: KindNotFound, Provider: c.Provider, Msg: scrub(with("not found: "+what+" (HTTP 404)"), c.Login.secrets())}
	case st >= 500:
		return &Error{Kind: KindDown, Provider: c.Provider, Msg: fmt.Sprintf("is down (HTTP %d); try again later", st)}
	default:
		return &Error{Kind: KindUpstream, Provider: c.Provider, Msg: with(fmt.Sprintf("refused the request (HTTP %d)", st))}
	}
}

// scrubbed removes the login's secrets from an adapter's own error.
func (c HTTP) scrubbed(err error) error {
	var e *Error
	if errors.As(err, &e) {
		cp := *e
		cp.Msg = scrub(cp.Msg, c.Login.secrets())
		if cp.Provider == "" {
			cp.Provider = c.Provider
		}
		return &cp
	}
	return &Error{Kind: KindUpstream, Provider: c.Provider, Msg: scrub(err.Error(), c.Login.secrets())}
}

// said is the provider's own message in an error body, on one line, clipped and scrubbed.
func (c HTTP) said(body []byte) string {
	return scrub(Clip(strings.Join(strings.Fields(ProviderMessage(body)), " "), 160), c.Login.secrets())
}

// ProviderMessage finds the human message in a provider's error body: JSON fields error,
// message, detail, title, error_message (also nested under error, status or errors[0]), or a
// short plain-text body; "" when there is none.
func ProviderMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		if len(body) <= 200 && !bytes.ContainsAny(body, "<>") {
			return string(body)
		}
		return ""
	}
	return messageOf(v, 0)
}

// messageOf digs a message out of a decoded error body.
func messageOf(v any, depth int) string {
	if depth > 3 {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case []any:
		if len(x) > 0 {
			return messageOf(x[0], depth+1)
		}
	case map[string]any:
		for _, k := range []string{"message", "error_message", "detail", "error_description", "title", "error", "errors", "status", "msg"} {
			if f, ok := x[k]; ok {
				if m := messageOf(f, depth+1); m != "" {
					return m
				}
			}
		}
	}
	return ""
}

// Series sends r and reads its answer with Pairs: an object of [ms, value] series.
func (c HTTP) Series(ctx context.Context, r Request) (map[string][]Point, error) {
	body, err := c.Do(ctx, r)
	if err != nil {
		return nil, err
	}
	m, err := Pairs(body)
	if err != nil {
		return nil, &Error{Kind: KindMalformed, Provider: c.Provider, Msg: "answered a chart that is not the expected JSON"}
	}
	return m, nil
}
