package identity_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock() *clock               { return &clock{t: time.Now().UTC().Truncate(time.Microsecond)} }
func ctx() context.Context           { return context.Background() }
func code(err error) string          { return orchestrator.ErrorCode(err) }
func bearer(token string) identity.Presented {
	return identity.Presented{Authorization: "Bearer " + token}
}

// world is one database with organisations A (guild A1, agent a1) and B (guild B1, agent b1).
type world struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	box   *sealed.Box
	clock *clock
	org   map[string]orchestrator.Org
	guild map[string]orchestrator.Guild
	agent map[string]orchestrator.Agent
}

func newWorld(t *testing.T) *world {
	t.Helper()
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.NewDB(t)
	w := &world{pool: pool, store: postgres.NewStore(pool), box: box, clock: newClock(),
		org: map[string]orchestrator.Org{}, guild: map[string]orchestrator.Guild{}, agent: map[string]orchestrator.Agent{}}
	now := time.Now().UTC()
	for _, n := range []string{"A", "B"} {
		o := orchestrator.Org{ID: orchestrator.NewID(orchestrator.PrefixOrg), Name: "org " + n, CreatedAt: now}
		g := orchestrator.Guild{ID: orchestrator.NewID(orchestrator.PrefixGuild), OrgID: o.ID, Name: "guild " + n + "1", CreatedAt: now}
		a := orchestrator.Agent{ID: orchestrator.NewID(orchestrator.PrefixAgent), GuildID: g.ID, OrgID: o.ID, Name: "agent " + n, Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}
		for _, err := range []error{w.store.CreateOrg(ctx(), o), w.store.CreateGuild(ctx(), g), w.store.CreateAgent(ctx(), a)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		w.org[n], w.guild[n], w.agent[n] = o, g, a
	}
	return w
}

// service is one replica's identity service, watching the database's change notices.
func (w *world) service(t *testing.T) *identity.Service {
	t.Helper()
	s := &identity.Service{Store: w.store, Box: w.box, Bootstrap: "bootstrap-token-for-tests", Now: w.clock.Now}
	live := make(chan struct{})
	var once sync.Once
	c, cancel := context.WithCancel(ctx())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Watch(c, watch{postgres.Listener{Pool: w.pool, Channel: postgres.IdentityChannel}, func() { once.Do(func() { close(live) }) }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-live:
	case <-time.After(30 * time.Second):
		t.Fatal("the change listener never started")
	}
	return s
}

// watch tells the test when the listener is live.
type watch struct {
	l      postgres.Listener
	onLive func()
}

func (w watch) Listen(c context.Context, handle func(string), live func(bool)) {
	w.l.Listen(c, handle, func(ok bool) {
		live(ok)
		if ok {
			w.onLive()
		}
	})
}

func (w *world) chain(n string) orchestrator.Chain {
	return orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: w.org[n].ID}
}

func (w *world) guildChain(n string) orchestrator.Chain {
	return orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: w.org[n].ID, GuildID: w.guild[n].ID}
}

func (w *world) agentChain(n string) orchestrator.Chain {
	a := w.agent[n]
	return orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: a.OrgID, GuildID: a.GuildID, AgentID: a.ID}
}

// signedIn makes an account with a role at A and signs it in.
func signedIn(t *testing.T, s *identity.Service, w *world, email, role string) (orchestrator.Account, identity.SignedIn) {
	t.Helper()
	a, err := s.CreateAccount(ctx(), identity.NewAccount{Email: email, Name: "Someone", Password: "tangerine orbit walrus"})
	if err != nil {
		t.Fatal(err)
	}
	if role != "" {
		if _, err := s.SetMember(ctx(), w.chain("A"), a.ID, role); err != nil {
			t.Fatal(err)
		}
	}
	in, err := s.SignIn(ctx(), email, "tangerine orbit walrus", "127.0.0.1", "test")
	if err != nil {
		t.Fatal(err)
	}
	return a, in
}

