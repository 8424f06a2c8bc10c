package webapp_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

// adminServer is one catalog row as GET /api/admin/mcp/servers answers it.
func adminServer(t *testing.T, a *app, slug string) map[string]any {
	t.Helper()
	for _, s := range a.api(200, "GET", "/api/admin/mcp/servers", nil)["servers"].([]any) {
		if m := s.(map[string]any); m["slug"] == slug {
			return m
		}
	}
	t.Fatalf("the catalog has no server %s", slug)
	return nil
}

// toolPublished is whether a catalog server's tool is published, by the API.
func toolPublished(t *testing.T, a *app, slug, name string) bool {
	t.Helper()
	for _, tl := range adminServer(t, a, slug)["tools"].([]any) {
		if m := tl.(map[string]any); m["name"] == name {
			return m["published"] == true
		}
	}
	t.Fatalf("%s has no tool %s", slug, name)
	return false
}

// TestConnectorCatalog: Admin → Connector catalog lists every server with its URL, tools and state;
// a server is unpublished and published again; a server's page edits its copy (a refused URL keeps
// what was typed, with the API's message beside the field), points a named endpoint elsewhere and
// restores it, and unpublishes and publishes one tool; a custom MCP server is added (a refused one
// keeps what was typed). Each change is checked against the API. A form sent twice adds one server.
// An account that is not an instance admin gets the app's 404 on every catalog page.
func TestConnectorCatalog(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	a.account("vic@example.com", "Vic", false)

	vt := a.signIn("vic@example.com")
	for _, p := range []string{"/admin/catalog", "/admin/catalog/cigale"} {
		resp, err := vt.page.Goto(p)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status() != 404 {
			t.Fatalf("%s answers %d to an account that is not an instance admin, want 404", p, resp.Status())
		}
	}

	tb := a.signIn("ada@example.com")
	tb.follow("Admin")
	tb.follow("Connector catalog")
	tb.waitPath("/admin/catalog")
	tb.see("heading", "Catalog servers ("+strconv.Itoa(len(a.api(200, "GET", "/api/admin/mcp/servers", nil)["servers"].([]any)))+")")
	tb.see("rowheader", "Cigale cigale")
	tb.check("admin-catalog")

	// Unpublish DexPaprika from the list, then publish it again.
	tb.click("Unpublish DexPaprika")
	tb.contains("The server is unpublished")
	if adminServer(t, a, "dexpaprika")["published"] != false {
		t.Fatal("DexPaprika is published after Unpublish")
	}
	for _, s := range a.api(200, "GET", "/api/mcp/servers", nil)["servers"].([]any) {
		if s.(map[string]any)["slug"] == "dexpaprika" {
			t.Fatal("the operators' catalog still lists DexPaprika")
		}
	}
	publish := tb.role("button", "Publish DexPaprika") // by keyboard: focused, then Enter
	if err := publish.Focus(); err != nil {
		t.Fatal(err)
	}
	if err := tb.page.Keyboard().Press("Enter"); err != nil {
		t.Fatal(err)
	}
	tb.contains("The server is published")
	if adminServer(t, a, "dexpaprika")["published"] != true {
		t.Fatal("DexPaprika is not published after Publish")
	}

	// DexPaprika's page: a refused URL keeps what was typed; the copy is saved; the pro endpoint
	// moves and is restored.
	tb.follow("DexPaprika")
	tb.waitPath("/admin/catalog/dexpaprika")
	tb.see("heading", "DexPaprika")
	tb.fill("URL", "not a url")
	tb.fill("Limitations", "Edited limitations.")
	tb.click("Save")
	tb.see("textbox", "URL")
	if msg := text(t, tb.page.Locator("#e-url")); !strings.Contains(msg, "url") {
		t.Fatalf("the message beside the URL: %q", msg)
	}
	if v, _ := tb.role("textbox", "URL").InputValue(); v != "not a url" {
		t.Fatalf("the URL holds %q after the refusal", v)
	}
	if v, _ := tb.role("textbox", "Limitations").InputValue(); v != "Edited limitations." {
		t.Fatalf("the limitations hold %q after the refusal", v)
	}
	if adminServer(t, a, "dexpaprika")["limitations"] == "Edited limitations." {
		t.Fatal("a refused edit saved the limitations")
	}
	tb.fill("URL", "https://api.dexpaprika.com")
	tb.fill("Description", "DEX data.\nTwo lines.") // the browser sends them with CRLF
	tb.click("Save")
	tb.contains("Saved.")
	srv := adminServer(t, a, "dexpaprika")
	if srv["description"] != "DEX data.\nTwo lines." {
		t.Fatalf("the description after Save: %q", srv["description"])
	}
	if srv["limitations"] != "Edited limitations." || srv["copy_source"] != "admin" || srv["url"] != "https://api.dexpaprika.com" {
		t.Fatalf("DexPaprika after Save: limitations %q, copy_source %v, url %v", srv["limitations"], srv["copy_source"], srv["url"])
	}
	tb.fill("Endpoint pro", "http://127.0.0.1:9/pro")
	tb.click("Save")
	tb.contains("Its logins are disconnected")
	if ep := adminServer(t, a, "dexpaprika")["endpoints"].(map[string]any)["pro"]; ep != "http://127.0.0.1:9/pro" {
		t.Fatalf("the pro endpoint after Save: %v", ep)
	}
	tb.fill("Endpoint pro", "")
	tb.click("Save")
	tb.contains("Its logins are disconnected")
	if ep := adminServer(t, a, "dexpaprika")["endpoints"].(map[string]any)["pro"]; ep != "https://api-pro.dexpaprika.com" {
		t.Fatalf("the pro endpoint after emptying it: %v, want the seeded one", ep)
	}
	tb.click("Save")
	tb.contains("Nothing to save")

	// One tool unpublished, then published again.
	tool := adminServer(t, a, "dexpaprika")["tools"].([]any)[0].(map[string]any)["name"].(string)
	model := "dexpaprika_" + tool
	tb.see("rowheader", model)
	tb.click("Unpublish " + model)
	tb.contains("The tool's state is saved")
	if toolPublished(t, a, "dexpaprika", tool) {
		t.Fatalf("%s is published after Unpublish", model)
	}
	row := tb.page.GetByRole("row").Filter(playwright.LocatorFilterOptions{HasText: model})
	if err := playwright.NewPlaywrightAssertions(15000).Locator(row.First()).ToContainText("unpublished"); err != nil {
		t.Fatal(err)
	}
	tb.check("admin-server")
	tb.click("Publish " + model)
	tb.contains("The tool's state is saved")
	if !toolPublished(t, a, "dexpaprika", tool) {
		t.Fatalf("%s is not published after Publish", model)
	}

	// A custom server: refused (bad slug) keeps what was typed; then added once for a double submit.
	tb.go_("/admin/catalog")
	tb.fill("Slug", "Bad Slug")
	tb.fill("Server name", "Our tracker")
	tb.fill("MCP endpoint URL", "http://127.0.0.1:9/mcp")
	tb.click("Add server")
	if msg := text(t, tb.page.Locator("#e-slug")); !strings.Contains(msg, "slug") {
		t.Fatalf("the message beside the slug: %q", msg)
	}
	if v, _ := tb.role("textbox", "Server name").InputValue(); v != "Our tracker" {
		t.Fatalf("the name holds %q after the refusal", v)
	}
	tb.fill("Slug", "tracker")
	if _, err := tb.role("combobox", "Login").SelectOption(playwright.SelectOptionValues{Values: &[]string{"token"}}); err != nil {
		t.Fatal(err)
	}
	tb.fill("Key header", "X-Api-Key")
	if err := tb.role("button", "Add server").Click(playwright.LocatorClickOptions{ClickCount: playwright.Int(2)}); err != nil {
		t.Fatal(err)
	}
	tb.waitPath("/admin/catalog/tracker")
	tb.contains("The server is added and published")
	n := 0
	for _, s := range a.api(200, "GET", "/api/admin/mcp/servers", nil)["servers"].([]any) {
		if m := s.(map[string]any); m["slug"] == "tracker" {
			n++
			if m["custom"] != true || m["auth"] != "token" || m["url"] != "http://127.0.0.1:9/mcp" || m["config"].(map[string]any)["header"] != "X-Api-Key" {
				t.Fatalf("the custom server: %v", m)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d servers named tracker after a double submit, want 1", n)
	}
	tb.see("heading", "Our tracker")
	tb.contains("No tool yet")
}
