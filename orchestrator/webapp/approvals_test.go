package webapp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/shared/benchtest"
	"github.com/mxschmitt/playwright-go"
)

// callAnswer is what a tool call sent on its own goroutine got back.
type callAnswer struct {
	status int
	body   map[string]any
	err    error
}

// callAsync makes a tool call of a run through the API with the bootstrap token on a goroutine of
// its own (it waits for an approval); the answer arrives on the channel.
func (a *app) callAsync(run, tool string, args map[string]any) <-chan callAnswer {
	out := make(chan callAnswer, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
		req, _ := http.NewRequest("POST", a.url+"/api/runs/"+run+"/calls", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+wiretest.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- callAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		ans := callAnswer{status: resp.StatusCode}
		ans.err = json.NewDecoder(resp.Body).Decode(&ans.body)
		out <- ans
	}()
	return out
}

// result waits for a call's answer (a hang guard of a minute) and answers its result text.
func result(t *testing.T, ch <-chan callAnswer) string {
	t.Helper()
	select {
	case ans := <-ch:
		if ans.err != nil || ans.status != 200 {
			t.Fatalf("the call answered %d %v (%v)", ans.status, ans.body, ans.err)
		}
		return ans.body["result"].(string)
	case <-time.After(time.Minute):
		t.Fatal("the call did not answer within a minute")
	}
	return ""
}

// pendingOf waits until the agent has n pending requests (a hang guard of 30 s) and answers
// their ids, newest first.
func (a *app) pendingOf(agent string, n int) []string {
	a.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		list := a.api(200, "GET", "/api/agents/"+agent+"/approvals?status=pending", nil)["approvals"].([]any)
		if len(list) == n {
			ids := make([]string, n)
			for i, x := range list {
				ids[i] = x.(map[string]any)["id"].(string)
			}
			return ids
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("%d pending requests after 30 s, want %d", len(list), n)
		}
	}
}

