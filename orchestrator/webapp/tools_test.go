package webapp_test

import (
	"strconv"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

// TestToolsView: an operator turns note_write Off at a guild and On for one agent through the
// Inherit / On / Off controls (radio groups named by the tool); the view says which scope decided,
// the bindings are the API's, a run of each agent is offered exactly what the view said, and the
// run's page lists its offered tools and calls. A viewer sees the states and no control.
func TestToolsView(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	viewer := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)
	scout := a.api(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Scout"})["id"].(string)
	other := a.api(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Other"})["id"].(string)

	tb := a.signIn("ada@example.com")
	tb.go_("/guilds/" + guild)
	tb.follow("Tools")
	tb.see("heading", "Native tools")
	group := tb.see("radiogroup", "note_write")
	if err := group.GetByRole("radio", playwright.LocatorGetByRoleOptions{Name: "Off", Exact: playwright.Bool(true)}).Check(); err != nil {
		t.Fatal(err)
	}
	tb.contains("note_write is Off at guild Research.")
	row := tb.page.Locator("#n-note_write")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(row).ToContainText("Off, from guild Research"); err != nil {
		t.Fatal(err)
	}
	rows := a.api(200, "GET", "/api/bindings?scope=guild&scope_id="+guild, nil)["bindings"].([]any)
	if !hasBinding(rows, "native_tool", "note_write", false) {
		t.Fatalf("the guild's bindings after Off: %v", rows)
	}
	tb.check("tools-guild")
	// Each catalog server is a region named by its name, with its state; Google Drive has no OAuth
	// client on this box, so it says Not set up and names the variables to set.
	drive := tb.see("region", "Google Drive")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(drive).ToContainText("Not set up"); err != nil {
		t.Fatal(err)
	}
	if err := playwright.NewPlaywrightAssertions(15000).Locator(drive).ToContainText("GMAIL_OAUTH_CLIENT_ID"); err != nil {
		t.Fatal(err)
	}
	tb.see("radiogroup", "Google Drive")
	tb.shotOf("tools-connector", drive.First())

	// On for Scout alone.
	tb.go_("/agents/" + scout + "/tools")
	on := tb.see("radiogroup", "note_write").GetByRole("radio", playwright.LocatorGetByRoleOptions{Name: "On", Exact: playwright.Bool(true)})
	if err := on.Focus(); err != nil { // the keyboard reaches and operates the control
		t.Fatal(err)
	}
	if err := tb.page.Keyboard().Press("Space"); err != nil {
		t.Fatal(err)
	}
	tb.contains("note_write is On at agent Scout.")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#n-note_write")).ToContainText("On, from agent Scout"); err != nil {
		t.Fatal(err)
	}
	tb.check("tools-agent")
	tb.go_("/agents/" + other + "/tools")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#n-note_write")).ToContainText("Off, from guild Research"); err != nil {
		t.Fatal(err)
	}

	// A run is offered what the view said.
	offered := func(agent string) (string, map[string]bool) {
		run := a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
		names := map[string]bool{}
		for _, o := range run["offered_tools"].([]any) {
			names[o.(map[string]any)["name"].(string)] = true
		}
		return run["id"].(string), names
	}
	scoutRun, got := offered(scout)
	if !got["note_write"] {
		t.Fatalf("Scout's run is not offered note_write: %v", got)
	}
	if _, got := offered(other); got["note_write"] {
		t.Fatalf("Other's run is offered note_write, which is Off at its guild")
	}
	a.api(200, "POST", "/api/runs/"+scoutRun+"/calls", map[string]any{"name": "note_write", "arguments": map[string]any{"level": "agent", "key": "plan.md", "content": "First steps"}})
	tb.go_("/agents/" + scout)
	tb.follow("Runs")
	tb.see("heading", "Runs, newest first")
	tb.check("runs")
	tb.follow(scoutRun)
	tb.waitPath("/runs/" + scoutRun)
	list := tb.see("list", "Offered tools ("+strconv.Itoa(len(got))+")")
	n, err := list.GetByRole("listitem").Count()
	if err != nil || n != len(got) {
		t.Fatalf("the run's page lists %d offered tools (%v), the run was offered %d", n, err, len(got))
	}
	tb.see("cell", "note_write")
	tb.contains("First steps")
	tb.check("run")

	// Ask at the guild: a binding row with ask; each agent's view says Ask and who decided. A
	// server's control has no Ask.
	tb.go_("/guilds/" + guild + "/tools")
	if err := tb.see("radiogroup", "note_get").GetByRole("radio", playwright.LocatorGetByRoleOptions{Name: "Ask", Exact: playwright.Bool(true)}).Check(); err != nil {
		t.Fatal(err)
	}
	tb.contains("note_get asks before each call at guild Research.")
	var asks bool
	for _, r := range a.api(200, "GET", "/api/bindings?scope=guild&scope_id="+guild, nil)["bindings"].([]any) {
		m := r.(map[string]any)
		asks = asks || m["catalog_id"] == "note_get" && m["enabled"] == true && m["ask"] == true
	}
	if !asks {
		t.Fatal("the guild has no Ask row for note_get")
	}
	if n, err := tb.see("radiogroup", "Google Drive").GetByRole("radio").Count(); err != nil || n != 3 {
		t.Fatalf("a server's control has %d choices (%v), want Inherit, On and Off", n, err)
	}
	tb.go_("/agents/" + other + "/tools")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#n-note_get")).ToContainText("Ask, from guild Research"); err != nil {
		t.Fatal(err)
	}
	asked := false
	for _, n := range a.api(200, "GET", "/api/agents/"+other+"/tools", nil)["native_tools"].([]any) {
		m := n.(map[string]any)
		asked = asked || m["name"] == "note_get" && m["ask"] == true
	}
	if !asked {
		t.Fatal("the API's view of Other does not resolve note_get to Ask")
	}

	// Back to the guild: Inherit deletes the row.
	tb.go_("/guilds/" + guild + "/tools")
	if err := tb.see("radiogroup", "note_write").GetByRole("radio", playwright.LocatorGetByRoleOptions{Name: "Inherit", Exact: playwright.Bool(true)}).Check(); err != nil {
		t.Fatal(err)
	}
	tb.contains("note_write inherits at guild Research.")
	rows = a.api(200, "GET", "/api/bindings?scope=guild&scope_id="+guild, nil)["bindings"].([]any)
	for _, r := range rows {
		if r.(map[string]any)["catalog_id"] == "note_write" {
			t.Fatalf("Inherit left the row %v", r)
		}
	}

	// A viewer reads the states and has no control.
	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+viewer, map[string]any{"role": "viewer"})
	vt := a.signIn("vic@example.com")
	vt.go_("/agents/" + scout + "/tools")
	vt.see("heading", "Native tools")
	vt.none("radiogroup", "note_write")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(vt.page.Locator("#n-note_write")).ToContainText("On, from agent Scout"); err != nil {
		t.Fatal(err)
	}
	vt.check("tools-viewer")
}

// hasBinding reports whether rows hold kind/id with enabled.
func hasBinding(rows []any, kind, id string, enabled bool) bool {
	for _, r := range rows {
		m := r.(map[string]any)
		if m["catalog_kind"] == kind && m["catalog_id"] == id && m["enabled"] == enabled {
			return true
		}
	}
	return false
}
