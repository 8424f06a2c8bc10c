package identity

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/guildsai/guilds/orchestrator"
	"golang.org/x/oauth2"
)

// SSOScopes are the scopes a single sign-on asks for: the ID token, the email and the name.
var SSOScopes = []string{oidc.ScopeOpenID, "email", "profile"}

// maxReturnTo bounds the return_to path a sign-in keeps.
const maxReturnTo = 2048

// discoveryTimeout bounds the provider's discovery document fetch.
const discoveryTimeout = 15 * time.Second

// SSO signs accounts in through an OpenID Connect provider: discovery, the authorization code flow
// with PKCE (S256), state and nonce, and the ID token's verification (signature, issuer, audience,
// expiry, nonce). The provider's verified email picks the account, which must exist or be invited.
// Its exported fields are set once, before use.
type SSO struct {
	Identity *Service                    // accounts, invitations and sessions; its Box seals the verifiers, its Now is the clock
	States   orchestrator.OIDCStateStore // the sign-ins in flight, shared by every replica
	Config   orchestrator.OIDCConfig     // the issuer and this box's client there
	HTTP     *http.Client                // reaches the provider; nil is http.DefaultClient

	mu       sync.Mutex
	provider *oidc.Provider // discovered on first use, then kept
}

// SSOStart is a started sign-in: the provider's authorization URL the browser goes to, and the
// state the browser keeps (in a cookie) until the callback, which must bring both back.
type SSOStart struct {
	URL       string
	State     string
	ExpiresAt time.Time
}

// SSOCallback is what the provider sends the browser back with.
type SSOCallback struct {
	State            string
	Code             string
	Issuer           string // the provider's iss parameter (RFC 9207), when it sends one
	Error            string // the provider's error parameter (access_denied, …)
	ErrorDescription string
	// Binding is the state the browser kept when the sign-in started (its cookie): a callback
	// without it was not started by this browser.
	Binding string
}

// SSOSignedIn is a finished sign-in: the new session and where the browser goes now.
type SSOSignedIn struct {
	SignedIn
	ReturnTo string
}

// CheckReturnTo checks where a sign-in sends the browser afterwards: a path on this box ("/" when
// empty), never another host. It refuses absolute and scheme-relative URLs ("//host", "/\host"),
// backslashes, control characters and spaces, which browsers may read as another host.
func CheckReturnTo(returnTo string) (string, error) {
	if returnTo == "" {
		return "/", nil
	}
	bad := func(why string) (string, error) {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "return_to must be a path on this box such as /agents (%s)", why)
	}
	switch {
	case len(returnTo) > maxReturnTo:
		return bad(fmt.Sprintf("it is %d bytes; at most %d", len(returnTo), maxReturnTo))
	case returnTo[0] != '/':
		return bad("it must start with /; another site is never a destination")
	case len(returnTo) > 1 && (returnTo[1] == '/' || returnTo[1] == '\\'):
		return bad("// or /\\ would name another host")
	case strings.ContainsRune(returnTo, '\\'):
		return bad("it holds a backslash")
	}
	for _, r := range returnTo {
		if r <= ' ' || r == 0x7f || unicode.IsControl(r) || unicode.IsSpace(r) || r == unicode.ReplacementChar {
			return bad("it holds a space or a control character; percent-encode them")
		}
	}
	u, err := url.Parse(returnTo)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return bad("it does not parse as a local path")
	}
	return returnTo, nil
}

// ParseState checks a callback's state has the form this box mints (never repeating it).
func ParseState(state string) error {
	if state == "" {
		return orchestrator.Errorf(orchestrator.EINVALID, "the callback carries no state: start the sign-in again at GET /api/sessions/oidc")
	}
	if len(state) != secretLen || strings.Trim(state, alphabet) != "" {
		return orchestrator.Errorf(orchestrator.EINVALID, "the callback's state is malformed (this box's states are %d lowercase letters and digits): start the sign-in again at GET /api/sessions/oidc", secretLen)
	}
	return nil
}

// client is the HTTP client that reaches the provider.
func (s *SSO) client() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return http.DefaultClient
}

