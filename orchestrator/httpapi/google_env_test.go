package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/drive"
	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
	"github.com/guildsai/guilds/orchestrator/integrations"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestGoogleConnectSetup: without the box's Google client, Connect of Gmail and Drive is a 422
// whose error carries setup_state unsupported and the missing variables, and writes nothing;
// with it, Connect answers a pending connection and Google's authorization URL on the manifest's
// authorize endpoint (the scopes, offline access with consent, PKCE), and the servers say configured.
func TestGoogleConnectSetup(t *testing.T) {
	e := newOAuthEnv(t, nil, nil, newBox(t))
	orgID, _, _ := e.scopes()
	env := map[string]string{"GMAIL_OAUTH_CLIENT_ID": "box-client.apps.googleusercontent.com"}
	e.svc.Integrations, e.svc.Google = integrations.SetOf(env), lifecycle.GoogleClient{ID: env["GMAIL_OAUTH_CLIENT_ID"]}
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
	e.svc.Integrations, e.svc.Google.Secret = integrations.SetOf(env), env["GMAIL_OAUTH_CLIENT_SECRET"]
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

// listingMCP is an MCP server that lists Drive's tool names and answers nothing else.
func listingMCP() http.Handler {
	s := server.NewMCPServer("drivemcp", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	for _, name := range []string{"search_files", "list_recent_files", "read_file_content", "download_file_content", "get_file_metadata", "get_file_permissions", "copy_file", "create_file"} {
		s.AddTool(mcpgo.NewTool(name, mcpgo.WithDescription(name+"."), mcpgo.WithString("fileId")), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultError("listing only"), nil
		})
	}
	return server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
}

// TestDriveFolderPick: a Drive login held pending after its Google login, its folder picker, a
// refused pick, the pick that connects it, and the operator's test call confined to the folder.
func TestDriveFolderPick(t *testing.T) {
	g := googletest.New(listingMCP())
	t.Cleanup(g.Close)
	e := newOAuthEnv(t, nil, newClock(), newBox(t))
	e.remote.Drive = drive.Drive{}
	e.svc.Integrations = integrations.Set{"GMAIL_OAUTH_CLIENT_ID": true, "GMAIL_OAUTH_CLIENT_SECRET": true}
	e.svc.Google = lifecycle.GoogleClient{ID: googletest.ClientID, Secret: googletest.ClientSecret}
	orgID, _, _ := e.scopes()
	e.must(200, "PATCH", "/api/admin/mcp/servers/drive", map[string]any{"endpoints": g.DriveEndpoints()}) // the mcp endpoint, not url, names the MCP server
	start := e.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "drive", "scope": "org", "scope_id": orgID})
	id := start["connection"].(map[string]any)["id"].(string)
	if st, _ := e.do("GET", "/api/mcp/connections/"+id+"/drive/folders", nil); st != 409 {
		t.Fatalf("the picker before the Google login: %d", st)
	}
	if st, body := e.page(browse(t, start["authorization_url"].(string))); st != 200 || !strings.Contains(body, "Signed in") {
		t.Fatalf("callback %d %s", st, body)
	}
	roots := e.must(200, "GET", "/api/mcp/connections/"+id+"/drive/folders", nil)["folders"].([]any)
	if len(roots) != 3 || roots[0].(map[string]any)["selectable"] != false || roots[2].(map[string]any)["kind"] != "shared_drive" {
		t.Fatalf("roots %v", roots)
	}
	if f := e.must(200, "GET", "/api/mcp/connections/"+id+"/drive/folders?parent="+googletest.TeamDrive, nil)["folders"].([]any); len(f) != 1 {
		t.Fatalf("the shared drive's folders %v", f)
	}
	if st, out := e.do("PUT", "/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": "root"}); st != 422 || !strings.Contains(errMessage(out), "not My Drive") {
		t.Fatalf("picking My Drive: %d %v", st, out)
	}
	conn := e.must(200, "PUT", "/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": googletest.SharedPlans})
	if conn["status"] != "connected" || conn["account_hint"] != "Shared Plans" {
		t.Fatalf("after the pick %v", conn)
	}
	in := e.must(200, "POST", "/api/mcp/connections/"+id+"/call", map[string]any{"name": "drive_read_file_content", "arguments": map[string]any{"fileId": googletest.Notes}})
	out := e.must(200, "POST", "/api/mcp/connections/"+id+"/call", map[string]any{"name": "drive_get_file_metadata", "arguments": map[string]any{"fileId": googletest.Report}})
	if in["result"] != "# Notes\n" || !strings.Contains(out["result"].(string), "outside this connection's folder") {
		t.Fatalf("test calls inside %v and outside %v", in, out)
	}

	// A disconnected login logs in again: held pending with its bindings intact, then picked anew.
	if _, err := e.env.pool.Exec(context.Background(), "UPDATE mcp_connections SET status = 'disconnected' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	bindings := func() int { return e.count("SELECT count(*) FROM bindings WHERE connection_id = $1", id) }
	before := bindings()
	again := e.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "drive", "scope": "org", "scope_id": orgID})
	if st, _ := e.page(browse(t, again["authorization_url"].(string))); st != 200 {
		t.Fatalf("the re-login's callback: %d", st)
	}
	if c := e.must(200, "GET", "/api/mcp/connections/"+id, nil); c["status"] != "pending" || bindings() != before || before == 0 {
		t.Fatalf("after the re-login %v, %d bindings (were %d)", c["status"], bindings(), before)
	}
	if c := e.must(200, "PUT", "/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": googletest.TeamDrive}); c["status"] != "connected" || c["account_hint"] != "Team" {
		t.Fatalf("the re-login's pick %v", c)
	}
}
