package webapp_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/oauth/oauthtest"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mxschmitt/playwright-go"
)

// TestConnectOAuth: an operator connects an OAuth MCP server (mcp-go's, behind a loopback OAuth
// 2.1 authorization server) from an organisation's Tools view: Connect sends the browser to the
// authorization URL the API answered, the provider sends it back to the callback, and the callback
// lands it on the app's page for the login, connected, with its tools. No code, token or verifier
// the authorization server issued appears in the page or its address.
func TestConnectOAuth(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("ledger", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	ledgerTools(s)
	as := oauthtest.New(server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))))
	t.Cleanup(as.Close)
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	a.api(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "docs", "name": "Acme Docs", "url": as.Resource, "auth": "oauth"})

	tb := a.signIn("ada@example.com")
	tb.go_("/orgs/" + org + "/tools")
	docs := tb.see("region", "Acme Docs")
	if err := docs.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.see("heading", "Connect Acme Docs")
	tb.none("textbox", "Account hint") // an OAuth login has no form to fill
	tb.check("connect-oauth")
	tb.click("Connect")
	tb.waitPath("/connections/")
	tb.contains("Signed in: the login is connected")
	tb.see("cell", "docs_echo")
	if as.Count("/authorize") == 0 {
		t.Fatal("the browser never reached the authorization server")
	}
	html, err := tb.page.Content()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range as.Tokens() {
		if strings.Contains(html, secret) || strings.Contains(tb.page.URL(), secret) {
			t.Fatalf("the landing page or its address holds %q, which the authorization server issued", secret)
		}
	}
	if strings.Contains(tb.page.URL(), "code=") || strings.Contains(tb.page.URL(), "state=") {
		t.Fatalf("the landing address %s carries the callback's query", tb.page.URL())
	}
	tb.check("connection-oauth")
	conns := a.api(200, "GET", "/api/mcp/connections?scope=org&scope_id="+org, nil)["connections"].([]any)
	if len(conns) != 1 || conns[0].(map[string]any)["status"] != "connected" || !strings.HasSuffix(tb.path(), "?login=connected") ||
		!strings.HasPrefix(tb.path(), "/connections/"+conns[0].(map[string]any)["id"].(string)) {
		t.Fatalf("the organisation's logins %v, the page %s", conns, tb.path())
	}
}
