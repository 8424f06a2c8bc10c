//go:build cgo

package graph

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// BenchmarkColdBuildWorker measures what the split costs a cold build of $(go env GOROOT)/src: the
// shipped guilds-code (pure Go) answering code_outline from nothing, parsing through
// guilds-code-parse, against the same build parsed in this process with cgo and against tree-sitter
// parsing the same files and nothing else, interleaved.
func BenchmarkColdBuildWorker(b *testing.B) {
	binDir := os.Getenv("GUILDS_BIN_DIR")
	if binDir == "" {
		b.Skip("GUILDS_BIN_DIR is unset: run make build (make bench sets it) to measure whole-process calls")
	}
	bin := filepath.Join(binDir, "guilds-code")
	for _, p := range []string{bin, filepath.Join(binDir, ParserName)} {
		if _, err := os.Stat(p); err != nil {
			b.Skipf("%s is missing: run make build", p)
		}
	}
	home := b.TempDir()
	root := filepath.Join(home, "repos", "goroot")
	lines := copyGoTree(b, goroot(b), root, true)
	list, err := walk(context.Background(), root)
	if err != nil {
		b.Fatal(err)
	}
	const reps = 2
	var worker, inproc, parse []time.Duration
	for i := 0; i < reps; i++ {
		runtime.GC()
		start := time.Now()
		parseOnly(root, list)
		parse = append(parse, time.Since(start))

		if err := os.RemoveAll(filepath.Join(home, ".cache")); err != nil {
			b.Fatal(err)
		}
		d, _ := helperCall(b, bin, home, "code_outline", `{"path":"repos/goroot/net/http/request.go"}`)
		worker = append(worker, d)

		start = time.Now()
		if _, err := Open(context.Background(), root, filepath.Join(b.TempDir(), fmt.Sprint("cache", i))); err != nil {
			b.Fatal(err)
		}
		inproc = append(inproc, time.Since(start))
	}
	b.Logf("corpus: GOROOT/src, %d lines", lines)
	mw, mi, mp := median(worker), median(inproc), median(parse)
	b.ReportMetric(ms(mw), "worker_build_ms")
	b.ReportMetric(ms(mi), "in_process_build_ms")
	b.ReportMetric(ms(mp), "parse_only_ms")
	b.ReportMetric(float64(mw)/float64(mi), "x_vs_in_process")
	b.ReportMetric(float64(mw)/float64(mp), "worker_x_vs_parse_only")
	b.Logf("cold build of GOROOT/src, whole guilds-code process through %s: %.0f ms; parsed in process: %.0f ms (%.2fx); tree-sitter parse only: %.0f ms (whole process %.2fx), %d runs each",
		ParserName, ms(mw), ms(mi), float64(mw)/float64(mi), ms(mp), float64(mw)/float64(mp), reps)
}
