package code_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/tools/code"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const token = "test-admin-token-0123456789abcdef"

// secretValue is a registered secret of the run: it must never reach a result or the database.
const secretValue = "sk-live-7f3a9c2e51d84b06"

// fixedSecrets is the run's granted secrets (the RunSecrets seam the secrets store implements).
type fixedSecrets []string

func (f fixedSecrets) RunSecretValues(context.Context, orchestrator.Run) ([]string, error) {
	return f, nil
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// helperBin returns a folder holding guilds-code and guilds-sandboxd: $GUILDS_BIN_DIR when
// `make build` filled it, else fresh builds.
func helperBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
			if _, err := os.Stat(filepath.Join(d, sandbox.ServerName)); err == nil {
				binDir = d
				return
			}
		}
		dir, err := os.MkdirTemp("", "guilds-bin-")
		if err != nil {
			binErr = err
			return
		}
		for _, b := range []struct{ name, dir string }{
			{"guilds-code", filepath.Join("..", "..", "..", "helpers", "guilds-code")},
			{sandbox.ServerName, filepath.Join("..", "..", "cmd", "guilds-sandboxd")},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.name), ".")
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("build %s: %v\n%s", b.name, err, out)
				return
			}
		}
		binDir = dir
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// providers returns the sandbox kinds this machine runs, over fresh folders.
func providers(t *testing.T) map[string]sandbox.Provider {
	t.Helper()
	bin := helperBin(t)
	ps := map[string]sandbox.Provider{"local": &sandbox.Local{Root: t.TempDir(), BinDir: bin}}
	if bw, err := sandbox.NewBubblewrap(sandboxtest.Root(t), bin, ""); err == nil {
		t.Cleanup(func() { bw.Close() })
		ps["bubblewrap"] = bw
	} else if os.Getenv("CI") != "" {
		t.Fatalf("bubblewrap must be installed in CI: %v", err)
	} else {
		t.Logf("bubblewrap cases skipped: %v", err)
	}
	return ps
}

// env is one orchestrator over real PostgreSQL and a sandbox provider, serving HTTP on loopback.
type env struct {
	t    testing.TB
	pool *pgxpool.Pool
	base string
	hc   *http.Client
	logs *syncBuffer // the orchestrator's operational log
}

// syncBuffer is a bytes.Buffer safe for the server's and the test's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newEnv(t testing.TB, p sandbox.Provider) *env {
	t.Helper()
	pool := pgtest.NewDB(t)
	store := postgres.NewStore(pool)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	reg := registry.New()
	if err := (&code.Tools{Sandbox: p}).Register(reg); err != nil {
		t.Fatal(err)
	}
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: runs.DefaultOffer{},
		Secrets: fixedSecrets{secretValue}, Log: log}
	app := httpapi.New(&httpapi.Server{Scopes: store, Runs: svc, Log: log, Identity: &identity.Service{Store: store, Bootstrap: token}, Places: store})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return &env{t: t, pool: pool, base: "http://" + ln.Addr().String(), hc: &http.Client{Timeout: 2 * time.Minute}, logs: logs}
}

// do sends one authorized request and decodes the JSON object it answers.
func (e *env) do(want int, method, path string, body any) map[string]any {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		e.t.Fatalf("%s %s: not JSON: %q", method, path, raw)
	}
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	return out
}

// startRun creates an org, guild and agent and starts a coding run; it returns the agent and run ids.
func (e *env) startRun(config map[string]any) (string, map[string]any) {
	e.t.Helper()
	org := e.do(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})
	g := e.do(201, "POST", "/api/orgs/"+org["id"].(string)+"/guilds", map[string]any{"name": "Builders"})
	a := e.do(201, "POST", "/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": "Ada", "config": config})
	run := e.do(201, "POST", "/api/agents/"+a["id"].(string)+"/runs", map[string]any{"kind": "direct", "config": config})
	return a["id"].(string), run
}

