package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/mark3labs/mcp-go/client/transport"
)

// Registration is an RFC 7591 registration answer, the fields used.
type Registration struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	RedirectURIs            []string `json:"redirect_uris"`
}

// Register registers a public client for redirectURI at the authorization server (RFC 7591):
// token_endpoint_auth_method none, the authorization_code and refresh_token grants.
func (c *Client) Register(ctx context.Context, m orchestrator.OAuthServer, redirectURI string) (orchestrator.OAuthClient, error) {
	out := orchestrator.OAuthClient{Issuer: m.Issuer, RedirectURI: redirectURI}
	if m.RegistrationEndpoint == "" {
		return out, fmt.Errorf("%w: the authorization server %s offers no dynamic client registration (no registration_endpoint), so this orchestrator cannot register itself there", ErrInvalid, m.Issuer)
	}
	body := map[string]any{
		"client_name": c.name(), "redirect_uris": []string{redirectURI}, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
	}
	if len(m.Scopes) > 0 {
		body["scope"] = strings.Join(m.Scopes, " ")
	}
	j, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.RegistrationEndpoint, bytes.NewReader(j))
	if err != nil {
		return out, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	status, raw, err := c.send(req, "registration")
	if err != nil {
		return out, err
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return out, answerError("registration", status, raw)
	}
	r, err := ParseRegistration(raw)
	if err != nil {
		return out, fmt.Errorf("registration answer: %w", err)
	}
	out.ClientID, out.ClientSecret, out.AuthMethod = r.ClientID, r.ClientSecret, r.TokenEndpointAuthMethod
	if out.AuthMethod == "" {
		out.AuthMethod = "none"
		if out.ClientSecret != "" {
			out.AuthMethod = "client_secret_basic" // RFC 7591's default
		}
	}
	return out, nil
}

// ParseRegistration parses a registration answer; it must carry a client_id.
func ParseRegistration(b []byte) (Registration, error) {
	var r Registration
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%w: not a JSON object: %v", ErrInvalid, err)
	}
	if strings.TrimSpace(r.ClientID) == "" {
		return r, fmt.Errorf("%w: no client_id", ErrInvalid)
	}
	if len(r.ClientID) > 1000 || len(r.ClientSecret) > 4000 {
		return r, fmt.Errorf("%w: the client_id or client_secret is too long", ErrInvalid)
	}
	switch r.TokenEndpointAuthMethod {
	case "", "none", "client_secret_post", "client_secret_basic":
	default:
		return r, fmt.Errorf("%w: token_endpoint_auth_method %q is not one this client speaks", ErrInvalid, clip(r.TokenEndpointAuthMethod, 50))
	}
	return r, nil
}

// Authorize builds an authorization request: PKCE S256 (mcp-go's generators), a fresh state, the
// RFC 8707 resource and the scopes.
func (c *Client) Authorize(m orchestrator.OAuthServer, cl orchestrator.OAuthClient) (orchestrator.OAuthAuthorization, error) {
	verifier, err := transport.GenerateCodeVerifier()
	if err != nil {
		return orchestrator.OAuthAuthorization{}, fmt.Errorf("PKCE verifier: %w", err)
	}
	state, err := transport.GenerateState()
	if err != nil {
		return orchestrator.OAuthAuthorization{}, fmt.Errorf("state: %w", err)
	}
	u, err := url.Parse(m.AuthorizationEndpoint)
	if err != nil {
		return orchestrator.OAuthAuthorization{}, fmt.Errorf("%w: authorization_endpoint: %v", ErrInvalid, err)
	}
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", cl.ClientID)
	q.Set("redirect_uri", cl.RedirectURI)
	q.Set("state", state)
	q.Set("code_challenge", transport.GenerateCodeChallenge(verifier))
	q.Set("code_challenge_method", "S256")
	if m.Resource != "" {
		q.Set("resource", m.Resource)
	}
	if len(m.Scopes) > 0 {
		q.Set("scope", strings.Join(m.Scopes, " "))
	}
	u.RawQuery = q.Encode()
	return orchestrator.OAuthAuthorization{URL: u.String(), State: state, Verifier: verifier}, nil
}

// Exchange trades an authorization code (with its PKCE verifier) for tokens.
func (c *Client) Exchange(ctx context.Context, m orchestrator.OAuthServer, cl orchestrator.OAuthClient, code, verifier string) (orchestrator.OAuthToken, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cl.RedirectURI}, "code_verifier": {verifier}}
	return c.token(ctx, "token", m, cl, form)
}

// Refresh renews the tokens with a refresh token; a server that sends no new refresh token keeps
// the old one valid, so RefreshToken is then the one given. An *Error with Code invalid_grant means
// the grant is gone.
func (c *Client) Refresh(ctx context.Context, m orchestrator.OAuthServer, cl orchestrator.OAuthClient, refreshToken string) (orchestrator.OAuthToken, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	t, err := c.token(ctx, "refresh", m, cl, form)
	if err == nil && t.RefreshToken == "" {
		t.RefreshToken = refreshToken
	}
	return t, err
}

