package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/identity/oidctest"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The people the test provider signs in, by login.
var ssoAccounts = map[string]oidctest.Account{
	"alice":    {Email: "alice@example.com", EmailVerified: true, Name: "Alice Adams"},
	"bob":      {Email: "bob@example.com", EmailVerified: false, Name: "Bob Unverified"},
	"carol":    {Email: "Carol@Example.com", EmailVerified: true, Name: "Carol  Jones"},
	"dave":     {Email: "dave@example.com", EmailVerified: true, Name: "Dave Deactivated"},
	"erin":     {Email: "erin@example.com", EmailVerified: true, Name: "Erin"},
	"frank":    {Email: "frank@example.com", EmailVerified: true, Name: "Frank"},
	"stranger": {Email: "stranger@example.com", EmailVerified: true, Name: "A Stranger"},
}

// ssoEnv is the accounts app serving single sign-on on a loopback port, a real OpenID provider
// that has it as a client, and the identity service behind both.
type ssoEnv struct {
	t      testing.TB
	base   string // the app's URL
	pool   *pgxpool.Pool
	store  *postgres.Store
	ids    *identity.Service
	clock  *ssoClock
	p      *oidctest.Provider
	issuer string
	box    oidctest.Client // this box's client at the provider
	other  oidctest.Client // another application's client at the same provider
	swap   *tokenSwap
	audit  *identity.Auditor
	org    orchestrator.Org
	guild  orchestrator.Guild
}

// ssoClock is a settable clock.
type ssoClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *ssoClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }
func (c *ssoClock) Add(d time.Duration) { c.mu.Lock(); c.off += d; c.mu.Unlock() }

// tokenSwap stands between the orchestrator and the provider: when armed, it replaces the ID token
// of the next token endpoint answer with another real one (a token substitution).
type tokenSwap struct {
	mu      sync.Mutex
	idToken string
}

func (s *tokenSwap) arm(idToken string) { s.mu.Lock(); s.idToken = idToken; s.mu.Unlock() }

