//go:build cgo

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/shared/envelope"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/extract"
)

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// goroot is Go's own source tree, the benchmark corpus.
func goroot(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}

// parseOnly parses the listed files with tree-sitter on every core and extracts nothing: the floor a build is held to.
func parseOnly(root string, list []worker.Job) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// extract's Extractor, whose Parse parses without extracting.
			x := extract.New()
			defer x.Close()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(list) {
					return
				}
				src, err := os.ReadFile(filepath.Join(root, list[i].Rel))
				if err == nil {
					_ = x.Parse(context.Background(), list[i].Lang, src)
				}
			}
		}()
	}
	wg.Wait()
}

// copyGoTree copies the .go files under src (tests and testdata optional) into dst and counts their lines.
func copyGoTree(b *testing.B, src, dst string, withTests bool) int {
	lines := 0
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "vendor" || !withTests && d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || !withTests && strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
			return err
		}
		lines += strings.Count(string(data), "\n")
		return os.WriteFile(t, data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	return lines
}

// helperCall runs the built guilds-code once, whole process, and returns its wall time.
func helperCall(b *testing.B, bin, home, tool, args string) (time.Duration, envelope.Reply) {
	req, err := envelope.EncodeRequest(envelope.Request{Tool: tool, Args: json.RawMessage(args), RunID: "r1", CallID: "c1", Seq: 1})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, req)
	cmd.Env = []string{"GUILDS_HOME=" + home, "GUILDS_RUN_DIR=" + filepath.Join(home, ".run"), "PATH=" + os.Getenv("PATH")}
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v", tool, err)
	}
	rep, err := envelope.DecodeReply(out)
	if err != nil {
		b.Fatal(err)
	}
	if rep.Failed() {
		b.Fatalf("%s %s: %s", tool, args, rep.Error)
	}
	return d, rep
}

func timeCmd(b *testing.B, dir string, name string, args ...string) time.Duration {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", name, err, out)
	}
	return time.Since(start)
}

