package identity

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Lockout: after lockAfter failed sign-ins in a row for one email, each further failure locks the
// email for lockBase, doubling up to lockMax. It slows a guesser to a few tries an hour and never
// locks the owner out for longer than lockMax.
const (
	lockAfter = 5
	lockBase  = time.Minute
	lockMax   = 15 * time.Minute
)

// NormalEmail checks an email address and returns it trimmed and lower-cased, the form accounts
// and invitations are matched by.
func NormalEmail(email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > 254 || !strings.Contains(e[strings.LastIndexByte(e, '@')+1:], ".") && !strings.HasSuffix(e, "@localhost") {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "email must be an address such as name@example.com")
	}
	return e, nil
}

// SignedIn is a new session: the cookie's value (shown once) and the CSRF token state-changing
// requests made with it must carry.
type SignedIn struct {
	Account   orchestrator.Account
	SessionID string // the session's id (the audit log's actor), never its cookie
	Cookie    string
	CSRF      string
	Expires   time.Time
}

// SignIn checks an email and password and opens a session. Unknown emails and wrong passwords take
// the same time and get the same answer; repeated failures lock the email for a while.
func (s *Service) SignIn(ctx context.Context, email, password, client, userAgent string) (SignedIn, error) {
	e, err := NormalEmail(email)
	if err != nil {
		return SignedIn{}, err
	}
	now := s.now()
	st, err := s.Store.SignInState(ctx, e)
	if err != nil {
		return SignedIn{}, fmt.Errorf("read the sign-in state: %w", err)
	}
	if st.LockedUntil != nil && now.Before(*st.LockedUntil) {
		wait := st.LockedUntil.Sub(now).Round(time.Second)
		return SignedIn{}, &orchestrator.Error{Code: orchestrator.ELIMIT,
			Message: fmt.Sprintf("too many failed sign-ins for this email: try again in %s", wait),
			Fields:  map[string]any{"retry_after_seconds": int(wait.Seconds()) + 1}}
	}
	hash := st.PasswordHash
	if st.Account == nil || hash == "" {
		hash = dummyHash()
	}
	ok := VerifyPassword(hash, password) && st.Account != nil && st.PasswordHash != ""
	if !ok {
		var until *time.Time
		if fails := st.Failures + 1; fails >= lockAfter {
			d := min(lockBase<<min(fails-lockAfter, 10), lockMax)
			t := now.Add(d)
			until = &t
		}
		if err := s.Store.RecordSignIn(ctx, e, false, until, now); err != nil {
			return SignedIn{}, fmt.Errorf("record a failed sign-in: %w", err)
		}
		return SignedIn{}, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "wrong email or password")
	}
	if st.Account.Deactivated {
		return SignedIn{}, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "this account is deactivated; an instance admin can reactivate it")
	}
	if err := s.Store.RecordSignIn(ctx, e, true, nil, now); err != nil {
		return SignedIn{}, fmt.Errorf("record a sign-in: %w", err)
	}
	return s.OpenSession(ctx, *st.Account, client, userAgent)
}

// OpenSession opens a session for an account that proved who it is (a password, an invitation or
// single sign-on).
func (s *Service) OpenSession(ctx context.Context, a orchestrator.Account, client, userAgent string) (SignedIn, error) {
	if a.Deactivated {
		return SignedIn{}, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "this account is deactivated; an instance admin can reactivate it")
	}
	now := s.now()
	m := Mint(PrefixSession)
	csrf := Mint("").Value
	row := orchestrator.SessionRow{ID: orchestrator.NewID(orchestrator.PrefixSession), Hash: m.Hash, AccountID: a.ID, CSRF: csrf,
		Client: truncate(client, 100), UserAgent: truncate(userAgent, 300), CreatedAt: now, ExpiresAt: now.Add(s.maxAge())}
	if err := s.Store.CreateSession(ctx, row); err != nil {
		return SignedIn{}, fmt.Errorf("store the session: %w", err)
	}
	return SignedIn{Account: a, SessionID: row.ID, Cookie: m.Value, CSRF: csrf, Expires: row.ExpiresAt}, nil
}

// SignOut ends the principal's session, or every session of its account when everywhere is set.
func (s *Service) SignOut(ctx context.Context, p Principal, everywhere bool) error {
	if p.Account == nil {
		return orchestrator.Errorf(orchestrator.EINVALID, "%s is not a signed-in account", p.Label())
	}
	id := p.ID
	if everywhere {
		id = ""
	} else if p.Kind != orchestrator.CredentialSession {
		return orchestrator.Errorf(orchestrator.EINVALID, "%s is not a session; DELETE /api/sessions signs every session out", p.Label())
	}
	if err := s.Store.RevokeSessions(ctx, p.Account.ID, id, s.now()); err != nil {
		return err
	}
	if everywhere {
		s.Changed(accountKey(p.Account.ID))
	} else {
		s.Changed(credKey(orchestrator.CredentialSession, id))
	}
	return nil
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
