package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

// FuzzCredentialHeaders sends whatever Authorization header and Cookie header the fuzzer makes to
// a guarded route over real PostgreSQL: the guard's parsing of a bearer token and of the session
// cookie never panics and never answers a server error; a request that does not carry the
// bootstrap token is refused 401, with WWW-Authenticate, and the answer never repeats what was
// presented (a long enough token or cookie value).
func FuzzCredentialHeaders(f *testing.F) {
	live := identity.Mint(identity.PrefixPAT).Value // well-formed, never issued
	for _, s := range [][2]string{
		{"", ""},
		{"Bearer " + live, ""},
		{"bearer  " + identity.Mint(identity.PrefixRunToken).Value + " ", ""},
		{"Basic YWxhZGRpbjpvcGVuc2VzYW1l", ""},
		{"Bearer gld_agent_", ""},
		{"Bearer " + identity.Mint(identity.PrefixSession).Value, ""},
		{"", httpapi.SessionCookie + "=" + identity.Mint(identity.PrefixSession).Value},
		{"", httpapi.SessionCookie + "=" + live},
		{"", httpapi.SessionCookie + "=; other=x"},
		{"", "a=b; " + httpapi.SessionCookie + "=\"gld_ses_quoted\"; " + httpapi.SessionCookie + "=second"},
		{"Bearer x", httpapi.SessionCookie + "=" + identity.Mint(identity.PrefixSession).Value},
	} {
		f.Add(s[0], s[1])
	}
	pool := pgtest.NewDB(f)
	store := postgres.NewStore(pool)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids := &identity.Service{Store: store, Box: newBox(f), Bootstrap: token, Log: log}
	app := httpapi.New(&httpapi.Server{Scopes: store, Identity: ids, Accounts: store, Places: &identity.Places{Store: store}, Log: log})
	f.Fuzz(func(t *testing.T, authorization, cookie string) {
		req := httptest.NewRequest("GET", "/api/orgs", nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			return // not a request the HTTP layer reads (a control character in a header): not the guard's
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		bootstrap := false
		if tok, err := identity.ParseBearer(authorization); err == nil && tok == token {
			bootstrap = true
		}
		switch {
		case resp.StatusCode >= 500:
			t.Fatalf("Authorization %q, Cookie %q: %d %s", authorization, cookie, resp.StatusCode, raw)
		case bootstrap:
			return
		case resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "":
			t.Fatalf("Authorization %q, Cookie %q: %d (WWW-Authenticate %q) %s, want 401", authorization, cookie, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), raw)
		}
		for _, v := range presented(authorization, cookie) {
			if len(v) >= 12 && strings.Contains(string(raw), v) {
				t.Fatalf("the answer repeats the presented %q: %s", v, raw)
			}
		}
	})
}

// presented is what a request's credential headers carry that could be a secret: the bearer's
// token and each cookie's value.
func presented(authorization, cookie string) []string {
	out := []string{strings.TrimSpace(authorization)}
	if _, tok, ok := strings.Cut(strings.TrimSpace(authorization), " "); ok {
		out = append(out, strings.TrimSpace(tok))
	}
	for _, part := range strings.Split(cookie, ";") {
		if _, v, ok := strings.Cut(part, "="); ok {
			out = append(out, strings.Trim(strings.TrimSpace(v), `"`))
		}
	}
	return out
}
