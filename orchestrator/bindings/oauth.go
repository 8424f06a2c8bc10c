package bindings

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"golang.org/x/sync/singleflight"
)

// OAuthProtocol is the seam of the OAuth client: connectors/oauth implements it. Errors carry no
// token, code or verifier.
type OAuthProtocol interface {
	// Discover finds the authorization server of the MCP server at serverURL.
	Discover(ctx context.Context, serverURL string) (orchestrator.OAuthServer, error)
	// Register registers a public client for redirectURI (RFC 7591).
	Register(ctx context.Context, m orchestrator.OAuthServer, redirectURI string) (orchestrator.OAuthClient, error)
	// Authorize builds the authorization URL with a fresh state and PKCE verifier.
	Authorize(m orchestrator.OAuthServer, c orchestrator.OAuthClient) (orchestrator.OAuthAuthorization, error)
	// Exchange trades a code and its verifier for tokens.
	Exchange(ctx context.Context, m orchestrator.OAuthServer, c orchestrator.OAuthClient, code, verifier string) (orchestrator.OAuthToken, error)
	// Refresh renews tokens; an error whose OAuthErrorCode() is invalid_grant means the grant is gone.
	Refresh(ctx context.Context, m orchestrator.OAuthServer, c orchestrator.OAuthClient, refreshToken string) (orchestrator.OAuthToken, error)
}

// OAuthStore is the persistence of browser OAuth logins; postgres.Store implements it.
type OAuthStore interface {
	OAuthClientFor(ctx context.Context, server, issuer, redirectURI string) (orchestrator.OAuthClient, []byte, error)
	SaveOAuthClient(ctx context.Context, c orchestrator.OAuthClient, sealedSecret []byte) (orchestrator.OAuthClient, []byte, error)
	SaveConfiguredOAuthClient(ctx context.Context, c orchestrator.OAuthClient, sealedSecret []byte) (orchestrator.OAuthClient, []byte, error)
	BeginOAuth(ctx context.Context, w orchestrator.OAuthBegin) (orchestrator.Connection, error)
	TakeOAuthState(ctx context.Context, stateHash []byte) (orchestrator.OAuthPending, error)
	AbandonOAuth(ctx context.Context, connectionID string) (bool, error)
	CompleteOAuth(ctx context.Context, w orchestrator.OAuthComplete) (orchestrator.Connection, error)
	OAuthGrant(ctx context.Context, connectionID string) (orchestrator.OAuthGrant, error)
	RefreshOAuth(ctx context.Context, connectionID string, fn func(orchestrator.OAuthGrant) (*orchestrator.OAuthGrantUpdate, error)) error
}

// Bearer is an OAuth login's credentials as the MCP client sends them: the access token for each
// request (renewed first when it nears its end), and one renewal after the server refused it.
type Bearer interface {
	// Header returns the Authorization header for one request.
	Header(ctx context.Context) (http.Header, error)
	// Rejected renews the token the server just refused (401); nil means retry with the new one.
	Rejected(ctx context.Context) error
	// Renewed lists the access tokens sent that were not the stored one the login was read with
	// (renewed during the call): the caller redacts them, as the run's set does not hold them yet.
	Renewed() []string
}

// CallbackPath is where authorization servers send the operator's browser back.
const CallbackPath = "/api/mcp/oauth/callback"

// Refresh margins: a token is renewed before a request when less than refreshMargin of its life
// remains, or less than half of it for a token that lives under shortLived.
const (
	refreshMargin         = 60 * time.Second
	shortLived            = 2 * time.Minute
	DefaultRefreshTimeout = 15 * time.Second
)

// OAuth carries browser OAuth logins: it starts them (discovery, registration, the pending state)
// and renews their tokens, serialized per login across replicas by the connection's row lock.
// Everything lives in the database; the token cache here only remembers, per login, the expiry of
// the access token it last saw. Set its fields once.
type OAuth struct {
	Store          OAuthStore
	Box            *sealed.Box
	Protocol       OAuthProtocol
	Now            func() time.Time
	Log            *slog.Logger
	RefreshTimeout time.Duration // the token request's deadline; 0 is DefaultRefreshTimeout

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]tokenState
}

