package proc

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to read while Run writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// watchBuffer is a lockedBuffer that calls seen once it holds want.
type watchBuffer struct {
	lockedBuffer
	want string
	seen func()
}

func (b *watchBuffer) Write(p []byte) (int, error) {
	n, err := b.lockedBuffer.Write(p)
	if strings.Contains(strings.ReplaceAll(b.String(), "\r\n", "\n"), b.want) {
		b.seen()
	}
	return n, err
}

func bash(t *testing.T, script string, mod func(*Cmd)) (Result, string) {
	t.Helper()
	var out lockedBuffer
	c := Cmd{Args: []string{"bash", "-c", script}, Dir: t.TempDir(), Env: os.Environ(), Output: &out, Timeout: 20 * time.Second}
	if mod != nil {
		mod(&c)
	}
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatalf("Run(%q): %v", script, err)
	}
	return res, strings.ReplaceAll(out.String(), "\r\n", "\n")
}

// alive lists the processes whose command line contains marker.
func alive(marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		if zombie(mustAtoi(e.Name())) {
			continue
		}
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmdline, marker) && !strings.Contains(cmdline, "proc.test") {
			found = append(found, e.Name()+": "+cmdline)
		}
	}
	return found
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }

// hangGuard bounds a wait for something that normally takes well under a second: it only turns a
// hang into a failure, far above what a loaded machine takes (and below the markers' sleeps).
const hangGuard = 30 * time.Second

// waitGone waits (at most hangGuard) for processes matching marker to disappear.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if len(alive(marker)) == 0 {
			return
		}
	}
	t.Fatalf("processes survived: %v", alive(marker))
}

func TestRunOutputAndExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, want string
		code               int
	}{
		{"output and success", "echo hello; echo err >&2", "hello\nerr\n", 0},
		{"exit code", "echo x; exit 3", "x\n", 3},
		{"a terminal for output", "test -t 1 && test -t 2 && echo tty", "tty\n", 0},
		{"stdin is closed", "cat; echo eof", "eof\n", 0},
		{"no controlling terminal", "exec 3</dev/tty && echo opened || echo none", "none\n", 0},
		{"killed by a signal", "kill -9 $$", "", 137},
		{"token in the environment", "test -n \"$" + TokenEnv + "\" && echo tok", "tok\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out := bash(t, tt.script, nil)
			if res.ExitCode != tt.code || res.TimedOut || res.Leftover != 0 {
				t.Fatalf("result %+v, want exit %d", res, tt.code)
			}
			if !strings.HasSuffix(out, tt.want) {
				t.Fatalf("output %q, want %q", out, tt.want)
			}
			if tt.want != "" && strings.TrimPrefix(out, "bash: line 1: /dev/tty: No such device or address\n") != tt.want {
				t.Fatalf("output %q, want %q", out, tt.want)
			}
		})
	}
}

func TestRunStdinReader(t *testing.T) {
	t.Parallel()
	res, out := bash(t, "tr a-z A-Z", func(c *Cmd) { c.Stdin = strings.NewReader("{\"a\":1}\n") })
	if res.ExitCode != 0 || out != "{\"A\":1}\n" {
		t.Fatalf("result %+v output %q", res, out)
	}
}

func TestRunDirAndEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, out := bash(t, "pwd; echo $FOO", func(c *Cmd) { c.Dir = dir; c.Env = []string{"FOO=bar", "PATH=" + os.Getenv("PATH")} })
	if res.ExitCode != 0 || out != dir+"\nbar\n" {
		t.Fatalf("result %+v output %q", res, out)
	}
}

func TestRunMissingProgram(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Cmd{Args: []string{"/no/such/program"}})
	if err == nil || !strings.Contains(err.Error(), "/no/such/program") {
		t.Fatalf("err = %v, want one naming the program", err)
	}
	if _, err := Run(context.Background(), Cmd{}); err == nil {
		t.Fatal("empty Args: want an error")
	}
}

