package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" { // this test binary started as the orchestrator itself (faults_test.go)
		os.Exit(childServe())
	}
	pgtest.Main(m)
}

const testToken = "cmd-test-token-abcdef"

// lookupOf makes a lookup function from a map (the test's whole environment).
func lookupOf(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// syncBuf is a goroutine-safe writer for the program's output.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// started is a running `serve`.
type started struct {
	addr   string
	cancel context.CancelFunc
	done   chan int
	stderr *syncBuf
}

// startServe runs `serve` in the background and waits until it listens.
func startServe(t testing.TB, env map[string]string, tools func(*registry.Registry) error) *started {
	t.Helper()
	if _, ok := env["GUILDS_DATA_DIR"]; !ok {
		env["GUILDS_DATA_DIR"] = sandboxtest.Root(t) // its sandboxes' folders, never the source tree
	}
	if _, ok := env["GUILDS_SANDBOX_UID_BASE"]; !ok {
		// A uid range of this process's own (each serve locks its range host-wide), apart from the
		// default a real orchestrator or another test process on this host may hold.
		base := 100_000_000 + (os.Getpid()%800)*1_000_000
		env["GUILDS_SANDBOX_UID_BASE"] = strconv.Itoa(base)
		t.Cleanup(func() { exec.Command("nft", "delete", "table", "inet", fmt.Sprintf("guilds_sandbox_%d", base)).Run() })
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{cancel: cancel, done: make(chan int, 1), stderr: &syncBuf{}}
	addrc := make(chan string, 1)
	go func() {
		s.done <- run(ctx, []string{"serve"}, lookupOf(env), strings.NewReader(""), io.Discard, s.stderr, hooks{tools: tools, listening: func(a string) { addrc <- a }})
	}()
	select {
	case s.addr = <-addrc:
	case code := <-s.done:
		cancel()
		t.Fatalf("serve exited with %d before listening: %s", code, s.stderr)
	case <-time.After(2 * time.Minute):
		cancel()
		t.Fatalf("serve did not listen in time: %s", s.stderr)
	}
	return s
}

// stop cancels serve (as SIGTERM does) and returns its exit status.
func (s *started) stop(t testing.TB) int {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		return code
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve did not stop: %s", s.stderr)
		return -1
	}
}

// request sends one request to the running server.
func request(t testing.TB, method, url string, body any) (int, map[string]any) {
	t.Helper()
	return wiretest.RequestAs(t, testToken, method, url, body)
}

// must sends a request and fails unless it answers want.
func must(t testing.TB, want int, method, url string, body any) map[string]any {
	t.Helper()
	st, out := request(t, method, url, body)
	if st != want {
		t.Fatalf("%s %s: %d %v, want %d", method, url, st, out, want)
	}
	return out
}

// TestServeEmbeddedCluster starts serve with DATABASE_URL unset in a fresh GUILDS_DATA_DIR: it
// initialises and starts its own PostgreSQL, answers, stops it on shutdown, and finds its data again
// on the next start.
func TestServeEmbeddedCluster(t *testing.T) {
	root, err := os.MkdirTemp("", "guilds-serve-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil { // the postgres user passes through it
		t.Fatal(err)
	}
	dataDir := filepath.Join(root, "data")
	env := map[string]string{"GUILDS_DATA_DIR": dataDir, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken}
	s := startServe(t, env, nil)
	resp, err := http.Get("http://" + s.addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if st, out := request(t, "POST", "http://"+s.addr+"/api/orgs", map[string]any{"name": "Persisted"}); st != 201 {
		t.Fatalf("create org: %d %v", st, out)
	}
	// GUILDS_SECRET_KEY is unset: serve generates one into the data folder and says so once.
	if st, inst := request(t, "GET", "http://"+s.addr+"/api/instance", nil); st != 200 || fmt.Sprint(inst["secret_key"]) != "map[source:generated]" {
		t.Fatalf("instance secret_key on the first start: %d %v", st, inst["secret_key"])
	}
	key, err := os.ReadFile(filepath.Join(dataDir, "secret-key"))
	if err != nil || strings.Count(s.stderr.String(), "GUILDS_SECRET_KEY is not set: generated one") != 1 || strings.Contains(s.stderr.String(), strings.TrimSpace(string(key))) {
		t.Fatalf("generated key %v; log:\n%s", err, s.stderr)
	}
	pidFile := filepath.Join(dataDir, "postgres", "data", "postmaster.pid")
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("embedded cluster not running: %v", err)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, s.stderr)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("embedded cluster still running after serve stopped (pid file: %v)", err)
	}
	for _, want := range []string{`"msg":"postgres: initialised cluster"`, `"msg":"listening"`, `"msg":"postgres: stopped"`} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Fatalf("log lacks %s:\n%s", want, s.stderr)
		}
	}

	if !regexp.MustCompile(`"msg":"migrations applied","applied":[1-9][0-9]*[,}]`).MatchString(s.stderr.String()) {
		t.Fatalf("the first start does not log how many migrations it applied:\n%s", s.stderr)
	}

	s = startServe(t, env, nil)
	st, out := request(t, "GET", "http://"+s.addr+"/api/orgs", nil)
	_, inst := request(t, "GET", "http://"+s.addr+"/api/instance", nil)
	if code := s.stop(t); code != 0 {
		t.Fatalf("second serve exited %d: %s", code, s.stderr)
	}
	if st != 200 || !strings.Contains(fmt.Sprint(out["orgs"]), "Persisted") {
		t.Fatalf("after restart: %d %v", st, out)
	}
	if strings.Contains(s.stderr.String(), "initialised cluster") {
		t.Fatalf("second start initialised the cluster again")
	}
	if fmt.Sprint(inst["secret_key"]) != "map[source:data_dir]" || strings.Contains(s.stderr.String(), "GUILDS_SECRET_KEY is not set") {
		t.Fatalf("second start: secret_key %v; log:\n%s", inst["secret_key"], s.stderr)
	}
	if !strings.Contains(s.stderr.String(), `"msg":"migrations applied","applied":0`) {
		t.Fatalf("a restart does not log 0 migrations applied:\n%s", s.stderr)
	}
}

