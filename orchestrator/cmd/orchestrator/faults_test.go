package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// childEnv, when set, makes the test binary run `orchestrator serve` itself (see TestMain): the
// fault tests kill and restart a real process on its embedded cluster.
const childEnv = "GUILDS_TEST_CHILD_SERVE"

// childServe is main with the test tools added.
func childServe() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, []string{"serve"}, os.LookupEnv, os.Stdin, os.Stdout, os.Stderr, hooks{tools: childTools})
}

// childTools adds `wait`, which notes its call id under GUILDS_TEST_EFFECTS (its effect: one line
// in a file named for the call each time the tool runs) and then waits ms milliseconds; with
// together, it waits (at most ms) until that many together-calls have been running at once.
func childTools(r *registry.Registry) error {
	return r.Register(registry.Tool{Name: "wait", Family: orchestrator.FamilyAlways, Description: "Waits ms milliseconds.",
		Schema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","description":"How long to wait."},"together":{"type":"integer","description":"How many calls to wait for."}}}`),
		Handler: func(ctx context.Context, c *registry.Call) (string, error) {
			var a struct {
				MS       int `json:"ms"`
				Together int `json:"together"`
			}
			_ = json.Unmarshal(c.Args, &a)
			if dir := os.Getenv("GUILDS_TEST_EFFECTS"); dir != "" {
				f, err := os.OpenFile(filepath.Join(dir, c.CallID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return "", err
				}
				_, err = f.WriteString("ran\n")
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return "", err
				}
			}
			timer := time.NewTimer(time.Duration(a.MS) * time.Millisecond)
			defer timer.Stop()
			if a.Together > 0 {
				return waitTogether(ctx, a.Together, timer.C)
			}
			select {
			case <-timer.C:
				return fmt.Sprintf("waited %d ms", a.MS), nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}})
}

// together counts the child's `wait` calls with together: how many run now, the most that ran at
// once, and a channel closed (and replaced) whenever that most grows.
var together struct {
	sync.Mutex
	running, most int
	grew          chan struct{}
}

// waitTogether waits until n together-calls have been running at once (or timeout fires, or ctx
// ends) and says how many it saw.
func waitTogether(ctx context.Context, n int, timeout <-chan time.Time) (string, error) {
	together.Lock()
	together.running++
	if together.running > together.most {
		together.most = together.running
		if together.grew != nil {
			close(together.grew)
		}
		together.grew = make(chan struct{})
	}
	together.Unlock()
	defer func() {
		together.Lock()
		together.running--
		together.Unlock()
	}()
	for {
		together.Lock()
		most, grew := together.most, together.grew
		together.Unlock()
		if most >= n {
			return fmt.Sprintf("%d calls ran at once", most), nil
		}
		select {
		case <-grew:
		case <-timeout:
			return fmt.Sprintf("gave up: at most %d calls ran at once", most), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// child is a running orchestrator process.
type child struct {
	cmd  *exec.Cmd
	base string
	out  *syncBuf
	done chan struct{}
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// faultRoot makes a data folder the postgres user can pass through.
func faultRoot(t testing.TB) string {
	t.Helper()
	root, err := os.MkdirTemp("", "guilds-faults-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "data")
}

// spawn starts the orchestrator on dataDir (its embedded cluster) without waiting for it.
func spawn(t testing.TB, dataDir string, env ...string) *child {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GUILDS_DATA_DIR="+dataDir, "GUILDS_LISTEN="+addr,
		"GUILDS_ADMIN_TOKEN="+testToken, "GUILDS_SANDBOX=local", "DATABASE_URL=")
	cmd.Env = append(cmd.Env, env...)
	c := &child{cmd: cmd, base: "http://" + addr, out: &syncBuf{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.out, c.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.terminate(t) })
	return c
}

// startChild spawns the orchestrator and waits until /healthz answers.
func startChild(t testing.TB, dataDir string, env ...string) *child {
	t.Helper()
	c := spawn(t, dataDir, env...)
	if !c.waitHealthy(2 * time.Minute) {
		t.Fatalf("orchestrator did not answer /healthz: %s", c.out)
	}
	return c
}

// waitHealthy polls /healthz until it answers 200, the process exits, or d passes.
func (c *child) waitHealthy(d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-c.done:
			return false
		default:
		}
		if resp, err := http.Get(c.base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return true
			}
		}
	}
	return false
}

// terminate stops the process as SIGTERM does and waits for it.
func (c *child) terminate(t testing.TB) {
	select {
	case <-c.done:
		return
	default:
	}
	// A connection the client dialled and never used would hold the graceful stop for the server's
	// read timeout.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Errorf("orchestrator did not stop on SIGTERM: %s", c.out)
	}
}

// setupRun makes an org, guild and agent and starts a run; it returns the run id.
func setupRun(t testing.TB, base string, budget int) string {
	t.Helper()
	_, org := request(t, "POST", base+"/api/orgs", map[string]any{"name": "o"})
	_, g := request(t, "POST", base+"/api/orgs/"+org["id"].(string)+"/guilds", map[string]any{"name": "g"})
	_, a := request(t, "POST", base+"/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": "a"})
	st, run := request(t, "POST", base+"/api/agents/"+a["id"].(string)+"/runs", map[string]any{"kind": "direct", "tool_call_budget": budget})
	if st != 201 {
		t.Fatalf("start run: %d %v", st, run)
	}
	return run["id"].(string)
}

