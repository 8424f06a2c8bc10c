package webapp

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// view is one browser request: its session, the API under that session, and the layout's parts.
type view struct {
	a    *App
	c    *fiber.Ctx
	me   *session
	inst instance
	csrf string // the token a request that changes state carries (from its form or its header)
	// pending is the approvals banner's read, when the page made it (the inbox reuses it).
	pending *pendingCounts
}

// get reads an API path into out.
func (v *view) get(path string, out any) error {
	return v.a.do(v.c, request{method: fiber.MethodGet, path: path}, out)
}

// send makes a change through the API with the request's CSRF token, decoding the answer into out.
func (v *view) send(method, path string, body, out any) error {
	return v.a.do(v.c, request{method: method, path: path, body: body, csrf: v.csrf}, out)
}

// htmx reports whether the request is htmx's (a fragment is answered, not a page).
func (v *view) htmx() bool { return v.c.Get("HX-Request") == "true" }

// pageError is a page the app answers instead of the one asked for: not found, refused.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

// notFound is the app's own 404 (a path that names no page).
func notFound(msg string) error { return &pageError{status: http.StatusNotFound, msg: msg} }

// badRequest is a page asked for with a query it cannot answer; msg says what to ask instead.
func badRequest(msg string) error { return &pageError{status: http.StatusBadRequest, msg: msg} }

// page wraps a page handler: the security headers, the session (no session: to sign-in, and back
// here after), the instance (the layout's banner), the count of approvals waiting for the session
// (the approvals banner), and an error answered as a page of its own.
func (a *App) page(h func(v *view) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		secure(c)
		v := &view{a: a, c: c}
		if err := v.load(); err != nil {
			return a.fail(v, err)
		}
		v.countWaiting()
		if err := h(v); err != nil {
			return a.fail(v, err)
		}
		return nil
	}
}

// action wraps a handler of a form or control that changes state: the session as for a page, the
// CSRF token from the form (csrf_token) or htmx's header, passed on to every API write (whose
// guard checks it), and a form's once token, so that a form sent twice does one thing.
func (a *App) action(h func(v *view) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		secure(c)
		v := &view{a: a, c: c, csrf: c.Get(csrfHeader)}
		if v.csrf == "" {
			v.csrf = c.FormValue(csrfField)
		}
		if err := v.load(); err != nil {
			return a.fail(v, err)
		}
		once := c.FormValue(onceField)
		if once == "" {
			if err := h(v); err != nil {
				return a.fail(v, err)
			}
			return nil
		}
		return a.once.do(v.me.AccountID()+"/"+once, c, func() error {
			if err := h(v); err != nil {
				return a.fail(v, err)
			}
			return nil
		})
	}
}

// load reads the session and the instance; a request without a session is an *apiError 401.
func (v *view) load() error {
	me, err := v.a.session(v)
	if err != nil {
		return err
	}
	v.me = me
	return v.get("/api/instance", &v.inst)
}

// fail answers an error: a missing or expired session goes to sign-in (and comes back to the page
// it was on), anything else is a page (or, for htmx, a fragment) saying what went wrong.
func (a *App) fail(v *view, err error) error {
	c := v.c
	status := statusOf(err)
	var pe *pageError
	if errors.As(err, &pe) {
		status = pe.status
	}
	if status == http.StatusUnauthorized {
		to := "/signin?next=" + url.QueryEscape(returnPath(c))
		if v.htmx() {
			c.Set("HX-Redirect", to)
			return c.SendStatus(http.StatusUnauthorized)
		}
		return c.Redirect(to, http.StatusSeeOther)
	}
	msg := messageOf(err)
	if pe != nil {
		msg = pe.msg
	}
	if status >= 500 && codeOf(err) == orchestrator.EINTERNAL && pe == nil {
		a.log().Error("operator app page failed", "method", c.Method(), "path", c.Path(), "err", err.Error())
	}
	if v.htmx() {
		c.Set("HX-Retarget", "#notice")
		c.Set("HX-Reswap", "innerHTML")
		return a.fragment(c, status, "layout", "failure", msg)
	}
	title := http.StatusText(status)
	if status == http.StatusNotFound {
		title = "Not found"
	}
	return a.render(c, status, "failure", pageData{Title: title, Me: v.me, Inst: v.inst, Error: msg})
}

// returnPath is the page a request was made from: the page itself for a GET, else the page whose
// form or control sent it (htmx's current URL, else the Referer) when it is on this box.
func returnPath(c *fiber.Ctx) string {
	if c.Method() == fiber.MethodGet && c.Get("HX-Request") != "true" {
		return c.OriginalURL()
	}
	for _, h := range []string{"HX-Current-URL", fiber.HeaderReferer} {
		u, err := url.Parse(c.Get(h))
		if err != nil || u.Host != string(c.Request().Host()) {
			continue
		}
		if p := u.RequestURI(); localPath(p) {
			return p
		}
	}
	return "/"
}

// localPath reports whether p is a path on this box that is safe to redirect to: absolute, not
// protocol-relative (// or /\), with no control character.
func localPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// seeOther answers a form with a redirect to the page that shows its result (htmx follows it as a
// whole page).
func (v *view) seeOther(to string) error {
	if v.htmx() {
		v.c.Set("HX-Location", to)
		return v.c.SendStatus(http.StatusNoContent)
	}
	return v.c.Redirect(to, http.StatusSeeOther)
}

// secure sets the headers of every page and fragment: a strict Content-Security-Policy (nothing
// inline, nothing from elsewhere), no framing, no sniffing, no caching of what a session sees.
func secure(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentSecurityPolicy, contentSecurityPolicy)
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Cross-Origin-Opener-Policy", "same-origin")
	c.Vary("HX-Request")
}

// contentSecurityPolicy allows scripts, styles, images and requests from this box only, nothing
// inline and no framing. Forms are not limited (form-action): a Connect sends the browser on to
// the provider's authorization page.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// count is a notice's number taken from a redirect's query, "" unless it is a whole number: a
// crafted link puts no text of its own in a page.
func count(s string) string {
	if n, err := strconv.Atoi(s); err != nil || n < 0 {
		return ""
	}
	return s
}

// plainName is a notice's name (a server's, a folder's) taken from a redirect's query, "" unless it
// is at most 64 letters, digits, spaces and . _ - ( ): no link or sentence of a crafted address.
func plainName(s string) string {
	if s == "" || len(s) > 64 {
		return ""
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(" ._-()", r) {
			return ""
		}
	}
	return s
}
