package identity

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// Session lifetimes when the configuration sets none.
const (
	DefaultSessionIdle = 12 * time.Hour
	DefaultSessionMax  = 7 * 24 * time.Hour
)

// touchEvery is how often a credential's last use is written: at most once a minute each.
const touchEvery = time.Minute

// Changes delivers the store's change notices (postgres LISTEN/NOTIFY implements it): handle gets
// each invalidation key, live says whether notices are flowing (the cache is trusted only then).
type Changes interface {
	Listen(ctx context.Context, handle func(key string), live func(bool))
}

// Service authenticates requests and keeps accounts, sessions, tokens and keys. Its exported
// fields are set once, before use.
type Service struct {
	Store     orchestrator.IdentityStore
	Box       *sealed.Box // seals token values, so they can join the redaction of the runs they reach
	Bootstrap string      // GUILDS_ADMIN_TOKEN; "" refuses it
	// SessionIdle and SessionMax end a session unused for SessionIdle, or SessionMax after sign-in.
	SessionIdle time.Duration
	SessionMax  time.Duration
	Log         *slog.Logger
	Now         func() time.Time

	cache cache
}

// Watch keeps the credential cache in step with the store's change notices until ctx ends;
// without it (or while the listener is down) every request reads the store.
func (s *Service) Watch(ctx context.Context, ch Changes) {
	ch.Listen(ctx, s.cache.invalidate, s.cache.setLive)
}

// Changed drops what this process cached of key, right after a change it made itself (the notice
// follows for every replica).
func (s *Service) Changed(key string) { s.cache.invalidate(key) }

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Service) idle() time.Duration {
	if s.SessionIdle > 0 {
		return s.SessionIdle
	}
	return DefaultSessionIdle
}

func (s *Service) maxAge() time.Duration {
	if s.SessionMax > 0 {
		return s.SessionMax
	}
	return DefaultSessionMax
}

// errNoCredential is the answer to a request that carries none.
var errNoCredential = orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "missing credentials: send Authorization: Bearer <token> (an API token, agent key, run token or GUILDS_ADMIN_TOKEN), or sign in (POST /api/sessions) and send the session cookie")

// Presented is what a request carries: its Authorization header and session cookie.
type Presented struct {
	Authorization string
	Cookie        string
}

// Authenticate resolves a request's principal. The Authorization header wins over the cookie. A
// failure is EUNAUTHORIZED saying what was wrong, never which part of a secret matched.
func (s *Service) Authenticate(ctx context.Context, pr Presented) (Principal, error) {
	var token, kind string
	switch {
	case pr.Authorization != "":
		t, err := ParseBearer(pr.Authorization)
		if err != nil {
			return Principal{}, err
		}
		if s.isBootstrap(t) {
			return Principal{Kind: orchestrator.CredentialBootstrap, Admin: true}, nil
		}
		if kind, err = KindOf(t); err != nil {
			return Principal{}, err
		}
		if kind == orchestrator.CredentialSession {
			return Principal{}, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "a session is sent as its cookie, not as a bearer token; use an API token (POST /api/tokens) for scripts")
		}
		token = t
	case pr.Cookie != "":
		k, err := KindOf(pr.Cookie)
		if err != nil || k != orchestrator.CredentialSession {
			return Principal{}, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "malformed session cookie; sign in again (POST /api/sessions)")
		}
		kind, token = k, pr.Cookie
	default:
		return Principal{}, errNoCredential
	}
	c, err := s.credential(ctx, kind, token)
	if err != nil {
		return Principal{}, err
	}
	return s.principal(c)
}

// isBootstrap compares a token with GUILDS_ADMIN_TOKEN in constant time.
func (s *Service) isBootstrap(t string) bool {
	if s.Bootstrap == "" {
		return false
	}
	got, want := sha256.Sum256([]byte(t)), sha256.Sum256([]byte(s.Bootstrap))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// credential finds a presented token, from the cache or the store, and checks it still holds.
func (s *Service) credential(ctx context.Context, kind, token string) (orchestrator.Credential, error) {
	h := Hash(token)
	key := hex.EncodeToString(h)
	now := s.now()
	e, gen, ok := s.cache.get(key, now)
	if !ok {
		c, err := s.Store.CredentialByHash(ctx, kind, h)
		if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
			return c, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "unknown %s: it was never issued here, or its agent, run or account was deleted", kindName(kind))
		}
		if err != nil {
			return c, fmt.Errorf("look up a %s: %w", kindName(kind), err)
		}
		e = s.cache.put(key, c, gen, now)
	}
	c := e.cred
	s.cache.mu.Lock()
	if c.LastSeenAt != nil && e.touched.After(*c.LastSeenAt) { // its use as this process last wrote it
		t := e.touched
		c.LastSeenAt = &t
	}
	s.cache.mu.Unlock()
	if err := s.holds(c, now); err != nil {
		return c, err
	}
	s.touch(e, now)
	return c, nil
}

