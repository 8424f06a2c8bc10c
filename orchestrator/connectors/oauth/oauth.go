// Package oauth is the orchestrator's OAuth 2.1 client for remote MCP servers: protected-resource
// and authorization-server discovery, dynamic client registration, PKCE authorization requests,
// code exchange and refresh. It keeps no state: the caller stores what it returns.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client speaks the OAuth endpoints. Set its fields once; the zero value works.
type Client struct {
	HTTP       *http.Client     // nil: a client with a 15 s timeout that follows no redirect to another host
	ClientName string           // client_name sent at registration; default "guilds"
	Now        func() time.Time // token expiry is measured by it; default time.Now
}

// maxDocument bounds what is read of any metadata, registration or token response.
const maxDocument = 1 << 20

// Error is an OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2) or an unexpected HTTP status.
type Error struct {
	Op          string // what was asked: "token", "refresh", "registration"
	Status      int    // the HTTP status
	Code        string // the error code (invalid_grant, invalid_client_metadata, ...); "" when the body had none
	Description string // error_description, clipped
}

// Error names the request, the status and what the server said.
func (e *Error) Error() string {
	msg := fmt.Sprintf("the authorization server answered the %s request with HTTP %d", e.Op, e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// OAuthErrorCode returns the error code, for callers that test for invalid_grant.
func (e *Error) OAuthErrorCode() string { return e.Code }

// Temporary reports whether the failure may pass by itself (a 5xx or 429).
func (e *Error) Temporary() bool { return e.Status >= 500 || e.Status == http.StatusTooManyRequests }

// ErrInvalid marks a document or an answer this client cannot use (missing, malformed, insecure).
var ErrInvalid error = unusable{}

type unusable struct{}

func (unusable) Error() string { return "unusable OAuth metadata" }

// Unusable marks the error as the server's document or answer, not a failure to reach it.
func (unusable) Unusable() bool { return true }

// Unusable reports that the server answered and the answer was refused, not that it was unreachable.
func (e *Error) Unusable() bool { return !e.Temporary() }

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

// defaultHTTP bounds each request to 15 s and follows redirects only on the same host.
var defaultHTTP = &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 || !strings.EqualFold(req.URL.Host, via[0].URL.Host) {
		return http.ErrUseLastResponse
	}
	return nil
}}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Client) name() string {
	if c.ClientName != "" {
		return c.ClientName
	}
	return "guilds"
}

// Loopback reports whether host (a name or an address, without port) is this machine's loopback:
// localhost, 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckEndpoint accepts an absolute https URL, or an http URL on loopback, without a fragment.
func CheckEndpoint(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("%w: %s %q is not an absolute URL", ErrInvalid, what, clip(raw, 200))
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && Loopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%w: %s %s is http:// on a host that is not loopback; an authorization server must use https", ErrInvalid, what, clip(raw, 200))
	}
	return fmt.Errorf("%w: %s %q is not an http(s) URL", ErrInvalid, what, clip(raw, 200))
}

// get fetches a JSON document; found is false for a 404 or 410 (try the next place).
func (c *Client) get(ctx context.Context, raw string) (body []byte, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: %w", raw, unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: read: %w", raw, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, false, nil
	case resp.StatusCode >= 500:
		return nil, false, fmt.Errorf("GET %s: HTTP %d", raw, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, false, fmt.Errorf("%w: GET %s answered HTTP %d", ErrInvalid, raw, resp.StatusCode)
	case len(body) > maxDocument:
		return nil, false, fmt.Errorf("%w: GET %s sent more than %d bytes", ErrInvalid, raw, maxDocument)
	}
	return body, true, nil
}

// unwrapURL drops *url.Error's repetition of the method and URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// clip shortens s to n bytes on a rune boundary for an error text, one line.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