func (s *tokenSwap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.URL.Path != "/token" {
		return resp, err
	}
	s.mu.Lock()
	swap := s.idToken
	s.idToken = ""
	s.mu.Unlock()
	if swap == "" {
		return resp, nil
	}
	var body map[string]any
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(raw, &body); err != nil || body["id_token"] == nil {
		return nil, err
	}
	body["id_token"] = swap
	raw, _ = json.Marshal(body)
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// newSSOEnv starts the provider and the app, single sign-on set to the provider's issuer number
// issuer (0: email and name from userinfo, 1: in the ID token).
func newSSOEnv(t testing.TB, issuer int) *ssoEnv {
	t.Helper()
	key, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	e := &ssoEnv{t: t, pool: pgtest.NewDB(t), clock: &ssoClock{}, swap: &tokenSwap{}}
	e.store = postgres.NewStore(e.pool)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.base = "http://" + ln.Addr().String()
	callback := e.base + "/api/sessions/oidc/callback"
	e.box = oidctest.Client{ID: "guilds-box", Secret: "box-secret-0123456789abcdef0123456789", RedirectURIs: []string{callback}}
	e.other = oidctest.Client{ID: "another-app", Secret: "other-secret-0123456789abcdef01234567", RedirectURIs: []string{callback}}
	e.p = oidctest.Start(t, oidctest.Config{Clients: []oidctest.Client{e.box, e.other}, Accounts: ssoAccounts})
	e.issuer = e.p.Issuers[issuer]
	e.ids = &identity.Service{Store: e.store, Box: key, Bootstrap: token, Now: e.clock.Now}
	sso := &identity.SSO{Identity: e.ids, States: e.store, HTTP: &http.Client{Transport: e.swap, Timeout: 30 * time.Second},
		Config: orchestrator.OIDCConfig{Issuer: e.issuer, ClientID: e.box.ID, ClientSecret: e.box.Secret}}
	e.audit = &identity.Auditor{Store: e.store}
	actx, stopAudit := context.WithCancel(context.Background())
	audited := make(chan struct{})
	go func() { defer close(audited); e.audit.Run(actx, 5*time.Second) }()
	t.Cleanup(func() { stopAudit(); <-audited })
	app := httpapi.New(&httpapi.Server{Identity: e.ids, Accounts: e.store, Places: e.store, SSO: sso, PublicBaseURL: e.base,
		Audit: e.audit, Log: slog.New(slog.DiscardHandler)})
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(10 * time.Second) })

	now := time.Now().UTC()
	e.org = orchestrator.Org{ID: orchestrator.NewID(orchestrator.PrefixOrg), Name: "org A", CreatedAt: now}
	e.guild = orchestrator.Guild{ID: orchestrator.NewID(orchestrator.PrefixGuild), OrgID: e.org.ID, Name: "guild A1", CreatedAt: now}
	for _, err := range []error{e.store.CreateOrg(context.Background(), e.org), e.store.CreateGuild(context.Background(), e.guild)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// with is the environment for a subtest: its helpers fail t.
func (e *ssoEnv) with(t testing.TB) *ssoEnv {
	c := *e
	c.t = t
	return &c
}

// account makes an account that signs in by single sign-on (no password).
func (e *ssoEnv) account(email, name string) orchestrator.Account {
	e.t.Helper()
	a, err := e.ids.CreateAccount(context.Background(), identity.NewAccount{Email: email, Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// invite invites an email to the organisation or its guild, as the instance admin.
func (e *ssoEnv) invite(email string, at orchestrator.Chain, role string) {
	e.t.Helper()
	if _, _, err := e.ids.Invite(context.Background(), identity.Principal{Kind: orchestrator.CredentialBootstrap, Admin: true}, email, at, role); err != nil {
		e.t.Fatal(err)
	}
}

// isCallback reports whether a URL is the app's callback.
func (e *ssoEnv) isCallback(u *url.URL) bool {
	return "http://"+u.Host == e.base && u.Path == "/api/sessions/oidc/callback"
}

// get sends a GET with the browser, checks a documented answer against openapi.json, and returns it.
func (e *ssoEnv) get(b *oidctest.Browser, rawURL string, header ...string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.Client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.HasPrefix(req.URL.Path, "/api/sessions/oidc") || req.URL.Path == "/api/instance" {
		checkLive(e.t, req, nil, resp.StatusCode, resp.Header, raw)
	}
	return resp, string(raw)
}

// start begins a sign-in in the browser and returns the provider's authorization URL.
func (e *ssoEnv) start(b *oidctest.Browser, returnTo string) string {
	e.t.Helper()
	resp, body := e.get(b, e.base+"/api/sessions/oidc?return_to="+url.QueryEscape(returnTo))
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, e.issuer+"/auth?") {
		e.t.Fatalf("start answered %d %q: %s", resp.StatusCode, loc, body)
	}
	q, _ := url.Parse(loc)
	for k, want := range map[string]string{"client_id": e.box.ID, "response_type": "code", "code_challenge_method": "S256",
		"redirect_uri": e.base + "/api/sessions/oidc/callback"} {
		if got := q.Query().Get(k); got != want {
			e.t.Fatalf("authorization URL's %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if q.Query().Get(k) == "" {
			e.t.Fatalf("authorization URL without %s: %s", k, loc)
		}
	}
	return loc
}

// signIn starts a sign-in and signs login in at the provider: the callback URL the provider sent
// the browser to, not yet followed.
func (e *ssoEnv) signIn(b *oidctest.Browser, login, returnTo string) *url.URL {
	e.t.Helper()
	return b.SignIn(e.t, e.start(b, returnTo), login, false, e.isCallback)
}

// refused follows a callback and checks it is the failure page with the status, naming want, and
// never showing the callback's code or state (or extra secrets); no session cookie is set.
func (e *ssoEnv) refused(b *oidctest.Browser, cb *url.URL, status int, want string, secrets ...string) {
	e.t.Helper()
	resp, body := e.get(b, cb.String())
	body = html.UnescapeString(body)
	if resp.StatusCode != status || !strings.Contains(body, want) {
		e.t.Fatalf("callback answered %d, want %d naming %q: %s", resp.StatusCode, status, want, body)
	}
	if ct, csp := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(ct, "text/html") || csp != "default-src 'none'; frame-ancestors 'none'" {
		e.t.Fatalf("failure page's Content-Type %q, CSP %q", ct, csp)
	}
	for _, s := range append(secrets, cb.Query().Get("code"), cb.Query().Get("state")) {
		if s != "" && strings.Contains(body, s) {
			e.t.Fatalf("the failure page shows a secret of the sign-in: %s", body)
		}
	}
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie && c.Value != "" {
			e.t.Fatal("a refused sign-in set a session cookie")
		}
	}
}

// current reads the browser's session: the account and its memberships.
func (e *ssoEnv) current(b *oidctest.Browser) (int, map[string]any) {
	e.t.Helper()
	resp, body := e.get(b, e.base+"/api/sessions/current")
	var out map[string]any
	_ = json.Unmarshal([]byte(body), &out)
	return resp.StatusCode, out
}

// TestSSOSignIn: an account signs in through the provider (email and name from its userinfo
// endpoint): the callback sets the session cookie and sends the browser to return_to, and the
// session works; the same callback a second time, a wrong or malformed state, a callback taken to
// another browser and an expired sign-in are refused, naming what was wrong.
func TestSSOSignIn(t *testing.T) {
	t.Parallel()
	e := newSSOEnv(t, 0)
	alice := e.account("alice@example.com", "Alice")

	b := oidctest.NewBrowser()
	cb := e.signIn(b, "alice", "/agents?tab=runs")
	resp, body := e.get(b, cb.String())
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/agents?tab=runs" {
		t.Fatalf("callback answered %d to %q: %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie {
			session = c
		}
	}
	if session == nil || !strings.HasPrefix(session.Value, identity.PrefixSession) || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie %+v", session)
	}
	st, cur := e.current(b)
	acct, _ := cur["account"].(map[string]any)
	if st != 200 || cur["credential"] != orchestrator.CredentialSession || acct["id"] != alice.ID || acct["email"] != "alice@example.com" || cur["csrf_token"] == "" {
		t.Fatalf("the new session: %d %v", st, cur)
	}
	got, err := e.store.GetAccount(context.Background(), alice.ID)
	if err != nil || got.LastSignInAt == nil {
		t.Fatalf("the sign-in is not recorded on the account: %+v %v", got, err)
	}
	e.audit.Flush(context.Background())
	rows, err := e.store.ListAudit(context.Background(), orchestrator.AuditQuery{Operation: "finishSSO", Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].AccountID != alice.ID || rows[0].Status != http.StatusFound || rows[0].Method != "GET" {
		t.Fatalf("the sign-in's audit rows: %+v %v", rows, err)
	}

	t.Run("replayed", func(t *testing.T) {
		e := e.with(t)
		e.refused(b, cb, 400, "already used")
	})
	t.Run("unknown state", func(t *testing.T) {
		e := e.with(t)
		b := oidctest.NewBrowser()
		e.start(b, "/")
		e.refused(b, &url.URL{Scheme: "http", Host: cb.Host, Path: cb.Path, RawQuery: "state=" + identity.Mint("").Value + "&code=abc"}, 400, "no sign-in was started here with this state")
	})
	t.Run("malformed state", func(t *testing.T) {
		e := e.with(t)
		e.refused(oidctest.NewBrowser(), &url.URL{Scheme: "http", Host: cb.Host, Path: cb.Path, RawQuery: "state=../../etc&code=abc"}, 400, "state is malformed")
		e.refused(oidctest.NewBrowser(), &url.URL{Scheme: "http", Host: cb.Host, Path: cb.Path, RawQuery: "code=abc"}, 400, "carries no state")
	})
	t.Run("another browser", func(t *testing.T) {
		e := e.with(t)
		b := oidctest.NewBrowser()
		cb := e.signIn(b, "alice", "/")
		e.refused(oidctest.NewBrowser(), cb, 403, "started in another browser")
		e.refused(b, cb, 400, "already used") // the attempt spent it
	})
	t.Run("expired", func(t *testing.T) {
		e := e.with(t)
		b := oidctest.NewBrowser()
		cb := e.signIn(b, "alice", "/")
		e.clock.Add(orchestrator.OIDCStateTTL + time.Minute)
		defer e.clock.Add(-orchestrator.OIDCStateTTL - time.Minute)
		e.refused(b, cb, 400, "this sign-in expired at")
	})
	t.Run("provider error", func(t *testing.T) {
		e := e.with(t)
		b := oidctest.NewBrowser()
		cb := b.SignIn(t, e.start(b, "/"), "alice", true, e.isCallback)
		if cb.Query().Get("error") != "access_denied" {
			t.Fatalf("the provider came back with %q", cb.RawQuery)
		}
		e.refused(b, cb, 400, "did not sign you in: access_denied")
		cb.RawQuery = url.Values{"state": {cb.Query().Get("state")}, "code": {"late-code"}}.Encode()
		e.refused(b, cb, 400, "already used") // the refusal spent the state
	})
}

// TestSSOMatchesVerifiedEmails: an email with invitations but no account gets one (the provider's
// name, no password) and every invitation; an account with an invitation takes it too; an unknown,
// unverified or deactivated email is refused with 403 naming why, and gets no session.
func TestSSOMatchesVerifiedEmails(t *testing.T) {
	t.Parallel()
	e := newSSOEnv(t, 0)
	orgAt := orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: e.org.ID}
	guildAt := orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: e.org.ID, GuildID: e.guild.ID}

	t.Run("invited", func(t *testing.T) {
		e := e.with(t)
		e.invite("carol@example.com", orgAt, orchestrator.RoleViewer)
		e.invite("carol@example.com", guildAt, orchestrator.RoleOperator)
		b := oidctest.NewBrowser()
		resp, body := e.get(b, e.signIn(b, "carol", "/").String())
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/" {
			t.Fatalf("callback answered %d: %s", resp.StatusCode, body)
		}
		st, cur := e.current(b)
		acct, _ := cur["account"].(map[string]any)
		ms, _ := cur["memberships"].([]any)
		if st != 200 || acct["email"] != "carol@example.com" || acct["name"] != "Carol Jones" || acct["has_password"] != false || len(ms) != 2 {
			t.Fatalf("the invited account: %d %v", st, cur)
		}
		roles := map[string]string{}
		for _, m := range ms {
			m := m.(map[string]any)
			roles[m["scope"].(string)] = m["role"].(string)
		}
		if roles[orchestrator.ScopeOrg] != orchestrator.RoleViewer || roles[orchestrator.ScopeGuild] != orchestrator.RoleOperator {
			t.Fatalf("roles %v", roles)
		}
		if left, err := e.store.PendingInvitations(context.Background(), "carol@example.com", time.Now()); err != nil || len(left) != 0 {
			t.Fatalf("invitations left pending: %v %v", left, err)
		}
		// Signing in again finds the account made above.
		b2 := oidctest.NewBrowser()
		if resp, body := e.get(b2, e.signIn(b2, "carol", "/").String()); resp.StatusCode != http.StatusFound {
			t.Fatalf("second sign-in answered %d: %s", resp.StatusCode, body)
		}
		if _, cur2 := e.current(b2); cur2["account"].(map[string]any)["id"] != acct["id"] {
			t.Fatalf("a second account was made: %v", cur2)
		}
	})
	t.Run("invited, two sign-ins at once", func(t *testing.T) {
		e := e.with(t)
		e.invite("frank@example.com", orgAt, orchestrator.RoleViewer)
		e.invite("frank@example.com", guildAt, orchestrator.RoleOwner)
		bs := []*oidctest.Browser{oidctest.NewBrowser(), oidctest.NewBrowser(), oidctest.NewBrowser()}
		cbs := make([]*url.URL, len(bs))
		for i, b := range bs {
			cbs[i] = e.signIn(b, "frank", "/")
		}
		var wg sync.WaitGroup
		ids := make([]string, len(bs))
		for i, b := range bs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := b.Client.Get(cbs[i].String())
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusFound {
					t.Errorf("callback %d answered %d", i, resp.StatusCode)
				}
			}()
		}
		wg.Wait()
		for i, b := range bs {
			if st, cur := e.current(b); st == 200 {
				ids[i], _ = cur["account"].(map[string]any)["id"].(string)
			}
		}
		var n int
		if err := e.pool.QueryRow(context.Background(), "SELECT count(*) FROM accounts WHERE email = 'frank@example.com'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d accounts for one email (%v)", n, err)
		}
		ms, err := e.store.Memberships(context.Background(), ids[0])
		if ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] || err != nil || len(ms) != 2 {
			t.Fatalf("sessions of accounts %v with memberships %v (%v)", ids, ms, err)
		}
	})
	t.Run("account with an invitation", func(t *testing.T) {
		e := e.with(t)
		e.account("erin@example.com", "Erin")
		e.invite("erin@example.com", guildAt, orchestrator.RoleViewer)
		b := oidctest.NewBrowser()
		if resp, body := e.get(b, e.signIn(b, "erin", "/").String()); resp.StatusCode != http.StatusFound {
			t.Fatalf("callback answered %d: %s", resp.StatusCode, body)
		}
		if _, cur := e.current(b); len(cur["memberships"].([]any)) != 1 {
			t.Fatalf("the invitation was not accepted: %v", cur)
		}
	})
	t.Run("unknown email", func(t *testing.T) {
		e := e.with(t)
		b := oidctest.NewBrowser()
		e.refused(b, e.signIn(b, "stranger", "/"), 403, "no account here has the email stranger@example.com and no invitation waits for it")
		if st, _ := e.current(b); st != 401 {
			t.Fatalf("a refused sign-in reads the session: %d", st)
		}
	})
	t.Run("unverified email", func(t *testing.T) {
		e := e.with(t)
		e.account("bob@example.com", "Bob")
		b := oidctest.NewBrowser()
		e.refused(b, e.signIn(b, "bob", "/"), 403, "has not verified the email bob@example.com")
	})
	t.Run("deactivated", func(t *testing.T) {
		e := e.with(t)
		d := e.account("dave@example.com", "Dave")
		if _, err := e.ids.UpdateAccount(context.Background(), d.ID, identity.AccountChange{Deactivate: true}); err != nil {
			t.Fatal(err)
		}
		b := oidctest.NewBrowser()
		e.refused(b, e.signIn(b, "dave", "/"), 403, "the account of dave@example.com is deactivated")
	})
}

