package webapp_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

// TestAdmin: the instance admin reaches Admin by its link: Platform keys names every integration
// with its state and whether each variable is set, never a value; Accounts creates an account (a
// refused one keeps what was typed but the password), invites someone to an organisation (the link
// shown once, and it works), makes an account admin and deactivates one; API tokens lists the
// admin's tokens; the audit log pages 50 entries at a time and filters by operation. An account
// that is not an instance admin has no Admin link and every Admin page is the app's 404.
func TestAdmin(t *testing.T) {
	t.Parallel()
	const tavily = "tvly-this-value-must-never-show"
	a := newApp(t, map[string]string{"TAVILY_API_KEY": tavily})
	a.account("ada@example.com", "Ada", true)
	vic := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	for i := range 55 { // more audit rows than a page holds
		a.api(200, "PATCH", "/api/orgs/"+org, map[string]any{"name": "Acme " + strconv.Itoa(i)})
	}

	// Someone who is not an instance admin: no link, and 404 on every Admin page.
	vt := a.signIn("vic@example.com")
	vt.none("link", "Admin")
	for _, p := range []string{"/admin", "/admin/keys", "/admin/accounts", "/admin/tokens", "/admin/audit"} {
		resp, err := vt.page.Goto(p)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status() != 404 {
			t.Fatalf("%s answers %d to an account that is not an instance admin, want 404", p, resp.Status())
		}
		vt.see("heading", "Not found")
		vt.none("heading", "Admin")
	}

	tb := a.signIn("ada@example.com")
	tb.follow("Admin")
	tb.waitPath("/admin/keys")
	tb.see("heading", "Platform keys")
	tb.see("rowheader", "web-search")
	row := tb.page.GetByRole("row").Filter(playwright.LocatorFilterOptions{HasText: "TAVILY_API_KEY"})
	if err := playwright.NewPlaywrightAssertions(15000).Locator(row.First()).ToContainText("set"); err != nil {
		t.Fatal(err)
	}
	if html, _ := tb.page.Content(); strings.Contains(html, tavily) {
		t.Fatal("Platform keys shows a variable's value")
	}
	tb.check("admin-keys")

	// Accounts: a refused account keeps the email and name, never the password.
	tb.follow("Accounts")
	tb.see("heading", "Accounts (2)")
	tb.fill("Email", "not-an-email")
	tb.fill("Name", "Bob")
	if err := tb.page.GetByLabel("Password", playwright.PageGetByLabelOptions{Exact: playwright.Bool(true)}).Fill("bob's long password here"); err != nil {
		t.Fatal(err)
	}
	tb.click("Create account")
	if msg := text(t, tb.page.Locator("#e-email")); msg == "" {
		t.Fatal("no message beside the email")
	}
	if v, _ := tb.role("textbox", "Name").InputValue(); v != "Bob" {
		t.Fatalf("the name holds %q after the refusal", v)
	}
	if html, _ := tb.page.Content(); strings.Contains(html, "bob's long password") {
		t.Fatal("the refused form echoes the password")
	}
	tb.fill("Email", "bob@example.com")
	if err := tb.page.GetByLabel("Password", playwright.PageGetByLabelOptions{Exact: playwright.Bool(true)}).Fill("bob's long password here"); err != nil {
		t.Fatal(err)
	}
	tb.click("Create account")
	tb.contains("The account is created")
	tb.see("heading", "Accounts (3)")

	// Invite: the link is shown once, and opens the invitation's page.
	tb.fill("Email to invite", "eve@example.com")
	if _, err := tb.role("combobox", "Role").SelectOption(playwright.SelectOptionValues{Values: &[]string{"viewer"}}); err != nil {
		t.Fatal(err)
	}
	tb.click("Invite")
	tb.contains("eve@example.com is invited as viewer")
	link, err := tb.role("textbox", "The invitation's link").InputValue()
	if err != nil || !strings.Contains(link, "/invitations/accept?token=") {
		t.Fatalf("the invitation's link: %q, %v", link, err)
	}
	tb.check("admin-accounts")
	et := a.open()
	et.go_(link)
	et.fill("Your name", "Eve")
	if err := et.role("textbox", "Password").Fill("eve's own long password"); err != nil {
		t.Fatal(err)
	}
	et.click("Accept the invitation")
	et.waitPath("/orgs")
	tb.go_("/admin/accounts")
	tb.see("heading", "Accounts (4)")

	// Make Vic an admin, then deactivate Bob.
	tb.click("Make admin: vic@example.com")
	tb.contains("The account is an instance admin now.")
	tb.see("button", "Remove admin from vic@example.com")
	tb.click("Deactivate bob@example.com")
	tb.contains("The account is deactivated")
	tb.see("button", "Reactivate bob@example.com")
	for _, acc := range a.api(200, "GET", "/api/accounts", nil)["accounts"].([]any) {
		m := acc.(map[string]any)
		switch m["email"] {
		case "vic@example.com":
			if m["instance_admin"] != true || m["id"] != vic {
				t.Fatalf("Vic after Make admin: %v", m)
			}
		case "bob@example.com":
			if m["deactivated"] != true {
				t.Fatalf("Bob after Deactivate: %v", m)
			}
		}
	}

	// A role in the organisation for Vic, then none.
	sel := func(name, label string) {
		if _, err := tb.role("combobox", name).SelectOption(playwright.SelectOptionValues{Labels: &[]string{label}}); err != nil {
			t.Fatal(err)
		}
	}
	sel("Account", "vic@example.com")
	sel("Its role there", "operator")
	tb.click("Save role")
	tb.contains("The role is saved.")
	roleOf := func(account string) string {
		for _, m := range a.api(200, "GET", "/api/orgs/"+org+"/members", nil)["members"].([]any) {
			if m.(map[string]any)["account_id"] == account {
				return m.(map[string]any)["role"].(string)
			}
		}
		return ""
	}
	if r := roleOf(vic); r != "operator" {
		t.Fatalf("Vic's role in Acme after Save role: %q", r)
	}
	sel("Account", "vic@example.com")
	sel("Its role there", "none: take its role away")
	tb.click("Save role")
	tb.contains("The role is saved.")
	if r := roleOf(vic); r != "" {
		t.Fatalf("Vic's role in Acme after none: %q", r)
	}

	// API tokens: the admin's own, made on the account page.
	tb.go_("/account")
	tb.fill("Token name", "ci deploys")
	tb.click("Create token")
	tb.see("heading", "Your new API token")
	tb.go_("/admin/tokens")
	tb.see("rowheader", "ci deploys")
	tb.check("admin-tokens")

	// The audit log: 50 a page, older entries by a link, filtered by operation.
	tb.follow("Audit log")
	tb.see("heading", "Audit log, newest first")
	rows := func() int {
		n, err := tb.page.Locator("tbody tr").Count()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != 50 {
		t.Fatalf("the audit log's first page has %d rows, want 50", n)
	}
	tb.see("cell", "updateAccount")
	tb.check("admin-audit")
	tb.follow("Older entries")
	tb.see("link", "Newest entries")
	if n := rows(); n == 0 || n > 50 {
		t.Fatalf("the second page has %d rows", n)
	}
	tb.go_("/admin/audit")
	tb.fill("Operation", "createAccount")
	tb.click("Filter")
	tb.waitPath("/admin/audit?")
	if !strings.Contains(tb.path(), "operation=createAccount") {
		t.Fatalf("the filter opened %s", tb.path())
	}
	n, err := tb.page.Locator("tbody tr").Count()
	if err != nil || n < 3 {
		t.Fatalf("%d createAccount rows (%v), want at least 3 (Ada, Vic, Bob)", n, err)
	}
	if m, _ := tb.role("cell", "patchOrg").Count(); m != 0 {
		t.Fatal("the filter by createAccount shows patchOrg rows")
	}
}