// BenchmarkColdBuild builds the graph of $(go env GOROOT)/src from nothing and compares it, in the same
// run, with tree-sitter parsing the same files and nothing else, and with ctags over the same file list.
func BenchmarkColdBuild(b *testing.B) {
	root := goroot(b)
	ctags, err := exec.LookPath("ctags")
	if err != nil {
		b.Skip("ctags (universal-ctags) is not installed; make setup installs it")
	}
	list, err := walk(context.Background(), root)
	if err != nil {
		b.Fatal(err)
	}
	tmp := b.TempDir()
	listFile := filepath.Join(tmp, "files")
	var names []string
	for _, s := range list {
		names = append(names, s.Rel)
	}
	if err := os.WriteFile(listFile, []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	// Each repetition runs both sides back to back, alternating which goes first, and the ratios are
	// taken per pair: on a shared machine neighbouring runs see the same load.
	const reps = 5
	var build, parse, tags, wallX, cpuX []time.Duration
	var cpuBuild, cpuParse []time.Duration
	for i := 0; i < reps; i++ {
		var pw, pc, bw, bc time.Duration
		timeParse := func() {
			runtime.GC()
			start, cpu := time.Now(), cpuTime()
			parseOnly(root, list)
			pw, pc = time.Since(start), cpuTime()-cpu
		}
		timeBuild := func() {
			runtime.GC()
			cache := filepath.Join(tmp, fmt.Sprint("cache", i))
			start, cpu := time.Now(), cpuTime()
			g, err := Open(context.Background(), root, cache)
			if err != nil {
				b.Fatal(err)
			}
			bw, bc = time.Since(start), cpuTime()-cpu
			if i == 0 {
				syms, refs := 0, 0
				for _, f := range g.Files {
					syms += len(f.Syms())
					refs += len(f.LoadRefs())
				}
				b.Logf("GOROOT/src: %d files, %d symbols, %d call sites", len(g.Files), syms, refs)
			}
			if err := os.RemoveAll(cache); err != nil {
				b.Fatal(err)
			}
		}
		if i%2 == 0 {
			timeParse()
			timeBuild()
		} else {
			timeBuild()
			timeParse()
		}
		parse, build = append(parse, pw), append(build, bw)
		cpuParse, cpuBuild = append(cpuParse, pc), append(cpuBuild, bc)
		// Ratios are kept as durations scaled by 1000 so median sorts them.
		wallX = append(wallX, bw*1000/pw)
		cpuX = append(cpuX, bc*1000/max(pc, 1))
		tags = append(tags, timeCmd(b, root, ctags, "-f", filepath.Join(tmp, "tags"), "-L", listFile))
	}
	mb, mp, mt := median(build), median(parse), median(tags)
	rx, rc := float64(median(wallX))/1000, float64(median(cpuX))/1000
	b.ReportMetric(ms(mb), "build_ms")
	b.ReportMetric(ms(mp), "parse_only_ms")
	b.ReportMetric(rx, "x_vs_parse_only")
	b.ReportMetric(rc, "cpu_x_vs_parse_only")
	b.ReportMetric(float64(mb)/float64(mt), "x_vs_ctags")
	b.Logf("cold build %.0f ms; tree-sitter parse only %.0f ms (%.2fx, median of %d pairs); ctags %.0f ms (%.2fx); CPU time build %.0f ms, parse only %.0f ms (%.2fx)",
		ms(mb), ms(mp), rx, reps, ms(mt), float64(mb)/float64(mt), ms(median(cpuBuild)), ms(median(cpuParse)), rc)
}

// cpuTime is the user and system CPU time this process has used so far, on every thread: on a shared
// machine it tells what each side cost when wall times are stretched by other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWarmQuery measures whole guilds-code calls on GOROOT/src (about 2.8 million lines) and on a
// repository of about 50,000 lines: nothing changed, and one file changed; rg over the same tree is the
// raw engine measured alongside.
func BenchmarkWarmQuery(b *testing.B) {
	binDir := os.Getenv("GUILDS_BIN_DIR")
	if binDir == "" {
		b.Skip("GUILDS_BIN_DIR is unset: run make build (make bench sets it) to measure whole-process calls")
	}
	bin := filepath.Join(binDir, "guilds-code")
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("%s is missing: run make build", bin)
	}
	rg, rgErr := exec.LookPath("rg")
	src := goroot(b)
	home := b.TempDir()
	bigLines := copyGoTree(b, src, filepath.Join(home, "repos", "goroot"), true)
	smallLines := copyGoTree(b, filepath.Join(src, "go"), filepath.Join(home, "repos", "small"), false)
	b.Logf("corpora: goroot %d lines, small %d lines", bigLines, smallLines)

	const reps = 30
	run := func(repo, tool, args string) time.Duration {
		var ds []time.Duration
		helperCall(b, bin, home, tool, args) // builds or refreshes
		for i := 0; i < reps; i++ {
			d, _ := helperCall(b, bin, home, tool, args)
			ds = append(ds, d)
		}
		return median(ds)
	}
	report := func(label string, d, base time.Duration, baseName string) {
		b.ReportMetric(ms(d), label+"_ms")
		if base > 0 {
			b.ReportMetric(float64(d)/float64(base), label+"_x_vs_"+baseName)
			b.Logf("%s: %.1f ms (%.2fx %s at %.1f ms)", label, ms(d), float64(d)/float64(base), baseName, ms(base))
		} else {
			b.Logf("%s: %.1f ms", label, ms(d))
		}
	}
	rgTime := func(dir, pattern string) time.Duration {
		if rgErr != nil {
			return 0
		}
		var ds []time.Duration
		for i := 0; i < reps; i++ {
			ds = append(ds, timeCmd(b, dir, rg, "-n", "-w", "--no-heading", "-c", pattern, "."))
		}
		return median(ds)
	}
	bigRoot := filepath.Join(home, "repos", "goroot")
	rgBig := rgTime(bigRoot, "NewRequest")
	report("goroot_callers_warm", run("goroot", "code_callers", `{"symbol":"http.NewRequest","in":"repos/goroot/net/http"}`), rgBig, "rg")
	report("goroot_outline_warm", run("goroot", "code_outline", `{"path":"repos/goroot/net/http/request.go"}`), rgBig, "rg")

	// One file changed before every call.
	target := filepath.Join(bigRoot, "net", "http", "request.go")
	orig, err := os.ReadFile(target)
	if err != nil {
		b.Fatal(err)
	}
	var changed []time.Duration
	for i := 0; i < 10; i++ {
		edit := append(append([]byte(nil), orig...), []byte(fmt.Sprintf("\n// edit %d\nfunc benchEdit%d() { NewRequest(\"GET\", \"/\", nil) }\n", i, i))...)
		if err := os.WriteFile(target, edit, 0o644); err != nil {
			b.Fatal(err)
		}
		d, rep := helperCall(b, bin, home, "code_callers", `{"symbol":"http.NewRequest","in":"repos/goroot/net/http"}`)
		if !strings.Contains(rep.Text, fmt.Sprintf("benchEdit%d", i)) {
			b.Fatalf("the edit is not in the answer:\n%s", rep.Text)
		}
		changed = append(changed, d)
	}
	report("goroot_callers_one_file_changed", median(changed), rgBig, "rg")

	smallRoot := filepath.Join(home, "repos", "small")
	rgSmall := rgTime(smallRoot, "ParseFile")
	report("small_callers_warm", run("small", "code_callers", `{"symbol":"parser.ParseFile","in":"repos/small"}`), rgSmall, "rg")
	report("small_find_warm", run("small", "code_find", `{"question":"parse file","in":"repos/small"}`), rgSmall, "rg")
}
