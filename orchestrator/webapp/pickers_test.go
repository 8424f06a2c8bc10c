package webapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/github/githubtest"
	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mxschmitt/playwright-go"
)

// cgKey is the CoinGecko Pro key the loopback CoinGecko accepts.
const cgKey = "CG-webapp-pro-key-51a9e2"

// coinGecko is adapterstest's CoinGecko on loopback, its search answering the coins whose name or
// symbol holds the query (Bitcoin, Ethereum, Dogecoin and 24 test coins, at most 20 kept by the
// adapter) and its quotes covering every coin but Dogecoin.
func coinGecko(t testing.TB) *adapterstest.Fake {
	f := adapterstest.CoinGecko(t, cgKey)
	coins := []map[string]any{{"id": "bitcoin", "name": "Bitcoin", "symbol": "BTC"}, {"id": "ethereum", "name": "Ethereum", "symbol": "ETH"},
		{"id": "dogecoin", "name": "Dogecoin", "symbol": "DOGE"}}
	for i := 1; i <= 24; i++ {
		coins = append(coins, map[string]any{"id": fmt.Sprintf("testcoin-%02d", i), "name": fmt.Sprintf("Testcoin %02d", i), "symbol": fmt.Sprintf("T%02d", i)})
	}
	f.Handle("GET /api/v3/search", func(w http.ResponseWriter, r *http.Request) {
		q := strings.ToLower(r.URL.Query().Get("query"))
		out := []map[string]any{}
		for _, c := range coins {
			if strings.Contains(strings.ToLower(c["name"].(string)), q) || strings.Contains(strings.ToLower(c["symbol"].(string)), q) {
				out = append(out, c)
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"coins": out})
	})
	f.Handle("GET /api/v3/simple/price", func(w http.ResponseWriter, r *http.Request) {
		out := map[string]any{}
		for _, id := range strings.Split(r.URL.Query().Get("ids"), ",") {
			if id != "dogecoin" {
				out[id] = map[string]any{"usd": 1.5, "usd_24h_change": 0.5, "last_updated_at": 1711843200}
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	return f
}

// checked fails the test unless the checkbox named name is there and checked (or not).
func (tb *tab) checked(name string, want bool) {
	tb.t.Helper()
	l := tb.role("checkbox", name)
	var err error
	if want {
		err = playwright.NewPlaywrightAssertions(15000).Locator(l).ToBeChecked()
	} else {
		err = playwright.NewPlaywrightAssertions(15000).Locator(l).Not().ToBeChecked()
	}
	if err != nil {
		tb.t.Fatalf("%s: the checkbox %q checked=%v: %v", tb.path(), name, !want, err)
	}
}

// search types q into the box named Search coins (htmx asks as the operator types) and waits for
// the result named want.
func (tb *tab) search(q, want string) {
	tb.t.Helper()
	tb.fillRole("searchbox", "Search coins", q)
	tb.see("checkbox", want)
}

// fillRole types into the element with role and name.
func (tb *tab) fillRole(role, name, value string) {
	tb.t.Helper()
	if err := tb.role(role, name).Fill(value); err != nil {
		tb.t.Fatalf("fill %s %q: %v", role, name, err)
	}
}

// tick checks the checkbox named name.
func (tb *tab) tick(name string, on bool) {
	tb.t.Helper()
	l := tb.role("checkbox", name)
	var err error
	if on {
		err = l.Check()
	} else {
		err = l.Uncheck()
	}
	if err != nil {
		tb.t.Fatalf("set the checkbox %q to %v: %v", name, on, err)
	}
}

// TestCoinPicker: Pinned prices connects from a guild's Tools view with its coin picker. The
// search box (named Search coins) asks CoinGecko as the operator types, with the key as typed
// (without one, the API's message shows beside the box); ticked results join the chosen coins,
// which a new search keeps. A coin CoinGecko does not quote is refused with the API's message
// beside the coins, the coins kept chosen and the key never echoed; without it Connect connects
// the login with its coins. The login's page changes them: 21 coins are refused beside the field
// (kept), 20 are saved; a result is ticked by keyboard alone; a viewer reads the coins with no
// picker. On the same box (no GitHub App),
// GitHub shows Not set up with its variables and no Connect.
func TestCoinPicker(t *testing.T) {
	t.Parallel()
	cg := coinGecko(t)
	a := newApp(t, nil)
	a.account("ada@example.com", "Ada", true)
	viewer := a.account("vic@example.com", "Vic", false)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)
	a.api(200, "PATCH", "/api/admin/mcp/servers/pinned_prices", map[string]any{"url": cg.URL + "/api/v3"})
	a.api(200, "PUT", "/api/orgs/"+org+"/members/"+viewer, map[string]any{"role": "viewer"})

	tb := a.signIn("ada@example.com")
	tb.go_("/guilds/" + guild + "/tools")
	gh := tb.see("region", "GitHub")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(gh).ToContainText("GITHUB_APP_ID"); err != nil {
		t.Fatalf("GitHub's region does not name its variables: %v", err)
	}
	if n, _ := gh.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)}).Count(); n != 0 {
		t.Fatal("GitHub offers Connect without its App")
	}
	if err := tb.see("region", "Pinned prices").GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.waitPath("/guilds/" + guild + "/connect/pinned_prices")
	tb.see("heading", "Connect Pinned prices")
	tb.see("group", "Coins")

	// Without a key, the search says what is missing beside the box.
	tb.fillRole("searchbox", "Search coins", "bit")
	tb.contains("api_key (the CoinGecko Pro API key) is required")
	key := tb.page.GetByLabel("CoinGecko Pro API key")
	if err := key.Fill(cgKey); err != nil {
		t.Fatal(err)
	}
	tb.search("bitc", "Bitcoin (BTC)")
	tb.tick("Bitcoin (BTC)", true)
	tb.search("eth", "Ethereum (ETH)")
	tb.checked("Bitcoin (BTC)", true) // kept through the new search
	tb.tick("Ethereum (ETH)", true)
	tb.search("doge", "Dogecoin (DOGE)")
	tb.tick("Dogecoin (DOGE)", true)
	tb.contains("3 chosen.")
	tb.fillRole("searchbox", "Search coins", "test")
	tb.see("checkbox", "Testcoin 01 (T01)")
	tb.check("connect-coins")

	// Dogecoin is not quoted: refused beside the coins, which stay chosen; the key is not echoed.
	tb.click("Connect")
	tb.see("heading", "Connect Pinned prices")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#e-coins")).ToContainText("does not quote dogecoin"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"Bitcoin (BTC)", "Ethereum (ETH)", "Dogecoin (DOGE)"} {
		tb.checked(c, true)
	}
	if html, _ := tb.page.Content(); strings.Contains(html, cgKey) {
		t.Fatal("the refused form echoes the key")
	}
	tb.check("connect-coins-refused")
	if n := len(a.api(200, "GET", "/api/mcp/connections?scope=guild&scope_id="+guild, nil)["connections"].([]any)); n != 0 {
		t.Fatalf("%d logins after the refusal", n)
	}
	tb.tick("Dogecoin (DOGE)", false)
	if err := key.Fill(cgKey); err != nil {
		t.Fatal(err)
	}
	tb.click("Connect")
	tb.waitPath("/guilds/" + guild + "/tools")
	tb.contains("Pinned prices is connected here")
	conns := a.api(200, "GET", "/api/mcp/connections?scope=guild&scope_id="+guild, nil)["connections"].([]any)
	if len(conns) != 1 {
		t.Fatalf("the guild's logins: %v", conns)
	}
	conn := conns[0].(map[string]any)
	if b, _ := json.Marshal(conn["settings"]); conn["status"] != "connected" || string(b) != `{"coins":[{"id":"bitcoin","name":"Bitcoin","symbol":"BTC"},{"id":"ethereum","name":"Ethereum","symbol":"ETH"}]}` {
		t.Fatalf("the login %v, its settings %s", conn, b)
	}
	id := conn["id"].(string)

	// The login's page: its coins chosen; 21 are refused beside the field and kept, 20 saved.
	tb.go_("/connections/" + id)
	tb.see("heading", "Pinned coins")
	tb.checked("Bitcoin (BTC)", true)
	tb.checked("Ethereum (ETH)", true)
	tb.search("testcoin", "Testcoin 01 (T01)")
	// By keyboard alone: focus a result and tick it with Space; it joins the chosen coins.
	if err := tb.role("checkbox", "Testcoin 01 (T01)").Focus(); err != nil {
		t.Fatal(err)
	}
	if err := tb.page.Keyboard().Press("Space"); err != nil {
		t.Fatal(err)
	}
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#coins-chosen")).ToContainText("Testcoin 01 (T01)"); err != nil {
		t.Fatalf("the ticked result did not join the chosen coins: %v", err)
	}
	tb.contains("3 chosen.")
	for i := 2; i <= 19; i++ {
		tb.tick(fmt.Sprintf("Testcoin %02d (T%02d)", i, i), true)
	}
	tb.contains("21 chosen.")
	tb.check("connection-coins")
	tb.click("Save coins")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#e-coins")).ToContainText("pins 1 to 20 coins"); err != nil {
		t.Fatal(err)
	}
	tb.checked("Testcoin 19 (T19)", true)
	tb.checked("Bitcoin (BTC)", true)
	tb.tick("Ethereum (ETH)", false)
	tb.click("Save coins")
	tb.contains("The coins are saved: 20 pinned")
	got := a.api(200, "GET", "/api/mcp/connections/"+id, nil)["settings"].(map[string]any)["coins"].([]any)
	if len(got) != 20 || got[0].(map[string]any)["id"] != "bitcoin" || got[19].(map[string]any)["id"] != "testcoin-19" {
		t.Fatalf("the saved coins %v", got)
	}
	tb.check("connection-coins-saved")

	// A viewer reads the login's coins, with no picker and no Save.
	vt := a.signIn("vic@example.com")
	vt.go_("/connections/" + id)
	vt.contains("Bitcoin (BTC), Testcoin 01 (T01)")
	vt.none("searchbox", "Search coins")
	vt.none("button", "Save coins")

	// GitHub without its App: the Connect page says which variables to set, with no Connect.
	tb.go_("/guilds/" + guild + "/connect/github")
	tb.contains("GitHub is not set up on this box: set GITHUB_APP_ID")
	tb.none("button", "Connect")
}

