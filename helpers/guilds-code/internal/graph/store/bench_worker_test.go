//go:build cgo

package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"
)

func init() { benchChild = parseOnlyMain }

// parseOnlyMain is the test binary re-executed as a process that parses the listed files with
// tree-sitter and does nothing else: the list's first line is the root, then one "language<TAB>path"
// a file.
func parseOnlyMain(listFile string) int {
	data, err := os.ReadFile(listFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var list []worker.Job
	for _, l := range lines[1:] {
		name, rel, ok := strings.Cut(l, "\t")
		lang := graph.LangNamed(name)
		if !ok || lang == nil {
			fmt.Fprintf(os.Stderr, "bad list line %q\n", l)
			return 1
		}
		list = append(list, worker.Job{Rel: rel, Lang: lang})
	}
	parseOnly(lines[0], list)
	return 0
}

// BenchmarkColdBuildWorker measures what the split costs a cold build of $(go env GOROOT)/src: the
// shipped guilds-code (pure Go) answering code_outline from nothing, parsing through
// guilds-code-parse, against the same build parsed in this process with cgo and against tree-sitter
// parsing the same files and nothing else, interleaved. Parse-only runs twice: in this process, warm,
// and as a process of its own (this test binary re-executed), which like the shipped call starts from
// nothing: a fresh heap, every grammar loaded again.
func BenchmarkColdBuildWorker(b *testing.B) {
	binDir := os.Getenv("GUILDS_BIN_DIR")
	if binDir == "" {
		b.Skip("GUILDS_BIN_DIR is unset: run make build (make bench sets it) to measure whole-process calls")
	}
	bin := filepath.Join(binDir, "guilds-code")
	for _, p := range []string{bin, filepath.Join(binDir, worker.ParserName)} {
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
	listFile := filepath.Join(b.TempDir(), "files")
	var listText strings.Builder
	listText.WriteString(root + "\n")
	for _, s := range list {
		fmt.Fprintf(&listText, "%s\t%s\n", s.Lang.Name, s.Rel)
	}
	if err := os.WriteFile(listFile, []byte(listText.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	const reps = 3
	var viaWorker, inproc, parse, fresh []time.Duration
	for i := 0; i < reps; i++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), parseOnlyEnv+"="+listFile)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("parse-only process: %v\n%s", err, out)
		}
		fresh = append(fresh, time.Since(start))

		runtime.GC()
		start = time.Now()
		parseOnly(root, list)
		parse = append(parse, time.Since(start))

		if err := os.RemoveAll(filepath.Join(home, ".cache")); err != nil {
			b.Fatal(err)
		}
		d, _ := helperCall(b, bin, home, "code_outline", `{"path":"repos/goroot/net/http/request.go"}`)
		viaWorker = append(viaWorker, d)

		start = time.Now()
		if _, err := Open(context.Background(), root, filepath.Join(b.TempDir(), fmt.Sprint("cache", i))); err != nil {
			b.Fatal(err)
		}
		inproc = append(inproc, time.Since(start))
	}
	b.Logf("corpus: GOROOT/src, %d lines", lines)
	mw, mi, mp, mf := median(viaWorker), median(inproc), median(parse), median(fresh)
	b.ReportMetric(ms(mw), "worker_build_ms")
	b.ReportMetric(ms(mi), "in_process_build_ms")
	b.ReportMetric(ms(mp), "parse_only_ms")
	b.ReportMetric(ms(mf), "parse_only_process_ms")
	b.ReportMetric(float64(mw)/float64(mi), "x_vs_in_process")
	b.ReportMetric(float64(mw)/float64(mp), "worker_x_vs_parse_only")
	b.ReportMetric(float64(mw)/float64(mf), "worker_x_vs_parse_only_process")
	b.Logf("cold build of GOROOT/src, whole guilds-code process through %s: %.0f ms; parsed in process: %.0f ms (%.2fx); "+
		"tree-sitter parse only in this process: %.0f ms (whole process %.2fx), as a process of its own: %.0f ms (whole process %.2fx); median of %d runs each",
		worker.ParserName, ms(mw), ms(mi), float64(mw)/float64(mi), ms(mp), float64(mw)/float64(mp), ms(mf), float64(mw)/float64(mf), reps)
}
