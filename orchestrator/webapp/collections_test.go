package webapp_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
)

// TestCollections: a guild's Collections tab defines a typed table (a refused definition shows
// each problem beside its own row and keeps what was typed; a double submit defines one), grants
// it to one agent, and browses its records 50 a page and searched, each checked against the API;
// an organisation's table is granted to a guild. A viewer sees the tables and records but no form.
func TestCollections(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	vic := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)
	scout := a.api(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Scout"})["id"].(string)
	writer := a.api(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Writer"})["id"].(string)
	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+vic, map[string]any{"role": "viewer"})

	tb := a.signIn("ada@example.com")
	tb.go_("/guilds/" + guild)
	tb.follow("Collections")
	tb.waitPath("/guilds/" + guild + "/collections")
	tb.contains("No collection here yet.")

	// Refused: the name and the second row, each with its own message; what was typed stays.
	sel := func(name, value string) {
		t.Helper()
		if _, err := tb.role("combobox", name).SelectOption(playwright.SelectOptionValues{Values: &[]string{value}}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string) {
		t.Helper()
		if err := tb.role("checkbox", name).Check(); err != nil {
			t.Fatal(err)
		}
	}
	tb.fill("Collection name", "Bad Name")
	tb.fill("Column 1 name", "title")
	check("Column 1 required")
	check("Column 1 unique")
	tb.fill("Column 2 name", "id")
	sel("Column 2 type", "number")
	tb.click("Define collection")
	if msg := text(t, tb.page.Locator("#e-name")); !strings.Contains(msg, `name "Bad Name" must match`) {
		t.Fatalf("the message beside the name: %q", msg)
	}
	if msg := text(t, tb.page.Locator("#e-col1_name")); !strings.Contains(msg, `column 2: name "id" is reserved`) {
		t.Fatalf("the message beside column 2: %q", msg)
	}
	if v, _ := tb.role("textbox", "Column 1 name").InputValue(); v != "title" {
		t.Fatalf("column 1 holds %q after the refusal", v)
	}
	if on, _ := tb.role("checkbox", "Column 1 unique").IsChecked(); !on {
		t.Fatal("column 1 is no longer unique after the refusal")
	}
	tb.check("collections-refused")

	// Defined, once for a double submit.
	tb.fill("Collection name", "tasks")
	tb.fill("Column 2 name", "points")
	tb.fill("Column 3 name", "done")
	sel("Column 3 type", "boolean")
	tb.fill("Column 4 name", "tags")
	sel("Column 4 type", "text[]")
	if err := tb.role("button", "Define collection").Click(playwright.LocatorClickOptions{ClickCount: playwright.Int(2)}); err != nil {
		t.Fatal(err)
	}
	tb.waitPath("/collections/")
	tb.see("heading", "Collection tasks")
	tb.contains("The collection is defined.")
	colls := a.api(200, "GET", "/api/guilds/"+guild+"/collections", nil)["collections"].([]any)
	if len(colls) != 1 {
		t.Fatalf("%d collections after a double submit, want 1", len(colls))
	}
	coll := colls[0].(map[string]any)
	id := coll["id"].(string)
	var cols []string
	for _, c := range coll["columns"].([]any) {
		m := c.(map[string]any)
		cols = append(cols, m["name"].(string)+":"+m["type"].(string)+":"+strconv.FormatBool(m["required"] == true)+":"+strconv.FormatBool(m["unique"] == true))
	}
	if got := strings.Join(cols, " "); got != "title:text:true:true points:number:false:false done:boolean:false:false tags:text[]:false:false" {
		t.Fatalf("the columns defined: %s", got)
	}

	// Granted: Writer's own grant, none.
	if _, err := tb.role("combobox", "Grant to").SelectOption(playwright.SelectOptionValues{Labels: &[]string{"Writer"}}); err != nil {
		t.Fatal(err)
	}
	sel("Access", "none")
	tb.click("Grant")
	tb.contains("The grant is saved")
	tb.see("rowheader", "agent Writer")
	grants := a.api(200, "GET", "/api/collections/"+id, nil)["grants"].([]any)
	if len(grants) != 1 || grants[0].(map[string]any)["agent_id"] != writer || grants[0].(map[string]any)["access"] != "none" {
		t.Fatalf("the grants after Grant: %v", grants)
	}

	// Records written by Scout's run: 55, three of them invoices.
	run := a.api(201, "POST", "/api/agents/"+scout+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	for i := range 55 {
		title := "task number " + strconv.Itoa(i)
		if i%20 == 3 {
			title = "invoice for " + strconv.Itoa(i)
		}
		a.api(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "record_add", "arguments": map[string]any{"collection": "tasks",
			"body": map[string]any{"title": title, "points": i, "done": i%2 == 0, "tags": []string{"alpha", "beta"}}}})
	}
	tb.go_("/collections/" + id)
	tb.see("heading", "Records (55)")
	rows := func() int {
		t.Helper()
		n, err := tb.page.Locator("table.records tbody tr").Count()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != 50 {
		t.Fatalf("the first page shows %d records, want 50", n)
	}
	tb.see("cell", "task number 54")
	tb.see("cell", "alpha, beta")
	tb.check("collection")
	tb.follow("Older records")
	tb.see("link", "Newer records")
	if n := rows(); n != 5 {
		t.Fatalf("the second page shows %d records, want 5", n)
	}
	tb.see("cell", "task number 0")

	// Searched: the invoices, as the API finds them.
	search := func(words string) {
		t.Helper()
		if err := tb.role("searchbox", "Words in any column").Fill(words); err != nil {
			t.Fatal(err)
		}
		tb.click("Search")
	}
	search("invoice")
	tb.see("heading", "Records (3 found)")
	found := a.api(200, "GET", "/api/collections/"+id+"/records?q=invoice", nil)
	if found["total"].(float64) != 3 || rows() != 3 {
		t.Fatalf("the search shows %d rows; the API finds %v", rows(), found["total"])
	}
	for _, r := range found["records"].([]any) {
		tb.see("cell", r.(map[string]any)["title"].(string))
	}
	if err := tb.role("searchbox", "Words in any column").Fill("nowhere"); err != nil { // sent by Enter
		t.Fatal(err)
	}
	if err := tb.role("searchbox", "Words in any column").Press("Enter"); err != nil {
		t.Fatal(err)
	}
	tb.contains("No record holds “nowhere”.")

	// An organisation's table, granted to the guild.
	tb.go_("/orgs/" + org + "/collections")
	tb.fill("Collection name", "contacts")
	tb.fill("Column 1 name", "email")
	tb.click("Define collection")
	tb.see("heading", "Collection contacts")
	if _, err := tb.role("combobox", "Grant to").SelectOption(playwright.SelectOptionValues{Labels: &[]string{"Research"}}); err != nil {
		t.Fatal(err)
	}
	sel("Access", "read")
	tb.click("Grant")
	tb.see("rowheader", "guild Research")
	oc := a.api(200, "GET", "/api/orgs/"+org+"/collections", nil)["collections"].([]any)
	if len(oc) != 1 {
		t.Fatalf("%d organisation collections, want 1", len(oc))
	}
	og, _ := a.api(200, "GET", "/api/collections/"+oc[0].(map[string]any)["id"].(string), nil)["grants"].([]any)
	if len(og) != 1 || og[0].(map[string]any)["guild_id"] != guild || og[0].(map[string]any)["access"] != "read" {
		t.Fatalf("the organisation table's grants: %v", og)
	}
	tb.go_("/orgs/" + org + "/collections")
	tb.see("link", "contacts")
	tb.check("collections")

	// A viewer: the tables and the records, no form.
	vt := a.signIn("vic@example.com")
	vt.go_("/guilds/" + guild)
	vt.follow("Collections")
	vt.see("link", "tasks")
	vt.none("button", "Define collection")
	vt.none("textbox", "Collection name")
	vt.follow("tasks")
	vt.see("heading", "Records (55)")
	vt.see("rowheader", "agent Writer")
	vt.none("button", "Grant")
	vt.none("combobox", "Grant to")
	vt.check("collection-viewer")
}