// TestSSOTamperedIDTokens: an ID token substituted on its way from the token endpoint is refused
// with 401 naming the claim: a real token of the provider for another application (audience), one
// of another sign-in of this box (nonce), one of another issuer signing with the same key (issuer).
func TestSSOTamperedIDTokens(t *testing.T) {
	t.Parallel()
	e := newSSOEnv(t, 0)
	e.account("alice@example.com", "Alice")
	for _, tc := range []struct {
		name, issuer string
		client       oidctest.Client
		want         string
	}{
		{"audience", e.issuer, e.other, `is for the audience ["another-app"], not this box's client "guilds-box"`},
		{"nonce", e.issuer, e.box, "nonce is not the one this sign-in sent"},
		{"issuer", e.p.Issuers[1], e.box, `was issued by "` + e.p.Issuers[1] + `", not by the configured provider`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			forged := e.p.IDToken(t, tc.issuer, tc.client, "alice")
			b := oidctest.NewBrowser()
			cb := e.signIn(b, "alice", "/")
			e.swap.arm(forged)
			e.refused(b, cb, 401, tc.want, forged)
		})
	}
	t.Run("iss parameter", func(t *testing.T) { // RFC 9207: a callback naming another issuer is refused before the code is used
		e := e.with(t)
		b := oidctest.NewBrowser()
		cb := e.signIn(b, "alice", "/")
		if cb.Query().Get("iss") != e.issuer {
			t.Fatalf("the provider sent iss %q", cb.Query().Get("iss"))
		}
		q := cb.Query()
		q.Set("iss", e.p.Issuers[1])
		cb.RawQuery = q.Encode()
		e.refused(b, cb, 401, `comes from the issuer "`+e.p.Issuers[1]+`"`)
	})
	// Untouched, the same sign-in works.
	b := oidctest.NewBrowser()
	if resp, body := e.get(b, e.signIn(b, "alice", "/").String()); resp.StatusCode != http.StatusFound {
		t.Fatalf("callback answered %d: %s", resp.StatusCode, body)
	}
	// Each attempt is one audit row, the refused ones with their status and no account.
	e.audit.Flush(context.Background())
	rows, err := e.store.ListAudit(context.Background(), orchestrator.AuditQuery{Operation: "finishSSO", Limit: 10})
	statuses := map[int]int{}
	for _, r := range rows {
		statuses[r.Status]++
		if r.Status != http.StatusFound && (r.AccountID != "" || r.ActorKind != "anonymous") {
			t.Fatalf("a refused sign-in's audit row names an actor: %+v", r)
		}
	}
	if err != nil || statuses[http.StatusUnauthorized] != 4 || statuses[http.StatusFound] != 1 {
		t.Fatalf("audit rows by status %v (%v)", statuses, err)
	}
}

