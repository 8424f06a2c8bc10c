package github_test

import (
	"testing"

	"github.com/guildsai/guilds/shared/benchtest"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/connectors/github/githubtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// BenchmarkGenerationStart starts a coding agent's run with three repositories across two
// installations (two picked by the guild's login, one extra guild URL reached through the
// organisation's, found at the first start), tokens included, against the same start without
// GitHub, median per start, with the fake's own round trips timed alone in the same run (the two
// token requests, one after the other; the start makes them side by side). Target: the added time
// under those round trips plus 5 ms.
func BenchmarkGenerationStart(b *testing.B) {
	w := newWorld(b)
	ctx := w.ctx
	for _, r := range []githubtest.Repo{{ID: 11, Owner: "acme", Name: "api"}, {ID: 12, Owner: "acme", Name: "web"}, {ID: 21, Owner: "other", Name: "tools"}} {
		w.fake.AddRepo(r)
	}
	w.fake.AddInstall(7, "acme", 11, 12)
	w.fake.AddInstall(8, "other", 21)
	w.fake.LoginAs("octo", 8)
	orgLogin := w.connect(org, "octo", 8)
	w.fake.LoginAs("octo", 7)
	guildLogin := w.connect(guild, "octo", 7)
	_ = orgLogin
	if _, err := w.svc.Select(ctx, guildLogin.ID, []github.Pick{{Name: "acme/api"}, {Name: "acme/web"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := w.svc.AddGuildRepository(ctx, "g1", github.Pick{URL: w.fake.WebURL() + "/other/tools"}); err != nil {
		b.Fatal(err)
	}
	reg := registry.New()
	policy := &bindings.Policy{Store: w.store}
	plain := &runs.Service{Scopes: w.store, Runs: w.store, Registry: reg, Offer: policy}
	withGH := &runs.Service{Scopes: w.store, Runs: w.store, Registry: reg, Offer: &github.Gate{Policy: policy, App: w.svc}}
	coding := true
	req := runs.StartRequest{Kind: orchestrator.KindDirect, Config: orchestrator.ConfigPatch{Coding: &coding}}
	repos, err := w.svc.Prepare(ctx, w.a1)
	if err != nil || len(repos) != 3 {
		b.Fatalf("prepare: %d repositories, %v", len(repos), err)
	}
	if got := len(w.readTokens("a1")); got != 3 {
		b.Fatalf("token file names %d repositories", got)
	}
	client := w.svc.Client
	const each = 40
	measure := func(f func() error) float64 { // the median of each runs, in ms
		return benchtest.MS(benchtest.Alternate(each, func() {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		})[0])
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		without := measure(func() error { _, err := plain.StartRun(ctx, "a1", req); return err })
		with := measure(func() error { _, err := withGH.StartRun(ctx, "a1", req); return err })
		trips := measure(func() error {
			for _, inst := range []int64{7, 8} {
				if _, err := client.AccessToken(ctx, inst, []int64{map[int64]int64{7: 11, 8: 21}[inst]}); err != nil {
					return err
				}
			}
			return nil
		})
		added := with - without
		b.ReportMetric(with/without, "x_vs_start_without_github")
		b.ReportMetric(added, "added_ms")
		b.ReportMetric(trips, "fake_round_trips_ms")
		b.Logf("coding generation start, 3 repositories over 2 installations: %.3f ms with GitHub, %.3f ms without (%.2fx); added %.3f ms against the fake's round trips alone %.3f ms (+%.3f ms; target under +5 ms)",
			with, without, with/without, added, trips, added-trips)
		if added > trips+5 {
			b.Errorf("the App adds %.3f ms, over the fake's round trips (%.3f ms) plus 5 ms", added, trips)
		}
	}
}
