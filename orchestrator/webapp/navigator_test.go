package webapp_test

import (
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

// TestNavigator: an instance admin signs in, creates an organisation, a guild and an agent, sets
// the agent's flags, renames and deletes (an open run refuses the deletion, named with a link);
// bad input is shown beside its field with what was typed; a viewer of the organisation sees
// no control that would be refused.
func TestNavigator(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	viewer := a.account("vic@example.com", "Vic", false)

	tb := a.signIn("ada@example.com")
	tb.see("heading", "Organisations")
	tb.check("organisations")
	tb.fill("Organisation name", "Acme")
	tb.click("Create organisation")
	tb.see("heading", "Acme")
	org := strings.TrimPrefix(tb.path(), "/orgs/")

	// Blank is refused by the API, whose message shows beside the field, keeping what was typed.
	tb.fill("Guild name", "   ")
	tb.click("Create guild")
	tb.see("textbox", "Guild name")
	if msg := text(t, tb.page.Locator("#e-name")); !strings.Contains(msg, "guild name must not be blank") {
		t.Fatalf("the error beside the field says %q", msg)
	}
	if v, _ := tb.role("textbox", "Guild name").InputValue(); v != "   " {
		t.Fatalf("the field holds %q after the refusal, want what was typed", v)
	}
	tb.fill("Guild name", "Research")
	tb.click("Create guild")
	tb.see("heading", "Research")
	tb.check("guild")

	tb.fill("Agent name", "Scout")
	if err := tb.role("checkbox", "Browser").Uncheck(); err != nil {
		t.Fatal(err)
	}
	tb.click("Create agent")
	tb.see("heading", "Scout")
	agent := strings.TrimPrefix(tb.path(), "/agents/")
	got := a.api(200, "GET", "/api/agents/"+agent, nil)["config"].(map[string]any)
	if got["browser"] != false || got["coding"] != true {
		t.Fatalf("the new agent's config is %v, want browser off and coding on", got)
	}
	tb.check("agent")

	// The flags change through the form.
	if err := tb.role("checkbox", "Coding").Uncheck(); err != nil {
		t.Fatal(err)
	}
	tb.click("Save the config")
	tb.contains("The config flags are saved; they apply from the agent's next run.")
	if got := a.api(200, "GET", "/api/agents/"+agent, nil)["config"].(map[string]any); got["coding"] != false {
		t.Fatalf("coding is %v after the form turned it off", got["coding"])
	}

	// An open run refuses the deletion: its id is shown as a link; once closed, it goes.
	run := a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	tb.follow("Delete this agent…")
	tb.see("heading", "Delete agent Scout")
	tb.click("Delete Scout")
	tb.see("link", run)
	tb.contains("has open runs")
	tb.check("delete-refused")
	a.api(200, "POST", "/api/runs/"+run+"/close", nil)
	tb.click("Delete Scout")
	tb.see("heading", "Research")
	if st, _ := a.raw("GET", "/api/agents/"+agent, nil); st != 404 {
		t.Fatalf("the deleted agent answers %d", st)
	}

	// Rename the guild from its settings.
	tb.follow("Settings")
	tb.fill("Guild name", "Research & Development")
	tb.click("Rename")
	tb.contains("Renamed.")
	tb.see("heading", "Research & Development")
	tb.check("guild-settings")
	guild := a.api(200, "GET", "/api/orgs/"+org+"/guilds", nil)["guilds"].([]any)[0].(map[string]any)
	if guild["name"] != "Research & Development" {
		t.Fatalf("the guild is named %v", guild["name"])
	}
	tb.follow("Agents")
	tb.fill("Agent name", "Ada")
	tb.click("Create agent")
	tb.see("heading", "Ada")

	// A viewer of the organisation reads, and sees no control the API would refuse it.
	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+viewer, map[string]any{"role": "viewer"})
	vt := a.signIn("vic@example.com")
	vt.follow("Acme")
	vt.see("heading", "Acme")
	vt.none("button", "Create guild")
	vt.none("link", "Settings")
	vt.follow("Research & Development")
	vt.none("button", "Create agent")
	vt.follow("Ada")
	vt.see("heading", "Ada")
	vt.none("button", "Save the config")
	vt.none("link", "Delete this agent…")
	vt.none("link", "Secrets")
	vt.check("agent-viewer")
	// A control it could reach by URL is still the API's to refuse.
	vt.go_("/orgs/" + org + "/settings")
	vt.contains("need the operator role")
}

// TestSessionExpiry: a session that ends sends the browser to sign-in, and back to the page it was
// on once signed in again.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	tb := a.signIn("ada@example.com")
	tb.go_("/orgs/" + org + "/settings")
	tb.see("heading", "Acme")
	// Every session of the account ends (sign out everywhere, from another browser).
	other := a.signIn("ada@example.com")
	other.go_("/account")
	other.click("Sign out everywhere")
	other.waitPath("/signin")

	tb.follow("Guilds")
	tb.waitPath("/signin")
	if !strings.Contains(tb.path(), "next=%2Forgs%2F"+org) {
		t.Fatalf("sign-in does not come back to the page: %s", tb.path())
	}
	tb.fill("Email", "ada@example.com")
	tb.fill("Password", password)
	tb.click("Sign in")
	tb.waitPath("/orgs/" + org)
	tb.see("heading", "Acme")
	_ = playwright.Bool
}
