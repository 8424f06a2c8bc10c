package app

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-browser/internal/driver"
	"github.com/mxschmitt/playwright-go"
)

func median(ds []time.Duration) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return float64(m) / float64(time.Millisecond)
}

// oneShot is the alternative a helper without a daemon would be: boot the Playwright driver,
// attach over CDP, act on the current page, stop; all per call.
func oneShot(b *testing.B, cdp string, act func(playwright.Page) error) time.Duration {
	b.Helper()
	start := time.Now()
	d, err := driver.Find("")
	if err != nil {
		b.Fatal(err)
	}
	pw, err := playwright.Run(d.Options("", os.Stderr))
	if err != nil {
		b.Fatal(err)
	}
	defer pw.Stop()
	br, err := pw.Chromium.ConnectOverCDP(cdp)
	if err != nil {
		b.Fatal(err)
	}
	pages := br.Contexts()[0].Pages()
	if err := act(pages[len(pages)-1]); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkCalls measures whole guilds-browser processes ($GUILDS_BIN_DIR/guilds-browser): a cold
// first call (daemon not running) and warm snapshot, click and screenshot, against a one-shot
// Playwright client (playwright.Run + ConnectOverCDP per call) in the same run.
func BenchmarkCalls(b *testing.B) {
	bin := os.Getenv("GUILDS_BIN_DIR")
	if bin == "" {
		b.Skip("GUILDS_BIN_DIR is unset; run `make bench` (it builds bin/guilds-browser and exports it)")
	}
	exe := filepath.Join(bin, "guilds-browser")
	if _, err := os.Stat(exe); err != nil {
		b.Skipf("%s is missing; run `make build`", exe)
	}
	cdp := needBrowser(b)
	pages := pagesServer(b)
	b.Setenv("GUILDS_PLAYWRIGHT_DIR", playwrightDir())
	const warmRuns, coldRuns, oneShotRuns = 40, 8, 8
	for i := 0; i < b.N; i++ {
		sb := newSandbox(b, cdp)
		sb.exe = exe
		timed := func(tool string, args any) time.Duration {
			start := time.Now()
			sb.ok(b, tool, args)
			return time.Since(start)
		}
		var cold []time.Duration
		for j := 0; j < coldRuns; j++ {
			stopDaemon(b, sb.run)
			cold = append(cold, timed("browser_snapshot", nil))
		}
		sb.ok(b, "browser_navigate", map[string]string{"url": pages.URL + "/form.html"})
		sb.ok(b, "browser_snapshot", nil)
		warm := map[string][]time.Duration{}
		for j := 0; j < warmRuns; j++ {
			warm["snapshot"] = append(warm["snapshot"], timed("browser_snapshot", nil))
			warm["click"] = append(warm["click"], timed("browser_click", map[string]string{"locator": `button "Save"`}))
			warm["screenshot"] = append(warm["screenshot"], timed("browser_screenshot", nil))
		}
		acts := map[string]func(playwright.Page) error{
			"snapshot": func(p playwright.Page) error {
				_, err := p.AriaSnapshot(playwright.PageAriaSnapshotOptions{Mode: playwright.AriaSnapshotModeAi})
				return err
			},
			"click": func(p playwright.Page) error {
				return p.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Save", Exact: playwright.Bool(true)}).Click()
			},
			"screenshot": func(p playwright.Page) error {
				_, err := p.Screenshot(playwright.PageScreenshotOptions{Type: playwright.ScreenshotTypeJpeg, Quality: playwright.Int(80)})
				return err
			},
		}
		one := map[string][]time.Duration{}
		for j := 0; j < oneShotRuns; j++ {
			for _, op := range []string{"snapshot", "click", "screenshot"} {
				one[op] = append(one[op], oneShot(b, cdp, acts[op]))
			}
		}
		coldMs := median(cold)
		b.ReportMetric(coldMs, "cold_first_call_ms")
		b.ReportMetric(median(one["snapshot"])/coldMs, "x_cold_vs_oneshot")
		b.Logf("cold first call (daemon start + driver + attach + snapshot): median %.0f ms over %d runs; one-shot snapshot %.0f ms (%.2fx)",
			coldMs, coldRuns, median(one["snapshot"]), median(one["snapshot"])/coldMs)
		for _, op := range []string{"snapshot", "click", "screenshot"} {
			w, o := median(warm[op]), median(one[op])
			b.ReportMetric(w, "warm_"+op+"_ms")
			b.ReportMetric(o, "oneshot_"+op+"_ms")
			b.ReportMetric(o/w, "x_"+op+"_vs_oneshot")
			b.Logf("warm %-10s median %6.1f ms over %d calls; one-shot Playwright client %7.1f ms over %d: %.1fx faster", op, w, warmRuns, o, oneShotRuns, o/w)
		}
	}
}
