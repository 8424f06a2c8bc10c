package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
)

// helperEnv makes this test binary act as a guilds-code helper for shell and shell_status.
const helperEnv = "GUILDS_SHELL_TEST_HELPER"

func TestMain(m *testing.M) {
	// The shell tool starts background supervisors as this binary with SuperviseArg.
	if len(os.Args) == 3 && os.Args[1] == SuperviseArg {
		os.Exit(Supervise(os.Args[2]))
	}
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperMain is a guilds-code reduced to the two shell tools, for tests that need separate
// helper processes when no built helper is at hand.
func helperMain(args []string) int {
	req, err := envelope.ParseInvocation(args, os.Getenv("GUILDS_RUN_DIR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := runs.New(req)
	var r envelope.Reply
	switch req.Tool {
	case "shell":
		r = Shell(context.Background(), c)
	case "shell_status":
		r = Status(context.Background(), c)
	default:
		r = envelope.Errorf(nil, "unknown tool %s", req.Tool)
	}
	fmt.Println(envelope.EncodeReply(r))
	return 0
}

// env is a workspace and run directory for one test.
type env struct {
	t            *testing.T
	home, runDir string
	seq          int
	mu           sync.Mutex
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, home: t.TempDir(), runDir: t.TempDir()}
	t.Cleanup(func() { stopAll(e) })
	return e
}

// stopAll stops whatever background command a test left running.
func stopAll(e *env) {
	ids, _ := jobIDs(e.runDir)
	for _, n := range ids {
		st, err := load(e.runDir, "b"+strconv.Itoa(n))
		if err == nil && (st.State == "running" || st.State == "starting") {
			_, _ = stopJob(context.Background(), e.runDir, st)
		}
	}
}

func (e *env) call(tool, args string) envelope.Reply {
	e.mu.Lock()
	e.seq++
	seq := e.seq
	e.mu.Unlock()
	req := envelope.Request{Tool: tool, Args: json.RawMessage(args), RunID: "r1", CallID: "c" + strconv.Itoa(seq), Seq: int64(seq)}
	c := &runs.Call{Req: req, Home: e.home, RunDir: e.runDir, Max: 8192}
	if tool == "shell" {
		return Shell(context.Background(), c)
	}
	return Status(context.Background(), c)
}

// helper runs one call in a separate helper process: the built guilds-code when
// $GUILDS_BIN_DIR holds one, else this test binary in helper mode.
func (e *env) helper(tool, args string, callID string) envelope.Reply {
	e.t.Helper()
	req := envelope.Request{Tool: tool, Args: json.RawMessage(args), RunID: "r1", CallID: callID, Seq: 1}
	enc, err := envelope.EncodeRequest(req)
	if err != nil {
		e.t.Fatal(err)
	}
	exe, extra := os.Args[0], helperEnv+"=1"
	if dir := os.Getenv("GUILDS_BIN_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "guilds-code")); err == nil {
			exe, extra = filepath.Join(dir, "guilds-code"), ""
		}
	}
	cmd := exec.Command(exe, enc)
	cmd.Env = append(os.Environ(), "GUILDS_HOME="+e.home, "GUILDS_RUN_DIR="+e.runDir, extra)
	out, err := cmd.Output()
	if err != nil {
		e.t.Errorf("helper %s: %v", exe, err)
		return envelope.Reply{}
	}
	r, err := envelope.DecodeReply(out)
	if err != nil {
		e.t.Errorf("helper reply: %v", err)
	}
	return r
}

// alive lists live processes whose command line contains marker (zombies excluded).
func alive(marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || procStartTime(pid) == 0 {
			continue
		}
		b, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmdline, marker) && !strings.Contains(cmdline, "bash -c") {
			found = append(found, ent.Name()+": "+cmdline)
		}
	}
	return found
}

// hangGuard bounds a wait for something that normally takes well under a second: it only turns a
// hang into a failure, far above what a loaded machine takes.
const hangGuard = 30 * time.Second

// waitGone waits (at most hangGuard) for every process whose command line holds marker to end.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if len(alive(marker)) == 0 {
			return
		}
	}
	t.Fatalf("processes survived: %v", alive(marker))
}

// waitState polls shell_status (for at most hangGuard) until the command's state starts with prefix.
func waitState(e *env, id, prefix string) envelope.Reply {
	e.t.Helper()
	var r envelope.Reply
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		r = e.call("shell_status", `{"id":"`+id+`"}`)
		if s, _ := r.Meta["state"].(string); strings.HasPrefix(s, prefix) {
			return r
		}
	}
	e.t.Fatalf("%s never reached %q: %+v", id, prefix, r)
	return r
}

