package schedules_test

import (
	"sort"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// BenchmarkTick measures the exactly-once bookkeeping of firing: a scheduler tick that fires 50 due
// schedules (claim transaction, then each run started under its wake-up's id, the firing recorded
// and the wake-up dropped) against starting the same 50 schedule runs directly, interleaved, 12
// rounds each, medians.
func BenchmarkTick(b *testing.B) {
	w := newWorld(b)
	const n = 50
	for i := 0; i < n; i++ {
		if _, err := w.call("a1", "schedule_create_cron", `{"cron":"*/5 * * * *","description":"bench"}`); err != nil {
			b.Fatal(err)
		}
	}
	s := w.scheduler()
	median := func(xs []float64) float64 {
		sort.Float64s(xs)
		return xs[len(xs)/2]
	}
	for range b.N {
		var tick, direct []float64
		for range 12 {
			w.closeRuns() // a wake-up whose last run is still open is skipped: close them, as their clients would
			w.clk.add(5 * time.Minute)
			t0 := time.Now()
			got, err := s.Tick(w.ctx)
			if err != nil || got != n {
				b.Fatalf("tick fired %d, %v; want %d", got, err, n)
			}
			tick = append(tick, float64(time.Since(t0).Microseconds())/1000)
			t0 = time.Now()
			for range n {
				if _, err := w.svc.StartRun(w.ctx, "a1", runs.StartRequest{Kind: orchestrator.KindSchedule}); err != nil {
					b.Fatal(err)
				}
			}
			direct = append(direct, float64(time.Since(t0).Microseconds())/1000)
		}
		mt, md := median(tick), median(direct)
		b.ReportMetric(mt, "tick_median_ms")
		b.ReportMetric(md, "direct_median_ms")
		b.ReportMetric(mt/md, "x_vs_direct_starts")
		b.Logf("firing %d due schedules: tick %.1f ms, %d direct run starts %.1f ms (%.2fx)", n, mt, n, md, mt/md)
	}
}