// TestApprovals: note_write is Ask at a guild; a call of it through the API waits while the
// guild's operator sees the banner on every page, opens the inbox from it, reads the call's
// arguments laid out as the tool's form (read-only) and approves in two clicks (Approve, then
// Confirm approval), after which the call answers the tool's result; a denial's reason shows in the
// call's ERROR: result; the guild's list filters by status; a viewer of the organisation has no
// banner and sees the waiting request without its arguments and without Approve or Deny.
func TestApprovals(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	op := a.account("olu@example.com", "Olu", false)
	viewer := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Treasury"})["id"].(string)
	agent := a.api(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Scribe"})["id"].(string)
	a.api(200, "PUT", "/api/guilds/"+guild+"/members/"+op, map[string]any{"role": "operator"})
	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+viewer, map[string]any{"role": "viewer"})
	a.api(200, "PUT", "/api/bindings", map[string]any{"scope": "guild", "scope_id": guild, "catalog_kind": "native_tool", "catalog_id": "note_write", "enabled": true, "ask": true})
	run := a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)

	call := a.callAsync(run, "note_write", map[string]any{"level": "guild", "key": "payouts.md", "content": "Pay the supplier 0.75 ETH on Friday."})
	id := a.pendingOf(agent, 1)[0]

	// The operator: the banner on the first page, the inbox from it.
	tb := a.signIn("olu@example.com")
	tb.see("link", "1 approval waiting")
	tb.go_("/guilds/" + guild)
	tb.see("link", "1 approval waiting").First().Click()
	tb.waitPath("/approvals")
	card := tb.page.GetByRole("article").Filter(playwright.LocatorFilterOptions{HasText: id})
	tb.see("heading", "1 pending")
	for field, want := range map[string]string{"key": "payouts.md", "content": "Pay the supplier 0.75 ETH on Friday."} {
		box := card.GetByRole("textbox", playwright.LocatorGetByRoleOptions{Name: field, Exact: playwright.Bool(true)})
		if got, err := box.InputValue(); err != nil || got != want {
			t.Fatalf("the %s field shows %q (%v), want %q", field, got, err, want)
		}
		if !strings.Contains(mustHTML(t, box), "readonly") {
			t.Fatalf("the %s field is not read-only", field)
		}
	}
	level := card.GetByRole("combobox", playwright.LocatorGetByRoleOptions{Name: "level", Exact: playwright.Bool(true)})
	if got, err := level.InputValue(); err != nil || got != "guild" {
		t.Fatalf("the level field shows %q (%v), want guild", got, err)
	}
	if n, _ := card.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: run, Exact: playwright.Bool(true)}).Count(); n != 1 {
		t.Fatalf("the request links its run %s %d times", run, n)
	}
	tb.check("approvals-inbox")

	// Two clicks: Approve, then Confirm approval. The call then answers the tool's result.
	if err := card.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Approve", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.waitPath("/approvals/" + id)
	tb.contains("Approve this call?")
	tb.check("approvals-confirm")
	select {
	case ans := <-call:
		t.Fatalf("the call answered after one click: %v", ans.body)
	default:
	}
	tb.click("Confirm approval")
	tb.waitPath("/approvals?decided=approved")
	tb.contains("Approved: the call runs now")
	if r := result(t, call); !strings.HasPrefix(r, "wrote guild/payouts.md") {
		t.Fatalf("the approved call's result %q", r)
	}
	tb.see("heading", "Nothing waiting")
	tb.none("link", "1 approval waiting")
	if got := a.api(200, "GET", "/api/approvals/"+id, nil); got["status"] != "approved" || got["decided_by"] != op {
		t.Fatalf("the request after the inbox's approval %v", got)
	}

	// A denial with a reason: the call's ERROR: result carries it.
	call = a.callAsync(run, "note_write", map[string]any{"level": "org", "key": "policy.md", "content": "Anyone may spend."})
	id2 := a.pendingOf(agent, 1)[0]
	tb.go_("/orgs/" + org)
	tb.see("link", "1 approval waiting")
	tb.go_("/approvals")
	card = tb.page.GetByRole("article").Filter(playwright.LocatorFilterOptions{HasText: id2})
	if err := card.GetByRole("textbox", playwright.LocatorGetByRoleOptions{Name: "Reason for a denial"}).Fill("organisation notes need the owner's review"); err != nil {
		t.Fatal(err)
	}
	if err := card.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Deny", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.waitPath("/approvals?decided=denied")
	tb.contains("Denied: the call did not run")
	if r := result(t, call); !strings.HasPrefix(r, "ERROR: an operator denied this call of note_write") || !strings.Contains(r, "Their reason: organisation notes need the owner's review") {
		t.Fatalf("the denied call's result %q", r)
	}

	// The guild's list, filtered by status.
	tb.go_("/approvals/" + id2)
	tb.follow("Treasury's approvals")
	tb.waitPath("/guilds/" + guild + "/approvals")
	tb.see("heading", "2 requests")
	tb.check("approvals-guild")
	tb.follow("Denied")
	tb.waitPath("/guilds/" + guild + "/approvals?status=denied")
	tb.see("heading", "1 denied")
	tb.contains("organisation notes need the owner's review")
	tb.contains("by you")
	tb.follow("Pending")
	tb.see("heading", "Nothing waiting")

	// A viewer: no banner, the waiting request without its arguments, no decision.
	call = a.callAsync(run, "note_write", map[string]any{"level": "agent", "key": "todo.md", "content": "later"})
	id3 := a.pendingOf(agent, 1)[0]
	vt := a.signIn("vic@example.com")
	vt.none("link", "1 approval waiting")
	vt.go_("/approvals")
	vt.see("heading", "1 pending")
	vt.contains(id3)
	vt.contains("The arguments are shown to operators and owners only.")
	vt.none("button", "Approve")
	vt.none("button", "Deny")
	vt.none("textbox", "content")
	vt.check("approvals-viewer")
	tb.go_("/runs/" + run)
	tb.see("link", "1 approval waiting")
	a.api(200, "POST", "/api/approvals/"+id3+"/deny", map[string]any{"reason": "end of test"})
	if r := result(t, call); !strings.Contains(r, "end of test") {
		t.Fatalf("the third call %q", r)
	}
}

