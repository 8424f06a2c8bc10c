package bindings_test

import (
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
)

func ptr(b bool) *bool { return &b }

// TestPutBindingRefuses: unknown catalog ids, bad kinds, scopes that cannot see the login, mcp_tool
// ids not listed on a visible login: each a clear 4xx, with nothing written.
func TestPutBindingRefuses(t *testing.T) {
	w := newWorld(t)
	orgConn := w.connect("coingecko", "org", "o1", cgKey)
	guildConn := w.connect("x", "guild", "g1", map[string]string{"bearer_token": "AAAA-bearer"})
	agentConn := w.connect("dexpaprika", "agent", "a1", map[string]string{"api_key": "dp-key"})
	otherOrg := w.connect("alchemy", "org", "o2", map[string]string{"api_key": "alc"})
	req := func(scope, id, kind, cat, conn string) bindings.BindingRequest {
		return bindings.BindingRequest{Scope: scope, ScopeID: id, CatalogKind: kind, CatalogID: cat, Enabled: ptr(true), ConnectionID: conn}
	}
	tests := []struct {
		name string
		req  bindings.BindingRequest
		code string
		msg  string
	}{
		{"unknown kind", req("agent", "a1", "plugin", "note_get", ""), orchestrator.EINVALID, "catalog_kind must be one of native_tool, mcp, mcp_tool, artifact_grant"},
		{"missing enabled", bindings.BindingRequest{Scope: "agent", ScopeID: "a1", CatalogKind: "native_tool", CatalogID: "note_get"}, orchestrator.EINVALID, "enabled is required"},
		{"unknown native tool", req("agent", "a1", "native_tool", "note_burn", ""), orchestrator.ENOTFOUND, `no native tool "note_burn"`},
		{"report_issue is never a binding", req("agent", "a1", "native_tool", "report_issue", ""), orchestrator.EINVALID, "report_issue is not a binding"},
		{"browser tools are never bindings", req("agent", "a1", "native_tool", "browser_snapshot", ""), orchestrator.EINVALID, "config.browser"},
		{"native binding with a connection", req("agent", "a1", "native_tool", "note_get", orgConn.ID), orchestrator.EINVALID, "only mcp bindings carry a connection_id"},
		{"unknown grant", req("guild", "g1", "artifact_grant", "read_everything", ""), orchestrator.ENOTFOUND, "the grants are read_guild"},
		{"unknown server", req("agent", "a1", "mcp", "myspace", ""), orchestrator.ENOTFOUND, `no catalog server "myspace"`},
		{"github is not bound", req("agent", "a1", "mcp", "github", ""), orchestrator.EINVALID, "lists no tools"},
		{"server without published tools", req("agent", "a1", "mcp", "notion", ""), orchestrator.EINVALID, "Notion has no published tools"},
		{"unknown connection", req("agent", "a1", "mcp", "coingecko", "conn_missing"), orchestrator.ENOTFOUND, `connection "conn_missing" not found`},
		{"connection of another server", req("agent", "a1", "mcp", "coingecko", guildConn.ID), orchestrator.EINVALID, "is a x login, not coingecko"},
		{"org login at another org's agent", req("agent", "a9", "mcp", "coingecko", orgConn.ID), orchestrator.EFORBIDDEN, "cannot be bound at agent a9"},
		{"org login at the platform", req("platform", "", "mcp", "coingecko", orgConn.ID), orchestrator.EFORBIDDEN, "cannot be bound at platform"},
		{"guild login at a sibling guild", req("guild", "g2", "mcp", "x", guildConn.ID), orchestrator.EFORBIDDEN, "owned by guild g1"},
		{"guild login at its organisation", req("org", "o1", "mcp", "x", guildConn.ID), orchestrator.EFORBIDDEN, "cannot be bound at org o1"},
		{"agent login at a teammate", req("agent", "a2", "mcp", "dexpaprika", agentConn.ID), orchestrator.EFORBIDDEN, "owned by agent a1"},
		{"mcp_tool with a connection", req("agent", "a1", "mcp_tool", "coingecko_coin", orgConn.ID), orchestrator.EINVALID, "only mcp bindings carry a connection_id"},
		{"mcp_tool not listed anywhere", req("agent", "a1", "mcp_tool", "coingecko_moon", ""), orchestrator.ENOTFOUND, "no connection lists a tool named coingecko_moon"},
		{"mcp_tool listed only on an invisible login", req("agent", "a1", "mcp_tool", "alchemy_holdings", ""), orchestrator.EFORBIDDEN, "cannot see"},
		{"platform scope with an id", req("platform", "o1", "native_tool", "note_get", ""), orchestrator.EINVALID, "scope_id must be empty for the platform"},
		{"missing agent", req("agent", "a404", "native_tool", "note_get", ""), orchestrator.ENOTFOUND, `agent "a404" not found`},
	}
	_ = otherOrg
	before := w.count("bindings")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.svc.PutBinding(w.ctx, tt.req)
			wantErr(t, err, tt.code, tt.msg)
			if w.count("bindings") != before {
				t.Fatal("a refused binding was written")
			}
		})
	}
}