// tokenState is what a request needs to know of a login's access token.
type tokenState struct {
	access  string
	expires *time.Time
	issued  time.Time
}

func (o *OAuth) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (o *OAuth) log() *slog.Logger {
	if o.Log != nil {
		return o.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (o *OAuth) cached(id string) (tokenState, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st, ok := o.cache[id]
	return st, ok
}

func (o *OAuth) put(id string, st tokenState) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cache == nil {
		o.cache = map[string]tokenState{}
	}
	o.cache[id] = st
}

func (o *OAuth) drop(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.cache, id)
}

// due reports whether a token must be renewed before the next request.
func (o *OAuth) due(st tokenState) bool {
	if st.expires == nil {
		return false
	}
	margin := refreshMargin
	if life := st.expires.Sub(st.issued); life < shortLived {
		margin = life / 2
	}
	return st.expires.Sub(o.now()) < margin
}

// bearer returns the Bearer of a login whose stored access token (as just read) is access.
func (o *OAuth) bearer(connectionID, access string) Bearer {
	b := &bearer{o: o, id: connectionID, stored: access}
	b.sent.Store(&access)
	return b
}

type bearer struct {
	o      *OAuth
	id     string
	stored string                 // the token the login was read with
	sent   atomic.Pointer[string] // the token the last request carried (at first, the stored one)
	mu     sync.Mutex
	fresh  []string // tokens sent that are not the stored one
}

// note records the token about to be sent.
func (b *bearer) note(tok string) {
	if old := b.sent.Swap(&tok); *old == tok || tok == b.stored {
		return
	}
	b.mu.Lock()
	b.fresh = append(b.fresh, tok)
	b.mu.Unlock()
}

// Renewed lists the tokens sent that the login was not read with.
func (b *bearer) Renewed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.fresh...)
}

// Header returns the current access token, renewed first when it is due.
func (b *bearer) Header(ctx context.Context) (http.Header, error) {
	tok, err := b.o.token(ctx, b.id, *b.sent.Load())
	if err != nil {
		return nil, err
	}
	b.note(tok)
	return http.Header{"Authorization": []string{"Bearer " + tok}}, nil
}

// Rejected renews the token the server refused, unless another request renewed it already.
func (b *bearer) Rejected(ctx context.Context) error {
	st, err := b.o.refresh(ctx, b.id, *b.sent.Load(), true)
	if err != nil {
		return err
	}
	b.note(st.access)
	return nil
}

// token returns the access token to send for a login whose stored token was seen as seen.
func (o *OAuth) token(ctx context.Context, id, seen string) (string, error) {
	st, ok := o.cached(id)
	if !ok || st.access != seen {
		g, err := o.Store.OAuthGrant(ctx, id)
		if err != nil {
			return "", fmt.Errorf("read the OAuth login %s: %w", id, err)
		}
		creds, err := openCredentials(o.Box, id, g.Sealed)
		if err != nil {
			return "", err
		}
		st = tokenState{access: creds["access_token"], expires: g.ExpiresAt, issued: g.IssuedAt}
		o.put(id, st)
	}
	if !o.due(st) {
		return st.access, nil
	}
	next, err := o.refresh(ctx, id, st.access, false)
	if err != nil {
		if st.expires.After(o.now()) && !disconnected(err) {
			o.log().Warn("OAuth: renewing a token near its end failed; sending the current one", "connection_id", id, "err", err.Error())
			return st.access, nil
		}
		return "", err
	}
	return next.access, nil
}

// errDisconnected marks a refresh that found the grant gone and disconnected the login.
type errDisconnected struct{ msg string }

func (e *errDisconnected) Error() string { return e.msg }

