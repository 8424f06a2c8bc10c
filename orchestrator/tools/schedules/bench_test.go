package schedules

import (
	"sort"
	"testing"
	"time"
)

// naiveSpacing is the obvious check: test every minute of the year against the five fields.
func naiveSpacing(c *Cron, from time.Time) bool {
	var prev time.Time
	t := from.Truncate(time.Minute)
	for end := t.AddDate(1, 0, 1); t.Before(end); t = t.Add(time.Minute) {
		if !c.month[int(t.Month())] || !c.dayMatches(t) || !c.hour[t.Hour()] || !c.minute[t.Minute()] {
			continue
		}
		if !prev.IsZero() && t.Sub(prev) < MinSpacing {
			return false
		}
		prev = t
	}
	return true
}

// BenchmarkCheckSpacing compares the year walk of CheckSpacing (jumping over months, days and
// hours that cannot fire) with a minute-by-minute scan of the same year, over typical expressions.
func BenchmarkCheckSpacing(b *testing.B) {
	exprs := []string{"0 9 * * 1-5", "*/15 8-18 * * *", "30 2 1 * *", "0 0 29 2 *"}
	var crons []*Cron
	for _, e := range exprs {
		c, err := ParseCron(e)
		if err != nil {
			b.Fatal(err)
		}
		crons = append(crons, c)
	}
	median := func(f func()) float64 {
		var ds []float64
		for i := 0; i < 15; i++ {
			start := time.Now()
			f()
			ds = append(ds, float64(time.Since(start).Microseconds())/1000)
		}
		sort.Float64s(ds)
		return ds[len(ds)/2]
	}
	for i := 0; i < b.N; i++ {
		walk := median(func() {
			for _, c := range crons {
				_ = c.CheckSpacing(jan1)
			}
		})
		scan := median(func() {
			for _, c := range crons {
				naiveSpacing(c, jan1)
			}
		})
		b.ReportMetric(walk, "walk_median_ms")
		b.ReportMetric(scan, "scan_median_ms")
		b.ReportMetric(scan/walk, "x_faster_than_minute_scan")
		b.Logf("CheckSpacing over a year of %d expressions: walk %.2f ms, minute scan %.2f ms (%.1fx)", len(crons), walk, scan, scan/walk)
	}
}