// TestSSOReturnToStaysLocal: return_to must be a path on this box; another host, a scheme-relative
// or backslashed path, a scheme or a control character is a 422 naming return_to, and nothing is
// stored.
func TestSSOReturnToStaysLocal(t *testing.T) {
	t.Parallel()
	e := newSSOEnv(t, 0)
	b := oidctest.NewBrowser()
	for _, rt := range []string{"https://evil.example/x", "//evil.example/x", "/\\evil.example", "\\\\evil.example", "javascript:alert(1)",
		"/ok\r\nLocation: https://evil.example", "/\t/evil.example", "evil.example"} {
		resp, body := e.get(b, e.base+"/api/sessions/oidc?return_to="+url.QueryEscape(rt))
		if resp.StatusCode != 422 || !strings.Contains(body, "return_to must be a path on this box") || resp.Header.Get("Location") != "" {
			t.Fatalf("return_to %q: %d %q %s", rt, resp.StatusCode, resp.Header.Get("Location"), body)
		}
	}
	var n int
	if err := e.pool.QueryRow(context.Background(), "SELECT count(*) FROM oidc_states").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d states stored for refused starts (%v)", n, err)
	}
	e.start(b, "/runs/run_1?view=calls#last") // a local path with a query and fragment is fine
}

// TestSSOEmailInIDToken: with a provider that puts the email and name in the ID token (the second
// issuer), sign-in works without its userinfo endpoint; the instance view reports accounts and
// single sign-on.
func TestSSOEmailInIDToken(t *testing.T) {
	t.Parallel()
	e := newSSOEnv(t, 1)
	e.invite("alice@example.com", orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: e.org.ID}, orchestrator.RoleOwner)
	b := oidctest.NewBrowser()
	resp, body := e.get(b, e.signIn(b, "alice", "/guilds").String())
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/guilds" {
		t.Fatalf("callback answered %d: %s", resp.StatusCode, body)
	}
	if _, cur := e.current(b); cur["account"].(map[string]any)["name"] != "Alice Adams" {
		t.Fatalf("the account's name is not the ID token's: %v", cur)
	}
	resp, body = e.get(oidctest.NewBrowser(), e.base+"/api/instance", "Authorization", "Bearer "+token)
	var inst map[string]any
	if err := json.Unmarshal([]byte(body), &inst); err != nil || resp.StatusCode != 200 || inst["auth_mode"] != "accounts" || inst["sso"] != true {
		t.Fatalf("instance: %d %s", resp.StatusCode, body)
	}
}