func disconnected(err error) bool {
	var d *errDisconnected
	return errors.As(err, &d)
}

// refresh renews the login's tokens if its stored access token is still old: under the
// connection's row lock, so one request of one replica renews and the others read its result.
// force renews even a token that is not due (the server refused it).
func (o *OAuth) refresh(ctx context.Context, id, old string, force bool) (tokenState, error) {
	key := id + "\x00" + old
	if force {
		key += "\x00force"
	}
	v, err, _ := o.flight.Do(key, func() (any, error) {
		timeout := o.RefreshTimeout
		if timeout <= 0 {
			timeout = DefaultRefreshTimeout
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		var st tokenState
		renewed := false
		err := o.Store.RefreshOAuth(ctx, id, func(g orchestrator.OAuthGrant) (*orchestrator.OAuthGrantUpdate, error) {
			creds, err := openCredentials(o.Box, id, g.Sealed)
			if err != nil {
				return nil, err
			}
			if g.Status == orchestrator.ConnDisconnected { // a pending login holding tokens (Drive before its folder) renews too
				return nil, &errDisconnected{fmt.Sprintf("the %s login %s is %s; connect it again", g.Server, id, g.Status)}
			}
			cur := tokenState{access: creds["access_token"], expires: g.ExpiresAt, issued: g.IssuedAt}
			if cur.access != old || (!force && !o.due(cur)) {
				st = cur // another request, or another replica, renewed it already
				return nil, nil
			}
			now := o.now()
			rt := creds["refresh_token"]
			if rt == "" {
				if !force {
					st = cur
					return nil, nil
				}
				return &orchestrator.OAuthGrantUpdate{Disconnect: true, Now: now}, &errDisconnected{fmt.Sprintf(
					"%s refused the access token of login %s and gave no refresh token to renew it, so the login is now disconnected; connect it again", g.Server, id)}
			}
			client, err := o.client(g.Client, g.SealedSecret)
			if err != nil {
				return nil, err
			}
			tok, err := o.Protocol.Refresh(ctx, g.Meta, client, rt)
			var coded interface{ OAuthErrorCode() string }
			if errors.As(err, &coded) && coded.OAuthErrorCode() == "invalid_grant" {
				return &orchestrator.OAuthGrantUpdate{Disconnect: true, Now: now}, &errDisconnected{fmt.Sprintf(
					"%s refused to renew login %s (invalid_grant: the grant was revoked or has expired), so the login is now disconnected; connect it again", g.Server, id)}
			}
			if err != nil {
				return nil, fmt.Errorf("renewing the %s login %s failed, so this call failed (the login stays connected; try again): %w", g.Server, id, err)
			}
			creds["access_token"], creds["refresh_token"] = tok.AccessToken, tok.RefreshToken
			plain, err := json.Marshal(creds)
			if err != nil {
				return nil, fmt.Errorf("encode the renewed tokens: %w", err)
			}
			sealedCreds := o.Box.Seal(plain, SealedFor(id))
			clear(plain)
			st, renewed = tokenState{access: tok.AccessToken, expires: tok.ExpiresAt, issued: now}, true
			return &orchestrator.OAuthGrantUpdate{Sealed: sealedCreds, ExpiresAt: tok.ExpiresAt, Now: now}, nil
		})
		if err != nil {
			o.drop(id)
			if disconnected(err) {
				o.log().Warn("OAuth login disconnected", "connection_id", id, "err", err.Error())
			}
			return tokenState{}, err
		}
		o.put(id, st)
		if renewed {
			o.log().Info("OAuth tokens renewed", "connection_id", id, "forced", force)
		}
		return st, nil
	})
	if err != nil {
		return tokenState{}, err
	}
	return v.(tokenState), nil
}

// client opens a stored client's secret (a public client has none).
func (o *OAuth) client(c orchestrator.OAuthClient, sealedSecret []byte) (orchestrator.OAuthClient, error) {
	if len(sealedSecret) == 0 {
		return c, nil
	}
	plain, err := o.Box.Open(sealedSecret, clientSecretAD(c))
	if err != nil {
		return c, fmt.Errorf("open the OAuth client secret of %s: %w", c.Server, err)
	}
	c.ClientSecret = string(plain)
	clear(plain)
	return c, nil
}

// clientSecretAD is the additional data a registered client's secret is sealed with.
func clientSecretAD(c orchestrator.OAuthClient) []byte {
	return []byte("mcp_oauth_clients.client_secret:" + c.Server + "\n" + c.Issuer + "\n" + c.RedirectURI)
}

// verifierAD is the additional data a pending login's PKCE verifier is sealed with.
func verifierAD(stateHash []byte) []byte {
	return []byte("mcp_oauth_states.verifier:" + hex.EncodeToString(stateHash))
}

func stateHash(state string) []byte {
	sum := sha256.Sum256([]byte(state))
	return sum[:]
}

// staticBearer sends one token: the listing a callback makes before anything is stored.
type staticBearer string

func (b staticBearer) Header(context.Context) (http.Header, error) {
	return http.Header{"Authorization": []string{"Bearer " + string(b)}}, nil
}

func (b staticBearer) Rejected(context.Context) error {
	return errors.New("the server refused the access token it just issued")
}

func (b staticBearer) Renewed() []string { return []string{string(b)} }

// Login is Connect's answer: the connection and, for a browser OAuth login, the URL the
// operator's browser opens.
type Login struct {
	Connection       orchestrator.Connection `json:"connection"`
	AuthorizationURL string                  `json:"authorization_url,omitempty"`
}

// OAuth setup states of a server (oauth_setup_state).
const (
	SetupNotApplicable = "not_applicable" // token and keyless servers
	SetupDynamic       = "dynamic"        // OAuth servers this orchestrator registers itself at
	SetupConfigured    = "configured"     // OAuth servers whose box-wide client or App is set
	SetupUnsupported   = "unsupported"    // OAuth servers whose box-wide client or App is missing
)

// SetupState is a server's oauth_setup_state: Gmail, Drive and GitHub need the box's variables.
func (s *Service) SetupState(srv orchestrator.MCPServer) string {
	if srv.Auth != orchestrator.AuthOAuth {
		return SetupNotApplicable
	}
	if srv.Kind == orchestrator.ServerGitHub && s.GitHub != nil {
		return s.GitHub.SetupState() // unsupported also when a variable is set but does not parse
	}
	if in, ok := integrations.ForConnector(srv.Slug); ok {
		getenv := s.Getenv
		if getenv == nil {
			getenv = func(string) string { return "" }
		}
		if integrations.Enabled(getenv, in.Name) {
			return SetupConfigured
		}
		return SetupUnsupported
	}
	return SetupDynamic
}

// dynamicOAuth reports whether srv logs in through this orchestrator's own dynamic registration.
func (s *Service) dynamicOAuth(srv orchestrator.MCPServer) bool {
	return srv.Kind == orchestrator.ServerRemote && s.SetupState(srv) == SetupDynamic && s.Remote != nil && s.Remote.OAuth != nil
}

// ConnectLogin is Connect for every server: a dynamic OAuth server starts a browser login and
// answers its authorization_url; any other connects as Connect does.
func (s *Service) ConnectLogin(ctx context.Context, req ConnectRequest) (Login, error) {
	srv, err := s.server(ctx, req.Server)
	if err != nil {
		return Login{}, err
	}
	if srv.Kind == orchestrator.ServerGitHub && s.GitHub != nil {
		return s.connectGitHub(ctx, srv, req)
	}
	if s.googleOAuth(srv) {
		return s.beginGoogle(ctx, srv, req)
	}
	if !s.dynamicOAuth(srv) {
		conn, err := s.Connect(ctx, req)
		return Login{Connection: conn}, err
	}
	return s.beginOAuth(ctx, srv, req)
}

// beginOAuth starts a browser login: discovery, a client registered once per authorization server
// and callback URL, and a pending connection holding the state and the sealed PKCE verifier.
func (s *Service) beginOAuth(ctx context.Context, srv orchestrator.MCPServer, req ConnectRequest) (Login, error) {
	o := s.Remote.OAuth
	owner, err := s.checkBrowserLogin(ctx, srv, req)
	if err != nil {
		return Login{}, err
	}
	m, err := o.Protocol.Discover(ctx, srv.URL)
	if err != nil {
		return Login{}, oauthFailure(srv, "discovering where to log in", err)
	}
	now := s.now()
	client, sealedSecret, err := o.Store.OAuthClientFor(ctx, srv.Slug, m.Issuer, req.CallbackURL)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		reg, rerr := o.Protocol.Register(ctx, m, req.CallbackURL)
		if rerr != nil {
			return Login{}, oauthFailure(srv, "registering this orchestrator as a client", rerr)
		}
		reg.Server, reg.Issuer, reg.RedirectURI, reg.RegisteredAt = srv.Slug, m.Issuer, req.CallbackURL, now
		var secret []byte
		if reg.ClientSecret != "" {
			secret = o.Box.Seal([]byte(reg.ClientSecret), clientSecretAD(reg))
		}
		client, sealedSecret, err = o.Store.SaveOAuthClient(ctx, reg, secret)
		if err == nil {
			s.log().Info("OAuth client registered", "server", srv.Slug, "issuer", m.Issuer, "redirect_uri", req.CallbackURL)
		}
	}
	if err != nil {
		return Login{}, err
	}
	_ = sealedSecret // the authorization request needs only the client id; exchange and refresh open it
	a, err := o.Protocol.Authorize(m, client)
	if err != nil {
		return Login{}, oauthFailure(srv, "building the authorization request", err)
	}
	return s.pendingLogin(ctx, srv, owner, client, m, a)
}

