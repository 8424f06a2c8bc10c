package scripts_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/tools/scripts"
)

// BenchmarkStartRunSnapshot measures what taking the script snapshot at run start costs: a run
// start of an agent with 10 scripts (4 with parameters, offered as tools) through the script
// tools' start hook, against the same start without the hook (no snapshot, no script tools
// offered from it), interleaved, 40 starts each, medians.
func BenchmarkStartRunSnapshot(b *testing.B) {
	ctx := context.Background()
	store := postgres.NewStore(pgtest.NewDB(b))
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, err := range []error{
		store.CreateOrg(ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}),
		store.CreateGuild(ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}),
		store.CreateAgent(ctx, orchestrator.Agent{ID: "a3", GuildID: "g1", OrgID: "o1", Name: "a3", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10 {
		sc := orchestrator.Script{AgentID: "a3", Name: fmt.Sprintf("s%d", i), Description: "d", Source: "print(1)\n", Hash: fmt.Sprintf("%064d", i)}
		if i%3 == 0 {
			sc.Parameters = []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)
		}
		if _, err := store.PutScript(ctx, sc, "", now); err != nil {
			b.Fatal(err)
		}
	}
	reg := registry.New()
	if err := (&scripts.Tools{Store: store}).Register(reg); err != nil {
		b.Fatal(err)
	}
	with := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: runs.DefaultOffer{}, Dynamic: &scripts.Tools{Store: store}}
	without := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: runs.DefaultOffer{}}
	start := func(svc *runs.Service) float64 {
		t0 := time.Now()
		if _, err := svc.StartRun(ctx, "a3", runs.StartRequest{Kind: orchestrator.KindDirect}); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(t0).Microseconds()) / 1000
	}
	median := func(xs []float64) float64 {
		sort.Float64s(xs)
		return xs[len(xs)/2]
	}
	for range b.N {
		var a, z []float64
		for range 40 {
			a = append(a, start(with))
			z = append(z, start(without))
		}
		ma, mz := median(a), median(z)
		b.ReportMetric(ma, "snapshot_median_ms")
		b.ReportMetric(mz, "plain_median_ms")
		b.ReportMetric(ma/mz, "x_vs_start_without_snapshot")
		b.Logf("run start with the script snapshot (10 scripts, 4 offered as tools): %.2f ms; without: %.2f ms (%.2fx)", ma, mz, ma/mz)
	}
}
