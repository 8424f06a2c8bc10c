package code_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/tools"
	"github.com/guildsai/guilds/orchestrator/tools/code"
	"github.com/guildsai/guilds/shared/envelope"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// BenchmarkFileReadRoundTrip measures file_read through the whole orchestrator (HTTP, registry,
// bubblewrap sandbox exec, guilds-code, pipeline, PostgreSQL) against the same helper called
// directly, and against the helper run through the sandbox's exec alone (the agent's long-lived
// bubblewrap and its exec server), in the same run: each side reads its own fresh 200-line files,
// so "no repeated reads" never shortcuts. A fourth pair times the bare exec: /bin/true through the
// exec server against /bin/true forked directly.
func BenchmarkFileReadRoundTrip(b *testing.B) {
	bin := os.Getenv("GUILDS_BIN_DIR")
	if bin == "" {
		b.Skip("GUILDS_BIN_DIR is unset: run `make bench`, which builds the helpers")
	}
	bw, err := sandbox.NewBubblewrap(sandboxtest.Root(b), bin, "")
	if err != nil {
		b.Skipf("bubblewrap is required for this benchmark: %v", err)
	}
	defer bw.Close()
	const reps = 40
	e := newEnv(b, bw)
	agentID, run := e.startRun(map[string]any{"coding": true})
	runID := run["id"].(string)
	home := hostHome(bw, agentID)
	var content strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&content, "line %d of a file the benchmark reads: some ordinary source text\n", i)
	}
	for _, side := range []string{"orch", "direct", "box"} {
		for i := 0; i < reps; i++ {
			p := filepath.Join(home, "bench", fmt.Sprintf("%s-%d.txt", side, i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content.String()), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	ctx := context.Background()
	box, err := bw.Open(ctx, agentID)
	if err != nil {
		b.Fatal(err)
	}
	// direct: the helper on the host over the same workspace, as a caller without the orchestrator would.
	direct := func(i int) time.Duration {
		req, _ := envelope.EncodeRequest(envelope.Request{Tool: "file_read", Args: []byte(fmt.Sprintf(`{"path":"bench/direct-%d.txt"}`, i)),
			RunID: "bench_direct", CallID: fmt.Sprintf("d%d", i), Seq: int64(i + 1)})
		cmd := exec.Command(filepath.Join(bin, "guilds-code"), req)
		cmd.Env = []string{"GUILDS_HOME=" + home, "GUILDS_RUN_DIR=" + filepath.Join(filepath.Dir(home), "run"), "PATH=/usr/bin:/bin"}
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if r, derr := envelope.DecodeReply(out); err != nil || derr != nil || r.Failed() {
			b.Fatalf("direct read: %v %v %+v", err, derr, r)
		}
		return d
	}
	// box: the same call through the sandbox's exec (the exec server in the agent's bubblewrap),
	// without HTTP, registry or database.
	inBox := func(i int) time.Duration {
		req := envelope.Request{Tool: "file_read", Args: []byte(fmt.Sprintf(`{"path":"bench/box-%d.txt"}`, i)),
			RunID: "bench_box", CallID: fmt.Sprintf("b%d", i), Seq: int64(i + 1)}
		start := time.Now()
		r, err := tools.CallHelper(ctx, box, code.Helper, req, nil, time.Minute)
		d := time.Since(start)
		if err != nil || r.Failed() {
			b.Fatalf("box read: %v %+v", err, r)
		}
		return d
	}
	orch := func(i int) time.Duration {
		start := time.Now()
		res, _ := e.call(runID, "file_read", map[string]any{"path": fmt.Sprintf("bench/orch-%d.txt", i)})
		d := time.Since(start)
		if !strings.Contains(res, " · lines 1–") || strings.HasPrefix(res, "ERROR") {
			b.Fatalf("orchestrator read: %q", res)
		}
		return d
	}
	// The bare exec: /bin/true forked on the host against /bin/true through the sandbox's exec
	// server (control message, fd passing, fork/exec in the sandbox's namespaces, exit event).
	trueDirect := func() time.Duration {
		start := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	trueBox := func() time.Duration {
		start := time.Now()
		res, err := box.Exec(ctx, sandbox.ExecRequest{Argv: []string{"/bin/true"}})
		d := time.Since(start)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec /bin/true in the sandbox: %v %+v", err, res)
		}
		return d
	}
	direct(0) // warm the page cache and the binary
	trueBox() // start the agent's sandbox
	var ds, bs, os_, ts, tb []time.Duration
	for n := 0; n < b.N; n++ {
		ds, bs, os_, ts, tb = nil, nil, nil, nil, nil
		for i := 0; i < reps; i++ { // alternate the sides so machine load hits them alike
			ds = append(ds, direct(i))
			bs = append(bs, inBox(i))
			os_ = append(os_, orch(i))
			ts = append(ts, trueDirect())
			tb = append(tb, trueBox())
		}
	}
	md, mb, mo, mtd, mtb := ms(median(ds)), ms(median(bs)), ms(median(os_)), ms(median(ts)), ms(median(tb))
	b.ReportMetric(md, "direct_median_ms")
	b.ReportMetric(mb, "sandbox_median_ms")
	b.ReportMetric(mo, "orchestrator_median_ms")
	b.ReportMetric(mo-md, "overhead_ms")
	b.ReportMetric(mo-mb, "overhead_past_sandbox_ms")
	b.ReportMetric(mo/md, "x_vs_direct")
	b.ReportMetric(mtd, "true_direct_median_ms")
	b.ReportMetric(mtb, "true_server_median_ms")
	b.ReportMetric(mtb/mtd, "server_x_vs_direct_exec")
	b.Logf("file_read median over %d calls each: helper direct %.2f ms, through the sandbox's exec server %.2f ms (+%.2f ms), "+
		"through the orchestrator (HTTP, registry, sandbox exec, helper, pipeline, PostgreSQL) %.2f ms: overhead %.2f ms (%.2f ms past the sandbox exec), %.2fx direct",
		reps, md, mb, mb-md, mo, mo-md, mo-mb, mo/md)
	b.Logf("exec server exec vs direct exec (/bin/true, median over %d each): %.2f ms vs %.2f ms, %.2fx (+%.2f ms)",
		reps, mtb, mtd, mtb/mtd, mtb-mtd)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
