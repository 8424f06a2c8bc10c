package bindings_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/guildsai/guilds/shared/benchtest"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// BenchmarkRunOffer resolves what a run offers for an agent with 60 native tools and 5 connected
// servers of 20 tools each (with overlays at every scope), median per run start, against one
// bare round trip (SELECT 1, the floor) and against resolving the same offer with one query per
// tool (the naive alternative), measured in the same run. Target: at most 5 ms.
func BenchmarkRunOffer(b *testing.B) {
	w := newWorld(b)
	ctx := w.ctx
	families := []string{orchestrator.FamilyNotes, orchestrator.FamilyRecords, orchestrator.FamilyScripts, orchestrator.FamilySecrets, orchestrator.FamilyGroup}
	reg := registry.New()
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"query"},"limit":{"type":"integer"}},"required":["q"]}`)
	var native []string
	for i := 0; i < 60; i++ {
		name := fmt.Sprintf("tool_%02d", i)
		native = append(native, name)
		reg.MustRegister(registry.Tool{Name: name, Family: families[i%len(families)], Description: "Bench tool.", Schema: schema,
			Handler: func(context.Context, *registry.Call) (string, error) { return "", nil }})
	}
	if err := w.store.SeedPlatformBindings(ctx, native, time.Now()); err != nil {
		b.Fatal(err)
	}
	w.svc.Registry, w.runs.Registry = reg, reg
	var servers []orchestrator.MCPServer
	for s := 0; s < 5; s++ {
		srv := orchestrator.MCPServer{Slug: fmt.Sprintf("bench%d", s), Name: fmt.Sprintf("Bench %d", s), Kind: orchestrator.ServerLocal, Transport: "http",
			URL: "https://bench.example", Auth: orchestrator.AuthToken, Description: "Benchmark adapter.", SeedsTools: true, Published: true,
			Config: orchestrator.ServerConfig{Fields: []orchestrator.CredentialField{{Name: "api_key", Label: "Key", Required: true}}}}
		for i := 0; i < 20; i++ {
			srv.Tools = append(srv.Tools, orchestrator.CatalogTool{Name: fmt.Sprintf("op_%02d", i), Description: "Bench remote tool.", InputSchema: schema, Published: true})
		}
		servers = append(servers, srv)
	}
	w.svc.Manifests = append(w.svc.Manifests, servers...)
	if err := w.store.SeedCatalog(ctx, servers, time.Now()); err != nil {
		b.Fatal(err)
	}
	for i, srv := range servers {
		scope, id := []string{"org", "guild", "guild", "agent", "agent"}[i], []string{"o1", "g1", "g1", "a1", "a1"}[i]
		w.connect(srv.Slug, scope, id, map[string]string{"api_key": "k"})
		if scope == "org" {
			w.put("guild", "g1", "mcp_tool", srv.Slug+"_op_00", false, "")
		}
		w.put("agent", "a1", "mcp_tool", srv.Slug+"_op_01", false, "")
	}
	for i := 0; i < 60; i += 7 {
		w.put("org", "o1", "native_tool", native[i], false, "")
		w.put("agent", "a1", "native_tool", native[i], true, "")
	}
	agent, err := w.store.GetAgent(ctx, "a1")
	if err != nil {
		b.Fatal(err)
	}
	in := runs.OfferInput{Agent: agent, Kind: orchestrator.KindDirect, Config: agent.Config}
	all := reg.List()
	offer, err := w.policy.OfferWithMCP(ctx, in, all)
	if err != nil || len(offer.Native) != 60 || len(offer.MCP) != 5*20-5-1 {
		b.Fatalf("offer: %d native, %d MCP, %v", len(offer.Native), len(offer.MCP), err)
	}

	const runsEach = 60
	measure := func(f func() error) float64 { // the median of runsEach runs, in ms
		return benchtest.MS(benchtest.Alternate(runsEach, func() {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		})[0])
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		offer := measure(func() error { _, err := w.policy.OfferWithMCP(ctx, in, all); return err })
		start := measure(func() error {
			_, err := w.runs.StartRun(ctx, "a1", runs.StartRequest{Kind: orchestrator.KindDirect})
			return err
		})
		floor := measure(func() error { var one int; return w.pool.QueryRow(ctx, "SELECT 1").Scan(&one) })
		naive := measure(func() error { return perToolResolve(ctx, w, native, servers) })
		b.ReportMetric(offer, "offer_median_ms")
		b.ReportMetric(start, "start_run_median_ms")
		b.ReportMetric(offer/floor, "x_vs_one_round_trip")
		b.ReportMetric(naive/offer, "x_faster_than_per_tool_queries")
		b.Logf("run offer (60 native + 5x20 MCP tools): median %.3f ms (target <= 5 ms); StartRun %.3f ms; one round trip %.3f ms (offer = %.1fx); one query per tool %.3f ms (%.1fx slower)",
			offer, start, floor, offer/floor, naive, naive/offer)
	}
}

// perToolResolve is the naive alternative: one query per native tool and per listed MCP tool for
// its rows in the chain (what the walk avoids).
func perToolResolve(ctx context.Context, w *world, native []string, servers []orchestrator.MCPServer) error {
	q := `SELECT scope, enabled FROM bindings WHERE catalog_kind = $1 AND catalog_id = $2 AND
		((scope = 'platform' AND scope_id = '') OR (scope = 'org' AND scope_id = 'o1') OR (scope = 'guild' AND scope_id = 'g1') OR (scope = 'agent' AND scope_id = 'a1'))`
	run := func(kind, id string) error {
		rows, err := w.pool.Query(ctx, q, kind, id)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
	for _, n := range native {
		if err := run("native_tool", n); err != nil {
			return err
		}
	}
	for _, s := range servers {
		if err := run("mcp", s.Slug); err != nil {
			return err
		}
		for _, t := range s.Tools {
			if err := run("mcp_tool", orchestrator.NamespacedTool(s.Slug, t.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}