func TestRunTimeoutKeepsOutputAndKillsTheTree(t *testing.T) {
	t.Parallel()
	marker := "314.159" + strconv.Itoa(os.Getpid()) // seconds: these sleeps end only when killed
	script := `printf 'partial line before timeout'; echo; ` +
		`sleep ` + marker + ` & ` +
		`setsid sleep ` + marker + `1 & ` +
		`( setsid bash -c 'sleep ` + marker + `2' & ) ; ` +
		`trap '' TERM; sleep ` + marker + `3; echo never`
	start := time.Now()
	// 5 s: time for bash to print its line and start its children on a loaded machine.
	res, out := bash(t, script, func(c *Cmd) { c.Timeout = 5 * time.Second; c.Grace = 300 * time.Millisecond })
	if !res.TimedOut || res.ExitCode != TimeoutExit {
		t.Fatalf("result %+v, want a timeout with exit 124", res)
	}
	if el := time.Since(start); el > hangGuard {
		t.Fatalf("took %v", el)
	}
	if !strings.Contains(out, "partial line before timeout") || strings.Contains(out, "never") {
		t.Fatalf("output %q", out)
	}
	waitGone(t, marker)
}

// TestRunDefaultGraceIsTwoSeconds: with no Grace, a command that ignores SIGTERM (and never ends by
// itself) gets SIGKILL DefaultGrace, 2 s, after it is stopped, not sooner. It is stopped (cancelled)
// once it has said its trap is set, however long a loaded machine takes to get there.
func TestRunDefaultGraceIsTwoSeconds(t *testing.T) {
	t.Parallel()
	if DefaultGrace != 2*time.Second {
		t.Fatalf("DefaultGrace is %v; the documented grace is 2 s", DefaultGrace)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	var stopped time.Time
	out := &watchBuffer{want: "ready\n", seen: func() { once.Do(func() { stopped = time.Now(); cancel() }) }}
	res, err := Run(ctx, Cmd{Args: []string{"bash", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"}, Env: os.Environ(), Output: out, Timeout: hangGuard})
	el := time.Since(stopped)
	if err != nil || !res.Canceled || stopped.IsZero() || el < DefaultGrace || el > hangGuard {
		t.Fatalf("result %+v %v after %v; want SIGKILL 2 s after the stop", res, err, el)
	}
}

func TestRunStopsLeftoverChildren(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, script string }{
		{"holding the terminal", "sleep %s & echo started"},
		{"output redirected", "nohup sleep %s >/dev/null 2>&1 & echo started"},
		{"in a new session", "setsid sleep %s & echo started"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := "271.8" + strconv.Itoa(os.Getpid()) + strconv.Itoa(i) // seconds: the leftover would sleep that long
			start := time.Now()
			res, out := bash(t, strings.Replace(tt.script, "%s", marker, 1), nil)
			if el := time.Since(start); el > hangGuard {
				t.Fatalf("call hung for %v on what the command left behind", el)
			}
			if res.ExitCode != 0 || res.Leftover != 1 || out != "started\n" {
				t.Fatalf("result %+v output %q; want exit 0 and one leftover stopped", res, out)
			}
			waitGone(t, marker)
		})
	}
}

// TestRunStopsWhatLeftoversForkMeanwhile: a leftover that ignores SIGTERM and keeps forking
// while it is being stopped leaves nothing behind, what it forked during the grace included.
func TestRunStopsWhatLeftoversForkMeanwhile(t *testing.T) {
	marker := "39.27" + strconv.Itoa(os.Getpid())
	script := `(trap '' TERM; for i in $(seq 150); do sleep ` + marker + ` & sleep 0.02; done) & echo started`
	res, out := bash(t, script, func(c *Cmd) { c.Grace = time.Second })
	if res.ExitCode != 0 || res.Leftover == 0 || out != "started\n" {
		t.Fatalf("result %+v output %q; want exit 0 and leftovers stopped", res, out)
	}
	waitGone(t, marker)
}

func TestRunCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	marker := "161.8" + strconv.Itoa(os.Getpid())
	res, err := Run(ctx, Cmd{Args: []string{"bash", "-c", "sleep " + marker}, Env: os.Environ()})
	if err != nil || !res.Canceled || res.TimedOut {
		t.Fatalf("result %+v err %v; want canceled", res, err)
	}
	waitGone(t, marker)
}

func TestRunConcurrent(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := strings.Repeat(strconv.Itoa(i), 1000)
			var out lockedBuffer
			res, err := Run(context.Background(), Cmd{Args: []string{"bash", "-c", "echo " + want + "; exit " + strconv.Itoa(i)}, Env: os.Environ(), Output: &out})
			if err != nil || res.ExitCode != i || strings.TrimSpace(out.String()) != want || res.Leftover != 0 {
				t.Errorf("run %d: %+v %v %q", i, res, err, out.String())
			}
		}(i)
	}
	wg.Wait()
}

