package lifecycle

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/integrations"
)

// Google logins (Gmail, Drive) use the box's own Google Cloud client from the environment rather
// than a registered one: the same pending state, callback and refresh as the dynamic servers.

// The integration Google's client variables switch on, and Google's issuer.
const (
	googleIntegration = "google-connectors"
	googleIssuer      = "https://accounts.google.com"
)

// GoogleClient is the box's Google Cloud Web client (GMAIL_OAUTH_CLIENT_ID,
// GMAIL_OAUTH_CLIENT_SECRET), which Gmail and Drive log in with.
type GoogleClient struct {
	ID     string
	Secret string
}

// googleScopes are the scopes each Google server's login asks.
var googleScopes = map[string][]string{
	"gmail": {"https://www.googleapis.com/auth/gmail.readonly", "https://www.googleapis.com/auth/gmail.compose"},
	"drive": {"https://www.googleapis.com/auth/drive"},
}

// googleOAuth reports whether srv logs in with the box's Google client.
func (s *Service) googleOAuth(srv orchestrator.MCPServer) bool {
	in, ok := integrations.ForConnector(srv.Slug)
	return ok && in.Name == googleIntegration && srv.Auth == orchestrator.AuthOAuth && s.Caller != nil && s.Caller.OAuth != nil
}

// beginGoogle starts a Google browser login: the configured client (stored once per redirect URI,
// its secret sealed), the manifest's authorize and token endpoints, offline access with consent so
// that Google issues a refresh token. Without the variables it is EINVALID carrying setup_state
// unsupported and the missing names.
func (s *Service) beginGoogle(ctx context.Context, srv orchestrator.MCPServer, req ConnectRequest) (Login, error) {
	if missing := integrations.Missing(s.Integrations, googleIntegration); len(missing) > 0 {
		return Login{}, &orchestrator.Error{Code: orchestrator.EINVALID,
			Message: fmt.Sprintf("%s needs the box's Google Cloud client: set %s in the environment or .env and restart (setup_state unsupported); nothing was written",
				srv.Name, strings.Join(missing, " and ")),
			Fields: map[string]any{"setup_state": SetupUnsupported, "missing": missing}}
	}
	owner, err := s.checkBrowserLogin(ctx, srv, req)
	if err != nil {
		return Login{}, err
	}
	m := orchestrator.OAuthServer{Issuer: googleIssuer, AuthorizationEndpoint: srv.Endpoints["authorize"], TokenEndpoint: srv.Endpoints["token"],
		Scopes: googleScopes[srv.Slug]}
	if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
		return Login{}, orchestrator.Errorf(orchestrator.EINVALID, "%s's catalog row has no authorize or token endpoint; an instance admin restores them with PATCH /api/admin/mcp/servers/%s {\"endpoints\": {\"authorize\": null, \"token\": null}}", srv.Name, srv.Slug)
	}
	o := s.Caller.OAuth
	c := orchestrator.OAuthClient{Server: srv.Slug, Issuer: googleIssuer, RedirectURI: req.CallbackURL, ClientID: s.Google.ID,
		AuthMethod: "client_secret_post", RegisteredAt: s.now()}
	secret := []byte(s.Google.Secret)
	client, _, err := o.Store.SaveConfiguredOAuthClient(ctx, c, o.Box.Seal(secret, connections.ClientSecretAD(c)))
	clear(secret)
	if err != nil {
		return Login{}, err
	}
	a, err := o.Protocol.Authorize(m, client)
	if err != nil {
		return Login{}, oauthFailure(srv, "building the authorization request", err)
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return Login{}, oauthFailure(srv, "building the authorization request", err)
	}
	q := u.Query()
	q.Set("access_type", "offline") // a refresh token
	q.Set("prompt", "consent")      // ... also on a second login, which Google otherwise answers without one
	u.RawQuery = q.Encode()
	a.URL = u.String()
	return s.pendingLogin(ctx, srv, owner, client, m, a)
}

// localOAuthListing is a local adapter's side of a successful callback: the adapter checks the new
// token (Gmail pings /users/me/profile and names the address) and the manifest's curated tools are
// listed, the send tools marked Off.
func (s *Service) localOAuthListing(ctx context.Context, srv orchestrator.MCPServer, tok orchestrator.OAuthToken) (string, []orchestrator.ListedTool, error) {
	local := s.local(srv)
	if local == nil {
		return "", nil, fmt.Errorf("no local adapter for %s is built into this orchestrator", srv.Name)
	}
	ver, err := localVerifier{adapters: local}.Verify(ctx, s.checkedAgainst(srv), map[string]string{"access_token": tok.AccessToken})
	if err != nil {
		return "", nil, err
	}
	tools, err := listed(srv, ver.Tools)
	return ver.AccountHint, tools, err
}