// TestPutBindingAccepts: the visible logins, listed tools, grants and seed tools are accepted,
// and DELETE makes the scope inherit again.
func TestPutBindingAccepts(t *testing.T) {
	w := newWorld(t)
	orgConn := w.connect("coingecko", "org", "o1", cgKey)
	guildConn := w.connect("x", "guild", "g1", map[string]string{"bearer_token": "AAAA-bearer"})
	w.put("guild", "g2", "mcp", "coingecko", true, orgConn.ID)       // org login at its guild
	w.put("agent", "a3", "mcp", "coingecko", false, orgConn.ID)      // ... and its agents
	w.put("agent", "a2", "mcp", "x", true, guildConn.ID)             // guild login at a member
	w.put("agent", "a2", "mcp_tool", "x_search", false, "")          // a tool listed on a visible login
	w.put("org", "o1", "mcp_tool", "coingecko_new", false, "")       // org overlay
	w.put("guild", "g1", "artifact_grant", "write_org", true, "")    // a grant
	w.put("platform", "", "native_tool", "schedule_list", false, "") // platform row (seeded) replaced
	w.put("agent", "a1", "mcp", "coingecko", true, "")               // a server with published tools, no login
	w.put("org", "o1", "native_tool", "note_write", false, "")       // a seed tool this box does not register
	w.put("agent", "a1", "mcp", "notion", false, "")                 // turning off needs no tools
	pinned, err := w.svc.Connect(w.ctx, lifecycle.ConnectRequest{Server: "pinned_prices", Scope: "org", ScopeID: "o1", Credentials: cgKey,
		PinnedPrices: connections.PinnedPrices{Coins: []orchestrator.Coin{{ID: "bitcoin", Symbol: "btc", Name: "Bitcoin"}}}})
	if err != nil {
		t.Fatal(err)
	}
	w.put("guild", "g2", "mcp", "pinned_prices", true, pinned.ID) // Pinned prices lists no tools yet binds
	rows, err := w.svc.ListBindings(w.ctx, "agent", "a2")
	if err != nil || len(rows) != 2 {
		t.Fatalf("a2 rows %+v %v", rows, err)
	}
	del := bindings.BindingRequest{Scope: "agent", ScopeID: "a2", CatalogKind: "mcp_tool", CatalogID: "x_search"}
	if err := w.svc.DeleteBinding(w.ctx, del); err != nil {
		t.Fatal(err)
	}
	wantErr(t, w.svc.DeleteBinding(w.ctx, del), orchestrator.ENOTFOUND, "it already inherits")
	del.Enabled = ptr(true)
	wantErr(t, w.svc.DeleteBinding(w.ctx, del), orchestrator.EINVALID, "takes only scope")
	wantErr(t, w.svc.DeleteBinding(w.ctx, bindings.BindingRequest{Scope: "agent", ScopeID: "a2", CatalogKind: "tool", CatalogID: "x"}), orchestrator.EINVALID, "catalog_kind must be one of")
}

