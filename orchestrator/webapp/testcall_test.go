package webapp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/mcp/mcptest"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mxschmitt/playwright-go"
)

// ledgerTools is the loopback MCP server's one tool, with an argument of each kind the Test form
// builds a control for.
func ledgerTools(m *server.MCPServer) {
	m.AddTool(mcpgo.NewTool("echo", mcpgo.WithDescription("Echo text back."),
		mcpgo.WithString("text", mcpgo.Required(), mcpgo.Description("what to echo")),
		mcpgo.WithNumber("times", mcpgo.Description("how many times")),
		mcpgo.WithBoolean("loud", mcpgo.Description("in capitals")),
		mcpgo.WithString("tone", mcpgo.Enum("plain", "warm")),
		mcpgo.WithObject("meta", mcpgo.Description("anything else"))),
		func(_ context.Context, r mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			text := strings.Repeat(r.GetString("text", ""), max(1, r.GetInt("times", 1)))
			if r.GetBool("loud", false) {
				text = strings.ToUpper(text)
			}
			return mcpgo.NewToolResultText(fmt.Sprintf("echo: %s (tone %s, meta %v)", text, r.GetString("tone", "none"), r.GetArguments()["meta"])), nil
		})
}

// TestTestCall: an operator opens Test on a connected login's tool from the Tools view (the
// server's region), gets a form built from the tool's input schema (a select for the enum, a
// checkbox for the boolean, a JSON text area for the object), a bad number and bad JSON are
// refused beside their fields before anything is sent, and Call shows the tool's answer in the
// region named Result.
func TestTestCall(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.WithTools(ledgerTools))
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	a.api(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "ledger", "name": "Ledger", "url": srv.URL, "auth": "none"})
	a.api(201, "POST", "/api/mcp/connections", map[string]any{"server": "ledger", "scope": "org", "scope_id": org, "credentials": map[string]any{}})

	tb := a.signIn("ada@example.com")
	tb.go_("/orgs/" + org + "/tools")
	ledger := tb.see("region", "Ledger")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(ledger).ToContainText("Connected"); err != nil {
		t.Fatal(err)
	}
	tb.check("tools-org")
	tb.shotOf("tools-connected", ledger.First())
	if err := ledger.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Test", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.see("heading", "Test ledger_echo")
	if err := tb.role("textbox", "meta").Fill(`{"a": 1`); err != nil {
		t.Fatal(err)
	}
	tb.click("Call")
	// The JSON is checked in the page before anything is sent.
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#j-f-arg_meta")).ToContainText("meta is not valid JSON"); err != nil {
		t.Fatal(err)
	}
	tb.none("region", "Result")
	if err := tb.role("textbox", "meta").Fill(`{"a": 1}`); err != nil {
		t.Fatal(err)
	}
	tb.click("Call")
	// A required argument left empty is the server's to refuse, beside its field, keeping what
	// was typed in the others.
	if msg := text(t, tb.page.Locator("#e-arg_text")); !strings.Contains(msg, "text is required") {
		t.Fatalf("beside text: %q", msg)
	}
	if v, _ := tb.role("textbox", "meta").InputValue(); v != `{"a": 1}` {
		t.Fatalf("meta holds %q after the refusal", v)
	}
	tb.none("region", "Result")
	tb.fill("text", "hi")
	if err := tb.role("spinbutton", "times").Fill("2"); err != nil {
		t.Fatal(err)
	}
	if err := tb.role("checkbox", "loud").Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.role("combobox", "tone").SelectOption(playwright.SelectOptionValues{Values: &[]string{"warm"}}); err != nil {
		t.Fatal(err)
	}
	tb.click("Call")
	result := tb.see("region", "Result")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(result).ToContainText("echo: HIHI (tone warm, meta map[a:1])"); err != nil {
		t.Fatal(err)
	}
	tb.check("test")
}