var markers atomic.Int64

// marker is a number of seconds (over 400) no other test's sleep uses: processes sleeping it are
// this test's.
func marker(t *testing.T) string {
	return fmt.Sprintf("%d.%d", 400+markers.Add(1), os.Getpid()%100000)
}

func TestTimeoutLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := marker(t)
	cmd := fmt.Sprintf(`echo start; sleep %[1]s1 & (sleep %[1]s2 &) ; setsid sleep %[1]s3 & (setsid bash -c "sleep %[1]s4" &); trap "" TERM; sleep %[1]s5`, m)
	start := time.Now()
	// 5 s: time for bash to print and start its children on a loaded machine before the timeout.
	r := e.call("shell", fmt.Sprintf(`{"command":%q,"timeout_seconds":5}`, cmd))
	if r.Failed() || r.Meta["exit_code"] != 124 || r.Meta["timed_out"] != true {
		t.Fatalf("reply %+v, want a timeout with exit_code 124", r)
	}
	if !strings.HasPrefix(r.Text, "start\n") || !strings.HasSuffix(r.Text, "exit_code: 124") {
		t.Fatalf("text %q", r.Text)
	}
	if el := time.Since(start); el > hangGuard { // the command would sleep over 400 s
		t.Fatalf("took %v", el)
	}
	waitGone(t, m)
}

func TestForegroundLeftoversAreStopped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := marker(t)
	start := time.Now()
	r := e.call("shell", fmt.Sprintf(`{"command":"sleep %[1]s1 & setsid sleep %[1]s2 & nohup sleep %[1]s3 >/dev/null 2>&1 & echo done"}`, m))
	if el := time.Since(start); el > hangGuard { // the children would sleep over 400 s
		t.Fatalf("the call hung %v on the children it left", el)
	}
	if r.Meta["exit_code"] != 0 || !strings.Contains(r.Text, "stopped 3 processes the command left running") || !strings.Contains(r.Text, "background: true") {
		t.Fatalf("reply %+v", r)
	}
	waitGone(t, m)
}

func TestCwdTracking(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	steps := []struct {
		command, wantCwd, wantText string
	}{
		{"mkdir -p x/y && cd x/y", "x/y", "(no output)"},
		{"pwd", "x/y", "{home}/x/y\n"},
		{"(cd /tmp); cd ..; pwd", "x", "{home}/x\n"},
		{"cd /no/such; true", "x", "bash: line 1: cd: /no/such: No such file or directory\n"},
		{"mkdir d && cd d && rmdir ../d", "", "[the command ended in {home}/x/d, which no longer exists; the next command starts in {home}]"},
		{"pwd", "", "{home}\n"},
		{"cd x && exec true", "", "(no output)"}, // exec replaces the shell: nothing recorded
		{"cd /tmp && pwd", "/tmp", "/tmp\n"},
	}
	for i, s := range steps {
		r := e.call("shell", fmt.Sprintf(`{"command":%q}`, s.command))
		want := s.wantCwd
		if !filepath.IsAbs(want) {
			want = filepath.Join(e.home, want)
		}
		if r.Meta["cwd"] != want {
			t.Fatalf("step %d %q: cwd %v, want %s", i, s.command, r.Meta["cwd"], want)
		}
		if text := strings.ReplaceAll(s.wantText, "{home}", e.home); r.Text != text {
			t.Fatalf("step %d %q: text %q, want %q", i, s.command, r.Text, text)
		}
	}
}

func TestBackgroundNumbersAcrossHelpers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 6
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := e.helper("shell", `{"command":"echo bg `+strconv.Itoa(i)+`","background":true}`, "p"+strconv.Itoa(i))
			ids[i], _ = r.Meta["background_id"].(string)
		}(i)
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if _, ok := parseID(id); !ok || seen[id] {
			t.Fatalf("ids %v: want %d distinct ids b1…b%d", ids, n, n)
		}
		seen[id] = true
	}
	for i := 1; i <= n; i++ {
		if !seen["b"+strconv.Itoa(i)] {
			t.Fatalf("ids %v: b%d missing", ids, i)
		}
		waitState(e, "b"+strconv.Itoa(i), "exited 0")
	}
	// The next helper continues the numbering.
	r := e.helper("shell", `{"command":"true","background":true}`, "next")
	if r.Meta["background_id"] != fmt.Sprintf("b%d", n+1) {
		t.Fatalf("next id %v, want b%d", r.Meta["background_id"], n+1)
	}
}

