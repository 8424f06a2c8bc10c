package webapp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/mcp/mcptest"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mxschmitt/playwright-go"
)

// keyed puts a loopback MCP server behind a bearer key: a request without "Bearer "+key is a 401,
// as a provider answers a wrong key.
func keyed(t *testing.T, target, key string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "invalid API key", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s.URL + u.Path
}

// TestConnect: an operator connects a token MCP server (a real mcp-go server on loopback behind a
// key) from its region in a guild's Tools view. The form is built from the server's fields, the
// key a password input; an empty key and a wrong key are refused with the API's message beside the
// key field, keeping the account hint and never echoing the key; the right key connects and the
// server's tools appear with their controls. The login's page refreshes the listing and shows what
// was added, then Disconnect deletes the login. A viewer sees no Connect and no Disconnect.
func TestConnect(t *testing.T) {
	t.Parallel()
	var mcp *server.MCPServer
	srv := mcptest.Start(t, mcptest.WithTools(func(m *server.MCPServer) {
		mcp = m
		ledgerTools(m)
	}))
	const key = "lk_live_correct_horse_battery"
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	viewer := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)
	a.api(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "ledger", "name": "Ledger", "url": keyed(t, srv.URL, key), "auth": "token"})

	tb := a.signIn("ada@example.com")
	tb.go_("/guilds/" + guild + "/tools")
	ledger := tb.see("region", "Ledger")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(ledger).ToContainText("Not connected"); err != nil {
		t.Fatal(err)
	}
	// No Connect where this app would be refused: the GitHub App is not set up on this box.
	if n, _ := tb.see("region", "GitHub").GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)}).Count(); n != 0 {
		t.Fatal("GitHub offers a Connect without its App")
	}
	if err := ledger.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.waitPath("/guilds/" + guild + "/connect/ledger")
	tb.see("heading", "Connect Ledger")
	keyBox := tb.page.GetByLabel("Ledger API key")
	if typ, _ := keyBox.GetAttribute("type"); typ != "password" {
		t.Fatalf("the key field's type is %q, want password", typ)
	}
	tb.check("connect")

	// An empty key: the API's message beside the key, the hint kept.
	tb.fill("Account hint", "ops@acme.example")
	tb.click("Connect")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#e-api_key")).ToContainText("is required"); err != nil {
		t.Fatal(err)
	}
	if v, _ := tb.role("textbox", "Account hint").InputValue(); v != "ops@acme.example" {
		t.Fatalf("the hint holds %q after the refusal", v)
	}
	// A wrong key: the provider's refusal beside the key; the key is not sent back.
	if err := keyBox.Fill("lk_live_wrong_key_typed"); err != nil {
		t.Fatal(err)
	}
	tb.click("Connect")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#e-api_key")).ToContainText("refused the login"); err != nil {
		t.Fatal(err)
	}
	if html, _ := tb.page.Content(); strings.Contains(html, "lk_live_wrong_key_typed") {
		t.Fatal("the refused form echoes the key")
	}
	if v, _ := keyBox.InputValue(); v != "" {
		t.Fatalf("the key field is prefilled with %q", v)
	}
	if v, _ := tb.role("textbox", "Account hint").InputValue(); v != "ops@acme.example" {
		t.Fatalf("the hint holds %q after the second refusal", v)
	}
	tb.check("connect-refused")
	if n := len(a.api(200, "GET", "/api/mcp/connections?scope=guild&scope_id="+guild, nil)["connections"].([]any)); n != 0 {
		t.Fatalf("%d logins after two refusals", n)
	}

	// The right key connects; the tools appear with their controls.
	if err := keyBox.Fill(key); err != nil {
		t.Fatal(err)
	}
	tb.click("Connect")
	tb.waitPath("/guilds/" + guild + "/tools")
	tb.contains("Ledger is connected here: 1 tools listed")
	ledger = tb.see("region", "Ledger")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(ledger).ToContainText("Connected"); err != nil {
		t.Fatal(err)
	}
	tb.see("radiogroup", "ledger_echo")
	if n, _ := ledger.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)}).Count(); n != 0 {
		t.Fatal("a connected server still offers Connect")
	}
	if html, _ := tb.page.Content(); strings.Contains(html, key) {
		t.Fatal("the Tools view shows the key")
	}
	conns := a.api(200, "GET", "/api/mcp/connections?scope=guild&scope_id="+guild, nil)["connections"].([]any)
	if len(conns) != 1 || conns[0].(map[string]any)["status"] != "connected" || conns[0].(map[string]any)["account_hint"] != "ops@acme.example" {
		t.Fatalf("the guild's logins: %v", conns)
	}
	connID := conns[0].(map[string]any)["id"].(string)

	// The server gains a tool; Refresh on the login's page shows it added.
	mcp.AddTool(mcpgo.NewTool("balance", mcpgo.WithDescription("The account's balance.")),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("42"), nil
		})
	if err := ledger.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Login details", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.waitPath("/connections/" + connID)
	tb.see("heading", "ledger login")
	tb.click("Refresh")
	tb.contains("1 added, 0 removed, 0 changed")
	tb.see("heading", "What the refresh changed")
	tb.see("cell", "ledger_balance")
	tb.check("connection")

	// A viewer reads the login and the Tools view, with no Connect, Refresh or Disconnect.
	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+viewer, map[string]any{"role": "viewer"})
	vt := a.signIn("vic@example.com")
	vt.go_("/connections/" + connID)
	vt.see("heading", "ledger login")
	vt.none("button", "Disconnect")
	vt.none("button", "Refresh")
	vt.go_("/guilds/" + guild + "/tools")
	vt.see("region", "Ledger")
	vt.none("link", "Connect")
	vt.go_("/guilds/" + guild + "/connect/ledger")
	vt.none("button", "Connect")

	// Disconnect deletes the login; the Tools view offers Connect again.
	tb.click("Disconnect")
	tb.waitPath("/guilds/" + guild + "/tools")
	tb.contains("The ledger login is disconnected and deleted.")
	if n := len(a.api(200, "GET", "/api/mcp/connections?scope=guild&scope_id="+guild, nil)["connections"].([]any)); n != 0 {
		t.Fatalf("%d logins after Disconnect", n)
	}
	tb.see("region", "Ledger").GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)})
}
