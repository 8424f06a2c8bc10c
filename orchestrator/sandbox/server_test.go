package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// bwrapOnly returns a bubblewrap provider over fresh folders with the fake helper and the exec
// server, logging to logs, or skips when bwrap is missing.
func bwrapOnly(t *testing.T, logs *syncCapped) *Bubblewrap {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "guilds-fake"), []byte(fakeHelper), 0o755); err != nil {
		t.Fatal(err)
	}
	bw, err := NewBubblewrap(sandboxtest.Root(t), bin, "")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	withServer(t, bin)
	if logs != nil {
		bw.Log = slog.New(slog.NewTextHandler(logs, nil))
	}
	t.Cleanup(func() { bw.Close() })
	return bw
}

// gone waits (at most 30 s, a hang guard) for no process whose command line holds marker to remain.
func gone(t *testing.T, marker string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if out, _ := exec.Command("pgrep", "-f", marker).Output(); len(out) == 0 {
			return
		}
	}
	out, _ := exec.Command("pgrep", "-af", marker).Output()
	t.Fatalf("processes %q remain: %s", marker, out)
}

// detached is a shell line that starts cmd in a session of its own, as a background command, and
// goes on once it is there: what is still in a command's session when the command exits ends with
// it, a child on its way to setsid too.
func detached(cmd string) string {
	return "setsid " + cmd + ` & w=$!; until [ ! -e /proc/$w ] || { read -r _ _ _ _ _ s _ </proc/$w/stat && [ "$s" = "$w" ]; }; do :; done; `
}

func TestServerConcurrentCallsStartOneSandbox(t *testing.T) {
	logs := &syncCapped{c: capped{limit: 1 << 20}}
	bw := bwrapOnly(t, logs)
	box, err := bw.Open(context.Background(), "agt_c")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	pids := make([]string, 12)
	for i := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// $PPID is the exec server: the same PID 1 for every call of the agent.
			res, err := box.Exec(context.Background(), ExecRequest{Argv: []string{"bash", "-c", "echo $PPID; read x; echo $x", "sh"}, Stdin: []byte(strconv.Itoa(i) + "\n")})
			if err != nil || res.ExitCode != 0 {
				t.Errorf("call %d: %v %+v", i, err, res)
				return
			}
			lines := strings.Fields(string(res.Stdout))
			if len(lines) != 2 || lines[1] != strconv.Itoa(i) {
				t.Errorf("call %d got %q", i, res.Stdout)
				return
			}
			pids[i] = lines[0]
		}()
	}
	wg.Wait()
	for i, p := range pids {
		if p != "1" {
			t.Errorf("call %d ran under pid %s, want the exec server (1)", i, p)
		}
	}
	if n := strings.Count(logs.String(), "sandbox started"); n != 1 {
		t.Fatalf("%d sandboxes started for one agent, want 1:\n%s", n, logs.String())
	}
}