func TestBackgroundExitRecordedAfterStarterExits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The command ends only once the test releases it, after the starting helper has exited.
	release := filepath.Join(e.home, "release")
	cmd, _ := json.Marshal(fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; echo finished; exit 7", release))
	r := e.helper("shell", `{"command":`+string(cmd)+`,"background":true}`, "c1")
	if r.Meta["state"] != "running" {
		t.Fatalf("reply %+v", r)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The starting helper has exited; a later helper process sees the exit code.
	var st envelope.Reply
	for i, deadline := 0, time.Now().Add(hangGuard); time.Now().Before(deadline); i++ {
		st = e.helper("shell_status", `{"id":"b1"}`, "s"+strconv.Itoa(i))
		if st.Meta["state"] != "running" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Meta["state"] != "exited 7" || st.Meta["exit_code"] != float64(7) || !strings.HasSuffix(st.Text, "finished") {
		t.Fatalf("status %+v", st)
	}
}

func TestStopEndsTheGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := marker(t)
	r := e.call("shell", fmt.Sprintf(`{"command":"sleep %[1]s1 & setsid sleep %[1]s2 & trap '' TERM; echo up; sleep %[1]s3","background":true}`, m))
	id, _ := r.Meta["background_id"].(string)
	if id != "b1" {
		t.Fatalf("reply %+v", r)
	}
	for deadline := time.Now().Add(hangGuard); len(alive(m)) < 3 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	st := e.call("shell_status", `{"id":"b1","stop":true}`)
	el := time.Since(start)
	if st.Meta["state"] != "stopped" || st.Meta["background_id"] != "b1" {
		t.Fatalf("stop: %+v", st)
	}
	// The shell ignores SIGTERM, so it takes the SIGKILL 2 s later (its sleep would last over 400 s).
	if el < 1500*time.Millisecond || el > hangGuard {
		t.Fatalf("stop took %v; want SIGKILL about 2 s after SIGTERM", el)
	}
	waitGone(t, m)
	list := e.call("shell_status", `{}`)
	if !strings.Contains(list.Text, "b1   stopped") {
		t.Fatalf("list %q", list.Text)
	}
}

func TestStatusOfLongLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.call("shell", `{"command":"seq 1 100000","background":true}`)
	r := waitState(e, "b1", "exited")
	lines := strings.Split(r.Text, "\n")
	if last := lines[len(lines)-1]; last != "100000" {
		t.Fatalf("last line %q", last)
	}
	if got := len(lines) - 3; got != StatusLines {
		t.Fatalf("%d log lines shown, want %d", got, StatusLines)
	}
}

func TestParseID(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"b1": 1, "b42": 42, "b999999999": 999999999} {
		if n, ok := parseID(s); !ok || n != want {
			t.Errorf("parseID(%q) = %d, %v", s, n, ok)
		}
	}
	for _, s := range []string{"", "b", "b0", "b01", "1", "B1", "b1x", "b-1", "b1234567890", "bb1"} {
		if _, ok := parseID(s); ok {
			t.Errorf("parseID(%q) accepted", s)
		}
	}
}

func TestBashEnvFileIsSharedAndRepaired(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := bashEnvFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bashEnvFile(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != bashEnvScript {
		t.Fatalf("bash-env.sh not repaired: %q", b)
	}
}

func TestUserBashEnvStillSourced(t *testing.T) {
	e := newEnv(t)
	rc := filepath.Join(t.TempDir(), "rc.sh")
	if err := os.WriteFile(rc, []byte("export FROM_RC=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BASH_ENV", rc)
	r := e.call("shell", `{"command":"echo $FROM_RC; bash -c 'echo nested:$FROM_RC'"}`)
	if r.Text != "yes\nnested:yes\n" {
		t.Fatalf("text %q", r.Text)
	}
}

func TestUnwritableRunDirStillTracksCwd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.runDir = filepath.Join(e.home, "not-a-dir")
	if err := os.WriteFile(e.runDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.call("shell", `{"command":"mkdir -p q && cd q && echo ok"}`)
	if r.Failed() || r.Text != "ok\n" || r.Meta["cwd"] != filepath.Join(e.home, "q") {
		t.Fatalf("reply %+v", r)
	}
}

func TestBackgroundRunsInItsOwnSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.call("shell", `{"command":"echo \"$$ $(cut -d' ' -f6 /proc/$$/stat)\"","background":true}`)
	r := waitState(e, "b1", "exited 0")
	f := strings.Fields(r.Text[strings.LastIndexByte(r.Text, '\n')+1:])
	if len(f) != 2 || f[0] != f[1] {
		t.Fatalf("pid and session %v: want the command to lead its own session (%q)", f, r.Text)
	}
}