// TestGracefulShutdownFinishesCall: a call in flight when shutdown starts still completes, is
// stored, and gets its answer; serve then exits cleanly.
func TestGracefulShutdownFinishesCall(t *testing.T) {
	_, dsn := pgtest.NewDBWithDSN(t)
	entered, release := make(chan struct{}), make(chan struct{})
	tools := func(r *registry.Registry) error {
		return r.Register(registry.Tool{Name: "slow", Family: orchestrator.FamilyAlways, Description: "Waits.",
			Schema: json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, *registry.Call) (string, error) {
				close(entered)
				<-release
				return "finished", nil
			}})
	}
	s := startServe(t, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken}, tools)
	base := "http://" + s.addr
	_, org := request(t, "POST", base+"/api/orgs", map[string]any{"name": "o"})
	_, g := request(t, "POST", base+"/api/orgs/"+org["id"].(string)+"/guilds", map[string]any{"name": "g"})
	_, a := request(t, "POST", base+"/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": "a"})
	_, run := request(t, "POST", base+"/api/agents/"+a["id"].(string)+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)

	type answer struct {
		status int
		out    map[string]any
	}
	got := make(chan answer, 1)
	go func() {
		st, out := request(t, "POST", base+"/api/runs/"+runID+"/calls", map[string]any{"name": "slow"})
		got <- answer{st, out}
	}()
	<-entered
	s.cancel() // shutdown begins with the call in flight
	time.Sleep(300 * time.Millisecond)
	select {
	case code := <-s.done:
		t.Fatalf("serve exited (%d) before the call in flight finished", code)
	default:
	}
	close(release)
	ans := <-got
	if ans.status != 200 || !strings.HasPrefix(fmt.Sprint(ans.out["result"]), "finished") {
		t.Fatalf("call in flight: %d %v", ans.status, ans.out)
	}
	select {
	case code := <-s.done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, s.stderr)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve did not exit after the call in flight finished: %s", s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "finishing calls in flight") {
		t.Fatalf("no shutdown log line: %s", s.stderr)
	}
	// The call was stored: a fresh server on the same database lists it.
	s = startServe(t, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken}, nil)
	defer s.stop(t)
	st, out := request(t, "GET", "http://"+s.addr+"/api/runs/"+runID+"/calls", nil)
	if st != 200 || len(out["calls"].([]any)) != 1 {
		t.Fatalf("stored calls: %d %v", st, out)
	}
}