// discover reads the provider's discovery document once; a failure is retried by the next sign-in.
func (s *SSO) discover(ctx context.Context) (*oidc.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider != nil {
		return s.provider, nil
	}
	if !s.Config.Enabled() || s.Config.ClientID == "" {
		return nil, orchestrator.Errorf(orchestrator.EINTERNAL, "single sign-on needs GUILDS_OIDC_ISSUER, GUILDS_OIDC_CLIENT_ID and GUILDS_OIDC_CLIENT_SECRET")
	}
	dctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(dctx, s.client()), s.Config.Issuer)
	if err != nil {
		var mismatch *oidc.IssuerMismatchError
		if errors.As(err, &mismatch) {
			return nil, orchestrator.Errorf(orchestrator.EUPSTREAM, "the OpenID provider's discovery document names the issuer %q, not %q: set GUILDS_OIDC_ISSUER to the issuer exactly as the provider names it", mismatch.Discovered, mismatch.Provided)
		}
		return nil, orchestrator.Errorf(orchestrator.EUPSTREAM, "the OpenID provider %s did not answer its discovery document (/.well-known/openid-configuration): %v", s.Config.Issuer, err)
	}
	s.provider = p
	return p, nil
}

// oauth2Config is the authorization code flow's client for a callback URL.
func (s *SSO) oauth2Config(p *oidc.Provider, redirectURI string) *oauth2.Config {
	return &oauth2.Config{ClientID: s.Config.ClientID, ClientSecret: s.Config.ClientSecret, Endpoint: p.Endpoint(), RedirectURL: redirectURI, Scopes: SSOScopes}
}

// verifierAD is the additional data a sign-in's PKCE verifier is sealed with: its state's hash, so
// a verifier moved to another row does not open.
func verifierAD(stateHash []byte) []byte {
	return []byte("oidc_states.verifier:" + hex.EncodeToString(stateHash))
}

// Begin starts a sign-in: it checks returnTo, stores the state, nonce and PKCE verifier for
// OIDCStateTTL, and answers the provider's authorization URL. redirectURI is this box's callback
// URL, which the provider must have registered.
func (s *SSO) Begin(ctx context.Context, returnTo, redirectURI string) (SSOStart, error) {
	rt, err := CheckReturnTo(returnTo)
	if err != nil {
		return SSOStart{}, err
	}
	if s.Identity == nil || s.Identity.Box == nil {
		return SSOStart{}, orchestrator.Errorf(orchestrator.EINTERNAL, "single sign-on needs GUILDS_SECRET_KEY to seal its PKCE verifiers")
	}
	p, err := s.discover(ctx)
	if err != nil {
		return SSOStart{}, err
	}
	state, nonce, verifier := Mint("").Value, Mint("").Value, oauth2.GenerateVerifier()
	now := s.Identity.now()
	st := orchestrator.OIDCState{Hash: Hash(state), NonceHash: Hash(nonce), ReturnTo: rt, RedirectURI: redirectURI,
		CreatedAt: now, ExpiresAt: now.Add(orchestrator.OIDCStateTTL)}
	st.Verifier = s.Identity.Box.Seal([]byte(verifier), verifierAD(st.Hash))
	if err := s.States.PutOIDCState(ctx, st); err != nil {
		return SSOStart{}, err
	}
	u := s.oauth2Config(p, redirectURI).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	return SSOStart{URL: u, State: state, ExpiresAt: st.ExpiresAt}, nil
}

// errStartAgain ends the messages of failures the operator fixes by signing in again.
const errStartAgain = "start the sign-in again at GET /api/sessions/oidc"

