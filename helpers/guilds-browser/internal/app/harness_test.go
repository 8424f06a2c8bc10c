package app

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-browser/internal/daemon"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/script/*.txtar")

// repoRoot is the checkout root, four levels above this package.
var repoRoot, _ = filepath.Abs(filepath.Join("..", "..", "..", ".."))

type mainM struct{ m *testing.M }

// Run runs the tests, then stops the shared Chromium.
func (w mainM) Run() int {
	code := w.m.Run()
	if shared.c != nil {
		shared.c.stop()
	}
	return code
}

func TestMain(m *testing.M) {
	testscript.Main(mainM{m}, map[string]func(){
		"guilds-browser": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// chromium is one headless Chromium on loopback, stopped by PID.
type chromium struct {
	cmd     *exec.Cmd
	profile string
	url     string
}

// shared is the Chromium most tests share, started by the first that needs it. Tests that run
// beside the others (t.Parallel) start their own with ownBrowser: the daemons of two sandboxes on
// one Chromium would share its first context's pages.
var shared struct {
	once sync.Once
	c    *chromium
	err  error
}

// browserInstalled skips when chromium, node or playwright-core is genuinely missing.
func browserInstalled(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"chromium", "node"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (make setup installs it); skipping the browser tests", bin)
		}
	}
	if _, err := os.Stat(filepath.Join(playwrightDir(), "cli.js")); err != nil {
		t.Skipf("playwright-core is not installed in %s (make setup installs it)", playwrightDir())
	}
}

// needBrowser skips when chromium or node is genuinely missing, and returns the shared Chromium's
// CDP URL.
func needBrowser(t testing.TB) string {
	t.Helper()
	browserInstalled(t)
	shared.once.Do(func() { shared.c, shared.err = startChromium() })
	if shared.err != nil {
		t.Fatalf("start chromium: %v", shared.err)
	}
	return shared.c.url
}

// ownBrowser starts a Chromium for this test alone, stopped at its end, and returns its CDP URL.
func ownBrowser(t testing.TB) string {
	t.Helper()
	browserInstalled(t)
	c, err := startChromium()
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(c.stop)
	return c.url
}

func playwrightDir() string {
	return filepath.Join(repoRoot, "tools", "node_modules", "playwright-core")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startChromium starts a headless Chromium on a free loopback port and waits for its DevTools.
func startChromium() (*chromium, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &chromium{}
	if c.profile, err = os.MkdirTemp("", "guilds-browser-chromium-"); err != nil {
		return nil, err
	}
	c.cmd = exec.Command("chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+c.profile, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port="+strconv.Itoa(port), "about:blank")
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		os.RemoveAll(c.profile)
		return nil, err
	}
	c.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(c.url + "/json/version")
		if err == nil {
			resp.Body.Close()
			return c, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.stop()
	return nil, errors.New("chromium did not open its DevTools port within 30 s")
}

func (c *chromium) stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	pid := c.cmd.Process.Pid
	syscall.Kill(-pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
	os.RemoveAll(c.profile)
	c.cmd = nil
}

// pagesServer serves testdata/pages on loopback.
func pagesServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(repoRoot, "testdata", "pages"))))
	t.Cleanup(srv.Close)
	return srv
}

// sandbox is one GUILDS_HOME and GUILDS_RUN_DIR, with its own daemon.
type sandbox struct {
	exe       string // the guilds-browser to run: the test binary's copy on PATH, or a built one
	home, run string
	env       []string
	seq       atomic.Int64
}

// newSandbox makes the places for one sandbox; its daemon is stopped by PID at cleanup.
func newSandbox(t testing.TB, cdpURL string, extra ...string) *sandbox {
	dir := t.TempDir()
	s := &sandbox{exe: "guilds-browser", home: filepath.Join(dir, "home"), run: filepath.Join(dir, "run")}
	for _, d := range []string{s.home, s.run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"GUILDS_HOME=" + s.home,
		"GUILDS_RUN_DIR=" + s.run,
		"GUILDS_CDP_URL=" + cdpURL,
		"GUILDS_PLAYWRIGHT_DIR=" + playwrightDir(),
		"GUILDS_BROWSER_IDLE=2m",
	}, extra...)
	for _, k := range []string{"PLAYWRIGHT_NODEJS_PATH", "GORACE"} { // GORACE: make's atexit_sleep_ms=0 for this -race binary's copies
		if v := os.Getenv(k); v != "" {
			s.env = append(s.env, k+"="+v)
		}
	}
	t.Cleanup(func() { stopDaemon(t, s.run) })
	return s
}

// daemonPID reads the daemon's pid file (0 when there is none).
func daemonPID(run string) int {
	b, err := os.ReadFile(daemon.PathsFor(run).PID)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// stopDaemon ends the sandbox's daemon (and so its Node driver) by PID.
func stopDaemon(t testing.TB, run string) {
	pid := daemonPID(run)
	if pid == 0 || !alive(pid) {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(30 * time.Second); alive(pid) && time.Now().Before(deadline); { // a hang guard
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("daemon %d ignored SIGTERM", pid)
	}
}

// call runs one guilds-browser process for the tool and returns its decoded envelope.
func (s *sandbox) call(t testing.TB, tool string, args any) envelope.Reply {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	seq := s.seq.Add(1)
	req, err := envelope.EncodeRequest(envelope.Request{Tool: tool, Args: raw, RunID: "r1", CallID: fmt.Sprintf("c%d", seq), Seq: seq})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.exe, req)
	cmd.Env = s.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("guilds-browser %s: %v\n%s", tool, err, stderr.String())
	}
	r, err := envelope.DecodeReply(out)
	if err != nil {
		t.Fatalf("guilds-browser %s: %v", tool, err)
	}
	return r
}

// ok runs a call that must succeed and returns its text.
func (s *sandbox) ok(t testing.TB, tool string, args any) string {
	t.Helper()
	r := s.call(t, tool, args)
	if r.Failed() {
		t.Fatalf("%s %v: unexpected error: %s", tool, args, r.Error)
	}
	return r.Text
}

// fails runs a call that must fail with an error containing every want.
func (s *sandbox) fails(t testing.TB, tool string, args any, want ...string) string {
	t.Helper()
	r := s.call(t, tool, args)
	if !r.Failed() {
		t.Fatalf("%s %v: want an error, got %q", tool, args, r.Text)
	}
	for _, w := range want {
		if !strings.Contains(r.Error, w) {
			t.Fatalf("%s %v: error %q does not contain %q", tool, args, r.Error, w)
		}
	}
	return r.Error
}

// ref finds the ref of the snapshot line holding role and quoted name.
func ref(t testing.TB, snapshot, role, name string) string {
	t.Helper()
	q, _ := json.Marshal(name)
	prefix := "- " + role + " " + string(q) + " "
	for _, line := range strings.Split(snapshot, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, prefix) {
			if i := strings.Index(line, "[ref="); i >= 0 {
				return strings.SplitN(line[i+5:], "]", 2)[0]
			}
		}
	}
	t.Fatalf("no %s %s with a ref in the snapshot:\n%s", role, q, snapshot)
	return ""
}
