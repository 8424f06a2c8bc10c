package files_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/procfloor"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/app"
	"github.com/guildsai/guilds/shared/envelope"
)

// TestMain lets this test binary run as guilds-code, so the tests below drive whole helper
// processes: GUILDS_FILES_TEST_HELPER=1 makes it one.
func TestMain(m *testing.M) {
	if os.Getenv("GUILDS_FILES_TEST_HELPER") == "1" {
		os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

type place struct{ home, run string }

func newPlace(t testing.TB) place {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := place{filepath.Join(root, "home"), filepath.Join(root, "run")}
	for _, d := range []string{p.home, envelope.RequestsDir(p.run)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// helper returns the command for one tool call, through a request file when it is large.
func (p place) helper(t testing.TB, bin, tool, run string, seq int64, args any) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	req := envelope.Request{Tool: tool, Args: raw, RunID: run, CallID: fmt.Sprintf("c%d", seq), Seq: seq}
	var argv []string
	if enc, _ := envelope.EncodeRequest(req); len(enc) <= envelope.MaxInlineRequest {
		argv = []string{enc}
	} else {
		b, _ := json.Marshal(req)
		path := filepath.Join(envelope.RequestsDir(p.run), req.CallID+".json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		argv = []string{"--request-file", path}
	}
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(os.Environ(), "GUILDS_HOME="+p.home, "GUILDS_RUN_DIR="+p.run)
	if bin == os.Args[0] {
		cmd.Env = append(cmd.Env, "GUILDS_FILES_TEST_HELPER=1")
	}
	return cmd
}

func reply(t testing.TB, out []byte) envelope.Reply {
	t.Helper()
	r, err := envelope.DecodeReply(out)
	if err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	return r
}

// TestWriteKilled kills a helper at moments spread over a file_write of a large file: the
// target is always the old or the new content, and no temporary file stays.
func TestWriteKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills helper processes; skipped in -short")
	}
	p := newPlace(t)
	bin := helperBin()
	target := filepath.Join(p.home, "big.txt")
	old := "old content\n"
	content := strings.Repeat("the new content of a large file\n", 2<<20/32)
	args := map[string]any{"path": "big.txt", "content": content}

	// One whole call first, to learn how long it takes.
	os.WriteFile(target, []byte(old), 0o644)
	start := time.Now()
	out, err := p.helper(t, bin, "file_write", "r1", 1, args).Output()
	whole := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if r := reply(t, out); r.Failed() {
		t.Fatal(r.Error)
	}
	seen := map[string]int{}
	for i := 0; i < 8; i++ {
		if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := p.helper(t, bin, "file_write", "r1", int64(i+2), args)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(whole * time.Duration(i) / 8)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		got, err := os.ReadFile(target)
		if err != nil {
			t.Fatal(err)
		}
		switch string(got) {
		case old:
			seen["old"]++
		case content:
			seen["new"]++
		default:
			t.Fatalf("kill %d: the file holds %d bytes, neither the old nor the new content", i, len(got))
		}
		filepath.WalkDir(p.home, func(path string, d os.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), "tmp") {
				t.Fatalf("kill %d left %s", i, path)
			}
			return nil
		})
		os.RemoveAll(envelope.RequestsDir(p.run))
		os.MkdirAll(envelope.RequestsDir(p.run), 0o755)
	}
	t.Logf("one call takes %v; after kills the file held old content %d times, new %d times", whole, seen["old"], seen["new"])
}

// helperBin is the built guilds-code when $GUILDS_BIN_DIR holds one (make test builds it),
// else this test binary acting as guilds-code.
func helperBin() string {
	if dir := os.Getenv("GUILDS_BIN_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "guilds-code")); err == nil {
			return filepath.Join(dir, "guilds-code")
		}
	}
	return os.Args[0]
}

// TestConcurrentEditProcesses: edits of one file by concurrent helper processes all apply.
func TestConcurrentEditProcesses(t *testing.T) {
	p := newPlace(t)
	const n = 12
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "key%02d = 0\n", i)
	}
	target := filepath.Join(p.home, "conf.ini")
	if err := os.WriteFile(target, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := map[string]any{"path": "conf.ini", "old_string": fmt.Sprintf("key%02d = 0", i), "new_string": fmt.Sprintf("key%02d = %d", i, i+100)}
			out, err := p.helper(t, helperBin(), "file_edit", "r1", int64(i+1), args).Output()
			if err != nil {
				t.Error(err)
				return
			}
			if r := reply(t, out); r.Failed() {
				t.Error(r.Error)
			}
		}(i)
	}
	wg.Wait()
	got, _ := os.ReadFile(target)
	for i := 0; i < n; i++ {
		if !strings.Contains(string(got), fmt.Sprintf("key%02d = %d\n", i, i+100)) {
			t.Fatalf("edit %d lost:\n%s", i, got)
		}
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode changed to %v", fi.Mode().Perm())
	}
}