// token posts one token request with the client's authentication and the resource.
func (c *Client) token(ctx context.Context, op string, m orchestrator.OAuthServer, cl orchestrator.OAuthClient, form url.Values) (orchestrator.OAuthToken, error) {
	if m.Resource != "" {
		form.Set("resource", m.Resource)
	}
	basic := cl.ClientSecret != "" && cl.AuthMethod == "client_secret_basic"
	if !basic {
		form.Set("client_id", cl.ClientID)
		if cl.ClientSecret != "" {
			form.Set("client_secret", cl.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return orchestrator.OAuthToken{}, fmt.Errorf("%w: token_endpoint: %v", ErrInvalid, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(cl.ClientID), url.QueryEscape(cl.ClientSecret))
	}
	status, raw, err := c.send(req, op)
	if err != nil {
		return orchestrator.OAuthToken{}, err
	}
	if status != http.StatusOK {
		return orchestrator.OAuthToken{}, answerError(op, status, raw)
	}
	t, err := ParseToken(raw, c.now())
	if err != nil {
		return t, fmt.Errorf("%s answer: %w", op, err)
	}
	return t, nil
}

// send does one request and reads at most maxDocument of the answer.
func (c *Client) send(req *http.Request, op string) (int, []byte, error) {
	resp, err := c.http().Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("the %s request to %s failed: %w", op, req.URL.Redacted(), unwrapURL(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return 0, nil, fmt.Errorf("the %s answer from %s: read: %w", op, req.URL.Redacted(), err)
	}
	if len(raw) > maxDocument {
		return 0, nil, fmt.Errorf("%w: the %s answer passed %d bytes", ErrInvalid, op, maxDocument)
	}
	return resp.StatusCode, raw, nil
}

// answerError reads an OAuth error body, when there is one.
func answerError(op string, status int, raw []byte) error {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(raw, &e)
	out := &Error{Op: op, Status: status, Code: clip(token(e.Error), 60), Description: clip(e.Description, 300)}
	return out
}

// tokenAnswer is a token response, the fields used (Notion's extra fields included).
type tokenAnswer struct {
	AccessToken   string          `json:"access_token"`
	TokenType     string          `json:"token_type"`
	ExpiresIn     json.RawMessage `json:"expires_in"`
	RefreshToken  string          `json:"refresh_token"`
	Scope         string          `json:"scope"`
	EmailDomain   string          `json:"email_domain"`
	WorkspaceName string          `json:"workspace_name"`
}

// ParseToken parses a token response: an access_token of type Bearer (or none named), and its
// expiry from expires_in (a number of seconds, or a string of one) measured from now.
func ParseToken(b []byte, now time.Time) (orchestrator.OAuthToken, error) {
	var a tokenAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return orchestrator.OAuthToken{}, fmt.Errorf("%w: not a JSON object: %v", ErrInvalid, err)
	}
	if a.AccessToken == "" {
		return orchestrator.OAuthToken{}, fmt.Errorf("%w: the token answer has no access_token", ErrInvalid)
	}
	if a.TokenType != "" && !strings.EqualFold(a.TokenType, "bearer") {
		return orchestrator.OAuthToken{}, fmt.Errorf("%w: token_type is %q; only Bearer tokens are supported", ErrInvalid, clip(a.TokenType, 40))
	}
	if len(a.AccessToken) > 16<<10 || len(a.RefreshToken) > 16<<10 {
		return orchestrator.OAuthToken{}, fmt.Errorf("%w: a token passed 16 KiB", ErrInvalid)
	}
	t := orchestrator.OAuthToken{AccessToken: a.AccessToken, RefreshToken: a.RefreshToken, Scope: a.Scope}
	if len(a.ExpiresIn) > 0 && string(a.ExpiresIn) != "null" {
		raw := strings.Trim(string(a.ExpiresIn), `"`)
		secs, err := strconv.ParseFloat(raw, 64)
		if err != nil || secs < 0 || secs > 10*365*24*3600 {
			return orchestrator.OAuthToken{}, fmt.Errorf("%w: expires_in %q is not a number of seconds", ErrInvalid, clip(raw, 40))
		}
		exp := now.Add(time.Duration(secs * float64(time.Second))).UTC().Truncate(time.Microsecond)
		t.ExpiresAt = &exp
	}
	switch {
	case a.EmailDomain != "":
		t.AccountHint = clip(a.EmailDomain, 200)
	case a.WorkspaceName != "":
		t.AccountHint = clip(a.WorkspaceName, 200)
	}
	return t, nil
}