// checkBrowserLogin checks a Connect that starts a browser login and places its owner.
func (s *Service) checkBrowserLogin(ctx context.Context, srv orchestrator.MCPServer, req ConnectRequest) (orchestrator.Chain, error) {
	if req.Scope == orchestrator.ScopePlatform {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "platform-scope Connect is reserved; connect %s at an org, guild or agent", srv.Name)
	}
	owner, err := s.chain(ctx, req.Scope, req.ScopeID)
	if err != nil {
		return orchestrator.Chain{}, err
	}
	if s.Box == nil || s.Remote.OAuth.Box == nil {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "%s is not set, so tokens cannot be stored encrypted; set it (openssl rand -base64 32) in the environment or .env and restart", sealed.KeyVar)
	}
	if len(req.Credentials) > 0 || len(req.PinnedPrices.Coins) > 0 {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "%s takes no credentials or settings: it connects through a browser login; send only server, scope and scope_id", srv.Name)
	}
	if utf8.RuneCountInString(req.AccountHint) > 200 {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "account_hint is %d characters; at most 200", utf8.RuneCountInString(req.AccountHint))
	}
	return owner, checkCallback(req.CallbackURL)
}

// pendingLogin stores the pending connection with the authorization's state and sealed verifier.
func (s *Service) pendingLogin(ctx context.Context, srv orchestrator.MCPServer, owner orchestrator.Chain, client orchestrator.OAuthClient,
	m orchestrator.OAuthServer, a orchestrator.OAuthAuthorization) (Login, error) {
	o, now := s.Remote.OAuth, s.now()
	hash := stateHash(a.State)
	verifier := []byte(a.Verifier)
	conn, err := o.Store.BeginOAuth(ctx, orchestrator.OAuthBegin{Server: srv, Owner: owner, NewID: orchestrator.NewID(orchestrator.PrefixConnection),
		StateHash: hash, Client: client, Meta: m, Now: now,
		SealVerifier: func(string) []byte { return o.Box.Seal(verifier, verifierAD(hash)) }})
	clear(verifier)
	if err != nil {
		return Login{}, err
	}
	s.log().Info("OAuth login started", "connection_id", conn.ID, "server", srv.Slug, "scope", owner.Scope, "scope_id", owner.ID(), "issuer", m.Issuer)
	return Login{Connection: conn, AuthorizationURL: a.URL}, nil
}

