package bindings_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
)

// TestResolutionFollowsListingsOfEveryReplica: a run start reads a connection's listed tools from
// its process's cache only while the database holds the version it cached. A relist written by
// another replica (another store on the same database), an admin's unpublish and a deleted
// connection all show in the next resolution; an unchanged list is not read again.
func TestResolutionFollowsListingsOfEveryReplica(t *testing.T) {
	w := newWorld(t)
	conn := w.connect("coingecko", "guild", "g1", cgKey)
	chain := orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: "o1", GuildID: "g1", AgentID: "a1"}
	tools := func() []string {
		t.Helper()
		res, err := w.store.Resolution(w.ctx, chain)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Connections[conn.ID].Tools {
			out = append(out, tl.Name)
		}
		if got := res.Connections[conn.ID].ToolCount; got != len(out) {
			t.Fatalf("tool count %d for %d tools", got, len(out))
		}
		return out
	}
	first := tools()
	if len(first) != 8 || !slices.Equal(first, tools()) {
		t.Fatalf("listed tools: %v then %v", first, tools())
	}
	var version int64
	if err := w.pool.QueryRow(w.ctx, "SELECT tools_version FROM mcp_connections WHERE id = $1", conn.ID).Scan(&version); err != nil {
		t.Fatal(err)
	}
	tools()
	var after int64
	if err := w.pool.QueryRow(w.ctx, "SELECT tools_version FROM mcp_connections WHERE id = $1", conn.ID).Scan(&after); err != nil || after != version {
		t.Fatalf("reading bumped the version: %d -> %d (%v)", version, after, err)
	}

	// The cache serves an unchanged version: a write that bypasses the version (triggers off, as
	// no code path does) is not seen, which shows the list was not read again.
	if _, err := w.pool.Exec(w.ctx, "ALTER TABLE mcp_tools DISABLE TRIGGER USER; UPDATE mcp_tools SET name = name || '_unseen' WHERE connection_id = '"+conn.ID+"'; ALTER TABLE mcp_tools ENABLE TRIGGER USER"); err != nil {
		t.Fatal(err)
	}
	if got := tools(); !slices.Equal(got, first) {
		t.Fatalf("an unchanged version was read again: %v", got)
	}

	// Another replica relists: two tools, one of them new.
	other := postgres.NewStore(w.pool)
	srv, err := other.GetServer(w.ctx, "coingecko")
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	if _, err := other.SaveListing(w.ctx, orchestrator.ListingWrite{Server: srv, ConnectionID: conn.ID, Now: time.Now().UTC(), Tools: []orchestrator.ListedTool{
		{RemoteName: "coin", Name: "coingecko_coin", Description: "A coin.", InputSchema: schema, OfferedSchema: schema},
		{RemoteName: "fresh", Name: "coingecko_fresh", Description: "New.", InputSchema: schema, OfferedSchema: schema},
	}}); err != nil {
		t.Fatal(err)
	}
	if got := tools(); !slices.Equal(got, []string{"coingecko_coin", "coingecko_fresh"}) {
		t.Fatalf("after another replica's relist: %v", got)
	}
	// An admin unpublishes a catalog tool: hidden at once, listed or not.
	if _, err := w.svc.PatchTool(w.ctx, "coingecko", "coin", orchestrator.ToolPatch{Published: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if got := tools(); !slices.Equal(got, []string{"coingecko_fresh"}) {
		t.Fatalf("after unpublishing coin: %v", got)
	}
	// The connection is deleted: it resolves to nothing.
	if err := w.store.DeleteConnection(w.ctx, conn.ID); err != nil {
		t.Fatal(err)
	}
	res, err := w.store.Resolution(w.ctx, chain)
	if err != nil {
		t.Fatal(err)
	}
	for id, c := range res.Connections {
		if id == conn.ID || strings.HasPrefix(c.Server, "coingecko") && len(c.Tools) > 0 {
			t.Fatalf("a deleted connection resolves: %+v", c)
		}
	}
}