func TestCommands(t *testing.T) {
	_, dsn := pgtest.NewDBWithDSN(t)
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stdout string
		stderr string
	}{
		{"help", []string{"help"}, nil, 0, "usage: orchestrator", ""},
		{"no command", nil, nil, 2, "", "want exactly one command"},
		{"unknown command", []string{"launch"}, nil, 2, "", `unknown command "launch"`},
		{"migrate up to date", []string{"migrate"}, map[string]string{"DATABASE_URL": dsn}, 0, "database is up to date", ""},
		{"serve without token", []string{"serve"}, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0"}, 1, "", "GUILDS_ADMIN_TOKEN is not set"},
		{"bad log level", []string{"serve"}, map[string]string{"GUILDS_LOG_LEVEL": "loud"}, 1, "", "GUILDS_LOG_LEVEL must be"},
		{"unreachable database", []string{"migrate"}, map[string]string{"DATABASE_URL": "host=/nonexistent port=1 user=x dbname=x connect_timeout=2"}, 1, "", "connect to PostgreSQL"},
		{"port taken", []string{"serve"}, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "256.0.0.1:1", "GUILDS_ADMIN_TOKEN": "x"}, 1, "", "listen on GUILDS_LISTEN=256.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb syncBuf
			env := map[string]string{"GUILDS_DATA_DIR": t.TempDir()} // never the source tree's .data
			for k, v := range tt.env {
				env[k] = v
			}
			code := run(context.Background(), tt.args, lookupOf(env), strings.NewReader(""), &out, &errb, hooks{})
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("code %d (want %d)\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errb.String())
			}
		})
	}
}

// TestMigrateFreshDatabase: migrate on an empty database applies every migration once.
func TestMigrateFreshDatabase(t *testing.T) {
	pool, dsn := pgtest.NewDBWithDSN(t)
	if _, err := pool.Exec(context.Background(), "DROP SCHEMA public CASCADE; CREATE SCHEMA public"); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuf
	if code := run(context.Background(), []string{"migrate"}, lookupOf(map[string]string{"DATABASE_URL": dsn}), strings.NewReader(""), &out, &errb, hooks{}); code != 0 {
		t.Fatalf("migrate: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "applied 0001_core.sql") {
		t.Fatalf("migrate output %q", out.String())
	}
}

// TestInstanceReportsSandbox: GET /api/instance says what isolation the agents' sandboxes have,
// with the limits and the egress policy set in the environment and the workspace images' claim on
// the disk; a second orchestrator on the same uid range refuses to start, naming the first; a
// malformed sandbox setting stops serve with its name.
func TestInstanceReportsSandbox(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil || os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root with bubblewrap installed")
		}
		t.Skip("needs root and bubblewrap")
	}
	_, dsn := pgtest.NewDBWithDSN(t)
	env := map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken,
		"GUILDS_SANDBOX_PIDS": "300", "GUILDS_SANDBOX_MEMORY": "2GiB", "GUILDS_SANDBOX_CPU": "50", "GUILDS_SANDBOX_DISK": "1GiB",
		"GUILDS_SANDBOX_ALLOW_NETS": "10.20.0.0/16, 192.168.5.0/24"}
	toolchain := sandboxtest.Root(t)
	os.Chmod(toolchain, 0o755)
	env["GUILDS_SANDBOX_BIND"] = toolchain
	s := startServe(t, env, nil)
	st, inst := request(t, "GET", "http://"+s.addr+"/api/instance", nil)

	// A second orchestrator of this host on the same uid range, with a data folder of its own.
	var out, errb syncBuf
	second := map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken,
		"GUILDS_DATA_DIR": sandboxtest.Root(t), "GUILDS_SANDBOX_UID_BASE": env["GUILDS_SANDBOX_UID_BASE"]}
	first, _ := filepath.Abs(env["GUILDS_DATA_DIR"])
	if code := run(context.Background(), []string{"serve"}, lookupOf(second), strings.NewReader(""), &out, &errb, hooks{}); code != 1 ||
		!strings.Contains(errb.String(), fmt.Sprintf("pid %d, data folder %s", os.Getpid(), first)) || !strings.Contains(errb.String(), "set another GUILDS_SANDBOX_UID_BASE") {
		t.Errorf("a second orchestrator on the same uid range: exit %d: %s", code, errb.String())
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, s.stderr)
	}
	raw, _ := json.Marshal(inst["sandbox"])
	var box sandbox.Status
	if err := json.Unmarshal(raw, &box); err != nil || st != 200 {
		t.Fatalf("instance sandbox: %d %s %v", st, raw, err)
	}
	if box.Backend != "bubblewrap" || box.Network != "user" || !box.Seccomp || !box.UserNamespace || box.DiskQuota != "image" || len(box.Missing) != 0 ||
		box.Limits != (sandbox.StatusLimits{Pids: 300, Memory: 2 << 30, CPU: 50, Disk: 1 << 30}) {
		t.Errorf("instance sandbox: %s", raw)
	}
	if e := box.Egress; e == nil || !slices.Equal(e.Allowed, []string{"10.20.0.0/16", "192.168.5.0/24"}) ||
		!slices.Contains(e.Refused, "169.254.0.0/16") || !slices.Contains(e.Refused, "10.0.0.0/8") || e.Resolvers == nil {
		t.Errorf("instance sandbox's egress: %s", raw)
	}
	if !slices.Equal(box.Bind, []string{toolchain}) {
		t.Errorf("instance sandbox's binds: %s", raw)
	}
	if d := box.DiskSpace; d == nil || d.Quota != 1<<30 || d.Images != 0 || d.Free <= 0 {
		t.Errorf("instance sandbox's disk space: %s", raw)
	}
	// The same again once the first has stopped: its range is free.
	again := startServe(t, second, nil)
	if st, _ := request(t, "GET", "http://"+again.addr+"/api/instance", nil); st != 200 {
		t.Errorf("the second orchestrator answers %d", st)
	}
	if code := again.stop(t); code != 0 {
		t.Fatalf("after the first stopped, the second: exit %d: %s", code, again.stderr)
	}
	for _, bad := range []struct{ name, value, says string }{
		{"GUILDS_SANDBOX_NETWORK", "wifi", "use user"},
		{"GUILDS_SANDBOX_MEMORY", "lots", "not a size"},
		{"GUILDS_SANDBOX_PIDS", "3", "from 64"},
		{"GUILDS_SANDBOX_DISK", "1MiB", "below the smallest workspace quota"},
		{"GUILDS_SANDBOX_ALLOW_NETS", "10.0.0.0/8,lan", `"lan" is not a range`},
		{"GUILDS_SANDBOX_BIND", "/etc", "which the sandbox makes itself"},
		{"GUILDS_SANDBOX_BIND", "DATA", "which no sandbox may read"},
	} {
		var out, errb syncBuf
		data := t.TempDir()
		if bad.value == "DATA" {
			bad.value = filepath.Dir(data)
		}
		env := map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken,
			"GUILDS_DATA_DIR": data, bad.name: bad.value}
		if code := run(context.Background(), []string{"serve"}, lookupOf(env), strings.NewReader(""), &out, &errb, hooks{}); code != 1 ||
			!strings.Contains(errb.String(), bad.name) || !strings.Contains(errb.String(), bad.says) {
			t.Errorf("%s=%s: exit %d: %s", bad.name, bad.value, code, errb.String())
		}
	}
}