// BenchmarkFileReadProcess: median wall time of a whole guilds-code process reading a 200-line
// file ($GUILDS_BIN_DIR/guilds-code) against cat of the same file, measured in the same run.
func BenchmarkFileReadProcess(b *testing.B) {
	dir := os.Getenv("GUILDS_BIN_DIR")
	if dir == "" {
		b.Skip("GUILDS_BIN_DIR is unset: run `make build` and `make bench` (it exports GUILDS_BIN_DIR)")
	}
	bin := filepath.Join(dir, "guilds-code")
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("no built helper at %s: run `make build`", bin)
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		b.Skip("no cat on PATH")
	}
	p := newPlace(b)
	// One run reading 50 different 200-line files: the steady state of a run (its folder exists,
	// and no read repeats an earlier one, so every call reads and records its file).
	const runs = 50
	files := make([]string, runs)
	for j := range files {
		var content strings.Builder
		for i := 1; i <= 200; i++ {
			fmt.Fprintf(&content, "\tx%03d := f(x, %d) // %d\n", i, i, j) // 200 short lines fit the 8192-byte cap
		}
		files[j] = filepath.Join(p.home, fmt.Sprintf("src%02d.go", j))
		if err := os.WriteFile(files[j], []byte(content.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	empty := procfloor.EmptyGo(b)
	var helperTimes, catTimes, helperCPU, catCPU, startTimes, floorTimes []time.Duration
	seq := int64(0)
	for i := 0; i < b.N; i++ {
		// Each round is a run whose folder already exists, as after its first call.
		run := fmt.Sprintf("bench%d", i)
		if err := os.MkdirAll(filepath.Join(p.home, ".runs", run), 0o755); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < runs; j++ {
			seq++
			file := files[j]
			cmd := p.helper(b, bin, "file_read", run, seq, map[string]any{"path": filepath.Base(file)})
			start := time.Now()
			out, err := cmd.Output()
			helperTimes = append(helperTimes, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			helperCPU = append(helperCPU, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			if r := reply(b, out); r.Failed() || r.Meta["repeat_of"] != nil || !strings.HasPrefix(r.Text, filepath.Base(file)+" · lines 1–200 of 200") {
				b.Fatalf("unexpected reply %+v", r)
			}
			cmd = exec.Command(cat, file)
			var sink bytes.Buffer
			cmd.Stdout = &sink
			start = time.Now()
			err = cmd.Run()
			catTimes = append(catTimes, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			catCPU = append(catCPU, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			// The helper doing no tool work at all: what start-up alone costs.
			cmd = exec.Command(bin, "--help")
			cmd.Stdout = &sink
			start = time.Now()
			err = cmd.Run()
			startTimes = append(startTimes, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			// The floor: a Go program that does nothing at all.
			start = time.Now()
			err = exec.Command(empty).Run()
			floorTimes = append(floorTimes, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	h, c := median(helperTimes), median(catTimes)
	ratio := float64(h) / float64(c)
	b.ReportMetric(float64(h.Microseconds())/1000, "median_ms")
	b.ReportMetric(float64(c.Microseconds())/1000, "cat_median_ms")
	b.ReportMetric(ratio, "x_vs_cat")
	// CPU time (user+system) is steadier than wall time on a busy machine; report it too.
	hc, cc := median(helperCPU), median(catCPU)
	b.ReportMetric(float64(hc.Microseconds())/1000, "cpu_median_ms")
	b.ReportMetric(float64(hc)/float64(max(cc, time.Microsecond)), "cpu_x_vs_cat")
	st := median(startTimes)
	b.ReportMetric(float64(st.Microseconds())/1000, "startup_median_ms")
	fl := median(floorTimes)
	b.ReportMetric(float64(fl.Microseconds())/1000, "empty_go_median_ms")
	b.ReportMetric(float64(h)/float64(fl), "x_vs_empty_go")
	b.Logf("file_read of a 200-line file: guilds-code median %.2f ms, cat median %.2f ms, %.2fx cat; CPU %.2f ms vs %.2f ms; guilds-code --help (start-up alone) median %.2f ms; an empty Go program (the floor) median %.2f ms, %.2fx cat (%d runs each)",
		float64(h.Microseconds())/1000, float64(c.Microseconds())/1000, ratio,
		float64(hc.Microseconds())/1000, float64(cc.Microseconds())/1000, float64(st.Microseconds())/1000,
		float64(fl.Microseconds())/1000, float64(fl)/float64(c), len(helperTimes))
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