// holds checks a credential has not been revoked, has not expired, and that its account, run or
// session is still good.
func (s *Service) holds(c orchestrator.Credential, now time.Time) error {
	name := kindName(c.Kind)
	switch {
	case c.RevokedAt != nil && c.Kind == orchestrator.CredentialSession:
		return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "this session was signed out; sign in again")
	case c.RevokedAt != nil:
		return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "this %s was revoked", name)
	case c.ExpiresAt != nil && !now.Before(*c.ExpiresAt):
		if c.Kind == orchestrator.CredentialSession {
			return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "this session expired (sessions last %s); sign in again", s.maxAge())
		}
		return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "this %s expired at %s", name, c.ExpiresAt.Format(time.RFC3339))
	case c.Account != nil && c.Account.Deactivated:
		return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the account of this %s is deactivated", name)
	case c.Kind == orchestrator.CredentialRunToken && !c.RunOpen:
		return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "run %s is closed: its token no longer holds", c.RunID)
	case c.Kind == orchestrator.CredentialSession && c.LastSeenAt != nil && now.Sub(*c.LastSeenAt) > s.idle()+touchEvery:
		return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "this session ended after %s without use; sign in again", s.idle())
	}
	return nil
}

// touch writes a session's or token's last use, at most once a minute, behind the request.
func (s *Service) touch(e *cached, now time.Time) {
	c := e.cred
	if c.Kind == orchestrator.CredentialRunToken {
		return
	}
	s.cache.mu.Lock()
	last := e.touched
	if c.LastSeenAt != nil && c.LastSeenAt.After(last) {
		last = *c.LastSeenAt
	}
	due := now.Sub(last) >= touchEvery
	if due {
		e.touched = now
	}
	s.cache.mu.Unlock()
	if !due {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Store.TouchCredential(ctx, c.Kind, c.ID, now); err != nil {
			s.log().Warn("record a credential's last use", "kind", c.Kind, "id", c.ID, "err", err.Error())
		}
	}()
}

// principal builds the principal of a credential that holds.
func (s *Service) principal(c orchestrator.Credential) (Principal, error) {
	p := Principal{Kind: c.Kind, ID: c.ID, Account: c.Account, Chain: c.Chain, RunID: c.RunID, CSRF: c.CSRF}
	switch c.Kind {
	case orchestrator.CredentialSession:
		p.Admin, p.Members = c.Account.InstanceAdmin, c.Members
	case orchestrator.CredentialToken:
		if c.Token == nil || c.Account == nil {
			return p, errors.New("an API token credential without its token or account")
		}
		p.Narrowed = c.Token.Role != "" || c.Token.Scope != nil
		p.Admin = c.Account.InstanceAdmin && !p.Narrowed
		p.Members = narrow(c.Account, c.Members, c.Token)
	}
	return p, nil
}

// narrow caps an account's memberships by an API token's role and scope: the token reaches no
// more than the account does today, and no more than it was made for.
func narrow(a *orchestrator.Account, ms []orchestrator.Membership, t *orchestrator.APIToken) []orchestrator.Membership {
	capped := func(role string) string {
		if t.Role != "" && orchestrator.RoleRank(t.Role) < orchestrator.RoleRank(role) {
			return t.Role
		}
		return role
	}
	full := Principal{Admin: a.InstanceAdmin, Members: ms}
	var out []orchestrator.Membership
	switch {
	case t.Scope == nil:
		if a.InstanceAdmin { // minting refuses an admin's role cap without a scope: such a token reaches nothing
			return nil
		}
		for _, m := range ms {
			m.Role = capped(m.Role)
			out = append(out, m)
		}
	case t.Scope.Kind == orchestrator.ScopeOrg:
		if role := full.RoleAt(orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: t.Scope.ID}); role != "" {
			out = append(out, orchestrator.Membership{AccountID: a.ID, Scope: orchestrator.ScopeOrg, ScopeID: t.Scope.ID, OrgID: t.Scope.ID, Role: capped(role)})
		}
		for _, m := range ms {
			if m.Scope == orchestrator.ScopeGuild && m.OrgID == t.Scope.ID {
				m.Role = capped(m.Role)
				out = append(out, m)
			}
		}
	case t.Scope.Kind == orchestrator.ScopeGuild:
		at := orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: t.OrgID, GuildID: t.Scope.ID}
		if role := full.RoleAt(at); role != "" {
			out = append(out, orchestrator.Membership{AccountID: a.ID, Scope: orchestrator.ScopeGuild, ScopeID: t.Scope.ID, OrgID: t.OrgID, Role: capped(role)})
		}
	}
	return out
}