func TestServerRestartsAfterItDied(t *testing.T) {
	logs := &syncCapped{c: capped{limit: 1 << 20}}
	bw := bwrapOnly(t, logs)
	ctx := context.Background()
	box, _ := bw.Open(ctx, "agt_r")
	mustExec(t, box, ExecRequest{Argv: []string{"true"}})
	bw.mu.Lock()
	srv := bw.servers["agt_r"].srv
	bw.mu.Unlock()
	// The server is bwrap's child (PID 1 of the sandbox); SIGKILL it from the host.
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", srv.cmd.Process.Pid, srv.cmd.Process.Pid))
	if err != nil || len(strings.Fields(string(children))) != 1 {
		t.Fatalf("bwrap's children: %q %v", children, err)
	}
	server, _ := strconv.Atoi(strings.Fields(string(children))[0])
	if err := syscall.Kill(server, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// No waiting for bwrap to notice: the call may find the server dead or meet it dying.
	res := mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", "echo again"}})
	if string(res.Stdout) != "again\n" {
		t.Fatalf("after restart: %q", res.Stdout)
	}
	if !strings.Contains(logs.String(), "restarting the sandbox") || strings.Count(logs.String(), "sandbox started") != 2 {
		t.Fatalf("the log does not say the sandbox restarted:\n%s", logs.String())
	}
}

func TestServerReapsAndCloseEndsEverything(t *testing.T) {
	bw := bwrapOnly(t, nil)
	ctx := context.Background()
	box, _ := bw.Open(ctx, "agt_z")
	// A background command in its own session outlives its call (its parent exits at once).
	// The short one ends and is reaped (no zombie stays), while the long one runs on (slee[p]: the
	// checking shell's own command line does not match).
	mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", detached("sleep 333.1 </dev/null >/dev/null 2>&1") + detached("sleep 0.21 </dev/null >/dev/null 2>&1")}})
	check := ExecRequest{Argv: []string{"bash", "-c", "pgrep -f 'slee[p] 333.1' >/dev/null && echo running; pgrep -f 'slee[p] 0.21' >/dev/null || echo exited; grep -l ') Z ' /proc/[0-9]*/stat || true"}}
	res := mustExec(t, box, check)
	for deadline := time.Now().Add(30 * time.Second); string(res.Stdout) != "running\nexited\n" && time.Now().Before(deadline); res = mustExec(t, box, check) {
		time.Sleep(100 * time.Millisecond)
	}
	if string(res.Stdout) != "running\nexited\n" {
		t.Fatalf("want the long background sleep running, the short one ended and no zombie, got %q (stderr %q)", res.Stdout, res.Stderr)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 333.1").Output(); len(out) == 0 {
		t.Fatal("the host does not see the background command")
	}
	bw.Close()
	gone(t, "sleep 333.1")
	gone(t, bw.Root) // bwrap's command line names the agent's folders
	if _, err := box.Exec(ctx, ExecRequest{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("exec after Close: %v", err)
	}
}

func TestServerCancelKillsGroupAndStartSignals(t *testing.T) {
	bw := bwrapOnly(t, nil)
	box, _ := bw.Open(context.Background(), "agt_s")
	ctx, cancel := context.WithCancel(context.Background())
	// A cancellation while the sandbox starts does not abort the start; the command then never runs.
	cancel()
	if _, err := box.Exec(ctx, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("exec with a cancelled context: %v", err)
	}
	bw.mu.Lock()
	started := bw.servers["agt_s"].srv != nil
	bw.mu.Unlock()
	if !started {
		t.Fatal("the sandbox did not start for a cancelled call")
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := box.Exec(ctx, ExecRequest{Argv: []string{"bash", "-c", "sleep 34.2 & sleep 34.2; wait"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled exec: %v", err)
	}
	gone(t, "sleep 34.2")

	var out syncCapped
	out.c.limit = 1 << 10
	p, err := box.(Starter).Start(ExecRequest{Argv: []string{"bash", "-c", "trap 'echo term; exit 7' TERM; echo up; while :; do sleep 0.05; done"}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "up") && time.Now().Before(deadline); { // the trap is set
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second): // a hang guard: the loop never ends by itself
		t.Fatal("the started command did not end on SIGTERM")
	}
	if p.State() != "exit status 7" || !strings.Contains(out.String(), "term") {
		t.Fatalf("state %q, output %q", p.State(), out.String())
	}
}

// TestServerEndsTheCommandsSession: a command that keeps forking, each child in a process group of
// its own (so no one group kill reaches them all), leaves nothing behind past its timeout, nor
// what it left running when it exited; a background command in a session of its own survives both,
// and the next command runs.
func TestServerEndsTheCommandsSession(t *testing.T) {
	bw := bwrapOnly(t, nil)
	bw.Limits.Pids = 128
	box, _ := bw.Open(context.Background(), "agt_e")
	mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", detached("sleep 338.6 </dev/null >/dev/null 2>&1")}})
	_, err := box.Exec(context.Background(), ExecRequest{Argv: []string{"bash", "-c", "set -m; while :; do sleep 338.7 & done"}, Timeout: 1500 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the deadline, got %v", err)
	}
	gone(t, "sleep 338.7")
	res := mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", "set -m; for i in 1 2 3; do sleep 338.8 & done; echo left"}})
	if string(res.Stdout) != "left\n" {
		t.Fatalf("got %q %q", res.Stdout, res.Stderr)
	}
	gone(t, "sleep 338.8")
	if out, _ := exec.Command("pgrep", "-f", "sleep 338.6").Output(); len(out) == 0 {
		t.Fatal("the background command in its own session did not survive the other commands' ends")
	}
	res = mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", "echo next"}})
	if string(res.Stdout) != "next\n" || res.PidsRefused != 0 {
		t.Fatalf("the next command: %q %q, %d forks refused", res.Stdout, res.Stderr, res.PidsRefused)
	}
	bw.Close()
	gone(t, "sleep 338.6")
}

func TestServerRefusesBadCommands(t *testing.T) {
	bw := bwrapOnly(t, nil)
	box, _ := bw.Open(context.Background(), "agt_b")
	for _, tc := range []struct {
		req  ExecRequest
		want string
	}{
		{ExecRequest{Argv: []string{"no-such-command"}}, "executable file not found"},
		{ExecRequest{Argv: []string{"/no/such/file"}}, "no such file"},
		{ExecRequest{}, "empty command"},
		{ExecRequest{Argv: []string{"true"}, Env: []string{"NOEQUALS"}}, "not KEY=VALUE"},
	} {
		if _, err := box.Exec(context.Background(), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.req.Argv, err, tc.want)
		}
	}
	// The sandbox still serves after refusals, with large output intact and capped like run's.
	res := mustExec(t, box, ExecRequest{Argv: []string{"head", "-c", strconv.Itoa(maxOutput + 1000), "/dev/zero"}})
	if len(res.Stdout) != maxOutput || !bytes.Equal(res.Stdout[:16], make([]byte, 16)) {
		t.Fatalf("large output: %d bytes", len(res.Stdout))
	}
}

// TestServerEndsWithOrchestrator kills a process that opened a sandbox (as the orchestrator would
// die) and checks the sandbox and its background command end too.
func TestServerEndsWithOrchestrator(t *testing.T) {
	if os.Getenv("GUILDS_SANDBOX_TEST_CHILD") != "" {
		return // the child side runs in TestServerChild
	}
	bwrapOnly(t, nil) // skips without bubblewrap; builds the server
	bin := t.TempDir()
	withServer(t, bin)
	os.WriteFile(filepath.Join(bin, "guilds-fake"), []byte(fakeHelper), 0o755)
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerChild$")
	cmd.Env = append(os.Environ(), "GUILDS_SANDBOX_TEST_CHILD="+root+":"+bin)
	out := &syncCapped{c: capped{limit: 1 << 20}}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "child ready") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "child ready") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %s", out.String())
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	gone(t, "sleep 335.3")
	gone(t, root)
}

func TestServerChild(t *testing.T) {
	spec := os.Getenv("GUILDS_SANDBOX_TEST_CHILD")
	if spec == "" {
		t.Skip("the child side of TestServerEndsWithOrchestrator")
	}
	root, bin, _ := strings.Cut(spec, ":")
	bw, err := NewBubblewrap(root, bin, "")
	if err != nil {
		t.Fatal(err)
	}
	box, _ := bw.Open(context.Background(), "agt_o")
	mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", detached("sleep 335.3 </dev/null >/dev/null 2>&1")}})
	fmt.Println("child ready")
	time.Sleep(time.Minute)
}

// FuzzParseEvent: whatever the sandbox's exec server writes, decoding an event never panics, and
// what it accepts round-trips.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{`{"pid":12}` + "\n", `{"exited":true,"exit_code":137,"timed_out":true}`, `{"error":"start x: not found"}`,
		`{"pid":-1}`, `{"exit_code":1e9}`, `{"pid":1}{"pid":2}`, `{"other":1}`, ``, `null`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parseEvent(line)
		if err != nil {
			return
		}
		b, _ := json.Marshal(ev)
		again, err := parseEvent(b)
		if err != nil || again != ev {
			t.Fatalf("%q → %+v → %s → %+v, %v", line, ev, b, again, err)
		}
	})
}

