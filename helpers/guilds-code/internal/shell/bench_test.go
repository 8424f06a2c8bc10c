package shell

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/procfloor"
	"github.com/guildsai/guilds/shared/envelope"
)

// BenchmarkShellTrue compares a whole guilds-code process running shell {"command":"true"}
// with bash -c true, alternating the two, 50 runs each, and reports the medians, the overhead
// in milliseconds and the ratio.
func BenchmarkShellTrue(b *testing.B) {
	dir := os.Getenv("GUILDS_BIN_DIR")
	if dir == "" {
		b.Skip("GUILDS_BIN_DIR is unset: run `make build` and `make bench` to measure the built helper")
	}
	helper := filepath.Join(dir, "guilds-code")
	if _, err := os.Stat(helper); err != nil {
		b.Skipf("no built helper at %s: run `make build` first", helper)
	}
	home, runDir := b.TempDir(), b.TempDir()
	env := append(os.Environ(), "GUILDS_HOME="+home, "GUILDS_RUN_DIR="+runDir)
	empty := procfloor.EmptyGo(b)
	const runs = 50
	var tool, raw, toolCPU, rawCPU, floor []time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < runs+2; j++ {
			req, err := envelope.EncodeRequest(envelope.Request{Tool: "shell", Args: json.RawMessage(`{"command":"true"}`),
				RunID: "bench", CallID: "c" + strconv.Itoa(j), Seq: int64(j)})
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			cmd := exec.Command(helper, req)
			cmd.Env = env
			out, err := cmd.Output()
			d1 := time.Since(t0)
			if err != nil {
				b.Fatalf("guilds-code: %v", err)
			}
			if r, err := envelope.DecodeReply(out); err != nil || r.Failed() {
				b.Fatalf("guilds-code reply: %+v %v", r, err)
			}
			c1 := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			t0 = time.Now()
			bash := exec.Command("bash", "-c", "true")
			if err := bash.Run(); err != nil {
				b.Fatal(err)
			}
			d2 := time.Since(t0)
			c2 := bash.ProcessState.UserTime() + bash.ProcessState.SystemTime()
			t0 = time.Now()
			if err := exec.Command(empty).Run(); err != nil {
				b.Fatal(err)
			}
			d3 := time.Since(t0)
			if j >= 2 { // the first two warm the page cache
				tool, raw, floor = append(tool, d1), append(raw, d2), append(floor, d3)
				toolCPU, rawCPU = append(toolCPU, c1), append(rawCPU, c2)
			}
		}
	}
	mt, mr := median(tool), median(raw)
	overhead := float64(mt-mr) / float64(time.Millisecond)
	ratio := float64(mt) / float64(mr)
	b.ReportMetric(float64(mt)/float64(time.Millisecond), "helper_median_ms")
	b.ReportMetric(float64(mr)/float64(time.Millisecond), "bash_median_ms")
	b.ReportMetric(overhead, "overhead_ms")
	b.ReportMetric(ratio, "x_vs_bash")
	// CPU time (the process and the children it waited for) is steadier than wall time on a busy machine.
	ct, cr := median(toolCPU), median(rawCPU)
	b.ReportMetric(float64(ct)/float64(time.Millisecond), "helper_cpu_ms")
	b.ReportMetric(float64(cr)/float64(time.Millisecond), "bash_cpu_ms")
	mf := median(floor)
	b.ReportMetric(float64(mf)/float64(time.Millisecond), "empty_go_median_ms")
	b.ReportMetric(float64(mt-mr-mf)/float64(time.Millisecond), "overhead_over_floor_ms")
	b.Logf("shell true through guilds-code: median %.2f ms; bash -c true: median %.2f ms; overhead %.2f ms (%.2fx), %d runs each; CPU %.2f ms vs %.2f ms; an empty Go program (the floor of any Go helper) median %.2f ms, so the overhead beyond that floor is %.2f ms",
		float64(mt)/1e6, float64(mr)/1e6, overhead, ratio, len(tool), float64(ct)/1e6, float64(cr)/1e6, float64(mf)/1e6, float64(mt-mr-mf)/1e6)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkShellHandler isolates the tool's own work from process start-up: the shell handler
// run in this process against exec of bash -c true, alternating, 50 runs each.
func BenchmarkShellHandler(b *testing.B) {
	e := &env{home: b.TempDir(), runDir: b.TempDir()}
	const runs = 50
	var tool, raw []time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < runs+2; j++ {
			t0 := time.Now()
			r := e.call("shell", `{"command":"true"}`)
			d1 := time.Since(t0)
			if r.Failed() {
				b.Fatal(r.Error)
			}
			t0 = time.Now()
			if err := exec.Command("bash", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
			d2 := time.Since(t0)
			if j >= 2 {
				tool, raw = append(tool, d1), append(raw, d2)
			}
		}
	}
	mt, mr := median(tool), median(raw)
	overhead := float64(mt-mr) / float64(time.Millisecond)
	b.ReportMetric(overhead, "overhead_ms")
	b.ReportMetric(float64(mt)/float64(mr), "x_vs_bash")
	b.Logf("shell handler in process: median %.2f ms; bash -c true: median %.2f ms; overhead %.2f ms (%.2fx), %d runs each",
		float64(mt)/1e6, float64(mr)/1e6, overhead, float64(mt)/float64(mr), len(tool))
}