// Finish ends a sign-in at its callback: it takes the state once, checks the browser that started
// it is the one back, exchanges the code with the PKCE verifier, verifies the ID token and its nonce,
// matches the provider's verified email with an account (made now, with the email's pending
// invitations, when only invitations wait for it) and opens a session. A failure names what was
// wrong (EINVALID, ECONFLICT: the request; EUNAUTHORIZED: the ID token; EFORBIDDEN: the browser or
// the email), never the code, a token or the verifier.
func (s *SSO) Finish(ctx context.Context, cb SSOCallback, client, userAgent string) (SSOSignedIn, error) {
	st, err := s.take(ctx, cb)
	if err != nil {
		return SSOSignedIn{}, err
	}
	if cb.Code == "" {
		return SSOSignedIn{}, orchestrator.Errorf(orchestrator.EINVALID, "the callback carries no authorization code; %s", errStartAgain)
	}
	if cb.Issuer != "" && cb.Issuer != s.Config.Issuer { // RFC 9207: the code came from another provider (a mix-up)
		return SSOSignedIn{}, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the callback comes from the issuer %q, not the configured provider %q (GUILDS_OIDC_ISSUER); %s", providerError(cb.Issuer, ""), s.Config.Issuer, errStartAgain)
	}
	p, err := s.discover(ctx)
	if err != nil {
		return SSOSignedIn{}, err
	}
	verifier, err := s.Identity.Box.Open(st.Verifier, verifierAD(st.Hash))
	if err != nil {
		return SSOSignedIn{}, fmt.Errorf("open the sign-in's PKCE verifier: %w", err)
	}
	hctx := oidc.ClientContext(ctx, s.client())
	tok, err := s.oauth2Config(p, st.RedirectURI).Exchange(hctx, cb.Code, oauth2.VerifierOption(string(verifier)))
	clear(verifier)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return SSOSignedIn{}, orchestrator.Errorf(orchestrator.EINVALID, "the OpenID provider refused the authorization code (%s): it may have expired or been used; %s", providerError(re.ErrorCode, re.ErrorDescription), errStartAgain)
		}
		return SSOSignedIn{}, orchestrator.Errorf(orchestrator.EUPSTREAM, "the OpenID provider's token endpoint did not answer: %s", scrub(err.Error(), cb.Code))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return SSOSignedIn{}, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the OpenID provider answered no ID token: check the client is an OpenID Connect client allowed the openid scope")
	}
	idt, claims, err := s.verify(hctx, p, raw, st.NonceHash)
	if err != nil {
		return SSOSignedIn{}, err
	}
	if claims.Email == "" && p.UserInfoEndpoint() != "" { // a provider may keep them for the userinfo endpoint
		if claims, err = userInfo(hctx, p, tok, idt.Subject, claims); err != nil {
			return SSOSignedIn{}, err
		}
	}
	a, err := s.account(ctx, claims)
	if err != nil {
		return SSOSignedIn{}, err
	}
	in, err := s.Identity.OpenSession(ctx, a, client, userAgent)
	if err != nil {
		return SSOSignedIn{}, err
	}
	return SSOSignedIn{SignedIn: in, ReturnTo: st.ReturnTo}, nil
}

// take checks the callback's state, takes its row once, and checks the browser's binding; a
// provider's error is reported once the state is spent.
func (s *SSO) take(ctx context.Context, cb SSOCallback) (orchestrator.OIDCState, error) {
	if cb.Error != "" {
		if ParseState(cb.State) == nil { // spend it: a refused sign-in is over
			if _, _, err := s.States.TakeOIDCState(ctx, Hash(cb.State), s.Identity.now()); err != nil && orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
				return orchestrator.OIDCState{}, err
			}
		}
		return orchestrator.OIDCState{}, orchestrator.Errorf(orchestrator.EINVALID, "the OpenID provider did not sign you in: %s; %s", providerError(cb.Error, cb.ErrorDescription), errStartAgain)
	}
	if err := ParseState(cb.State); err != nil {
		return orchestrator.OIDCState{}, err
	}
	now := s.Identity.now()
	st, taken, err := s.States.TakeOIDCState(ctx, Hash(cb.State), now)
	switch {
	case orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND:
		return st, orchestrator.Errorf(orchestrator.EINVALID, "no sign-in was started here with this state; %s", errStartAgain)
	case err != nil:
		return st, err
	case !taken && st.UsedAt != nil:
		return st, orchestrator.Errorf(orchestrator.ECONFLICT, "this sign-in's state was already used at %s: each callback works once; %s", st.UsedAt.UTC().Format(time.RFC3339), errStartAgain)
	case !taken:
		return st, orchestrator.Errorf(orchestrator.ECONFLICT, "this sign-in expired at %s (%s after it started); %s", st.ExpiresAt.UTC().Format(time.RFC3339), orchestrator.OIDCStateTTL, errStartAgain)
	}
	if len(cb.Binding) != len(cb.State) || subtle.ConstantTimeCompare([]byte(cb.Binding), []byte(cb.State)) != 1 {
		return st, orchestrator.Errorf(orchestrator.EFORBIDDEN, "this sign-in was started in another browser (this one does not hold its cookie): a sign-in ends in the browser that started it; %s", errStartAgain)
	}
	return st, nil
}