func TestRunStartedReportsTheGroup(t *testing.T) {
	t.Parallel()
	var got int
	res, out := bash(t, "echo $$", func(c *Cmd) { c.Started = func(pid int) { got = pid } })
	if res.ExitCode != 0 || strings.TrimSpace(out) != strconv.Itoa(got) {
		t.Fatalf("Started got %d, shell says %q", got, out)
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	ppid, state, pgrp, sid, ok := parseStat([]byte("123 (a (weird) name) S 1 123 123 0 -1"))
	if !ok || ppid != 1 || state != 'S' || pgrp != 123 || sid != 123 {
		t.Fatalf("parseStat: %d %c %d %d %v", ppid, state, pgrp, sid, ok)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S a b c"} {
		if _, _, _, _, ok := parseStat([]byte(bad)); ok {
			t.Errorf("parseStat(%q) ok", bad)
		}
	}
}

func TestChildrenOfAgreesWithScan(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	has := func(pids []int) bool {
		for _, p := range pids {
			if p == cmd.Process.Pid {
				return true
			}
		}
		return false
	}
	if !has(childrenOf(os.Getpid())) || !has(scanChildren(os.Getpid())) {
		t.Fatalf("child %d missing: children file %v, scan %v", cmd.Process.Pid, childrenOf(os.Getpid()), scanChildren(os.Getpid()))
	}
	if childrenOf(1<<30) != nil {
		t.Fatal("children of a missing process")
	}
}

func TestRunGroupAndSession(t *testing.T) {
	t.Parallel()
	for _, newSession := range []bool{false, true} {
		var pid int
		res, out := bash(t, "cat /proc/$$/stat", func(c *Cmd) {
			c.NewSession = newSession
			c.Started = func(p int) { pid = p }
		})
		_, _, pgrp, sid, ok := parseStat([]byte(out))
		if res.ExitCode != 0 || !ok || pgrp != pid {
			t.Fatalf("NewSession=%v: stat %q; want its own process group %d", newSession, out, pid)
		}
		wantSession := newSession || hasControllingTerminal()
		if (sid == pid) != wantSession {
			t.Fatalf("NewSession=%v (controlling terminal: %v): session %d, pid %d", newSession, hasControllingTerminal(), sid, pid)
		}
	}
}

func TestRunLineBufferedBeforeTimeout(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	// perl buffers a pipe in blocks but a terminal by lines: its line reaches the output while it
	// sleeps, so the test stops it as soon as the line is there (a block-buffered line would only
	// come out at its exit, and the hang guard's timeout would stop it with nothing printed).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &watchBuffer{want: "early line\n", seen: cancel}
	res, err := Run(ctx, Cmd{Args: []string{"perl", "-e", `print "early line\n"; sleep 300`}, Env: os.Environ(), Output: out,
		Timeout: hangGuard, Grace: 200 * time.Millisecond})
	if err != nil || !res.Canceled || strings.ReplaceAll(out.String(), "\r\n", "\n") != "early line\n" {
		t.Fatalf("result %+v %v output %q", res, err, out.String())
	}
}

func TestRunStdinThatNeverEnds(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan Result, 1)
	go func() {
		res, _ := Run(context.Background(), Cmd{Args: []string{"bash", "-c", "read -t 0.1 x; exit 4"}, Env: os.Environ(), Stdin: pr})
		done <- res
	}()
	select {
	case res := <-done:
		if res.ExitCode != 4 {
			t.Fatalf("result %+v, want exit 4", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run waited for a stdin reader that never ends")
	}
}