// stopClusterImmediately kills the embedded server as `pg_ctl stop -m immediate` does.
func stopClusterImmediately(t testing.TB, dataDir string) {
	t.Helper()
	bin, err := postgres.PostgresBinDir()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(dataDir, "postgres", "data"), "-m", "immediate", "-W", "stop"} // -W: the supervisor may restart it before a wait would see it gone
	if os.Geteuid() == 0 {
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop -m immediate: %v\n%s", err, out)
	}
}

// TestDatabaseOutageUnderLoad stops the embedded cluster (-m immediate) under load: while it is down,
// requests answer 503 EUNAVAILABLE with Retry-After (never a 500) and /readyz is 503; the
// orchestrator restarts the cluster by itself, logs the incident once, and requests succeed again.
func TestDatabaseOutageUnderLoad(t *testing.T) {
	t.Parallel() // each fault test runs its own orchestrator on its own data folder and cluster
	if testing.Short() {
		t.Skip("starts orchestrator processes")
	}
	dataDir := faultRoot(t)
	c := startChild(t, dataDir)
	runID := setupRun(t, c.base, 1000)

	var ok, unavailable, other atomic.Int64
	var otherMu sync.Mutex
	var others []string
	var readyDown atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, http.Header, map[string]any, error) {
		req, _ := http.NewRequest("GET", c.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, resp.Header, body, nil
	}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, h, body, err := get("/api/runs/" + runID)
				switch {
				case err == nil && st == 200:
					ok.Add(1)
				case err == nil && st == 503 && h.Get("Retry-After") != "" && strings.Contains(fmt.Sprint(body), "EUNAVAILABLE"):
					unavailable.Add(1)
				default:
					other.Add(1)
					otherMu.Lock()
					others = append(others, fmt.Sprint(st, " ", body, " ", err))
					otherMu.Unlock()
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if st, _, _, err := get("/readyz"); err == nil && st == 503 {
				readyDown.Store(true)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	stopClusterImmediately(t, dataDir)
	downAt := time.Now()
	// The outage is seen (pg_ctl -W returns before the server is gone) and the cluster restarted,
	// then the API answers again by itself.
	for (unavailable.Load() == 0 || !strings.Contains(c.out.String(), `"msg":"postgres: restarted"`)) && time.Since(downAt) < time.Minute {
		time.Sleep(5 * time.Millisecond)
	}
	var recovered time.Duration
	for time.Since(downAt) < time.Minute {
		if st, _, _, err := get("/api/runs/" + runID); err == nil && st == 200 {
			recovered = time.Since(downAt)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if recovered == 0 {
		t.Fatalf("the API did not recover within a minute: %s", c.out)
	}
	t.Logf("recovered after %s: %d ok, %d 503, %d other", recovered, ok.Load(), unavailable.Load(), other.Load())
	if other.Load() != 0 {
		t.Errorf("%d answers were neither 200 nor 503 EUNAVAILABLE with Retry-After, e.g. %v", other.Load(), others[:min(3, len(others))])
	}
	if unavailable.Load() == 0 || !readyDown.Load() {
		t.Errorf("the outage was never seen: %d 503s, /readyz 503: %v", unavailable.Load(), readyDown.Load())
	}
	if st, _, body, _ := get("/readyz"); st != 200 {
		t.Errorf("/readyz after recovery: %d %v", st, body)
	}
	log := c.out.String()
	for line, want := range map[string]int{
		`"msg":"postgres: the server ended unexpectedly; restarting it"`: 1,
		`"msg":"postgres: restarted"`:                                    1,
		`"msg":"database unreachable`:                                    1,
		`"msg":"request failed"`:                                         0,
	} {
		if n := strings.Count(log, line); n != want {
			t.Errorf("log has %s %d times, want %d", line, n, want)
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, "request failed") {
					t.Log(l)
					break
				}
			}
		}
	}
	if n := strings.Count(log, `"msg":"database reachable again`); n != 1 {
		t.Errorf("log has the recovery %d times, want once", n)
	}
}

// TestRestartAfterKill: after kill -9 of the orchestrator, an immediate restart on the same data
// folder serves (the old cluster is recognised as orphaned and stopped: within seconds, at worst
// orphanStopWait twice; the 30 s bound is a hang guard); while one orchestrator lives, a second one
// on its folder is refused, naming the holder's pid.
func TestRestartAfterKill(t *testing.T) {
	t.Parallel() // each fault test runs its own orchestrator on its own data folder and cluster
	if testing.Short() {
		t.Skip("starts orchestrator processes")
	}
	dataDir := faultRoot(t)
	first := startChild(t, dataDir)
	runID := setupRun(t, first.base, 10)

	second := spawn(t, dataDir)
	select {
	case <-second.done:
	case <-time.After(time.Minute):
		t.Fatalf("a second orchestrator on the same data folder kept running: %s", second.out)
	}
	if code := second.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(second.out.String(), fmt.Sprintf("orchestrator process %d", first.cmd.Process.Pid)) {
		t.Fatalf("second orchestrator: exit %d, want 1 naming pid %d:\n%s", code, first.cmd.Process.Pid, second.out)
	}

	for try := range 3 {
		if err := first.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-first.done
		began := time.Now()
		next := spawn(t, dataDir)
		if !next.waitHealthy(30 * time.Second) {
			t.Fatalf("try %d: restart after kill -9 did not serve within 30 s: %s", try, next.out)
		}
		took := time.Since(began)
		if st, out := request(t, "GET", next.base+"/api/runs/"+runID, nil); st != 200 {
			t.Fatalf("try %d: the run after the restart: %d %v", try, st, out)
		}
		t.Logf("try %d: serving %s after kill -9", try, took.Round(time.Millisecond))
		first = next
	}
}

// callOpts is one POST of a call: the client's timeout (0: none) and call id.
type callOpts struct {
	timeout  time.Duration
	callID   string
	together int // wait's together
}

// postCall sends one call of tool wait and returns the status and body (err when the client gave up).
func postCall(base, runID string, ms int, o callOpts) (int, map[string]any, error) {
	args := map[string]any{"ms": ms}
	if o.together > 0 {
		args["together"] = o.together
	}
	body := map[string]any{"name": "wait", "arguments": args}
	if o.callID != "" {
		body["call_id"] = o.callID
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+"/api/runs/"+runID+"/calls", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: o.timeout}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, nil
}

// storedCalls lists every call of the run.
func storedCalls(t testing.TB, base, runID string) []map[string]any {
	t.Helper()
	st, out := request(t, "GET", base+"/api/runs/"+runID+"/calls?limit=500", nil)
	if st != 200 {
		t.Fatalf("list calls: %d %v", st, out)
	}
	var calls []map[string]any
	for _, c := range out["calls"].([]any) {
		calls = append(calls, c.(map[string]any))
	}
	return calls
}

// checkCounter checks the run's counter equals its stored calls, whose seqs are 1..n.
func checkCounter(t testing.TB, base, runID string) []map[string]any {
	t.Helper()
	calls := storedCalls(t, base, runID)
	_, run := request(t, "GET", base+"/api/runs/"+runID, nil)
	if used := int(run["tool_calls_used"].(float64)); used != len(calls) {
		t.Errorf("run %s: counter %d, %d stored calls", runID, used, len(calls))
	}
	for i, c := range calls {
		if int(c["seq"].(float64)) != i+1 {
			t.Errorf("run %s: call %d has seq %v: seqs are not contiguous", runID, i, c["seq"])
		}
	}
	return calls
}

// TestCallsAcrossFaults, through the real binary: five calls of one run sent at once run at once
// (each waits until it has seen all five running); a client that hangs up does not cancel its
// call, and a retry under its call_id gets the result without running the tool again (during the
// call: it waits; after: from the stored call), while another body under that id is a 409; the
// budget is exact under 12 concurrent calls; a kill -9 mid-call leaves the call marked interrupted
// at the next start, and no effect happened without its row.
func TestCallsAcrossFaults(t *testing.T) {
	t.Parallel() // each fault test runs its own orchestrator on its own data folder and cluster
	if testing.Short() {
		t.Skip("starts orchestrator processes")
	}
	dataDir := faultRoot(t)
	effects := t.TempDir()
	c := startChild(t, dataDir, "GUILDS_TEST_EFFECTS="+effects)
	runID := setupRun(t, c.base, 100)

	// Parallel calls of one run: each returns once all five have been running at once (a minute
	// is only a hang guard: calls run one at a time would each give up after it).
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			st, out, err := postCall(c.base, runID, 60000, callOpts{together: 5})
			if err != nil || st != 200 || !strings.HasPrefix(fmt.Sprint(out["result"]), "5 calls ran at once\n") {
				t.Errorf("parallel call: %d %v %v", st, out, err)
			}
		})
	}
	wg.Wait()

	// A client that hangs up; its retry during the call waits for it, the one after answers from the
	// stored call; neither runs the tool again (its effect file has one line).
	if _, _, err := postCall(c.base, runID, 1500, callOpts{timeout: 300 * time.Millisecond, callID: "toolu_A"}); err == nil {
		t.Fatal("the client did not give up")
	}
	st, during, _ := postCall(c.base, runID, 1500, callOpts{callID: "toolu_A"})
	if st != 200 || during["replayed"] != true || !strings.Contains(fmt.Sprint(during["result"]), "waited 1500 ms") {
		t.Fatalf("retry during the call: %d %v", st, during)
	}
	st, after, _ := postCall(c.base, runID, 1500, callOpts{callID: "toolu_A"})
	if st != 200 || after["seq"] != during["seq"] || after["replayed"] != true || fmt.Sprint(after["result"]) != fmt.Sprint(during["result"]) {
		t.Fatalf("retry after the call: %d %v", st, after)
	}
	ranA := -1
	for _, call := range storedCalls(t, c.base, runID) {
		if call["client_call_id"] == "toolu_A" {
			b, _ := os.ReadFile(filepath.Join(effects, call["call_id"].(string)))
			ranA = strings.Count(string(b), "ran\n")
		}
	}
	if ranA != 1 {
		t.Fatalf("the tool of call toolu_A ran %d times, want once: its retries ran it again (-1: no stored call)", ranA)
	}
	if st, out, _ := postCall(c.base, runID, 1, callOpts{callID: "toolu_A"}); st != 409 || !strings.Contains(fmt.Sprint(out), "different call") {
		t.Fatalf("another body under the same call_id: %d %v", st, out)
	}
	calls := checkCounter(t, c.base, runID)
	if len(calls) != 6 {
		t.Fatalf("%d calls stored, want 6 (the retries ran nothing)", len(calls))
	}

	// The budget under concurrency.
	small := setupRun(t, c.base, 5)
	var okN, refused atomic.Int64
	for range 12 {
		wg.Go(func() {
			st, out, err := postCall(c.base, small, 200, callOpts{})
			switch {
			case err == nil && st == 200:
				okN.Add(1)
			case err == nil && st == 409 && strings.Contains(fmt.Sprint(out), "tool_call_budget"):
				refused.Add(1)
			default:
				t.Errorf("call on a small budget: %d %v %v", st, out, err)
			}
		})
	}
	wg.Wait()
	if okN.Load() != 5 || refused.Load() != 7 {
		t.Errorf("budget 5 under 12 concurrent calls: %d ran, %d refused", okN.Load(), refused.Load())
	}
	checkCounter(t, c.base, small)

	// A crash mid-call.
	inFlight := make(chan struct{})
	go func() {
		defer close(inFlight)
		_, _, _ = postCall(c.base, runID, 30000, callOpts{callID: "toolu_crash"})
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if entries, _ := os.ReadDir(effects); len(entries) == 12 { // 6 + 5 of the small run + this one
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the long call never started: %d effects", len(entries))
		}
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	<-inFlight
	c = startChild(t, dataDir, "GUILDS_TEST_EFFECTS="+effects)
	calls = checkCounter(t, c.base, runID)
	last := calls[len(calls)-1]
	if last["status"] != "interrupted" || last["client_call_id"] != "toolu_crash" || !strings.Contains(fmt.Sprint(last["result"]), "the orchestrator stopped while this call ran") {
		t.Fatalf("the call cut by the crash: %v", last)
	}
	st, retried, _ := postCall(c.base, runID, 30000, callOpts{callID: "toolu_crash"})
	if st != 200 || retried["status"] != "interrupted" || retried["replayed"] != true {
		t.Fatalf("retry of the interrupted call: %d %v", st, retried)
	}
	// No effect without its row.
	rows := map[string]bool{}
	for _, id := range []string{runID, small} {
		for _, c := range storedCalls(t, c.base, id) {
			rows[c["call_id"].(string)] = true
		}
	}
	entries, _ := os.ReadDir(effects)
	for _, e := range entries {
		if !rows[e.Name()] {
			t.Errorf("call %s had its effect with no stored call", e.Name())
		}
	}
	if len(entries) != len(rows) {
		t.Errorf("%d effects, %d stored calls", len(entries), len(rows))
	}
}