// mustHTML is an element's outer HTML.
func mustHTML(t *testing.T, l playwright.Locator) string {
	t.Helper()
	h, err := l.Evaluate("e => e.outerHTML", nil)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(h)
}

// BenchmarkApprovalsBanner times what the approvals banner costs a page: the organisations page
// for an operator of the organisation (its one count read, GET /api/approvals/pending, with 3
// requests waiting) against the same page for a viewer of the same organisation (who may decide
// nothing, so no read is made), alternating in one run; and the count read itself over HTTP with
// the operator's session against GET /api/sessions/current (the read every page makes first).
func BenchmarkApprovalsBanner(b *testing.B) {
	a := newApp(b, nil)
	op := a.account("olu@example.com", "Olu", false)
	viewer := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Treasury"})["id"].(string)
	agent := a.api(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Scribe"})["id"].(string)
	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+op, map[string]any{"role": "operator"})
	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+viewer, map[string]any{"role": "viewer"})
	a.api(200, "PUT", "/api/bindings", map[string]any{"scope": "guild", "scope_id": guild, "catalog_kind": "native_tool", "catalog_id": "note_write", "enabled": true, "ask": true})
	run := a.api(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	for i := range 3 {
		a.callAsync(run, "note_write", map[string]any{"level": "agent", "key": fmt.Sprintf("n%d.md", i), "content": "x"})
	}
	ids := a.pendingOf(agent, 3)
	opc, vc := a.newClient("olu@example.com"), a.newClient("vic@example.com")
	get := func(c *client, path, want string) func() {
		return func() {
			resp, body := c.get(path)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
				b.Fatalf("GET %s: %d, no %q in %.300s", path, resp.StatusCode, want, body)
			}
		}
	}
	if _, page := vc.get("/orgs"); strings.Contains(page, "approvals waiting") {
		b.Fatal("the viewer's page shows the banner")
	}
	opPage, viewerPage := get(opc, "/orgs", "3 approvals waiting"), get(vc, "/orgs", "Acme")
	count, session := get(opc, "/api/approvals/pending", `"pending":3`), get(opc, "/api/sessions/current", op)
	for range 20 {
		opPage()
		viewerPage()
	}
	b.ResetTimer()
	for range b.N {
		m := benchtest.Alternate(200, opPage, viewerPage, count, session)
		added := m[0] - m[1]
		b.ReportMetric(benchtest.MS(m[0]), "page_with_banner_ms")
		b.ReportMetric(benchtest.MS(m[1]), "page_without_ms")
		b.ReportMetric(benchtest.MS(added), "banner_added_ms")
		b.ReportMetric(float64(m[0])/float64(m[1]), "x_vs_without")
		b.ReportMetric(float64(m[2])/float64(m[3]), "x_count_vs_session_read")
		b.Logf("the organisations page with the approvals banner: p50 %.3f ms | the same page for a viewer (no count read): p50 %.3f ms | %.3f ms added, %.2fx | the count read over HTTP: p50 %.3f ms, %.2fx of the session read (%.3f ms)",
			benchtest.MS(m[0]), benchtest.MS(m[1]), benchtest.MS(added), float64(m[0])/float64(m[1]), benchtest.MS(m[2]), float64(m[2])/float64(m[3]), benchtest.MS(m[3]))
	}
	b.StopTimer()
	for _, id := range ids {
		a.api(200, "POST", "/api/approvals/"+id+"/deny", map[string]any{"reason": "end of the benchmark"})
	}
}
