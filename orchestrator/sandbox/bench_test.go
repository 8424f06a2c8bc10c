package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// legacyArgs is the bwrap command line the exec server ran under before the sandboxes were
// isolated (the host's root, its network, its /etc, no limits): the baseline of BenchmarkExecServer.
func legacyArgs(t testing.TB, bin, agentRoot string) []string {
	for _, d := range []string{"home", "run", "tmp"} {
		if err := os.MkdirAll(filepath.Join(agentRoot, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := []string{"--die-with-parent", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--ro-bind", "/usr", "/usr", "--tmpfs", "/usr/local"}
	for _, top := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(top); err == nil {
			a = append(a, "--symlink", target, top)
		}
	}
	a = append(a, "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
		"--bind", filepath.Join(agentRoot, "tmp"), "/tmp", "--bind", filepath.Join(agentRoot, "home"), Home,
		"--bind", filepath.Join(agentRoot, "run"), RunDir,
		"--ro-bind", filepath.Join(bin, "guilds-true"), BinDir+"/guilds-true",
		"--ro-bind", filepath.Join(bin, ServerName), ServerPath, "--chdir", Home, "--clearenv",
		"--setenv", "PATH", BinDir+":/usr/bin:/bin", "--setenv", "HOME", Home)
	return append(a, "--", ServerPath)
}

// startLegacy starts a sandbox with legacyArgs and hands it to agentID's slot of bw, so the
// agent's Exec calls go through it as they did before isolation.
func startLegacy(t testing.TB, bw *Bubblewrap, agentID string) time.Duration {
	start := time.Now()
	srv, err := startServer(context.Background(), exec.Command(bw.bwrap, legacyArgs(t, bw.BinDir, filepath.Join(t.TempDir(), agentID))...),
		nil, func(c *exec.Cmd) error { return c.Start() }, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	bw.mu.Lock()
	if bw.servers == nil {
		bw.servers = map[string]*serverSlot{}
	}
	bw.servers[agentID] = &serverSlot{srv: srv, ran: true}
	bw.mu.Unlock()
	return took
}

// BenchmarkExecServer compares, in one interleaved run, four ways to run a command: forked
// directly on the host, through a fresh bwrap per call, through the exec server of a sandbox as it
// was before isolation (the host's root and network), and through the exec server of an isolated
// sandbox (its own user and network namespaces, seccomp, cgroups). Two commands: /bin/true
// (start-up cost alone) and head writing 4 MiB (the output passes through the caller's pipes,
// which the server hands to the command with SCM_RIGHTS, so it is never copied twice). It also
// times a sandbox's cold start, isolated and as before, without Chromium.
func BenchmarkExecServer(b *testing.B) {
	bin := b.TempDir()
	bw, err := NewBubblewrap(sandboxtest.Root(b), bin, "")
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
	legacyBox, _ := bw.Open(ctx, "agt_legacy")
	startLegacy(b, bw, "agt_legacy")
	if st := bw.Status(); len(st.Missing) > 0 {
		b.Logf("isolation on this host lacks: %v", st.Missing)
	}
	// The per-call form: the legacy mounts and environment, host PID namespace, the command itself.
	perCall := slices.DeleteFunc(legacyArgs(b, bin, filepath.Join(b.TempDir(), "fresh")), func(a string) bool { return a == "--unshare-pid" || a == "--as-pid-1" })
	perCall = perCall[:len(perCall)-2]
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
			if _, err := exec.Command(hostArgv[0], hostArgv[1:]...).Output(); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
		fresh := func() time.Duration {
			start := time.Now()
			cmd := exec.Command(bw.bwrap, append(slices.Clone(perCall), append([]string{"--"}, hostArgv...)...)...)
			cmd.Env = []string{}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("fresh bwrap: %v: %s", err, out)
			}
			return time.Since(start)
		}
		via := func(box Sandbox) func() time.Duration {
			return func() time.Duration {
				start := time.Now()
				res, err := box.Exec(ctx, ExecRequest{Argv: c.argv})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exec server: %v %+v", err, res)
				}
				return time.Since(start)
			}
		}
		legacy, isolated := via(legacyBox), via(box)
		direct()
		legacy()
		isolated()
		var ds, fs, ls, is []time.Duration
		for n := 0; n < b.N; n++ {
			ds, fs, ls, is = nil, nil, nil, nil
			for i := 0; i < reps; i++ {
				ds = append(ds, direct())
				fs = append(fs, fresh())
				ls = append(ls, legacy())
				is = append(is, isolated())
			}
		}
		md, mf, ml, mi := benchMS(ds), benchMS(fs), benchMS(ls), benchMS(is)
		b.ReportMetric(md, c.name+"_direct_median_ms")
		b.ReportMetric(mf, c.name+"_fresh_bwrap_median_ms")
		b.ReportMetric(ml, c.name+"_server_before_isolation_median_ms")
		b.ReportMetric(mi, c.name+"_server_isolated_median_ms")
		b.ReportMetric(mi/ml, c.name+"_isolated_x_vs_before")
		b.ReportMetric(mi/md, c.name+"_isolated_x_vs_direct")
		b.Logf("%s, median over %d each: direct %.2f ms, fresh bwrap per call %.2f ms (%.2fx), exec server before isolation %.2f ms, isolated %.2f ms (%.2fx before, %.2fx direct)",
			c.argv[0], reps, md, mf, mf/md, ml, mi, mi/ml, mi/md)
	}

	// Cold start: a new agent's sandbox up to the end of its first command.
	var cold, coldLegacy []time.Duration
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("agt_cold%d", i)
		start := time.Now()
		nb, err := bw.Open(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := nb.Exec(ctx, ExecRequest{Argv: []string{"/bin/true"}}); err != nil || res.ExitCode != 0 {
			b.Fatalf("cold start: %v %+v", err, res)
		}
		cold = append(cold, time.Since(start))
		lid := fmt.Sprintf("agt_coldlegacy%d", i)
		lb, _ := bw.Open(ctx, lid)
		start = time.Now()
		startLegacy(b, bw, lid)
		if res, err := lb.Exec(ctx, ExecRequest{Argv: []string{"/bin/true"}}); err != nil || res.ExitCode != 0 {
			b.Fatalf("cold start before isolation: %v %+v", err, res)
		}
		coldLegacy = append(coldLegacy, time.Since(start))
		bw.stop(id)
		bw.stop(lid)
	}
	mc, mcl := benchMS(cold), benchMS(coldLegacy)
	b.ReportMetric(mc, "cold_start_isolated_median_ms")
	b.ReportMetric(mcl, "cold_start_before_isolation_median_ms")
	b.ReportMetric(mc/mcl, "cold_start_isolated_x_vs_before")
	b.Logf("cold start to the first command, median over %d: isolated %.1f ms (target 300 ms), before isolation %.1f ms (%.2fx)", len(cold), mc, mcl, mc/mcl)
}

func benchMS(d []time.Duration) float64 {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Microseconds()) / 1000
}