// checkCallback accepts the callback URL the API computed: absolute http(s), ending in CallbackPath.
func checkCallback(raw string) error {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(u.Path, CallbackPath) {
		return orchestrator.Errorf(orchestrator.EINVALID, "the OAuth callback URL %q is not an http(s) URL ending in %s; set PUBLIC_BASE_URL to this orchestrator's public address (https://host)", raw, CallbackPath)
	}
	return nil
}

// oauthFailure names what failed: an answer the server gave that cannot be used is EINVALID, a
// server that did not answer (or answered 5xx) EUPSTREAM. Nothing was written.
func oauthFailure(srv orchestrator.MCPServer, doing string, err error) error {
	var temp interface{ Temporary() bool }
	var bad interface{ Unusable() bool }
	code := orchestrator.EUPSTREAM
	if errors.As(err, &bad) && bad.Unusable() && !(errors.As(err, &temp) && temp.Temporary()) {
		code = orchestrator.EINVALID
	}
	return orchestrator.Errorf(code, "%s: %s failed: %v; nothing was written", srv.Name, doing, err)
}

// OAuthCallbackQuery is what the authorization server's redirect carries.
type OAuthCallbackQuery struct {
	State            string
	Code             string
	Error            string
	ErrorDescription string
}

// OAuthCallback completes a browser login: the state (single-use, 10 minutes) finds the pending
// connection; the code is exchanged with its verifier, the tools are listed with the new token,
// and the sealed tokens, the tools and the enabled binding are stored as the login connects. A
// denied or failed login deletes a new pending connection (a disconnected one stays, with its
// bindings); an unknown, used or expired state changes nothing. Errors are EINVALID (the page's
// 400) and never carry a token, code or verifier.
func (s *Service) OAuthCallback(ctx context.Context, q OAuthCallbackQuery) (orchestrator.Connection, error) {
	if s.Remote == nil || s.Remote.OAuth == nil {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "this orchestrator offers no browser OAuth logins")
	}
	o := s.Remote.OAuth
	if q.State == "" || len(q.State) > 512 {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "the callback carries no state, so it belongs to no login; nothing was changed. Start again with Connect")
	}
	hash := stateHash(q.State)
	p, err := o.Store.TakeOAuthState(ctx, hash)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "this login link is unknown or was already used; nothing was changed. Start again with Connect")
	}
	if err != nil {
		return orchestrator.Connection{}, err
	}
	now := s.now()
	if !now.Before(p.ExpiresAt) {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "this login link expired (a login must finish within %s of Connect); nothing was changed. Start again with Connect", orchestrator.OAuthStateTTL)
	}
	srv, err := s.server(ctx, p.Server)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	fail := func(format string, args ...any) (orchestrator.Connection, error) {
		msg := fmt.Sprintf(format, args...)
		for _, secret := range []string{q.Code, q.State} {
			if len(secret) >= 4 {
				msg = strings.ReplaceAll(msg, secret, "[redacted]")
			}
		}
		deleted, err := o.Store.AbandonOAuth(context.WithoutCancel(ctx), p.ConnectionID)
		if err != nil {
			s.log().Error("OAuth: dropping the pending connection of a failed login failed", "connection_id", p.ConnectionID, "err", err.Error())
		}
		tail := "the connection is left disconnected, its bindings intact"
		if deleted {
			tail = "the pending connection was deleted"
		}
		s.log().Warn("OAuth login failed", "connection_id", p.ConnectionID, "server", srv.Slug, "deleted", deleted, "reason", msg)
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s login failed: %s; %s. Start again with Connect", srv.Name, msg, tail)
	}
	if q.Error != "" {
		desc := ""
		if q.ErrorDescription != "" {
			desc = " (" + clip(q.ErrorDescription, 300) + ")"
		}
		return fail("the authorization server answered %s%s", clip(q.Error, 60), desc)
	}
	if q.Code == "" {
		return fail("the callback carries no code")
	}
	verifier, err := o.Box.Open(p.SealedVerifier, verifierAD(hash))
	if err != nil {
		return fail("the login's PKCE verifier cannot be opened (was %s changed?)", sealed.KeyVar)
	}
	client, err := o.client(p.Client, p.SealedSecret)
	if err != nil {
		clear(verifier)
		return fail("%v", err)
	}
	tok, err := o.Protocol.Exchange(ctx, p.Meta, client, q.Code, string(verifier))
	clear(verifier)
	if err != nil {
		return fail("exchanging the code for tokens failed: %v", err)
	}
	var listing RemoteListing
	var tools []orchestrator.ListedTool
	hint := tok.AccountHint
	hold := s.Remote.confined(srv) // Drive: the tokens are held until the operator picks the folder
	if hold {
		hint = ""
	} else if srv.Kind == orchestrator.ServerLocal {
		hint, tools, err = s.localOAuthListing(ctx, srv, tok)
		if err != nil {
			return fail("the login worked but %s refused its token: %s", srv.Name, pipelineScrub(err.Error(), tok))
		}
	} else {
		listID := orchestrator.NewID(strings.TrimSuffix(verifyPrefix, "_"))
		listing, err = s.Remote.Client.ListTools(ctx, RemoteLogin{ConnectionID: listID, Server: srv, Bearer: staticBearer(tok.AccessToken)})
		s.Remote.Client.Forget(listID)
		if err == nil {
			err = rejectedListing(srv, listing.Tools)
		}
		if err != nil {
			return fail("the login worked but listing %s's tools with it failed: %s", srv.Name, pipelineScrub(err.Error(), tok))
		}
		tools = listedRemote(s.log(), srv, listing.Tools)
	}
	if hint == "" && !hold {
		if u, err := url.Parse(p.Meta.Issuer); err == nil {
			hint = u.Hostname()
		}
	}
	plain, err := json.Marshal(map[string]string{"access_token": tok.AccessToken, "refresh_token": tok.RefreshToken})
	if err != nil {
		return fail("encode the tokens: %v", err)
	}
	conn, err := o.Store.CompleteOAuth(ctx, orchestrator.OAuthComplete{ConnectionID: p.ConnectionID, Server: srv, Owner: p.Owner,
		Seal: func(id string) []byte { return o.Box.Seal(plain, SealedFor(id)) }, ExpiresAt: tok.ExpiresAt, ClientID: p.Client.ID, Meta: p.Meta,
		AccountHint: hint, Tools: tools, Transport: listing.Transport, Hold: hold, Now: now})
	clear(plain)
	switch orchestrator.ErrorCode(err) {
	case "":
	case orchestrator.ENOTFOUND, orchestrator.ECONFLICT:
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s login: %s", srv.Name, orchestrator.ErrorMessage(err))
	default:
		return orchestrator.Connection{}, err
	}
	s.Remote.Client.Forget(conn.ID)
	o.put(conn.ID, tokenState{access: tok.AccessToken, expires: tok.ExpiresAt, issued: now})
	if hold {
		s.log().Info("OAuth login held until its folder is picked", "connection_id", conn.ID, "server", srv.Slug)
		return conn, nil
	}
	s.log().Info("connection connected", "connection_id", conn.ID, "server", srv.Slug, "scope", p.Owner.Scope, "scope_id", p.Owner.ID(),
		"tools", len(tools), "oauth", true)
	return conn, nil
}

// pipelineScrub removes a token's values from a text that may quote a request.
func pipelineScrub(s string, t orchestrator.OAuthToken) string {
	for _, v := range []string{t.AccessToken, t.RefreshToken} {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}
