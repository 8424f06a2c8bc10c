package shape

import (
	"bytes"
	"io"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkRenderer measures the streaming renderer on 4 MiB of build-like terminal output
// (colours, progress redraws) in 32 KiB chunks, against copying the same bytes to a writer,
// the floor any renderer pays; 30 runs each, medians.
func BenchmarkRenderer(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 4<<20; i++ {
		sb.WriteString("\x1b[32mok\x1b[0m  pkg/module/path/number/" + strings.Repeat("x", i%40) + "\t0.123s\n")
		if i%50 == 0 {
			sb.WriteString("[#####     ] 50%\r[##########] 100%\r\n")
		}
	}
	raw := []byte(sb.String())
	const runs = 30
	var render, copying []time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < runs; j++ {
			t0 := time.Now()
			r := NewRenderer(io.Discard)
			for k := 0; k < len(raw); k += 32 << 10 {
				r.Write(raw[k:min(k+32<<10, len(raw))])
			}
			r.Close()
			render = append(render, time.Since(t0))
			t0 = time.Now()
			var buf bytes.Buffer
			for k := 0; k < len(raw); k += 32 << 10 {
				buf.Write(raw[k:min(k+32<<10, len(raw))])
			}
			io.Copy(io.Discard, &buf)
			copying = append(copying, time.Since(t0))
		}
	}
	mr, mc := medianOf(render), medianOf(copying)
	mbps := float64(len(raw)) / (1 << 20) / mr.Seconds()
	b.ReportMetric(mbps, "MiB/s")
	b.ReportMetric(float64(mr)/float64(mc), "x_vs_copy")
	b.Logf("renderer: %.1f MiB/s (median %.2f ms for %d KiB), %.1fx the time of a plain copy (%.2f ms)",
		mbps, float64(mr)/1e6, len(raw)>>10, float64(mr)/float64(mc), float64(mc)/1e6)
}

func medianOf(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
