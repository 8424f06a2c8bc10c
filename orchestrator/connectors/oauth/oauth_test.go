package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth/oauthtest"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) })

func TestDiscoverFromChallenge(t *testing.T) {
	as := oauthtest.New(ok)
	defer as.Close()
	m, err := (&oauth.Client{}).Discover(context.Background(), as.Resource)
	if err != nil {
		t.Fatal(err)
	}
	want := orchestrator.OAuthServer{Resource: as.Resource, Issuer: as.URL, AuthorizationEndpoint: as.URL + "/authorize",
		TokenEndpoint: as.URL + "/token", RegistrationEndpoint: as.URL + "/register", Scopes: []string{"read", "write"}}
	if strings.Join(m.Scopes, " ") != "read write" || m.Resource != want.Resource || m.Issuer != want.Issuer || m.TokenEndpoint != want.TokenEndpoint ||
		m.AuthorizationEndpoint != want.AuthorizationEndpoint || m.RegistrationEndpoint != want.RegistrationEndpoint {
		t.Fatalf("discovered %+v, want %+v", m, want)
	}
}

// TestDiscoverFallbacks serves the metadata documents from a mux the cases fill, behind a
// resource whose 401 names no resource_metadata.
func TestDiscoverFallbacks(t *testing.T) {
	cases := []struct {
		name    string
		docs    func(origin string) map[string]string // path → body
		wantErr string
	}{
		{"path-suffixed resource metadata, RFC 8414", func(o string) map[string]string {
			return map[string]string{
				"/.well-known/oauth-protected-resource/mcp": `{"resource":"` + o + `/mcp","authorization_servers":["` + o + `"]}`,
				"/.well-known/oauth-authorization-server":   asDoc(o, o),
			}
		}, ""},
		{"origin resource metadata, OpenID Connect fallback", func(o string) map[string]string {
			return map[string]string{
				"/.well-known/oauth-protected-resource":    `{"resource":"` + o + `","authorization_servers":["` + o + `/tenant"]}`,
				"/.well-known/openid-configuration/tenant": asDoc(o+"/tenant", o),
			}
		}, ""},
		{"OpenID Connect appended to the issuer's path", func(o string) map[string]string {
			return map[string]string{
				"/.well-known/oauth-protected-resource":    `{"resource":"` + o + `","authorization_servers":["` + o + `/tenant"]}`,
				"/tenant/.well-known/openid-configuration": asDoc(o+"/tenant", o),
			}
		}, ""},
		{"no resource metadata", func(string) map[string]string { return nil }, "names no protected-resource metadata"},
		{"malformed resource metadata", func(string) map[string]string {
			return map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource": [1,2]`}
		}, "not a JSON object"},
		{"metadata of another resource", func(string) map[string]string {
			return map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"https://elsewhere.example/mcp","authorization_servers":["https://as.example"]}`}
		}, "describes https://elsewhere.example/mcp"},
		{"http issuer off loopback", func(o string) map[string]string {
			return map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"` + o + `/mcp","authorization_servers":["http://as.example.com"]}`}
		}, "http:// on a host that is not loopback"},
		{"http token endpoint off loopback", func(o string) map[string]string {
			return map[string]string{
				"/.well-known/oauth-protected-resource/mcp": `{"resource":"` + o + `/mcp","authorization_servers":["` + o + `"]}`,
				"/.well-known/oauth-authorization-server":   `{"issuer":"` + o + `","authorization_endpoint":"` + o + `/a","token_endpoint":"http://10.0.0.8/token"}`,
			}
		}, "token_endpoint http://10.0.0.8/token is http://"},
		{"issuer mismatch", func(o string) map[string]string {
			return map[string]string{
				"/.well-known/oauth-protected-resource/mcp": `{"resource":"` + o + `/mcp","authorization_servers":["` + o + `"]}`,
				"/.well-known/oauth-authorization-server":   asDoc("https://evil.example", o),
			}
		}, `names issuer "https://evil.example"`},
		{"no authorization server metadata", func(o string) map[string]string {
			return map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"` + o + `/mcp","authorization_servers":["` + o + `"]}`}
		}, "publishes no metadata"},
		{"no S256", func(o string) map[string]string {
			return map[string]string{
				"/.well-known/oauth-protected-resource/mcp": `{"resource":"` + o + `/mcp","authorization_servers":["` + o + `"]}`,
				"/.well-known/oauth-authorization-server": `{"issuer":"` + o + `","authorization_endpoint":"` + o + `/a","token_endpoint":"` + o +
					`/t","code_challenge_methods_supported":["plain"]}`,
			}
		}, "does not support PKCE S256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var docs map[string]string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/mcp" {
					w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
					w.WriteHeader(401)
					return
				}
				body, ok := docs[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				_, _ = w.Write([]byte(body))
			}))
			defer ts.Close()
			docs = tc.docs(ts.URL)
			m, err := (&oauth.Client{}).Discover(context.Background(), ts.URL+"/mcp")
			if tc.wantErr == "" {
				if err != nil || m.TokenEndpoint == "" {
					t.Fatalf("Discover: %+v, %v", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !oauth.IsInvalid(err) {
				t.Fatalf("Discover error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func asDoc(issuer, o string) string {
	return `{"issuer":"` + issuer + `","authorization_endpoint":"` + o + `/authorize","token_endpoint":"` + o + `/token","registration_endpoint":"` + o +
		`/register","code_challenge_methods_supported":["S256"],"response_types_supported":["code"]}`
}

// browser follows an authorization URL up to the redirect to the callback and returns its query.
func browser(t *testing.T, authURL, callback string) url.Values {
	t.Helper()
	var got url.Values
	hc := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), callback) {
			got = req.URL.Query()
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got == nil {
		t.Fatalf("the authorize request did not redirect to %s (status %d)", callback, resp.StatusCode)
	}
	return got
}

func TestLoginRefreshAndRevoke(t *testing.T) {
	as := oauthtest.New(ok)
	defer as.Close()
	as.Extra = map[string]any{"workspace_name": "Acme HQ"}
	c := &oauth.Client{}
	ctx := context.Background()
	m, err := c.Discover(ctx, as.Resource)
	if err != nil {
		t.Fatal(err)
	}
	callback := "http://127.0.0.1:9/api/mcp/oauth/callback"
	cl, err := c.Register(ctx, m, callback)
	if err != nil || cl.ClientID == "" || cl.AuthMethod != "none" || cl.ClientSecret != "" {
		t.Fatalf("Register: %+v, %v", cl, err)
	}
	a, err := c.Authorize(m, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.State) < 32 || len(a.Verifier) < 43 || strings.Contains(a.URL, a.Verifier) {
		t.Fatalf("authorization %q: state or verifier too short, or the verifier is in the URL", a.URL)
	}
	q := browser(t, a.URL, callback)
	if q.Get("state") != a.State || q.Get("code") == "" {
		t.Fatalf("callback query %v", q)
	}
	aq := as.LastAuthorize()
	if aq.Get("resource") != as.Resource || aq.Get("scope") != "read write" || aq.Get("code_challenge_method") != "S256" {
		t.Fatalf("authorize request %v lacks resource, scope or S256", aq)
	}
	if _, err := c.Exchange(ctx, m, cl, q.Get("code"), "wrong-verifier-wrong-verifier-wrong-verifier-1234"); err == nil {
		t.Fatal("a wrong verifier was accepted")
	}
	q = browser(t, mustAuthorize(t, c, m, cl, &a), callback)
	tok, err := c.Exchange(ctx, m, cl, q.Get("code"), a.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.ExpiresAt == nil || time.Until(*tok.ExpiresAt) < 59*time.Minute || tok.AccountHint != "Acme HQ" {
		t.Fatalf("token %+v", tok)
	}
	if as.LastToken().Get("resource") != as.Resource {
		t.Fatal("the token request did not carry resource")
	}
	next, err := c.Refresh(ctx, m, cl, tok.RefreshToken)
	if err != nil || next.RefreshToken == tok.RefreshToken || next.AccessToken == tok.AccessToken {
		t.Fatalf("refresh: %+v, %v (want a rotated pair)", next, err)
	}
	_, err = c.Refresh(ctx, m, cl, tok.RefreshToken)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Code != "invalid_grant" || oe.Temporary() {
		t.Fatalf("reusing a rotated refresh token: %v, want invalid_grant", err)
	}
	if strings.Contains(err.Error(), tok.RefreshToken) {
		t.Fatal("the error shows the refresh token")
	}
	as.Set(func(s *oauthtest.Server) { s.TokenStatus = 503 })
	_, err = c.Refresh(ctx, m, cl, next.RefreshToken)
	if !errors.As(err, &oe) || !oe.Temporary() {
		t.Fatalf("refresh during an outage: %v, want a temporary error", err)
	}
}

func mustAuthorize(t *testing.T, c *oauth.Client, m orchestrator.OAuthServer, cl orchestrator.OAuthClient, a *orchestrator.OAuthAuthorization) string {
	t.Helper()
	n, err := c.Authorize(m, cl)
	if err != nil {
		t.Fatal(err)
	}
	*a = n
	return n.URL
}

func TestRegistrationRefused(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"error":"invalid_redirect_uri","error_description":"http redirect URIs are not allowed"}`))
	}))
	defer ts.Close()
	_, err := (&oauth.Client{}).Register(context.Background(), orchestrator.OAuthServer{Issuer: ts.URL, RegistrationEndpoint: ts.URL + "/register"}, "http://x.example/cb")
	if err == nil || !strings.Contains(err.Error(), "registration request with HTTP 400 invalid_redirect_uri: http redirect URIs are not allowed") {
		t.Fatalf("refused registration: %v", err)
	}
	_, err = (&oauth.Client{}).Register(context.Background(), orchestrator.OAuthServer{Issuer: ts.URL}, "http://x.example/cb")
	if err == nil || !strings.Contains(err.Error(), "offers no dynamic client registration") {
		t.Fatalf("registration without an endpoint: %v", err)
	}
}

func TestParseToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		body, wantErr string
		expires       time.Duration
		hint          string
	}{
		{`{"access_token":"a","token_type":"bearer","expires_in":3600}`, "", time.Hour, ""},
		{`{"access_token":"a","expires_in":"90","email_domain":"acme.com","workspace_name":"Acme"}`, "", 90 * time.Second, "acme.com"},
		{`{"access_token":"a"}`, "", 0, ""},
		{`{"token_type":"bearer"}`, "no access_token", 0, ""},
		{`{"access_token":"a","token_type":"mac"}`, "only Bearer", 0, ""},
		{`{"access_token":"a","expires_in":"soon"}`, "not a number of seconds", 0, ""},
		{`{"access_token":"a","expires_in":-5}`, "not a number of seconds", 0, ""},
		{`[1]`, "not a JSON object", 0, ""},
	}
	for _, tc := range cases {
		tok, err := oauth.ParseToken([]byte(tc.body), now)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.body, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.body, err)
			continue
		}
		if (tc.expires == 0) != (tok.ExpiresAt == nil) || (tok.ExpiresAt != nil && tok.ExpiresAt.Sub(now) != tc.expires) || tok.AccountHint != tc.hint {
			t.Errorf("%s: %+v", tc.body, tok)
		}
	}
}

func TestParseChallenge(t *testing.T) {
	cases := []struct{ h, meta, scope string }{
		{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp"`, "https://a.example/.well-known/oauth-protected-resource/mcp", ""},
		{`Basic realm="x", Bearer realm="y", scope="read write", resource_metadata="https://b.example/m"`, "https://b.example/m", "read write"},
		{`Bearer error=invalid_token, resource_metadata=https://c.example/m`, "https://c.example/m", ""},
		{`Bearer realm="a \"quoted\" realm", resource_metadata="https://d.example/m"`, "https://d.example/m", ""},
	}
	for _, tc := range cases {
		m, s, ok := oauth.ParseChallenge(tc.h)
		if !ok || m != tc.meta || s != tc.scope {
			t.Errorf("%s: %q %q %v", tc.h, m, s, ok)
		}
	}
	if _, _, ok := oauth.ParseChallenge(`Basic realm="x"`); ok {
		t.Error("a Basic-only challenge read as Bearer")
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true, "[::1]": true,
		"10.0.0.1": false, "example.com": false, "localhost.example.com": false, "": false} {
		if oauth.Loopback(host) != want {
			t.Errorf("Loopback(%q) = %v", host, !want)
		}
	}
}
