package httpapi_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestGoogleConnectSetup: without the box's Google client, Connect of Gmail and Drive is a 422
// whose error carries setup_state unsupported and the missing variables, and writes nothing;
// with it, Connect answers a pending connection and Google's authorization URL on the manifest's
// authorize endpoint (the scopes, offline access with consent, PKCE), and the servers say configured.
func TestGoogleConnectSetup(t *testing.T) {
	e := newOAuthEnv(t, nil, nil, newBox(t))
	orgID, _, _ := e.scopes()
	env := map[string]string{"GMAIL_OAUTH_CLIENT_ID": "box-client.apps.googleusercontent.com"}
	e.svc.Getenv = func(k string) string { return env[k] }
	for _, slug := range []string{"gmail", "drive"} {
		st, out := e.do("POST", "/api/mcp/connections", map[string]any{"server": slug, "scope": "org", "scope_id": orgID})
		body, _ := out["error"].(map[string]any)
		if st != 422 || body["setup_state"] != "unsupported" || !slices.Equal(anyStrings(body["missing"]), []string{"GMAIL_OAUTH_CLIENT_SECRET"}) ||
			!strings.Contains(body["message"].(string), "GMAIL_OAUTH_CLIENT_SECRET") {
			t.Fatalf("%s Connect without the secret: %d %v", slug, st, out)
		}
	}
	if n := e.count("SELECT count(*) FROM mcp_connections"); n != 0 {
		t.Fatalf("a refused Connect wrote %d connections", n)
	}
	env["GMAIL_OAUTH_CLIENT_SECRET"] = "box-secret"
	for _, s := range e.must(200, "GET", "/api/mcp/servers", nil)["servers"].([]any) {
		if m := s.(map[string]any); (m["slug"] == "gmail" || m["slug"] == "drive") && m["oauth_setup_state"] != "configured" {
			t.Errorf("%s oauth_setup_state %v with the client set", m["slug"], m["oauth_setup_state"])
		}
	}
	e.must(200, "PATCH", "/api/admin/mcp/servers/gmail", map[string]any{"endpoints": map[string]any{"authorize": "http://127.0.0.1:9/o/oauth2/v2/auth"}})
	start := e.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "gmail", "scope": "org", "scope_id": orgID})
	u, err := url.Parse(start["authorization_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Host != "127.0.0.1:9" || u.Path != "/o/oauth2/v2/auth" || q.Get("client_id") != env["GMAIL_OAUTH_CLIENT_ID"] ||
		q.Get("scope") != "https://www.googleapis.com/auth/gmail.readonly https://www.googleapis.com/auth/gmail.compose" ||
		q.Get("access_type") != "offline" || q.Get("prompt") != "consent" || q.Get("code_challenge_method") != "S256" ||
		q.Get("state") == "" || !strings.HasSuffix(q.Get("redirect_uri"), "/api/mcp/oauth/callback") || q.Has("client_secret") {
		t.Fatalf("authorization_url %s", u)
	}
	if c := start["connection"].(map[string]any); c["status"] != "pending" || c["server"] != "gmail" {
		t.Fatalf("connection %v", c)
	}
	if n := e.count("SELECT count(*) FROM mcp_oauth_clients WHERE server_slug = 'gmail' AND client_secret IS NOT NULL AND auth_method = 'client_secret_post'"); n != 1 {
		t.Fatalf("%d stored Google clients", n)
	}
	if strings.Contains(e.logs.String(), "box-secret") {
		t.Fatal("the client secret appears in the log")
	}
}

// anyStrings turns a decoded JSON array into strings.
func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