// BenchmarkSSOSignIn: a whole sign-in through the box (start, the provider's login and consent,
// the callback: code exchange, ID token and userinfo, the account, the session) against the same
// login done by a client of the provider directly (its code exchange included), in one run; the
// ratio is what the box adds.
func BenchmarkSSOSignIn(b *testing.B) {
	e := newSSOEnv(b, 0)
	e.account("alice@example.com", "Alice")
	var direct, box time.Duration
	for i := -1; i < b.N; i++ { // the first round warms both up (discovery, keys, the provider's caches) and is not counted
		t0 := time.Now()
		e.p.IDToken(b, e.issuer, e.box, "alice")
		t1 := time.Now()
		br := oidctest.NewBrowser()
		if resp, body := e.get(br, e.signIn(br, "alice", "/").String()); resp.StatusCode != http.StatusFound {
			b.Fatalf("callback answered %d: %s", resp.StatusCode, body)
		}
		if i >= 0 {
			direct, box = direct+t1.Sub(t0), box+time.Since(t1)
		}
	}
	b.ReportMetric(float64(box.Microseconds())/1000/float64(b.N), "box_ms/op")
	b.ReportMetric(float64(direct.Microseconds())/1000/float64(b.N), "provider_ms/op")
	b.ReportMetric(float64(box)/float64(direct), "x_vs_provider")
}