// ssoClaims are the ID token's (or userinfo's) claims a sign-in reads.
type ssoClaims struct {
	Email         string          `json:"email"`
	EmailVerified json.RawMessage `json:"email_verified"` // a boolean, or "true" from some providers
	Name          string          `json:"name"`
	Azp           string          `json:"azp"`
	Issuer        string          `json:"iss"`
	Audience      json.RawMessage `json:"aud"` // a string or a list
}

// verified reports whether email_verified is true (a JSON true or the string "true").
func (c ssoClaims) verified() bool {
	v := strings.TrimSpace(string(c.EmailVerified))
	return v == "true" || v == `"true"`
}

// audience lists the aud claim.
func (c ssoClaims) audience() []string {
	var one string
	if json.Unmarshal(c.Audience, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(c.Audience, &many)
	return many
}

// verify checks the ID token with go-oidc (signature against the provider's keys, issuer, audience,
// expiry), then its nonce and authorized party; a refusal names the claim that was wrong.
func (s *SSO) verify(ctx context.Context, p *oidc.Provider, raw string, nonceHash []byte) (*oidc.IDToken, ssoClaims, error) {
	var c ssoClaims
	v := p.Verifier(&oidc.Config{ClientID: s.Config.ClientID, Now: s.Identity.now})
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		return nil, c, s.explain(raw, err)
	}
	if err := idt.Claims(&c); err != nil {
		return nil, c, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the ID token's claims do not parse: %v", err)
	}
	if idt.Nonce == "" || subtle.ConstantTimeCompare(Hash(idt.Nonce), nonceHash) != 1 {
		return nil, c, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the ID token's nonce is not the one this sign-in sent: the token belongs to another sign-in; %s", errStartAgain)
	}
	switch {
	case c.Azp != "" && c.Azp != s.Config.ClientID:
		return nil, c, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the ID token was issued to the client %q (azp), not this box's client %q (GUILDS_OIDC_CLIENT_ID)", c.Azp, s.Config.ClientID)
	case c.Azp == "" && len(idt.Audience) > 1:
		return nil, c, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the ID token names several audiences but no authorized party (azp): it cannot be shown to be issued to this box's client")
	}
	return idt, c, nil
}

// explain turns go-oidc's refusal of an ID token into a message naming the claim that was wrong,
// reading the token's claims without trusting them (they were already refused).
func (s *SSO) explain(raw string, err error) error {
	var expired *oidc.TokenExpiredError
	if errors.As(err, &expired) {
		return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the ID token expired at %s; %s", expired.Expiry.UTC().Format(time.RFC3339), errStartAgain)
	}
	if c, ok := unverifiedClaims(raw); ok {
		switch aud := c.audience(); {
		case c.Issuer != s.Config.Issuer:
			return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the ID token was issued by %q, not by the configured provider %q (GUILDS_OIDC_ISSUER)", c.Issuer, s.Config.Issuer)
		case !slices.Contains(aud, s.Config.ClientID):
			return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the ID token is for the audience %q, not this box's client %q (GUILDS_OIDC_CLIENT_ID)", aud, s.Config.ClientID)
		}
	}
	return orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the ID token does not verify against the provider's keys (%s)", strings.TrimPrefix(err.Error(), "oidc: "))
}

// unverifiedClaims decodes a JWT's payload without checking it, only to explain a refusal.
func unverifiedClaims(raw string) (ssoClaims, bool) {
	var c ssoClaims
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return c, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &c) != nil {
		return c, false
	}
	return c, true
}

// userInfo reads the email and name from the provider's userinfo endpoint, which must answer for
// the ID token's subject.
func userInfo(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, subject string, c ssoClaims) (ssoClaims, error) {
	ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return c, orchestrator.Errorf(orchestrator.EUPSTREAM, "the OpenID provider's userinfo endpoint did not answer the email: %s", strings.TrimPrefix(err.Error(), "oidc: "))
	}
	if ui.Subject != subject {
		return c, orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "the provider's userinfo answered for another subject than the ID token's")
	}
	var more struct {
		Name string `json:"name"`
	}
	_ = ui.Claims(&more)
	c.Email, c.Name = ui.Email, more.Name
	c.EmailVerified = json.RawMessage("false")
	if ui.EmailVerified {
		c.EmailVerified = json.RawMessage("true")
	}
	return c, nil
}

