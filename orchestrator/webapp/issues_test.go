package webapp_test

import (
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

// TestIssues: agents' report_issue rows show in their guild's inbox (open first, each with a link
// to the run that filed it) and in the organisation's; Resolve resolves one, Resolve all the rest;
// a viewer reads the inbox with no button.
func TestIssues(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	viewer := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	research := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)
	ops := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Ops"})["id"].(string)
	report := func(guild, agentName string, msgs ...string) string {
		agent := a.api(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": agentName})["id"].(string)
		run := a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
		for _, m := range msgs {
			a.api(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "report_issue", "arguments": map[string]any{"kind": "tool_failure", "message": m}})
		}
		return run
	}
	run := report(research, "Scout", "web_search keeps timing out", "notion_search answers 403")
	report(ops, "Pager", "the deploy secret is missing")

	tb := a.signIn("ada@example.com")
	tb.go_("/guilds/" + research)
	tb.follow("Issues")
	tb.see("heading", "2 open")
	tb.see("link", run)
	row := tb.page.GetByRole("row").Filter(playwright.LocatorFilterOptions{HasText: "notion_search answers 403"})
	if err := row.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Resolve", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.contains("The issue is resolved.")
	tb.see("heading", "1 open")
	open := a.api(200, "GET", "/api/guilds/"+research+"/issues?status=open", nil)["issues"].([]any)
	if len(open) != 1 || open[0].(map[string]any)["message"] != "web_search keeps timing out" {
		t.Fatalf("open issues after Resolve: %v", open)
	}
	// Open first: the first row of the table is the open one.
	if first := text(t, tb.page.GetByRole("row").Nth(1)); !contains(first, "web_search keeps timing out") {
		t.Fatalf("the first row is %q, want the open issue", first)
	}
	tb.check("issues-guild")
	tb.click("Resolve all")
	tb.contains("The issue is resolved.")
	tb.see("heading", "Nothing open")
	tb.none("button", "Resolve all")

	// The organisation's inbox: every guild's, named; the open ones, then every one.
	tb.go_("/orgs/" + org + "/issues")
	tb.see("heading", "1 open")
	tb.see("link", "Ops")
	tb.contains("the deploy secret is missing")
	noRow(t, tb, "web_search keeps timing out")
	tb.follow("All")
	tb.see("heading", "Every issue")
	tb.contains("web_search keeps timing out")
	if first := text(t, tb.page.GetByRole("row").Nth(1)); !contains(first, "the deploy secret is missing") {
		t.Fatalf("the first row of every issue is %q, want the open one", first)
	}
	tb.check("issues-org")
	tb.follow("Resolved")
	tb.see("heading", "Resolved")
	tb.contains("notion_search answers 403")
	noRow(t, tb, "the deploy secret is missing")

	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+viewer, map[string]any{"role": "viewer"})
	vt := a.signIn("vic@example.com")
	vt.go_("/orgs/" + org + "/issues")
	vt.see("heading", "1 open")
	vt.none("button", "Resolve")
	vt.check("issues-viewer")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// noRow fails unless no table row of the page holds text.
func noRow(t *testing.T, tb *tab, text string) {
	t.Helper()
	n, err := tb.page.GetByRole("row").Filter(playwright.LocatorFilterOptions{HasText: text}).Count()
	if err != nil || n != 0 {
		t.Fatalf("%s: %d rows hold %q (%v), want none", tb.path(), n, text, err)
	}
}
