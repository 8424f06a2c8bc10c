package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

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
		if integrations.Enabled(s.Integrations, in.Name) {
			return SetupConfigured
		}
		return SetupUnsupported
	}
	return SetupDynamic
}

// dynamicOAuth reports whether srv logs in through this orchestrator's own dynamic registration.
func (s *Service) dynamicOAuth(srv orchestrator.MCPServer) bool {
	return srv.Kind == orchestrator.ServerRemote && s.SetupState(srv) == SetupDynamic && s.Caller != nil && s.Caller.OAuth != nil
}

// ConnectLogin is Connect for every server: a dynamic OAuth server starts a browser login and
// answers its authorization_url; any other connects as Connect does.
func (s *Service) ConnectLogin(ctx context.Context, req ConnectRequest) (Login, error) {
	srv, err := s.GetServer(ctx, req.Server)
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
	o := s.Caller.OAuth
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
			secret = o.Box.Seal([]byte(reg.ClientSecret), connections.ClientSecretAD(reg))
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
	if s.Box == nil || s.Caller.OAuth.Box == nil {
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
	o, now := s.Caller.OAuth, s.now()
	hash := connections.StateHash(a.State)
	verifier := []byte(a.Verifier)
	conn, err := o.Store.BeginOAuth(ctx, orchestrator.OAuthBegin{Server: srv, Owner: owner, NewID: orchestrator.NewID(orchestrator.PrefixConnection),
		StateHash: hash, Client: client, Meta: m, Now: now,
		SealVerifier: func(string) []byte { return o.Box.Seal(verifier, connections.VerifierAD(hash)) }})
	clear(verifier)
	if err != nil {
		return Login{}, err
	}
	s.log().Info("OAuth login started", "connection_id", conn.ID, "server", srv.Slug, "scope", owner.Scope, "scope_id", owner.ID(), "issuer", m.Issuer)
	return Login{Connection: conn, AuthorizationURL: a.URL}, nil
}

// checkCallback accepts the callback URL the API computed: absolute http(s), ending in orchestrator.OAuthCallbackPath.
func checkCallback(raw string) error {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(u.Path, orchestrator.OAuthCallbackPath) {
		return orchestrator.Errorf(orchestrator.EINVALID, "the OAuth callback URL %q is not an http(s) URL ending in %s; set PUBLIC_BASE_URL to this orchestrator's public address (https://host)", raw, orchestrator.OAuthCallbackPath)
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
	if s.Caller == nil || s.Caller.OAuth == nil {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "this orchestrator offers no browser OAuth logins")
	}
	o := s.Caller.OAuth
	if q.State == "" || len(q.State) > 512 {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "the callback carries no state, so it belongs to no login; nothing was changed. Start again with Connect")
	}
	hash := connections.StateHash(q.State)
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
	srv, err := s.GetServer(ctx, p.Server)
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
			desc = " (" + connections.Clip(q.ErrorDescription, 300) + ")"
		}
		return fail("the authorization server answered %s%s", connections.Clip(q.Error, 60), desc)
	}
	if q.Code == "" {
		return fail("the callback carries no code")
	}
	verifier, err := o.Box.Open(p.SealedVerifier, connections.VerifierAD(hash))
	if err != nil {
		return fail("the login's PKCE verifier cannot be opened (was %s changed?)", sealed.KeyVar)
	}
	client, err := o.OpenClient(p.Client, p.SealedSecret)
	if err != nil {
		clear(verifier)
		return fail("%v", err)
	}
	tok, err := o.Protocol.Exchange(ctx, p.Meta, client, q.Code, string(verifier))
	clear(verifier)
	if err != nil {
		return fail("exchanging the code for tokens failed: %v", err)
	}
	var listing connections.RemoteListing
	var tools []orchestrator.ListedTool
	hint := tok.AccountHint
	hold := s.Caller.Confined(srv) // Drive: the tokens are held until the operator picks the folder
	if hold {
		hint = ""
	} else if srv.Kind == orchestrator.ServerLocal {
		hint, tools, err = s.localOAuthListing(ctx, srv, tok)
		if err != nil {
			return fail("the login worked but %s refused its token: %s", srv.Name, pipelineScrub(err.Error(), tok))
		}
	} else {
		listID := connections.ListID()
		listing, err = s.Caller.Client.ListTools(ctx, connections.RemoteLogin{ConnectionID: listID, Server: srv, Bearer: connections.StaticBearer(tok.AccessToken)})
		s.Caller.Client.Forget(listID)
		if err == nil {
			err = connections.RejectedListing(srv, listing.Tools)
		}
		if err != nil {
			return fail("the login worked but listing %s's tools with it failed: %s", srv.Name, pipelineScrub(err.Error(), tok))
		}
		tools = connections.ListedRemote(s.log(), srv, listing.Tools)
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
		Seal: func(id string) []byte { return o.Box.Seal(plain, connections.SealedFor(id)) }, ExpiresAt: tok.ExpiresAt, ClientID: p.Client.ID, Meta: p.Meta,
		AccountHint: hint, Tools: tools, Transport: listing.Transport, Hold: hold, Now: now})
	clear(plain)
	switch orchestrator.ErrorCode(err) {
	case "":
	case orchestrator.ENOTFOUND, orchestrator.ECONFLICT:
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s login: %s", srv.Name, orchestrator.ErrorMessage(err))
	default:
		return orchestrator.Connection{}, err
	}
	s.Caller.Client.Forget(conn.ID)
	o.Remember(conn.ID, tok.AccessToken, tok.ExpiresAt, now)
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