// account finds the account of a verified email: an active account, or one made now when
// invitations wait for the email (every pending invitation of the email is accepted).
func (s *SSO) account(ctx context.Context, c ssoClaims) (orchestrator.Account, error) {
	if c.Email == "" {
		return orchestrator.Account{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "the OpenID provider gave no email for this sign-in: allow this box's client the email scope there")
	}
	email, err := NormalEmail(c.Email)
	if err != nil {
		return orchestrator.Account{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "the OpenID provider's email %q is not an address an account can have", c.Email)
	}
	if !c.verified() {
		return orchestrator.Account{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "the OpenID provider has not verified the email %s (email_verified is not true): verify it there first; only a verified email signs in", email)
	}
	st, err := s.Identity.Store.SignInState(ctx, email)
	if err != nil {
		return orchestrator.Account{}, fmt.Errorf("look up the signed-in email: %w", err)
	}
	if st.Account != nil && st.Account.Deactivated {
		return orchestrator.Account{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "the account of %s is deactivated; an instance admin can reactivate it", email)
	}
	now := s.Identity.now()
	pending, err := s.Identity.Store.PendingInvitations(ctx, email, now)
	if err != nil {
		return orchestrator.Account{}, fmt.Errorf("look up the email's invitations: %w", err)
	}
	a, rest := st.Account, pending
	if a == nil {
		if len(pending) == 0 {
			return orchestrator.Account{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "no account here has the email %s and no invitation waits for it: ask an owner to invite it (POST /api/invitations) or an instance admin to create its account", email)
		}
		var made bool
		if a, made, err = s.create(ctx, email, c.Name, pending[0], now); err != nil {
			return orchestrator.Account{}, err
		}
		if made {
			rest = pending[1:]
		}
	}
	for _, inv := range rest {
		_, err := s.Identity.Store.AcceptInvitation(ctx, orchestrator.AcceptWrite{InvitationID: inv.ID, AccountID: a.ID, Now: now})
		if err != nil && orchestrator.ErrorCode(err) != orchestrator.ECONFLICT { // accepted (or expired) meanwhile: nothing to do
			return orchestrator.Account{}, fmt.Errorf("accept the invitation %s: %w", inv.ID, err)
		}
	}
	if len(pending) > 0 {
		s.Identity.Changed(accountKey(a.ID))
	}
	if err := s.Identity.Store.RecordSignIn(ctx, email, true, nil, now); err != nil {
		return orchestrator.Account{}, fmt.Errorf("record a sign-in: %w", err)
	}
	return *a, nil
}

// create makes the account of an invited email, with the ID token's name and no password, by
// accepting its first invitation (made reports it); an account made meanwhile (another callback)
// is taken instead.
func (s *SSO) create(ctx context.Context, email, name string, first orchestrator.Invitation, now time.Time) (a *orchestrator.Account, made bool, err error) {
	a = &orchestrator.Account{ID: orchestrator.NewID(orchestrator.PrefixAccount), Email: email, Name: accountName(name, email), CreatedAt: now, UpdatedAt: now}
	_, err = s.Identity.Store.AcceptInvitation(ctx, orchestrator.AcceptWrite{InvitationID: first.ID, AccountID: a.ID, NewAccount: a, Now: now})
	if err == nil {
		return a, true, nil
	}
	if orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		return nil, false, fmt.Errorf("make the invited account: %w", err)
	}
	st, serr := s.Identity.Store.SignInState(ctx, email)
	if serr != nil || st.Account == nil {
		return nil, false, err // the invitation itself was taken meanwhile
	}
	return st.Account, false, nil
}

// accountName is the name a new account takes: the provider's, else the email's local part.
func accountName(name, email string) string {
	name = strings.Join(strings.FieldsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if orchestrator.ValidName("account", name) == nil {
		return name
	}
	return email[:strings.LastIndexByte(email, '@')]
}

// providerError renders a provider's error code and description for a message: printable text,
// cut short.
func providerError(code, description string) string {
	clean := func(s string, n int) string {
		s = strings.Map(func(r rune) rune {
			if unicode.IsPrint(r) {
				return r
			}
			return -1
		}, s)
		if len([]rune(s)) > n {
			s = string([]rune(s)[:n]) + "…"
		}
		return s
	}
	out := clean(code, 64)
	if out == "" {
		out = "an error"
	}
	if d := clean(description, 200); d != "" {
		out += " (" + d + ")"
	}
	return out
}

// scrub removes a secret from an error text before it reaches a message.
func scrub(text, secret string) string {
	if secret == "" {
		return text
	}
	return strings.ReplaceAll(text, secret, "[code]")
}