// TestServerOutputHeldOpen: a command that leaves something holding both its stdout and stderr
// returns after the output grace (not when the holder, sleeping over 5 minutes, ends), with what
// it printed.
func TestServerOutputHeldOpen(t *testing.T) {
	bw := bwrapOnly(t, nil)
	box, _ := bw.Open(context.Background(), "agt_h")
	start := time.Now()
	res := mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", "echo out; echo err >&2; " + detached("sleep 336.4") + "exit 0"}})
	if string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || time.Since(start) < outputGrace || time.Since(start) > outputGrace+time.Minute {
		t.Fatalf("got %q %q after %s", res.Stdout, res.Stderr, time.Since(start))
	}
	bw.Close()
	gone(t, "sleep 336.4")
}

// TestServerMissing: a bin folder without guilds-sandboxd fails the call with the fix.
func TestServerMissing(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "guilds-fake"), []byte(fakeHelper), 0o755)
	bw, err := NewBubblewrap(sandboxtest.Root(t), bin, "")
	if err != nil {
		t.Skip(err)
	}
	defer bw.Close()
	box, _ := bw.Open(context.Background(), "agt_m")
	_, err = box.Exec(context.Background(), ExecRequest{Argv: []string{"true"}})
	if !IsUnavailable(err) || !strings.Contains(err.Error(), ServerName) || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("missing server: %v", err)
	}
}

// TestSandboxIdleStop: a sandbox with no call for Idle stops, background commands with it; a
// call in flight holds it awake; the next call starts it again.
func TestSandboxIdleStop(t *testing.T) {
	logs := &syncCapped{c: capped{limit: 1 << 20}}
	bw := bwrapOnly(t, logs)
	bw.Idle = 600 * time.Millisecond
	box, _ := bw.Open(context.Background(), "agt_i")
	// A call longer than the idle period is not cut short, even with the idle timer armed by the
	// call before it.
	mustExec(t, box, ExecRequest{Argv: []string{"true"}})
	res := mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", detached("sleep 337.5 </dev/null >/dev/null 2>&1") + "sleep 1.5; echo held"}})
	if string(res.Stdout) != "held\n" {
		t.Fatalf("long call: %q %q", res.Stdout, res.Stderr)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 337.5").Output(); len(out) == 0 {
		t.Fatal("the background command is not running after the call")
	}
	// Background commands do not hold the sandbox awake: they end with the idle stop.
	deadline := time.Now().Add(time.Minute) // a hang guard over the 600 ms idle period
	for !strings.Contains(logs.String(), "sandbox stopped after being idle") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "sandbox stopped after being idle") {
		t.Fatalf("no idle stop:\n%s", logs.String())
	}
	gone(t, "sleep 337.5")
	res = mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", "echo back"}})
	if string(res.Stdout) != "back\n" || strings.Count(logs.String(), "sandbox started") != 2 {
		t.Fatalf("after the idle stop: %q\n%s", res.Stdout, logs.String())
	}
}