// TestAccountsCreate: `orchestrator accounts create` makes the first account through the running
// server with the bootstrap token (from the environment, or the data folder's admin-token file),
// and the account signs in; a refused one says why.
func TestAccountsCreate(t *testing.T) {
	_, dsn := pgtest.NewDBWithDSN(t)
	s := startServe(t, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken}, nil)
	defer s.stop(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "admin-token"), []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GUILDS_LISTEN": s.addr, "GUILDS_DATA_DIR": data} // the token from the file, as make run keeps it
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"accounts", "create", "--email", "Ada@Example.com", "--name", "Ada", "--admin", "--password-stdin"},
		lookupOf(env), strings.NewReader("tangerine orbit walrus\n"), &out, &errb, hooks{})
	if code != 0 || !strings.Contains(out.String(), "created instance admin ada@example.com") {
		t.Fatalf("accounts create: %d %q %q", code, out.String(), errb.String())
	}
	resp, err := http.Post("http://"+s.addr+"/api/sessions", "application/json", strings.NewReader(`{"email":"ada@example.com","password":"tangerine orbit walrus"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("the new account signs in: %d", resp.StatusCode)
	}
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"accounts", "create", "--email", "bob@example.com", "--name", "Bob", "--password-stdin"},
		lookupOf(env), strings.NewReader("short\n"), &out, &errb, hooks{})
	if code != 1 || !strings.Contains(errb.String(), "at least 12 characters") {
		t.Fatalf("a short password: %d %q", code, errb.String())
	}
	if code := run(context.Background(), []string{"accounts", "create"}, lookupOf(env), strings.NewReader(""), &out, &errb, hooks{}); code != 2 {
		t.Fatalf("no flags: %d", code)
	}
}