// scriptRunBin is a folder with guilds-script-run: GUILDS_BIN_DIR when set, else built once.
var scriptRunBin = sync.OnceValues(func() (string, error) {
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		return d, nil
	}
	dir, err := os.MkdirTemp("", "guilds-bin-")
	if err != nil {
		return "", err
	}
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "guilds-script-run"), ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "helpers", "guilds-script-run")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build guilds-script-run: %v\n%s", err, out)
	}
	return dir, nil
})

// napScript, a script_run script, notes its start under naps/<round> in the workspace and waits
// (at most a minute) until together scripts of its round have started, then says how many it saw:
// none of them ends before the last has started, so all of them ran at once.
const napScript = `import json, os, sys, time, uuid
a = json.load(sys.stdin)
d = os.path.join("naps", a["round"])
os.makedirs(d, exist_ok=True)
open(os.path.join(d, uuid.uuid4().hex), "w").close()
deadline = time.time() + 60
while len(os.listdir(d)) < a["together"] and time.time() < deadline:
    time.sleep(0.02)
print("rested: %d of round %s started" % (len(os.listdir(d)), a["round"]))
`

// TestParallelScriptRuns: five script_run calls of one run, sent at once through the real binary,
// run side by side (each script waits until all five have started), each stored with its own seq.
func TestParallelScriptRuns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts an orchestrator process")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	bins, err := scriptRunBin()
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, faultRoot(t), "GUILDS_BIN_DIR="+bins)
	runID := setupRun(t, c.base, 20)
	st, out := request(t, "POST", c.base+"/api/runs/"+runID+"/calls", map[string]any{"name": "script_create", "arguments": map[string]any{
		"name": "nap", "description": "Waits for the other naps of its round.", "source": napScript}})
	if st != 200 || strings.HasPrefix(fmt.Sprint(out["result"]), "ERROR") {
		t.Fatalf("script_create: %d %v", st, out)
	}
	nap := func(round string, together int) (int, string) {
		st, out := request(t, "POST", c.base+"/api/runs/"+runID+"/calls", map[string]any{"name": "script_run", "arguments": map[string]any{
			"name": "nap", "arguments": map[string]any{"round": round, "together": together}}})
		return st, fmt.Sprint(out["result"])
	}
	if st, res := nap("alone", 1); st != 200 || !strings.Contains(res, "rested: 1 of round alone started") {
		t.Fatalf("script_run alone: %d %s", st, res)
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if st, res := nap("five", 5); st != 200 || !strings.Contains(res, "rested: 5 of round five started") {
				t.Errorf("five script_run calls sent at once did not run side by side: %d %s", st, res)
			}
		})
	}
	wg.Wait()
	if calls := checkCounter(t, c.base, runID); len(calls) != 7 {
		t.Errorf("%d calls stored, want 7", len(calls))
	}
}
