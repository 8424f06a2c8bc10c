package webapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/valyala/fasthttp"
)

// API answers operator API requests in process: cmd passes the fiber app's own handler, so a
// request the app makes passes the same guard, rules and audit log as one from any other client.
type API func(*fasthttp.RequestCtx)

// apiError is an error answer of the API: its status, code and message (written for the caller,
// which the app shows as it is).
type apiError struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]any // the error object's other members (setup_state, missing, ...)
}

// Error returns the API's message.
func (e *apiError) Error() string { return e.Message }

// statusOf is the HTTP status of an error the API answered, 500 for any other.
func statusOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return http.StatusInternalServerError
}

// codeOf is the code of an error the API answered, EINTERNAL for any other.
func codeOf(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return orchestrator.EINTERNAL
}

// messageOf is what the operator reads of an error: the API's message, or a generic line for a
// fault of the app itself (logged by the caller).
func messageOf(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Message
	}
	return "internal error; the details are in the orchestrator log"
}

// forwarded are the browser request's headers an API request carries besides its cookies: who is
// asking (the audit log's client and user agent) and where (the public address a login's callback
// and an invitation link are built on).
var forwarded = []string{fiber.HeaderUserAgent, fiber.HeaderXForwardedFor, fiber.HeaderXForwardedProto, fiber.HeaderXForwardedHost, "X-Forwarded-Port"}

// request is one API request the app makes for a browser request.
type request struct {
	method, path string
	body         any    // marshalled as JSON when not nil
	csrf         string // the session's CSRF token, sent on a request that changes state
	anonymous    bool   // sent without the browser's cookies
}

// do sends r to the API as the browser's own request (its cookies, client address, host and
// request id) and decodes a 2xx answer's JSON into out (when not nil). An error answer is an
// *apiError; the answer's cookies (a new session, a sign-out) are passed on to the browser.
func (a *App) do(c *fiber.Ctx, r request, out any) error {
	rc := new(fasthttp.RequestCtx)
	rc.Init(&fasthttp.Request{}, c.Context().RemoteAddr(), nil)
	req := &rc.Request
	req.Header.SetMethod(r.method)
	req.SetRequestURI(r.path)
	req.Header.SetHost(string(c.Request().Host()))
	if raw := c.Request().Header.Peek(fiber.HeaderCookie); len(raw) > 0 && !r.anonymous {
		req.Header.Set(fiber.HeaderCookie, string(raw))
	}
	for _, h := range forwarded {
		if v := c.Request().Header.Peek(h); len(v) > 0 {
			req.Header.Set(h, string(v))
		}
	}
	if id := c.GetRespHeader(fiber.HeaderXRequestID); id != "" {
		req.Header.Set(fiber.HeaderXRequestID, id) // the page's audit rows share its id
	}
	if r.csrf != "" {
		req.Header.Set(csrfHeader, r.csrf)
	}
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", r.method, r.path, err)
		}
		req.Header.SetContentType(fiber.MIMEApplicationJSON)
		req.SetBodyRaw(b)
	}
	if a.onRequest != nil {
		a.onRequest(r.method, r.path)
	}
	a.API(rc)
	resp := &rc.Response
	resp.Header.VisitAllCookie(func(_, v []byte) {
		ck := fasthttp.AcquireCookie()
		defer fasthttp.ReleaseCookie(ck)
		if ck.ParseBytes(v) == nil {
			c.Response().Header.SetCookie(ck)
		}
	})
	status, body := resp.StatusCode(), resp.Body()
	if status >= 300 {
		return decodeError(status, body)
	}
	if out == nil || len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode the answer of %s %s: %w", r.method, r.path, err)
	}
	return nil
}

// decodeError reads the API's {"error": {"code", "message", ...}} answer.
func decodeError(status int, body []byte) error {
	var eb struct {
		Error map[string]any `json:"error"`
	}
	e := &apiError{Status: status, Code: orchestrator.EINTERNAL, Message: fmt.Sprintf("the API answered %d", status)}
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil {
		if s, ok := eb.Error["code"].(string); ok {
			e.Code = s
		}
		if s, ok := eb.Error["message"].(string); ok {
			e.Message = s
		}
		e.Fields = map[string]any{}
		for k, v := range eb.Error {
			if k != "code" && k != "message" {
				e.Fields[k] = v
			}
		}
	}
	return e
}

// apiPath joins path segments into an API path, escaping each id.
func apiPath(parts ...string) string {
	var b strings.Builder
	b.WriteString("/api")
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(escapeSegment(p))
	}
	return b.String()
}

// escapeSegment escapes one path segment (ids are [A-Za-z0-9_-], but names of secrets and tools
// come from people and models).
func escapeSegment(s string) string {
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.' || ch == '~' {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", ch)
	}
	return b.String()
}
