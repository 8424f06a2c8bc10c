package search

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/shared/envelope"
)

// The benchmarks run whole processes on Go's own source tree: the built helper
// ($GUILDS_BIN_DIR/guilds-code, with GUILDS_HOME set to GOROOT so the tree is inside the
// workspace without links) against the raw engine with the same pattern, alternating the two
// sides, and report the ratio of their medians.

// benchReps is how many runs of each side a benchmark times.
const benchReps = 30

// benchMatchReps is fewer: a syntax search parses every file.
const benchMatchReps = 12

// benchSetup finds the helper and GOROOT, or skips with the reason.
func benchSetup(b *testing.B) (helper, goroot string) {
	b.Helper()
	dir := os.Getenv("GUILDS_BIN_DIR")
	if dir == "" {
		b.Skip("GUILDS_BIN_DIR is not set: run `make bench` (it builds ./bin and exports it)")
	}
	helper = filepath.Join(dir, "guilds-code")
	if _, err := os.Stat(helper); err != nil {
		b.Skipf("%s is missing: run `make build`", helper)
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatalf("go env GOROOT: %v", err)
	}
	return helper, strings.TrimSpace(string(out))
}

// helperCmd builds one helper invocation for the tool call.
func helperCmd(b *testing.B, helper, home, tool string, args any) *exec.Cmd {
	raw, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	req, err := envelope.EncodeRequest(envelope.Request{Tool: tool, Args: raw, RunID: "bench", CallID: "c1", Seq: 1})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(helper, req)
	cmd.Env = append(os.Environ(), "GUILDS_HOME="+home, "GUILDS_RUN_DIR="+b.TempDir())
	return cmd
}

// reply runs the helper once and decodes its envelope, failing on a tool error.
func reply(b *testing.B, cmd *exec.Cmd) envelope.Reply {
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: %v", cmd.Path, err)
	}
	r, err := envelope.DecodeReply(out)
	if err != nil || r.Failed() {
		b.Fatalf("helper reply %+v, %v", r, err)
	}
	return r
}

// timeRun runs a fresh copy of cmd with its output read to the end, and returns the wall
// time taken, the CPU time the process and the children it waited for used, and their page
// faults (on this VM a fault costs tens of microseconds, so pages touched count).
func timeRun(b *testing.B, mk func() *exec.Cmd) (wall, cpu time.Duration, faults int64) {
	cmd := mk()
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			b.Fatalf("%s: %v: %s", cmd.Path, err, stderr.String())
		}
	}
	wall = time.Since(start)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		faults = ru.Minflt + ru.Majflt
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), faults
}

// loadAvg is the machine's load over the last minute, as /proc/loadavg gives it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// compare times both sides reps times, alternating, and reports the medians and their ratio,
// of wall time and of CPU time (which a busy machine disturbs less), the page faults of each
// side, and the load before and after.
func compare(b *testing.B, name, rawName string, reps int, ours, raw func() *exec.Cmd) {
	timeRun(b, ours) // warm the page cache and the engine
	timeRun(b, raw)
	load := loadAvg()
	var ow, oc, rw, rc []time.Duration
	var of, rf []int64
	b.ResetTimer()
	for range reps {
		w, c, f := timeRun(b, ours)
		ow, oc, of = append(ow, w), append(oc, c), append(of, f)
		w, c, f = timeRun(b, raw)
		rw, rc, rf = append(rw, w), append(rc, c), append(rf, f)
	}
	b.StopTimer()
	load += "→" + loadAvg()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	wall := float64(median(ow)) / float64(median(rw))
	cpu := float64(median(oc)) / float64(median(rc))
	b.ReportMetric(wall, "x_vs_"+rawName)
	b.ReportMetric(cpu, "cpu_x_vs_"+rawName)
	b.ReportMetric(ms(median(ow)), "median_ms")
	b.ReportMetric(ms(median(rw)), rawName+"_median_ms")
	b.ReportMetric(float64(median(of)), "faults")
	b.ReportMetric(float64(median(rf)), rawName+"_faults")
	b.Logf("%s: wall median %.1f ms vs %s %.1f ms = %.3f×; CPU median %.1f ms vs %.1f ms = %.3f×; page faults %d vs %d; %d runs each; load %s",
		name, ms(median(ow)), rawName, ms(median(rw)), wall, ms(median(oc)), ms(median(rc)), cpu, median(of), median(rf), reps, load)
}

func median[T cmp.Ordered](d []T) T {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchPattern matches a few thousand lines across GOROOT/src.
const benchPattern = `errors\.New`

func benchText(b *testing.B, mode, rawFlag string) {
	helper, goroot := benchSetup(b)
	rg, err := textEngine.locate()
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"pattern": benchPattern, "path": "src", "mode": mode}
	ours := func() *exec.Cmd { return helperCmd(b, helper, goroot, "code_search", args) }
	raw := func() *exec.Cmd {
		cmd := exec.Command(rg, rawFlag, benchPattern, "src")
		cmd.Dir = goroot
		return cmd
	}
	// Same answer first: the helper's total is the engine's own count.
	r := reply(b, ours())
	out, err := raw().Output()
	if err != nil {
		b.Fatalf("rg: %v", err)
	}
	// Files mode against the engine's per-file counts, content mode against its matching lines.
	total := 0
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		n := 1
		if mode == "files" {
			if _, err := fmt.Sscanf(l[strings.LastIndexByte(l, ':')+1:], "%d", &n); err != nil {
				b.Fatalf("rg count line %q", l)
			}
		}
		total += n
	}
	if got := r.Meta["matches"]; got != float64(total) {
		b.Fatalf("helper counts %v matches, rg %d", got, total)
	}
	compare(b, "code_search "+mode, "rg", benchReps, ours, raw)
}

// BenchmarkCodeSearchFiles: code_search mode files vs `rg -c` over GOROOT/src.
func BenchmarkCodeSearchFiles(b *testing.B) { benchText(b, "files", "-c") }

// BenchmarkCodeSearchContent: code_search mode content vs `rg -n` over GOROOT/src.
func BenchmarkCodeSearchContent(b *testing.B) { benchText(b, "content", "-n") }

// BenchmarkCodeMatch: code_match vs raw `ast-grep run` with the same pattern over GOROOT/src/net
// (the whole of src takes a syntax search tens of seconds a run on a busy two-core machine).
func BenchmarkCodeMatch(b *testing.B) {
	helper, goroot := benchSetup(b)
	sg, err := syntaxEngine.locate()
	if err != nil {
		b.Fatal(err)
	}
	const pattern, dir = "fmt.Errorf($A, $B)", "src/net"
	args := map[string]any{"pattern": pattern, "lang": "go", "path": dir, "limit": 100}
	ours := func() *exec.Cmd { return helperCmd(b, helper, goroot, "code_match", args) }
	raw := func() *exec.Cmd {
		cmd := exec.Command(sg, "run", "--pattern", pattern, "--lang", "go", dir)
		cmd.Dir = goroot
		return cmd
	}
	r := reply(b, ours())
	out, _ := raw().Output()
	lines := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if i := strings.Index(l, ".go:"); i > 0 {
			rest := l[i+4:]
			lines[l[:i+4]+rest[:strings.IndexByte(rest, ':')]] = true
		}
	}
	if got := r.Meta["matches"]; got != float64(len(lines)) {
		b.Fatalf("helper finds %v matching lines, the engine %d", got, len(lines))
	}
	compare(b, "code_match", "ast_grep", benchMatchReps, ours, raw)
}
