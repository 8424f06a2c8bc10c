package webapp_test

import (
	"strings"
	"testing"
)

// TestSecrets: an operator answers an agent's secret_request with a password field, stores and
// deletes a secret; the page shows names, never a value (not even in a form the API refused); a
// viewer has no Secrets tab and the page is refused.
func TestSecrets(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	viewer := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)
	agent := a.api(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Scout"})["id"].(string)
	run := a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	a.api(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "secret_request", "arguments": map[string]any{"name": "STRIPE_API_KEY", "reason": "to list this month's invoices"}})

	tb := a.signIn("ada@example.com")
	tb.go_("/agents/" + agent)
	tb.follow("Secrets")
	tb.see("heading", "Asked for (1)")
	tb.contains("to list this month's invoices")
	tb.check("secrets")
	if typ, _ := tb.page.GetByLabel("Value for STRIPE_API_KEY").GetAttribute("type"); typ != "password" {
		t.Fatalf("the answer field's type is %q: a secret's field must be a password input", typ)
	}
	if err := tb.page.GetByLabel("Value for STRIPE_API_KEY").Fill("sk_test_secret_value_123"); err != nil {
		t.Fatal(err)
	}
	tb.click("Store STRIPE_API_KEY")
	tb.contains("STRIPE_API_KEY is stored")
	tb.none("heading", "Asked for (1)")
	tb.see("cell", "STRIPE_API_KEY")
	out := a.api(200, "GET", "/api/agents/"+agent+"/secrets", nil)
	if s := out["secrets"].([]any); len(s) != 1 || s[0].(map[string]any)["name"] != "STRIPE_API_KEY" {
		t.Fatalf("the agent's secrets: %v", out)
	}
	for _, r := range out["requests"].([]any) {
		if r.(map[string]any)["answered_at"] == nil {
			t.Fatalf("the request is still pending: %v", r)
		}
	}

	// A bad name is refused with the API's message; the value typed is not kept.
	tb.fill("Secret name", "not a name!")
	tb.fill("Value", "hunter2-hunter2")
	tb.click("Store secret")
	tb.see("textbox", "Secret name")
	if html, _ := tb.page.Content(); strings.Contains(html, "hunter2") || strings.Contains(html, "sk_test_secret") {
		t.Fatal("the page shows a secret's value")
	}
	if v, _ := tb.role("textbox", "Secret name").InputValue(); v != "not a name!" {
		t.Fatalf("the name field holds %q after the refusal", v)
	}
	if msg := text(t, tb.page.Locator("#e-name")); msg == "" {
		t.Fatal("no message beside the name")
	}
	tb.check("secrets-refused")

	tb.click("Delete STRIPE_API_KEY")
	tb.contains("STRIPE_API_KEY is deleted.")
	if s := a.api(200, "GET", "/api/agents/"+agent+"/secrets", nil)["secrets"].([]any); len(s) != 0 {
		t.Fatalf("secrets after Delete: %v", s)
	}

	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+viewer, map[string]any{"role": "viewer"})
	vt := a.signIn("vic@example.com")
	vt.go_("/agents/" + agent)
	vt.none("link", "Secrets")
	vt.go_("/agents/" + agent + "/secrets")
	vt.none("cell", "STRIPE_API_KEY")
	vt.contains("operator")
}