// driveMCP is an MCP server standing for Drive's: the orchestrator lists its tools with the
// login's token once the folder is picked.
func driveMCP() http.Handler {
	s := server.NewMCPServer("drivemcp", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	for _, name := range []string{"search_files", "read_file_content"} {
		s.AddTool(mcpgo.NewTool(name, mcpgo.WithDescription("Drive's "+name+"."), mcpgo.WithString("query")),
			func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText("listed only"), nil
			})
	}
	return server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
}

// TestDrivePicker: Google Drive connects from an organisation's Tools view through Google's
// consent (googletest on loopback) and lands, pending, on the login's page with its folder picker:
// a radio group named Folder (My Drive and Shared with me opened, never picked), each folder
// opened by a link; using no folder is refused beside the picker; Projects, inside My Drive,
// connects the login with its tools. The callback opened again (its state used) lands on the app's
// page saying why nothing was connected, holding no code or state; that page shows its reason once.
func TestDrivePicker(t *testing.T) {
	t.Parallel()
	g := googletest.New(driveMCP())
	t.Cleanup(g.Close)
	a := newApp(t, map[string]string{"GMAIL_OAUTH_CLIENT_ID": googletest.ClientID, "GMAIL_OAUTH_CLIENT_SECRET": googletest.ClientSecret})
	a.account("ada@example.com", "Ada", true)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	a.api(200, "PATCH", "/api/admin/mcp/servers/drive", map[string]any{"url": g.URL + "/mcp/v1", "endpoints": g.DriveEndpoints()})

	tb := a.signIn("ada@example.com")
	var mu sync.Mutex
	var callback string // the callback's address, as Google sent the browser to it
	tb.page.OnRequest(func(r playwright.Request) {
		if strings.Contains(r.URL(), "/api/mcp/oauth/callback?") {
			mu.Lock()
			callback = r.URL()
			mu.Unlock()
		}
	})
	tb.go_("/orgs/" + org + "/tools")
	if err := tb.see("region", "Google Drive").GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.see("heading", "Connect Google Drive")
	tb.click("Connect")
	tb.waitPath("/connections/")
	tb.contains("pick them below")
	tb.see("heading", "Pick the folder")
	tb.see("radiogroup", "Folder")
	for _, root := range []string{"My Drive", "Shared with me"} {
		if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.role("radio", root)).ToBeDisabled(); err != nil {
			t.Fatalf("%s can be picked: %v", root, err)
		}
	}
	tb.check("drive-folders")
	tb.follow("Open My Drive")
	tb.see("radio", "Projects")
	tb.see("radio", "Private")
	tb.click("Use this folder") // none picked
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#e-folder")).ToContainText("pick one folder that is not My Drive"); err != nil {
		t.Fatal(err)
	}
	tb.see("radio", "Projects") // still inside My Drive
	if err := tb.role("radio", "Projects").Check(); err != nil {
		t.Fatal(err)
	}
	tb.click("Use this folder")
	tb.contains("The login is confined to the folder Projects and connected")
	tb.see("cell", "drive_search_files")
	conns := a.api(200, "GET", "/api/mcp/connections?scope=org&scope_id="+org, nil)["connections"].([]any)
	if len(conns) != 1 || conns[0].(map[string]any)["status"] != "connected" || conns[0].(map[string]any)["account_hint"] != "Projects" {
		t.Fatalf("the organisation's logins %v", conns)
	}

	// The callback again: its state is used, so nothing is connected; the app says why.
	mu.Lock()
	cb := callback
	mu.Unlock()
	u, err := url.Parse(cb)
	if err != nil || u.Query().Get("code") == "" {
		t.Fatalf("the callback's address %q carries no code", cb)
	}
	tb.go_(cb)
	tb.waitPath("/connect/result")
	tb.see("heading", "Nothing was connected")
	tb.contains("this login link is unknown or was already used")
	html, _ := tb.page.Content()
	for _, secret := range append(g.Tokens(), u.Query().Get("code"), u.Query().Get("state")) {
		if strings.Contains(html, secret) || strings.Contains(tb.page.URL(), secret) {
			t.Fatalf("the landing page or its address holds %q", secret)
		}
	}
	tb.check("connect-failed")
	if _, err := tb.page.Reload(); err != nil {
		t.Fatal(err)
	}
	tb.see("heading", "No result to show")
	if n := len(a.api(200, "GET", "/api/mcp/connections?scope=org&scope_id="+org, nil)["connections"].([]any)); n != 1 {
		t.Fatalf("%d logins after the replayed callback", n)
	}
}

