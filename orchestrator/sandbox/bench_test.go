package sandbox

import (
	"context"
	"os/exec"
	"slices"
	"sort"
	"testing"
	"time"
)

// BenchmarkExecServer compares, in one interleaved run, three ways to run a command: forked
// directly on the host, through a fresh bwrap per call (what every call paid before the exec
// server), and through the agent's long-lived sandbox and its exec server. Two commands: /bin/true
// (start-up cost alone) and head writing 4 MiB (the output passes through the caller's pipes, which
// the server hands to the command with SCM_RIGHTS, so it is never copied twice).
func BenchmarkExecServer(b *testing.B) {
	bin := b.TempDir()
	bw, err := NewBubblewrap(b.TempDir(), bin, "")
	if err != nil {
		b.Skipf("bubblewrap is required for this benchmark: %v", err)
	}
	withServer(b, bin)
	defer bw.Close()
	if err := exec.Command("cp", "/bin/true", bin+"/guilds-true").Run(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	box, _ := bw.Open(ctx, "agt_bench")
	bb := box.(*bwrapBox)
	args, err := bb.serverArgs()
	if err != nil {
		b.Fatal(err)
	}
	// The per-call form: the same mounts and environment, host PID namespace, the command itself.
	perCall := slices.DeleteFunc(args[:len(args)-1], func(a string) bool { return a == "--unshare-pid" || a == "--as-pid-1" })
	const reps = 40
	commands := []struct {
		name string
		argv []string
	}{{"true", []string{"/bin/true"}}, {"head_4MiB", []string{"head", "-c", "4194304", "/dev/zero"}}}
	for _, c := range commands {
		hostArgv := c.argv
		if p, err := exec.LookPath(c.argv[0]); err == nil {
			hostArgv = append([]string{p}, c.argv[1:]...)
		}
		direct := func() time.Duration {
			start := time.Now()
			out, err := exec.Command(hostArgv[0], hostArgv[1:]...).Output()
			if err != nil {
				b.Fatal(err)
			}
			_ = out
			return time.Since(start)
		}
		fresh := func() time.Duration {
			start := time.Now()
			cmd := exec.Command(bw.bwrap, append(slices.Clone(perCall), hostArgv...)...)
			cmd.Env = []string{}
			if _, err := cmd.Output(); err != nil {
				b.Fatalf("fresh bwrap: %v", err)
			}
			return time.Since(start)
		}
		server := func() time.Duration {
			start := time.Now()
			res, err := box.Exec(ctx, ExecRequest{Argv: c.argv})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("exec server: %v %+v", err, res)
			}
			return time.Since(start)
		}
		direct()
		server()
		var ds, fs, ss []time.Duration
		for n := 0; n < b.N; n++ {
			ds, fs, ss = nil, nil, nil
			for i := 0; i < reps; i++ {
				ds = append(ds, direct())
				fs = append(fs, fresh())
				ss = append(ss, server())
			}
		}
		md, mf, msv := benchMS(ds), benchMS(fs), benchMS(ss)
		b.ReportMetric(md, c.name+"_direct_median_ms")
		b.ReportMetric(mf, c.name+"_fresh_bwrap_median_ms")
		b.ReportMetric(msv, c.name+"_server_median_ms")
		b.ReportMetric(msv/md, c.name+"_server_x_vs_direct")
		b.ReportMetric(mf/md, c.name+"_fresh_bwrap_x_vs_direct")
		b.Logf("%s, median over %d each: direct %.2f ms, fresh bwrap per call %.2f ms (%.2fx), exec server %.2f ms (%.2fx direct, %.2fx fresh bwrap)",
			c.argv[0], reps, md, mf, mf/md, msv, msv/md, msv/mf)
	}
}

func benchMS(d []time.Duration) float64 {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Microseconds()) / 1000
}
