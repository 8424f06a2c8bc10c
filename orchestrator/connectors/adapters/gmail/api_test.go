package gmail_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// googleServe is serve as wired with the box's Google client set to the fake's.
func googleServe(t *testing.T) (*wiretest.Served, string) {
	t.Helper()
	env := map[string]string{"GUILDS_SECRET_KEY": wiretest.SecretKey, "GUILDS_SANDBOX": "local",
		"GUILDS_SANDBOX_NETWORK": "none", "GMAIL_OAUTH_CLIENT_ID": googletest.ClientID, "GMAIL_OAUTH_CLIENT_SECRET": googletest.ClientSecret}
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		env["GUILDS_BIN_DIR"] = d
	}
	s := wiretest.Serve(t, env)
	return s, s.API
}

// TestGmailThroughServe: Gmail end to end through the HTTP API with a plain HTTP client as the
// browser: Connect → Google's authorize → serve's callback (the profile's address as
// account_hint) → connected with the curated tools, send_message Off at the owner → a run's
// call → a 401 renews the token once through the stored client → revoked → the call fails
// naming it, the login is disconnected and the next generation fails at start; the client
// secret and no token in serve's log, the stored calls or the API.
func TestGmailThroughServe(t *testing.T) {
	g := googletest.New()
	t.Cleanup(g.Close)
	srv, api := googleServe(t)
	org, agent := wiretest.ScopesAt(t, api)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/gmail", map[string]any{"endpoints": g.Endpoints()})
	for _, s := range wiretest.Must(t, 200, "GET", api+"/api/mcp/servers", nil)["servers"].([]any) {
		if m := s.(map[string]any); m["slug"] == "gmail" && m["oauth_setup_state"] != "configured" {
			t.Fatalf("gmail oauth_setup_state %v", m["oauth_setup_state"])
		}
	}
	start := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "gmail", "scope": "org", "scope_id": org})
	id := start["connection"].(map[string]any)["id"].(string)
	// The browser: the provider's consent, then serve's callback, which lands it on the app's page.
	st, loc, page := wiretest.Authorize(t, start["authorization_url"].(string))
	if st != 303 || loc != "/connections/"+id+"?login=connected" {
		t.Fatalf("callback: %d %s %s", st, loc, page)
	}
	if q := g.LastAuthorize(); q.Get("access_type") != "offline" || q.Get("prompt") != "consent" || !strings.Contains(q.Get("scope"), "gmail.compose") {
		t.Fatalf("authorize query %v", q)
	}
	if f := g.LastToken(); f.Get("client_secret") != googletest.ClientSecret || f.Get("code_verifier") == "" {
		t.Fatal("the code exchange did not carry the client secret and the PKCE verifier")
	}
	conn := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil)
	if conn["status"] != "connected" || conn["account_hint"] != googletest.Email || conn["tool_count"].(float64) != 7 {
		t.Fatalf("connection %v", conn)
	}
	var off []string
	for _, b := range wiretest.Must(t, 200, "GET", api+"/api/bindings?scope=org&scope_id="+org, nil)["bindings"].([]any) {
		if m := b.(map[string]any); m["catalog_kind"] == "mcp_tool" && m["enabled"] == false {
			off = append(off, m["catalog_id"].(string))
		}
	}
	if !slices.Equal(off, []string{"gmail_send_message"}) {
		t.Fatalf("tools written Off at the owner: %v, want gmail_send_message", off)
	}
	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	names := wiretest.OfferedNames(run)
	if !slices.Contains(names, "gmail_get_message") || slices.Contains(names, "gmail_send_message") {
		t.Fatalf("offered %v: send_message must be Off until the operator enables it", names)
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		return wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": args})["result"].(string)
	}
	if out := call("gmail_get_message", map[string]any{"message_id": "18c2a1f0e0b1a001"}); !strings.Contains(out, "attachment: invoice-Q3.pdf (application/pdf, 45871 bytes)") ||
		!strings.Contains(out, "Attached is the Q3 invoice") {
		t.Fatalf("get_message %q", out)
	}
	if g.Refreshes() != 0 {
		t.Fatalf("%d refreshes of a fresh token", g.Refreshes())
	}
	g.ExpireAccess()
	if out := call("gmail_search_threads", map[string]any{"query": "invoice"}); !strings.Contains(out, "Q3 invoice") {
		t.Fatalf("search after a 401 %q", out)
	}
	if g.Refreshes() != 1 || g.LastToken().Get("grant_type") != "refresh_token" || g.LastToken().Get("client_secret") != googletest.ClientSecret {
		t.Fatalf("%d refreshes after the 401", g.Refreshes())
	}
	g.Revoke()
	if out := call("gmail_list_labels", nil); !strings.HasPrefix(out, "ERROR:") || !strings.Contains(out, "invalid_grant") || !strings.Contains(out, "connect it again") {
		t.Fatalf("call on a revoked login %q", out)
	}
	if c := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil); c["status"] != "disconnected" {
		t.Fatalf("revoked login is %v", c["status"])
	}
	if st, out := wiretest.Request(t, "POST", api+"/api/runs/"+runID+"/generations", nil); st != 409 || !strings.Contains(wiretest.ErrText(out), "disconnected") {
		t.Fatalf("generation over a revoked login: %d %v", st, out)
	}
	stored, _ := json.Marshal(wiretest.Must(t, 200, "GET", api+"/api/runs/"+runID+"/calls", nil))
	views, _ := json.Marshal([]any{wiretest.Must(t, 200, "GET", api+"/api/mcp/connections", nil), wiretest.Must(t, 200, "GET", api+"/api/agents/"+agent+"/tools", nil)})
	for _, secret := range append(g.Tokens(), googletest.ClientSecret) {
		for where, text := range map[string]string{"log": srv.Log.String(), "stored calls": string(stored), "API": string(views)} {
			if strings.Contains(text, secret) {
				t.Errorf("a token or the client secret appears in the %s", where)
			}
		}
	}
}
