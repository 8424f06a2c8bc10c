package webapp_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// client is a browser-like HTTP client (cookies kept, redirects not followed) on the app.
type client struct {
	t    testing.TB
	a    *app
	hc   *http.Client
	csrf string
}

// newClient signs in as email through the sign-in form.
func (a *app) newClient(email string) *client {
	a.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &client{t: a.t, a: a, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, page := c.get("/signin")
	tok := regexp.MustCompile(`name="form_token" value="([^"]+)"`).FindStringSubmatch(page)
	if tok == nil {
		a.t.Fatalf("no form token on the sign-in page:\n%s", page)
	}
	resp := c.post("/signin", url.Values{"email": {email}, "password": {password}, "form_token": {tok[1]}, "next": {"/orgs"}})
	if resp.StatusCode != http.StatusSeeOther {
		a.t.Fatalf("sign in: %d", resp.StatusCode)
	}
	_, page = c.get("/orgs")
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		a.t.Fatalf("no CSRF token on /orgs:\n%s", page)
	}
	c.csrf = m[1]
	return c
}

func (c *client) get(path string) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.hc.Get(c.a.url + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *client) post(path string, form url.Values) *http.Response {
	c.t.Helper()
	resp, err := c.hc.PostForm(c.a.url+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestSecurityHeaders: every page has a strict Content-Security-Policy (nothing inline, nothing
// from elsewhere, no framing) and is never cached; its assets are served under their content's
// hash, cached for a year; an unknown asset is a 404.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	c := a.newClient("ada@example.com")
	resp, page := c.get("/orgs")
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q allows something unsafe", csp)
	}
	if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("X-Frame-Options %q", got)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("a page's Cache-Control is %q", got)
	}
	if regexp.MustCompile(`<script>|<style|style="| on[a-z]+="`).MatchString(page) {
		t.Errorf("the page holds an inline script, style or handler:\n%s", page)
	}
	assets := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(assets) < 3 {
		t.Fatalf("the page names %d assets", len(assets))
	}
	for _, m := range assets {
		resp, body := c.get(m[1])
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=31536000") || len(body) == 0 {
			t.Errorf("%s: %d %q", m[1], resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}
	if resp, _ := c.get("/assets/app.0000000000.css"); resp.StatusCode != 404 {
		t.Errorf("an unknown asset answers %d", resp.StatusCode)
	}
	// The API is still the API: JSON, and a credential needed.
	resp, body := (&client{t: t, a: a, hc: http.DefaultClient}).get("/api/orgs")
	if resp.StatusCode != 401 || !strings.Contains(body, `"EUNAUTHORIZED"`) {
		t.Errorf("GET /api/orgs without a credential: %d %s", resp.StatusCode, body)
	}
}

// TestHTMXPinned: the vendored htmx is the pinned release, byte for byte (npm htmx.org 2.0.11,
// dist/htmx.min.js), with its licence beside it.
func TestHTMXPinned(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("static/vendor/htmx-2.0.11.min.js")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717" {
		t.Fatalf("static/vendor/htmx-2.0.11.min.js has sha256 %s, not the release's", got)
	}
	if l, err := os.ReadFile("static/vendor/htmx-LICENSE.txt"); err != nil || !strings.Contains(string(l), "Zero-Clause BSD") {
		t.Fatalf("htmx's licence: %v", err)
	}
}

// TestDoubleSubmit: a form sent twice (at once, and again later) does one thing, and both
// answers go to the same page.
func TestDoubleSubmit(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	c := a.newClient("ada@example.com")
	form := url.Values{"name": {"Twice"}, "csrf_token": {c.csrf}, "once": {"7f3c0b0e2a9d4c1e8b6a5f4e3d2c1b0a"}}
	var wg sync.WaitGroup
	locs := make([]string, 3)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			resp, err := c.hc.PostForm(a.url+"/orgs", form)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			locs[i] = resp.Header.Get("Location")
		}(i)
	}
	wg.Wait()
	locs[2] = c.post("/orgs", form).Header.Get("Location")
	orgs := a.api(200, "GET", "/api/orgs", nil)["orgs"].([]any)
	if len(orgs) != 1 {
		t.Fatalf("three sendings of one form made %d organisations", len(orgs))
	}
	want := "/orgs/" + orgs[0].(map[string]any)["id"].(string)
	for i, l := range locs {
		if l != want {
			t.Errorf("answer %d went to %q, want %q", i, l, want)
		}
	}
	// Another form (another once token) makes another.
	c.post("/orgs", url.Values{"name": {"Twice"}, "csrf_token": {c.csrf}, "once": {"0a1b2c3d4e5f60718293a4b5c6d7e8f9"}})
	if n := len(a.api(200, "GET", "/api/orgs", nil)["orgs"].([]any)); n != 2 {
		t.Fatalf("a second form made %d organisations in all, want 2", n)
	}
}

// TestForms: a change without the session's CSRF token is refused by the API and changes
// nothing; a sign-in posted without the sign-in form's own cookie is refused; sign-in never
// sends the browser to another site; a request without a session goes to sign-in (htmx's with
// HX-Redirect).
func TestForms(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	c := a.newClient("ada@example.com")
	resp := c.post("/orgs", url.Values{"name": {"Forged"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a form without the CSRF token answered %d", resp.StatusCode)
	}
	if n := len(a.api(200, "GET", "/api/orgs", nil)["orgs"].([]any)); n != 0 {
		t.Fatalf("a forged form made an organisation")
	}

	jar, _ := cookiejar.New(nil)
	anon := &client{t: t, a: a, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp = anon.post("/signin", url.Values{"email": {"ada@example.com"}, "password": {password}, "form_token": {"0123456789abcdef0123456789abcdef"}})
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) > 0 && resp.Cookies()[0].Name == "guilds_session" {
		t.Fatalf("a sign-in from another site answered %d with cookies %v", resp.StatusCode, resp.Cookies())
	}
	_, page := anon.get("/signin?next=//evil.example/x")
	tok := regexp.MustCompile(`name="form_token" value="([^"]+)"`).FindStringSubmatch(page)[1]
	resp = anon.post("/signin", url.Values{"email": {"ada@example.com"}, "password": {password}, "form_token": {tok}, "next": {"//evil.example/x"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/" {
		t.Fatalf("sign-in with next=//evil.example went to %d %q", resp.StatusCode, loc)
	}

	out := &client{t: t, a: a, hc: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, _ = out.get("/orgs?x=1")
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/signin?next=%2Forgs%3Fx%3D1" {
		t.Fatalf("a page without a session: %d %q", resp.StatusCode, loc)
	}
	req, _ := http.NewRequest("GET", a.url+"/orgs", nil)
	req.Header.Set("HX-Request", "true")
	req.Header.Set("HX-Current-URL", a.url+"/orgs/org_x")
	r2, err := out.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if got := r2.Header.Get("HX-Redirect"); r2.StatusCode != 401 || got != "/signin?next=%2Forgs%2Forg_x" {
		t.Fatalf("htmx without a session: %d HX-Redirect %q", r2.StatusCode, got)
	}
	resp, page = c.get("/no/such/page")
	if resp.StatusCode != 404 || !strings.Contains(page, "no page /no/such/page") {
		t.Fatalf("an unknown page: %d", resp.StatusCode)
	}
}