// call makes one tool call and returns its result and metadata.
func (e *env) call(runID, name string, args any) (string, map[string]any) {
	e.t.Helper()
	out := e.do(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": args})
	meta, _ := out["metadata"].(map[string]any)
	return out["result"].(string), meta
}

// hostHome is where the agent's /home/agent lives on the host for either provider.
func hostHome(p sandbox.Provider, agentID string) string {
	switch p := p.(type) {
	case *sandbox.Local:
		return filepath.Join(p.Root, agentID, "home")
	case *sandbox.Bubblewrap:
		return filepath.Join(p.Root, agentID, "home")
	}
	panic("unknown provider")
}

func hostRun(p sandbox.Provider, agentID string) string {
	return filepath.Join(filepath.Dir(hostHome(p, agentID)), "run")
}

func TestCodeToolsEndToEnd(t *testing.T) {
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, p)
			agentID, run := e.startRun(map[string]any{"coding": true})
			runID := run["id"].(string)
			offered := map[string]bool{}
			for _, o := range run["offered_tools"].([]any) {
				offered[o.(map[string]any)["name"].(string)] = true
			}
			for _, n := range code.Names {
				if !offered[n] {
					t.Fatalf("coding run does not offer %s: %v", n, offered)
				}
			}

			res, meta := e.call(runID, "file_write", map[string]any{"path": "src/hello.txt", "content": "hello\nworld\n"})
			if !strings.HasPrefix(res, "wrote src/hello.txt (2 lines)") || meta["path"] == nil || meta["content_hash"] == nil {
				t.Fatalf("file_write: %q %v", res, meta)
			}
			if b, err := os.ReadFile(filepath.Join(hostHome(p, agentID), "src", "hello.txt")); err != nil || string(b) != "hello\nworld\n" {
				t.Fatalf("written file: %q %v", b, err)
			}
			res, meta = e.call(runID, "file_edit", map[string]any{"path": "src/hello.txt", "old_string": "world", "new_string": "there"})
			if !strings.HasPrefix(res, "edited src/hello.txt (+1 −1)") || meta["lines_added"] != 1.0 || meta["lines_removed"] != 1.0 {
				t.Fatalf("file_edit: %q %v", res, meta)
			}
			res, meta = e.call(runID, "file_read", map[string]any{"path": "src/hello.txt"})
			if !strings.Contains(res, "there") || strings.Contains(res, "world") || meta["range"] != "1-2" || meta["lines"] != 2.0 {
				t.Fatalf("file_read: %q %v", res, meta)
			}
			res, _ = e.call(runID, "file_edit", map[string]any{"path": "src/hello.txt", "old_string": "absent", "new_string": "x"})
			if !strings.HasPrefix(res, "ERROR: ") {
				t.Fatalf("failed edit: %q", res)
			}
			res, meta = e.call(runID, "code_search", map[string]any{"pattern": "there", "mode": "content"})
			if !strings.Contains(res, "src/hello.txt:2:") || meta["matches"] != 1.0 {
				t.Fatalf("code_search: %q %v", res, meta)
			}

			// A registered secret printed by shell: redacted in the result and the database, kept in the log.
			res, meta = e.call(runID, "shell", map[string]any{"command": "printf 'token=%s\\n' sk-live-7f3a9c2e5''1d84b06; pwd"})
			if strings.Contains(res, secretValue) || !strings.Contains(res, "token=") || !strings.Contains(res, "REDACTED") {
				t.Fatalf("shell result not redacted: %q", res)
			}
			if meta["exit_code"] != 0.0 {
				t.Fatalf("shell meta: %v", meta)
			}
			e.do(200, "GET", "/api/runs/"+runID+"/calls", nil) // its completed record is written before the listing answers
			var redacted int
			if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM tool_calls WHERE run_id = $1 AND name = 'shell' AND status = 'completed' AND result LIKE '%REDACTED%'`,
				runID).Scan(&redacted); err != nil || redacted != 1 {
				t.Fatalf("the shell call's completed, redacted record: %d rows (%v)", redacted, err)
			}
			var stored int
			if err := e.pool.QueryRow(context.Background(),
				`SELECT count(*) FROM tool_calls WHERE run_id = $1 AND (result LIKE '%'||$2||'%' OR metadata::text LIKE '%'||$2||'%' OR arguments::text LIKE '%'||$2||'%')`,
				runID, secretValue).Scan(&stored); err != nil || stored != 0 {
				t.Fatalf("secret stored in %d tool_calls rows (%v)", stored, err)
			}
			logs, _ := filepath.Glob(filepath.Join(hostHome(p, agentID), ".runs", runID, "*.log"))
			found := false
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				found = found || strings.Contains(string(b), "token="+secretValue)
			}
			if !found {
				t.Fatalf("the workspace log does not hold the secret unredacted (logs %v)", logs)
			}

			// Read back through file_read, the log passes redaction like any result.
			calls := e.do(200, "GET", "/api/runs/"+runID+"/calls", nil)["calls"].([]any)
			shellCall := calls[len(calls)-1].(map[string]any)
			if shellCall["name"] != "shell" {
				t.Fatalf("last call %v", shellCall)
			}
			res, _ = e.call(runID, "file_read", map[string]any{"path": "~/.runs/" + runID + "/" + shellCall["call_id"].(string) + ".log"})
			if strings.Contains(res, secretValue) || !strings.Contains(res, "token=") {
				t.Fatalf("log read back: %q", res)
			}

			// 100 KiB through the request file.
			big := strings.Repeat(strings.Repeat("x", 99)+"\n", 1024)
			res, meta = e.call(runID, "file_write", map[string]any{"path": "big/data.txt", "content": big})
			if !strings.HasPrefix(res, "wrote big/data.txt (1024 lines)") {
				t.Fatalf("big file_write: %q %v", res, meta)
			}
			if b, err := os.ReadFile(filepath.Join(hostHome(p, agentID), "big", "data.txt")); err != nil || string(b) != big {
				t.Fatalf("big file: %d bytes, %v", len(b), err)
			}
			if left, _ := os.ReadDir(filepath.Join(hostRun(p, agentID), "requests")); len(left) != 0 {
				t.Fatalf("request files left behind: %v", left)
			}

			// A timeout stops the command's group and says so.
			start := time.Now()
			res, meta = e.call(runID, "shell", map[string]any{"command": "echo started; sleep 300", "timeout_seconds": 1})
			if !strings.Contains(res, "exit_code: 124") || meta["timed_out"] != true || time.Since(start) > time.Minute { // a hang guard
				t.Fatalf("timeout: %q %v after %s", res, meta, time.Since(start))
			}

			// A background command outlives its call, keeps running across calls, and its exit code is
			// recorded by the helper's supervisor (in bubblewrap, the sandbox's exec server reaps it).
			// It ends once the test releases it, after the two calls that see it running.
			res, meta = e.call(runID, "shell", map[string]any{"command": "while [ ! -e bg-release ]; do sleep 0.02; done; echo bg-done; exit 3", "background": true})
			bgID, _ := meta["background_id"].(string)
			if bgID == "" || meta["state"] != "running" {
				t.Fatalf("background start: %q %v", res, meta)
			}
			if _, meta = e.call(runID, "shell_status", map[string]any{"id": bgID}); meta["state"] != "running" {
				t.Fatalf("background status right after its start: %v", meta)
			}
			if err := os.WriteFile(filepath.Join(hostHome(p, agentID), "bg-release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(time.Minute); meta["state"] == "running" && time.Now().Before(deadline); {
				time.Sleep(100 * time.Millisecond)
				res, meta = e.call(runID, "shell_status", map[string]any{"id": bgID})
			}
			if meta["state"] != "exited 3" || meta["exit_code"] != 3.0 || !strings.Contains(res, "bg-done") {
				t.Fatalf("background end: %q %v", res, meta)
			}

			// A generation close records the exploration figures of a fresh coding run of the agent.
			run2 := e.do(201, "POST", "/api/agents/"+agentID+"/runs", map[string]any{"kind": "direct", "config": map[string]any{"coding": true}})
			run2ID := run2["id"].(string)
			if run2["exploration"] != nil {
				t.Fatalf("exploration before any generation: %v", run2["exploration"])
			}
			e.call(run2ID, "code_search", map[string]any{"pattern": "hello"})
			e.call(run2ID, "file_read", map[string]any{"path": "src/hello.txt"})
			_, bigMeta := e.call(run2ID, "file_read", map[string]any{"path": "big/data.txt", "limit": 5})
			gen := e.do(200, "POST", "/api/runs/"+run2ID+"/generations", nil)
			if ex := gen["run"].(map[string]any)["exploration"].(map[string]any); ex["calls_before_first_edit"] != nil || ex["read_bytes_unedited"].(float64) <= bigMeta["bytes"].(float64) {
				t.Fatalf("exploration before an edit: %v (big read %v)", ex, bigMeta["bytes"])
			}
			if res, _ := e.call(run2ID, "file_edit", map[string]any{"path": "src/hello.txt", "old_string": "there", "new_string": "again"}); !strings.HasPrefix(res, "edited") {
				t.Fatalf("edit: %q", res)
			}
			e.do(200, "POST", "/api/runs/"+run2ID+"/generations", nil)
			ex := e.do(200, "GET", "/api/runs/"+run2ID, nil)["exploration"].(map[string]any)
			if ex["calls_before_first_edit"] != 3.0 || ex["read_bytes_unedited"] != bigMeta["bytes"] {
				t.Fatalf("exploration: %v, want 3 calls and %v bytes", ex, bigMeta["bytes"])
			}

			// Bad arguments never reach the sandbox.
			res, _ = e.call(runID, "file_read", map[string]any{"path": "src/hello.txt", "limit": 9999})
			if !strings.HasPrefix(res, "ERROR: ") || !strings.Contains(res, "limit") {
				t.Fatalf("bad limit: %q", res)
			}
		})
	}
}

func TestCodeToolsFollowTheCodingFlag(t *testing.T) {
	e := newEnv(t, &sandbox.Local{Root: t.TempDir(), BinDir: t.TempDir()})
	_, run := e.startRun(map[string]any{"coding": false})
	for _, o := range run["offered_tools"].([]any) {
		if n := o.(map[string]any)["name"].(string); n == "shell" || n == "file_read" {
			t.Fatalf("run without coding offers %s", n)
		}
	}
	res, _ := e.call(run["id"].(string), "shell", map[string]any{"command": "true"})
	if !strings.Contains(res, "not offered") {
		t.Fatalf("unoffered shell: %q", res)
	}
}

func TestMissingHelperFailsTheCallCleanly(t *testing.T) {
	e := newEnv(t, &sandbox.Local{Root: t.TempDir(), BinDir: t.TempDir()})
	_, run := e.startRun(map[string]any{"coding": true})
	res, _ := e.call(run["id"].(string), "file_read", map[string]any{"path": "x"})
	if !strings.HasPrefix(res, "ERROR: ") || !strings.Contains(res, "guilds-code") {
		t.Fatalf("missing helper: %q", res)
	}
	// The run goes on.
	res, _ = e.call(run["id"].(string), "shell_status", map[string]any{})
	if !strings.HasPrefix(res, "ERROR: ") {
		t.Fatalf("second call: %q", res)
	}
}

func TestCrashingHelperIsAnErrorWithItsDetailLoggedRedacted(t *testing.T) {
	bin := t.TempDir()
	crash := "#!/bin/bash\necho \"fatal: lost the connection (key " + secretValue + ")\" >&2\necho goroutine 1 [running] >&2\nexit 2\n"
	if err := os.WriteFile(filepath.Join(bin, "guilds-code"), []byte(crash), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &sandbox.Local{Root: t.TempDir(), BinDir: bin})
	_, run := e.startRun(map[string]any{"coding": true})
	res, meta := e.call(run["id"].(string), "file_read", map[string]any{"path": "a.txt"})
	if !strings.HasPrefix(res, "ERROR: guilds-code failed (exit status 2): fatal: lost the connection") || strings.Contains(res, secretValue) || meta["error"] != "handler" {
		t.Fatalf("crash result: %q %v", res, meta)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "goroutine 1 [running]") || strings.Contains(logs, secretValue) {
		t.Fatalf("the log must hold the helper's standard error, redacted: %s", logs)
	}
	// The run goes on.
	if out := e.do(200, "GET", "/api/runs/"+run["id"].(string), nil); out["status"] != "open" || out["tool_calls_used"] != 1.0 {
		t.Fatalf("run after the crash: %v", out)
	}
}