// TestGitHubPickers: GitHub connects from an organisation's Tools view by installing the box's
// App (githubtest's GitHub on loopback): Connect sends the browser to the install page and the
// callback lands it on the login's page, connected, with the repository picker (a group named
// Repositories). Saving one repository stores the selection; one the installation no longer
// reaches is refused beside the picker, the ticks kept. A guild's Connect, the user reaching two
// installations, lands on the installation picker (a radio group named GitHub account), whose
// pick connects the guild's login.
func TestGitHubPickers(t *testing.T) {
	t.Parallel()
	f := githubtest.New(t)
	f.AddRepo(githubtest.Repo{ID: 101, Owner: "acme", Name: "api"})
	f.AddRepo(githubtest.Repo{ID: 102, Owner: "acme", Name: "secret", Private: true})
	f.AddRepo(githubtest.Repo{ID: 103, Owner: "other", Name: "site"})
	f.AddInstall(61, "acme", 101, 102)
	f.AddInstall(62, "other", 103)
	f.LoginAs("octo", 61)
	a := newApp(t, f.Env())
	a.anyCert = true // the fake GitHub's own certificate
	f.Mu.Lock()
	f.Callback = a.url + "/api/mcp/oauth/callback"
	f.Mu.Unlock()
	a.account("ada@example.com", "Ada", true)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)

	tb := a.signIn("ada@example.com")
	tb.go_("/orgs/" + org + "/tools")
	if err := tb.see("region", "GitHub").GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Connect", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	tb.see("heading", "Connect GitHub")
	tb.check("connect-github")
	tb.click("Connect")
	tb.waitPath("/connections/")
	tb.contains("Signed in: the login is connected")
	conns := a.api(200, "GET", "/api/mcp/connections?scope=org&scope_id="+org, nil)["connections"].([]any)
	if len(conns) != 1 || conns[0].(map[string]any)["status"] != "connected" || conns[0].(map[string]any)["account_hint"] != "acme" {
		t.Fatalf("the organisation's logins %v", conns)
	}
	id := conns[0].(map[string]any)["id"].(string)
	tb.see("group", "Repositories")
	tb.checked("acme/api", false)
	tb.checked("acme/secret private", false)
	tb.tick("acme/api", true)
	tb.click("Save repositories")
	tb.contains("The repositories are saved: 1 picked.")
	tb.checked("acme/api", true)
	tb.check("connection-github")
	acc := a.api(200, "GET", "/api/orgs/"+org+"/tools", nil)
	var sel []any
	for _, s := range acc["mcp_servers"].([]any) {
		if s := s.(map[string]any); s["connection_id"] == id {
			sel, _ = s["github_repositories"].([]any)
		}
	}
	if len(sel) != 1 || sel[0].(map[string]any)["full_name"] != "acme/api" {
		t.Fatalf("the selection %v", sel)
	}

	// The installation stops reaching acme/secret while the page shows it: refused beside the picker.
	tb.tick("acme/secret private", true)
	f.Mu.Lock()
	f.Installs[61].Repos = []int64{101}
	f.Mu.Unlock()
	tb.click("Save repositories")
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("#e-repos")).ToContainText("cannot reach"); err != nil {
		t.Fatal(err)
	}
	tb.checked("acme/api", true)

	// The guild's Connect: the organisation has a login, so GitHub asks the user, who reaches two
	// installations: the app's installation picker.
	f.LoginAs("octo", 61, 62)
	tb.go_("/guilds/" + guild + "/connect/github")
	tb.click("Connect")
	tb.waitPath("/github/installations")
	tb.see("radiogroup", "GitHub account")
	tb.check("github-installations")
	tb.click("Use this account") // none picked
	tb.contains("installation_id must be a number")
	if err := tb.role("radio", "other").Check(); err != nil {
		t.Fatal(err)
	}
	tb.click("Use this account")
	tb.waitPath("/connections/")
	tb.contains("Signed in: the login is connected")
	tb.see("checkbox", "other/site")
	gc := a.api(200, "GET", "/api/mcp/connections?scope=guild&scope_id="+guild, nil)["connections"].([]any)
	if len(gc) != 1 || gc[0].(map[string]any)["account_hint"] != "other" || gc[0].(map[string]any)["status"] != "connected" {
		t.Fatalf("the guild's logins %v", gc)
	}
}