// TestReseedKeepsAdminEdits: reseeding updates seed rows and never an admin edit.
func TestReseedKeepsAdminEdits(t *testing.T) {
	w := newWorld(t)
	desc := "Market data through our CoinGecko Pro plan (ask #ops for limits)."
	if _, err := w.svc.PatchServer(w.ctx, "coingecko", orchestrator.ServerPatch{Description: &desc}); err != nil {
		t.Fatal(err)
	}
	coinDesc := "One coin's data (we quote in EUR)."
	if _, err := w.svc.PatchTool(w.ctx, "coingecko", "coin", orchestrator.ToolPatch{Description: &coinDesc}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, func() error {
		_, err := w.svc.PatchTool(w.ctx, "coingecko", "moon", orchestrator.ToolPatch{Description: &coinDesc})
		return err
	}(), orchestrator.ENOTFOUND, "publishes no tool")
	wantErr(t, func() error { _, err := w.svc.PatchServer(w.ctx, "coingecko", orchestrator.ServerPatch{}); return err }(), orchestrator.EINVALID, "nothing to change")
	wantErr(t, func() error {
		_, err := w.svc.PatchServer(w.ctx, "myspace", orchestrator.ServerPatch{Description: &desc})
		return err
	}(), orchestrator.ENOTFOUND, "no catalog server")
	// A new release of the manifests: every description and the CoinGecko URL change.
	changed := make([]orchestrator.MCPServer, len(w.svc.Manifests))
	for i, m := range w.svc.Manifests {
		m.Description = "v2: " + m.Description
		if m.Slug == "coingecko" {
			m.URL = "https://pro-api.coingecko.com/api/v4"
			m.Tools = append([]orchestrator.CatalogTool(nil), m.Tools[:7]...) // "trending" is retired
			for j := range m.Tools {
				m.Tools[j].Description = "v2: " + m.Tools[j].Description
			}
		}
		changed[i] = m
	}
	again := &bindings.Service{Service: &lifecycle.Service{Store: w.store, Manifests: changed}, Store: w.store, Registry: w.reg}
	if err := again.Seed(w.ctx); err != nil {
		t.Fatal(err)
	}
	all, err := w.svc.ListServers(w.ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		switch s.Slug {
		case "coingecko":
			if s.Description != desc || s.CopySource != orchestrator.CopyAdmin || s.URL != "https://pro-api.coingecko.com/api/v4" || len(s.Tools) != 7 {
				t.Fatalf("admin-edited row after reseed: %q %s %s %d tools", s.Description, s.CopySource, s.URL, len(s.Tools))
			}
			for _, tl := range s.Tools {
				if tl.Name == "coin" && (tl.Description != coinDesc || tl.CopySource != orchestrator.CopyAdmin) {
					t.Fatalf("admin-edited tool after reseed: %+v", tl)
				}
				if tl.Name == "chart" && (!strings.HasPrefix(tl.Description, "v2: ") || tl.CopySource != orchestrator.CopySeed) {
					t.Fatalf("seed tool not updated: %+v", tl)
				}
			}
		default:
			if s.Description[:4] != "v2: " || s.CopySource != orchestrator.CopySeed {
				t.Fatalf("%s not updated by reseed: %q", s.Slug, s.Description)
			}
		}
	}
	// An unpublished server leaves the public list; the platform seed bindings are back after a delete.
	if _, err := w.svc.PatchServer(w.ctx, "etherscan", orchestrator.ServerPatch{Published: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	pub, _ := w.svc.ListServers(w.ctx, false)
	if len(pub) != len(all)-1 {
		t.Fatalf("%d published of %d", len(pub), len(all))
	}
	if _, err := w.pool.Exec(w.ctx, "DELETE FROM bindings WHERE scope = 'platform' AND catalog_id = 'group_post'"); err != nil {
		t.Fatal(err)
	}
	if err := again.Seed(w.ctx); err != nil {
		t.Fatal(err)
	}
	if n := w.count("bindings WHERE scope = 'platform' AND enabled"); n != len(catalog.PlatformSeed) {
		t.Fatalf("%d platform seed rows, want %d", n, len(catalog.PlatformSeed))
	}
}

// TestServerMoveDisconnectsLogins (issue 29): an admin edit that changes a server's URL or an
// endpoint in effect marks that server's logins disconnected with the reason, in the edit's
// transaction; a copy edit, a URL set to what it already is, and another server's logins are left
// alone; a new Connect clears the reason.
func TestServerMoveDisconnectsLogins(t *testing.T) {
	w := newWorld(t)
	dp := w.connect("dexpaprika", "org", "o1", map[string]string{"api_key": "dp-key"})
	cg := w.connect("coingecko", "org", "o1", cgKey)
	status := func(c orchestrator.Connection) orchestrator.Connection {
		t.Helper()
		got, err := w.store.GetConnection(w.ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	desc, same, moved, pro := "Edited copy.", "https://api.dexpaprika.com", "http://127.0.0.1:1/elsewhere", "http://127.0.0.1:1/pro"
	for _, p := range []orchestrator.ServerPatch{{Description: &desc}, {URL: []byte(`"` + same + `"`)}} {
		if _, err := w.svc.PatchServer(w.ctx, "dexpaprika", p); err != nil {
			t.Fatal(err)
		}
		if got := status(dp); got.Status != orchestrator.ConnConnected {
			t.Fatalf("after an edit that moves nothing the login is %s", got.Status)
		}
	}
	if _, err := w.svc.PatchServer(w.ctx, "dexpaprika", orchestrator.ServerPatch{Endpoints: map[string]*string{"pro": &pro}}); err != nil {
		t.Fatal(err)
	}
	if got := status(dp); got.Status != orchestrator.ConnDisconnected || got.DisconnectReason != orchestrator.ServerMovedReason {
		t.Fatalf("after an endpoint change: %s %q", got.Status, got.DisconnectReason)
	}
	if got := status(cg); got.Status != orchestrator.ConnConnected {
		t.Fatalf("another server's login is %s", got.Status)
	}
	var reason, conn string
	if err := w.pool.QueryRow(w.ctx, `SELECT data->>'reason', data->'connection'->>'id' FROM events WHERE type = 'connection.disconnected'`).Scan(&reason, &conn); err != nil || reason != orchestrator.DisconnectServerMoved || conn != dp.ID {
		t.Fatalf("the move's event: %q %q %v", reason, conn, err)
	}
	w.connect("dexpaprika", "org", "o1", map[string]string{"api_key": "dp-key"})
	if got := status(dp); got.Status != orchestrator.ConnConnected || got.DisconnectReason != "" {
		t.Fatalf("connected again: %s %q", got.Status, got.DisconnectReason)
	}
	for _, p := range []orchestrator.ServerPatch{{URL: []byte(`"` + moved + `"`)}, {URL: []byte(`null`)}} {
		if _, err := w.svc.PatchServer(w.ctx, "dexpaprika", p); err != nil {
			t.Fatal(err)
		}
		if got := status(dp); got.Status != orchestrator.ConnDisconnected {
			t.Fatalf("after url %s the login is %s", p.URL, got.Status)
		}
		w.connect("dexpaprika", "org", "o1", map[string]string{"api_key": "dp-key"})
	}
}
