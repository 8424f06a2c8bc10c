package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"
)

// BenchmarkRun compares Run (pseudo-terminal, own session, leftover scan) of bash -c 'echo hi'
// with os/exec capturing the same command's output through a pipe; 50 runs each, alternating,
// medians.
func BenchmarkRun(b *testing.B) {
	env := os.Environ()
	const runs = 50
	var withRun, withExec []time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < runs; j++ {
			var out bytes.Buffer
			t0 := time.Now()
			if _, err := Run(context.Background(), Cmd{Args: []string{"bash", "-c", "echo hi"}, Env: env, Output: &out}); err != nil {
				b.Fatal(err)
			}
			withRun = append(withRun, time.Since(t0))
			t0 = time.Now()
			cmd := exec.Command("bash", "-c", "echo hi")
			cmd.Env = env
			if _, err := cmd.CombinedOutput(); err != nil {
				b.Fatal(err)
			}
			withExec = append(withExec, time.Since(t0))
		}
	}
	mr, me := median(withRun), median(withExec)
	b.ReportMetric(float64(mr-me)/1e6, "overhead_ms")
	b.ReportMetric(float64(mr)/float64(me), "x_vs_exec")
	b.Logf("proc.Run: median %.2f ms; os/exec with a pipe: median %.2f ms; overhead %.2f ms (%.2fx), %d runs each",
		float64(mr)/1e6, float64(me)/1e6, float64(mr-me)/1e6, float64(mr)/float64(me), runs)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