// BenchmarkPickers times a Pinned prices login's page (its coin picker) and the picker's search
// (the fragment htmx swaps in) against the JSON API reads each is made of, made by a client with
// the same session over HTTP in the same run, and reports page / reads as x-<page>.
func BenchmarkPickers(b *testing.B) {
	cg := coinGecko(b)
	a := newApp(b, nil)
	a.account("ada@example.com", "Ada", true)
	org := a.api(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := a.api(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)
	a.api(200, "PATCH", "/api/admin/mcp/servers/pinned_prices", map[string]any{"url": cg.URL + "/api/v3"})
	coins := []any{}
	for i := 1; i <= 10; i++ {
		coins = append(coins, map[string]any{"id": fmt.Sprintf("testcoin-%02d", i), "symbol": fmt.Sprintf("T%02d", i), "name": fmt.Sprintf("Testcoin %02d", i)})
	}
	id := a.api(201, "POST", "/api/mcp/connections", map[string]any{"server": "pinned_prices", "scope": "guild", "scope_id": guild,
		"credentials": map[string]any{"api_key": cgKey}, "coins": coins})["id"].(string)
	c := a.newClient("ada@example.com")
	common := []string{"/api/sessions/current", "/api/instance"}
	conn := "/api/mcp/connections/" + id
	pages := []struct {
		name, page string
		reads      []string
	}{
		{"connection-coins", "/connections/" + id, []string{conn, "/api/guilds/" + guild, "/api/orgs/" + org, conn + "/tools", "/api/mcp/servers"}},
		{"coin-search", "/connections/" + id + "/coins?q=testcoin", []string{conn + "/pinned-prices/search?q=testcoin"}},
	}
	get := func(path string) {
		resp, body := c.get(path)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %.300s", path, resp.StatusCode, body)
		}
	}
	const reps = 20
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pages {
			get(p.page) // warm
			var page, reads time.Duration
			for r := 0; r < reps; r++ {
				t0 := time.Now()
				get(p.page)
				t1 := time.Now()
				for _, path := range append(append([]string(nil), common...), p.reads...) {
					get(path)
				}
				page, reads = page+t1.Sub(t0), reads+time.Since(t1)
			}
			ratio := float64(page) / float64(reads)
			b.ReportMetric(ratio, "x-"+p.name)
			b.Logf("%-16s page %6.2f ms, its %d API reads %6.2f ms: %.2fx", p.name,
				float64(page.Microseconds())/1000/reps, len(common)+len(p.reads), float64(reads.Microseconds())/1000/reps, ratio)
		}
	}
}