// TestSignInAndSessions: a password opens a session whose cookie authenticates with its CSRF token
// and memberships; sign-out, idle time and the absolute lifetime end it.
func TestSignInAndSessions(t *testing.T) {
	w := newWorld(t)
	s := w.service(t)
	a, in := signedIn(t, s, w, "Op@Example.com", orchestrator.RoleOperator)
	if a.Email != "op@example.com" || in.CSRF == "" || !strings.HasPrefix(in.Cookie, identity.PrefixSession) {
		t.Fatalf("%+v %+v", a, in)
	}
	p, err := s.Authenticate(ctx(), identity.Presented{Cookie: in.Cookie})
	if err != nil || p.Kind != orchestrator.CredentialSession || p.CSRF != in.CSRF || p.RoleAt(w.agentChain("A")) != orchestrator.RoleOperator || p.Admin {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := s.Authenticate(ctx(), bearer(in.Cookie)); code(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), "cookie") {
		t.Fatalf("a session as a bearer token: %v", err)
	}
	// Idle past the idle lifetime (plus the minute of touch granularity).
	w.clock.Add(identity.DefaultSessionIdle + 2*time.Minute)
	if _, err := s.Authenticate(ctx(), identity.Presented{Cookie: in.Cookie}); code(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), "without use") {
		t.Fatalf("idle session: %v", err)
	}
	// A session in use lasts until its absolute end.
	_, in2 := func() (orchestrator.Account, identity.SignedIn) {
		in, err := s.SignIn(ctx(), "op@example.com", "tangerine orbit walrus", "", "")
		if err != nil {
			t.Fatal(err)
		}
		return a, in
	}()
	for range 14 {
		w.clock.Add(12 * time.Hour)
		_, err := s.Authenticate(ctx(), identity.Presented{Cookie: in2.Cookie})
		if err != nil && strings.Contains(err.Error(), "expired") && w.clock.Now().Sub(in2.Expires.Add(-identity.DefaultSessionMax)) >= identity.DefaultSessionMax {
			break
		}
		if err != nil {
			t.Fatalf("a session in use: %v", err)
		}
		waitTouched(t, w, a.ID, w.clock.Now())
	}
	if _, err := s.Authenticate(ctx(), identity.Presented{Cookie: in2.Cookie}); code(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a session past its absolute lifetime: %v", err)
	}
	// Sign out.
	in3, err := s.SignIn(ctx(), "op@example.com", "tangerine orbit walrus", "", "")
	if err != nil {
		t.Fatal(err)
	}
	p3, err := s.Authenticate(ctx(), identity.Presented{Cookie: in3.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SignOut(ctx(), p3, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx(), identity.Presented{Cookie: in3.Cookie}); code(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), "signed out") {
		t.Fatalf("after sign-out: %v", err)
	}
}

// waitTouched waits until the session's last use is recorded at at (touches are written behind).
func waitTouched(t *testing.T, w *world, accountID string, at time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var last time.Time
		if err := w.pool.QueryRow(ctx(), "SELECT max(last_seen_at) FROM sessions WHERE account_id = $1 AND revoked_at IS NULL", accountID).Scan(&last); err == nil && !last.Before(at) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the session's use was never recorded")
}

// TestSignInRefusals: unknown emails and wrong passwords get one answer; repeated failures lock
// the email (known or not) for a while that grows but ends; a success clears the count.
func TestSignInRefusals(t *testing.T) {
	w := newWorld(t)
	s := w.service(t)
	signedIn(t, s, w, "owner@example.com", orchestrator.RoleOwner)
	for _, email := range []string{"owner@example.com", "nobody@example.com"} {
		for i := range 5 {
			_, err := s.SignIn(ctx(), email, "wrong password here", "", "")
			if code(err) != orchestrator.EUNAUTHORIZED || err.Error() != "wrong email or password" {
				t.Fatalf("%s try %d: %v", email, i, err)
			}
		}
		_, err := s.SignIn(ctx(), email, "tangerine orbit walrus", "", "")
		if code(err) != orchestrator.ELIMIT || !strings.Contains(err.Error(), "try again in") {
			t.Fatalf("%s locked: %v", email, err)
		}
	}
	w.clock.Add(61 * time.Second)
	if _, err := s.SignIn(ctx(), "owner@example.com", "tangerine orbit walrus", "", ""); err != nil {
		t.Fatalf("after the lock: %v", err)
	}
	// The count starts over after a success; more failures lock for longer, at most 15 minutes.
	for range 7 {
		s.SignIn(ctx(), "owner@example.com", "wrong password here", "", "")
		w.clock.Add(16 * time.Minute)
	}
	_, err := s.SignIn(ctx(), "owner@example.com", "wrong password here", "", "")
	var de *orchestrator.Error
	if code(err) != orchestrator.ELIMIT && code(err) != orchestrator.EUNAUTHORIZED {
		t.Fatal(err)
	}
	_, err = s.SignIn(ctx(), "owner@example.com", "tangerine orbit walrus", "", "")
	if code(err) != orchestrator.ELIMIT {
		t.Fatalf("locked again: %v", err)
	}
	if !errorsAs(err, &de) || de.Fields["retry_after_seconds"].(int) > 15*60+1 {
		t.Fatalf("the lock is longer than 15 minutes: %+v", de)
	}
	w.clock.Add(15*time.Minute + time.Second)
	if _, err := s.SignIn(ctx(), "owner@example.com", "tangerine orbit walrus", "", ""); err != nil {
		t.Fatalf("the owner is never locked out for good: %v", err)
	}
	if _, err := s.SignIn(ctx(), "not an email", "x", "", ""); code(err) != orchestrator.EINVALID {
		t.Fatal(err)
	}
}

