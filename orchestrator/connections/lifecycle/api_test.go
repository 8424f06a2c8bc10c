package lifecycle_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth/oauthtest"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestOAuthLoginThroughServe: serve as wired, a custom auth oauth server behind a loopback
// authorization server; a plain HTTP client follows authorization_url through the login and back
// to serve's own callback (the inbound host, PUBLIC_BASE_URL unset), and the run's call reaches
// the server with the login's token.
func TestOAuthLoginThroughServe(t *testing.T) {
	s := server.NewMCPServer("fake", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithDescription("Echoes."), mcpgo.WithString("text", mcpgo.Required())),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
		})
	as := oauthtest.New(server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))))
	t.Cleanup(as.Close)
	srv := wiretest.ServeIn(t, "local")
	api := srv.API
	org, agent := wiretest.ScopesAt(t, api)
	wiretest.Must(t, 201, "POST", api+"/api/admin/mcp/servers", map[string]any{"slug": "docs", "name": "Docs", "url": as.Resource, "auth": "oauth"})
	start := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "docs", "scope": "org", "scope_id": org})
	if q := start["authorization_url"].(string); !strings.Contains(q, "redirect_uri=http%3A%2F%2F"+strings.ReplaceAll(srv.Addr, ":", "%3A")+"%2Fapi%2Fmcp%2Foauth%2Fcallback") {
		t.Fatalf("authorization_url %s does not send the browser back to serve's callback", q)
	}
	id := start["connection"].(map[string]any)["id"].(string)
	// The browser: the provider's consent, then serve's callback, which lands it on the app's page.
	st, loc, page := wiretest.Authorize(t, start["authorization_url"].(string))
	if st != 303 || loc != "/connections/"+id+"?login=connected" {
		t.Fatalf("callback: %d %s %s", st, loc, page)
	}
	if c := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil); c["status"] != "connected" {
		t.Fatalf("connection %v", c)
	}
	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	if !slices.Contains(wiretest.OfferedNames(run), "docs_echo") {
		t.Fatalf("offered %v", wiretest.OfferedNames(run))
	}
	res := wiretest.Must(t, 200, "POST", api+"/api/runs/"+run["id"].(string)+"/calls", map[string]any{"name": "docs_echo", "arguments": map[string]any{"text": "via serve"}})
	if !strings.HasPrefix(res["result"].(string), "echo: via serve") {
		t.Fatalf("call %v", res)
	}
	for _, tok := range as.Tokens() {
		if strings.Contains(srv.Log.String(), tok) {
			t.Fatal("a code, token or verifier appears in serve's log")
		}
	}
}
