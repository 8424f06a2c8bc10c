package oauth_test

import (
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/oauth"
)

// The parsers below read what remote servers send; none may panic on any input.

func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{`Bearer resource_metadata="https://a.example/m", scope="a b"`, `Basic realm="x", Bearer realm=y`, `Bearer realm="\`, `,,=`, `Bearer a="b\"c"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) { oauth.ParseChallenge(h) })
}

func FuzzParseResourceMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://a.example/mcp","authorization_servers":["https://as.example"],"scopes_supported":["x"]}`))
	f.Add([]byte(`{"resource":"","authorization_servers":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := oauth.ParseResourceMetadata(b)
		if err == nil && (m.Resource == "" || len(m.AuthorizationServers) == 0) {
			t.Fatalf("accepted %+v", m)
		}
	})
}

func FuzzParseServerMetadata(f *testing.F) {
	f.Add([]byte(`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t","code_challenge_methods_supported":["S256"]}`))
	f.Add([]byte(`{"issuer":"http://as.example","authorization_endpoint":"http://as.example/a","token_endpoint":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := oauth.ParseServerMetadata(b, "https://as.example")
		if err == nil && (m.TokenEndpoint == "" || m.AuthorizationEndpoint == "") {
			t.Fatalf("accepted %+v", m)
		}
		if err == nil && oauth.CheckEndpoint("token_endpoint", m.TokenEndpoint) != nil {
			t.Fatalf("accepted an insecure token endpoint %q", m.TokenEndpoint)
		}
	})
}

func FuzzParseRegistration(f *testing.F) {
	f.Add([]byte(`{"client_id":"abc","token_endpoint_auth_method":"none"}`))
	f.Add([]byte(`{"client_id":" ","client_secret":"s"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := oauth.ParseRegistration(b); err == nil && r.ClientID == "" {
			t.Fatal("accepted a registration without client_id")
		}
	})
}

func FuzzParseToken(f *testing.F) {
	f.Add([]byte(`{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r"}`))
	f.Add([]byte(`{"access_token":"a","expires_in":"1e400"}`))
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := oauth.ParseToken(b, now)
		if err == nil && tok.AccessToken == "" {
			t.Fatal("accepted a token answer without access_token")
		}
		if err == nil && tok.ExpiresAt != nil && tok.ExpiresAt.Before(now) {
			t.Fatalf("expiry %v before now", tok.ExpiresAt)
		}
	})
}