func errorsAs(err error, de **orchestrator.Error) bool {
	e, ok := err.(*orchestrator.Error)
	*de = e
	return ok
}

// TestChangesReachEveryReplica: a revoked token, a role change and a deactivated account take
// effect on the next request of another replica that had the credential cached.
func TestChangesReachEveryReplica(t *testing.T) {
	w := newWorld(t)
	one, two := w.service(t), w.service(t)
	a, in := signedIn(t, one, w, "viewer@example.com", orchestrator.RoleOwner)
	p, err := one.Authenticate(ctx(), identity.Presented{Cookie: in.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := one.MintToken(ctx(), p, identity.TokenRequest{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*identity.Service{one, two} { // both replicas cache it
		if _, err := s.Authenticate(ctx(), bearer(tok.Token)); err != nil {
			t.Fatal(err)
		}
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s never reached the other replica", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// A role change made through replica one.
	if _, err := one.SetMember(ctx(), w.chain("A"), a.ID, orchestrator.RoleViewer); err != nil {
		t.Fatal(err)
	}
	if p, _ := one.Authenticate(ctx(), bearer(tok.Token)); p.RoleAt(w.chain("A")) != orchestrator.RoleViewer {
		t.Fatalf("the replica that made the change still sees %q", p.RoleAt(w.chain("A")))
	}
	eventually("a role change", func() bool {
		p, err := two.Authenticate(ctx(), bearer(tok.Token))
		return err == nil && p.RoleAt(w.chain("A")) == orchestrator.RoleViewer
	})
	// A revocation.
	if err := one.RevokeToken(ctx(), a.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Authenticate(ctx(), bearer(tok.Token)); code(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked here: %v", err)
	}
	eventually("a revocation", func() bool { _, err := two.Authenticate(ctx(), bearer(tok.Token)); return err != nil })
	// A deactivation ends the sessions too.
	if _, err := one.UpdateAccount(ctx(), a.ID, identity.AccountChange{Deactivate: true}); err != nil {
		t.Fatal(err)
	}
	eventually("a deactivation", func() bool {
		_, err := two.Authenticate(ctx(), identity.Presented{Cookie: in.Cookie})
		return code(err) == orchestrator.EUNAUTHORIZED
	})
	if _, err := one.SignIn(ctx(), "viewer@example.com", "tangerine orbit walrus", "", ""); code(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), "deactivated") {
		t.Fatalf("a deactivated account signs in: %v", err)
	}
}

// TestTokensNoWiderThanTheirMaker: minting refuses a scope or role beyond the maker's own; a
// scoped, capped token reaches exactly that; an expired one is refused.
func TestTokensNoWiderThanTheirMaker(t *testing.T) {
	w := newWorld(t)
	s := w.service(t)
	_, in := signedIn(t, s, w, "op@example.com", orchestrator.RoleOperator)
	p, err := s.Authenticate(ctx(), identity.Presented{Cookie: in.Cookie})
	if err != nil {
		t.Fatal(err)
	}
	ts := func(c orchestrator.Chain) *identity.TokenScope {
		return &identity.TokenScope{Kind: c.Scope, ID: c.ID()}
	}
	if _, err := s.MintToken(ctx(), p, identity.TokenRequest{Name: "b", Scope: ts(w.chain("B")), ScopeAt: w.chain("B")}); code(err) != orchestrator.ENOTFOUND {
		t.Fatalf("a token for B: %v", err)
	}
	if _, err := s.MintToken(ctx(), p, identity.TokenRequest{Name: "o", Role: "owner", Scope: ts(w.chain("A")), ScopeAt: w.chain("A")}); code(err) != orchestrator.EFORBIDDEN {
		t.Fatalf("an owner token by an operator: %v", err)
	}
	past := w.clock.Now().Add(-time.Minute)
	if _, err := s.MintToken(ctx(), p, identity.TokenRequest{Name: "x", ExpiresAt: &past}); code(err) != orchestrator.EINVALID {
		t.Fatalf("an expired token: %v", err)
	}
	soon := w.clock.Now().Add(time.Hour)
	tok, err := s.MintToken(ctx(), p, identity.TokenRequest{Name: "viewer of A1", Role: "viewer", Scope: ts(w.guildChain("A")), ScopeAt: w.guildChain("A"), ExpiresAt: &soon})
	if err != nil || !strings.HasPrefix(tok.Token, identity.PrefixPAT) || !strings.HasPrefix(tok.Token, tok.Prefix) {
		t.Fatalf("%+v %v", tok, err)
	}
	tp, err := s.Authenticate(ctx(), bearer(tok.Token))
	if err != nil || tp.Kind != orchestrator.CredentialToken || tp.RoleAt(w.agentChain("A")) != "viewer" || tp.RoleAt(w.chain("A")) != "" {
		t.Fatalf("%+v %v", tp, err)
	}
	if _, err := s.MintToken(ctx(), tp, identity.TokenRequest{Name: "from a token"}); code(err) != orchestrator.EFORBIDDEN {
		t.Fatalf("a token minted by a token: %v", err)
	}
	listed, err := w.store.ListTokens(ctx(), p.Account.ID)
	if err != nil || len(listed) != 1 || listed[0].Prefix != tok.Prefix {
		t.Fatalf("%+v %v", listed, err)
	}
	raw, _ := json.Marshal(listed)
	if strings.Contains(string(raw), tok.Token) {
		t.Fatal("the listing shows the token")
	}
	w.clock.Add(2 * time.Hour)
	if _, err := s.Authenticate(ctx(), bearer(tok.Token)); code(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired: %v", err)
	}
	// Tokens are found by their hash only: a token that differs in one character is unknown.
	other := tok.Token[:len(tok.Token)-1] + map[bool]string{true: "a", false: "b"}[!strings.HasSuffix(tok.Token, "a")]
	if _, err := s.Authenticate(ctx(), bearer(other)); code(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("a near token: %v", err)
	}
}

// TestAgentKeysAndRunTokens: an agent key and a run token authenticate as their agent and run; a
// run token stops at its run's close; every credential that reaches a run is in its redaction.
func TestAgentKeysAndRunTokens(t *testing.T) {
	w := newWorld(t)
	s := w.service(t)
	_, in := signedIn(t, s, w, "owner@example.com", orchestrator.RoleOwner)
	owner, _ := s.Authenticate(ctx(), identity.Presented{Cookie: in.Cookie})
	pat, err := s.MintToken(ctx(), owner, identity.TokenRequest{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := s.MintAgentKey(ctx(), owner, w.agentChain("A"), "runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := s.Authenticate(ctx(), bearer(key.Key))
	if err != nil || kp.Kind != orchestrator.CredentialAgentKey || kp.Chain != w.agentChain("A") {
		t.Fatalf("%+v %v", kp, err)
	}
	run := orchestrator.Run{ID: orchestrator.NewID(orchestrator.PrefixRun), AgentID: w.agent["A"].ID, GuildID: w.guild["A"].ID, OrgID: w.org["A"].ID,
		Kind: orchestrator.KindDirect, Status: orchestrator.RunOpen, Config: orchestrator.DefaultAgentConfig(), ToolCallBudget: 10, CreatedAt: w.clock.Now()}
	if err := w.store.CreateRun(ctx(), run); err != nil {
		t.Fatal(err)
	}
	rt, err := s.MintRunToken(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.store.SetRunToken(ctx(), run.ID, rt.Hash, rt.Sealed, rt.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	rp, err := s.Authenticate(ctx(), bearer(rt.Value))
	if err != nil || rp.RunID != run.ID || rp.Chain.AgentID != run.AgentID {
		t.Fatalf("%+v %v", rp, err)
	}
	vals, err := s.RunSecretValues(ctx(), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"bootstrap-token-for-tests", pat.Token, key.Key, rt.Value} {
		if !slices.Contains(vals, v) {
			t.Fatalf("a credential reaching the run is not in its redaction (%d values)", len(vals))
		}
	}
	// B's owner's token does not reach A's run; a new key does at once.
	bOwner, err := s.CreateAccount(ctx(), identity.NewAccount{Email: "b@example.com", Name: "Bee", Password: "tangerine orbit walrus"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetMember(ctx(), w.chain("B"), bOwner.ID, orchestrator.RoleOwner); err != nil {
		t.Fatal(err)
	}
	inB, err := s.SignIn(ctx(), "b@example.com", "tangerine orbit walrus", "", "")
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := s.Authenticate(ctx(), identity.Presented{Cookie: inB.Cookie})
	patB, err := s.MintToken(ctx(), pb, identity.TokenRequest{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	key2, err := s.MintAgentKey(ctx(), owner, w.agentChain("A"), "second", nil)
	if err != nil {
		t.Fatal(err)
	}
	vals, err = s.RunSecretValues(ctx(), run)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(vals, patB.Token) || !slices.Contains(vals, key2.Key) {
		t.Fatal("B's token reaches A's run, or a new key of the agent does not")
	}
	// Revoked keys stop; a closed run's token stops.
	if err := s.RevokeAgentKey(ctx(), w.agent["A"].ID, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx(), bearer(key.Key)); code(err) != orchestrator.EUNAUTHORIZED {
		t.Fatalf("revoked key: %v", err)
	}
	if _, err := w.store.CloseRun(ctx(), run.ID, w.clock.Now(), orchestrator.CloseOperator); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Authenticate(ctx(), bearer(rt.Value))
		if code(err) == orchestrator.EUNAUTHORIZED && strings.Contains(err.Error(), "closed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed run's token: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestInvitations: an invitation is single-use and expires; accepting makes the account or, for an
// existing one, asks its password.
func TestInvitations(t *testing.T) {
	w := newWorld(t)
	s := w.service(t)
	admin, _ := s.Authenticate(ctx(), bearer("bootstrap-token-for-tests"))
	inv, token, err := s.Invite(ctx(), admin, "New@Example.com", w.guildChain("A"), orchestrator.RoleOperator)
	if err != nil || inv.Email != "new@example.com" || !strings.HasPrefix(token, identity.PrefixInvitation) {
		t.Fatalf("%+v %v", inv, err)
	}
	if _, err := s.Accept(ctx(), identity.Accepting{Token: token, Name: "New", Password: "short"}); code(err) != orchestrator.EINVALID {
		t.Fatalf("a short password: %v", err)
	}
	a, err := s.Accept(ctx(), identity.Accepting{Token: token, Name: "New One", Password: "tangerine orbit walrus"})
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := w.store.Memberships(ctx(), a.ID)
	if len(ms) != 1 || ms[0].Scope != orchestrator.ScopeGuild || ms[0].Role != orchestrator.RoleOperator {
		t.Fatalf("%+v", ms)
	}
	if _, err := s.Accept(ctx(), identity.Accepting{Token: token, Name: "Again", Password: "tangerine orbit walrus"}); code(err) != orchestrator.ECONFLICT {
		t.Fatalf("accepted twice: %v", err)
	}
	// An existing account accepts with its password.
	_, token2, err := s.Invite(ctx(), admin, "new@example.com", w.chain("B"), orchestrator.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Accept(ctx(), identity.Accepting{Token: token2, Password: "wrong password here"}); code(err) != orchestrator.EUNAUTHORIZED {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := s.Accept(ctx(), identity.Accepting{Token: token2, Password: "tangerine orbit walrus"}); err != nil {
		t.Fatal(err)
	}
	// Expiry.
	_, token3, _ := s.Invite(ctx(), admin, "late@example.com", w.chain("A"), orchestrator.RoleViewer)
	w.clock.Add(identity.InvitationLife + time.Second)
	if _, err := s.Accept(ctx(), identity.Accepting{Token: token3, Name: "Late", Password: "tangerine orbit walrus"}); code(err) != orchestrator.ECONFLICT || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired invitation: %v", err)
	}
	if _, err := s.Accept(ctx(), identity.Accepting{Token: "gld_inv_nope"}); code(err) != orchestrator.EINVALID {
		t.Fatal(err)
	}
}
