package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Starter is a Sandbox that can start a long-lived process (the browser) and leave it running.
type Starter interface {
	Start(req ExecRequest, out io.Writer) (*exec.Cmd, error)
}

// chromiumFlags keep the sandbox's browser headless, its DevTools endpoint on loopback only, and
// its own background traffic (updates, sync, metrics, QUIC) off the network.
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
	"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
	"--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-quic",
	"--metrics-recording-only", "--remote-debugging-address=127.0.0.1"}

// BrowserStartTimeout bounds how long Chromium may take to open its DevTools port.
const BrowserStartTimeout = 30 * time.Second

// Browsers starts and keeps one headless Chromium per agent sandbox, with its CDP endpoint on the
// sandbox's loopback, for guilds-browser to attach to. It is safe for concurrent use: calls for
// one agent wait for its start, other agents' calls do not.
type Browsers struct {
	Provider Provider
	Log      *slog.Logger // nil discards

	mu    sync.Mutex
	slots map[string]*slot
}

// slot holds one agent's browser; its lock serializes that agent's starts and stops.
type slot struct {
	mu sync.Mutex
	br *browser
}

type browser struct {
	box  Sandbox
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	out  *capped
}

// CDPURL returns the agent's Chromium DevTools URL, starting Chromium in the agent's sandbox when
// none is running.
func (b *Browsers) CDPURL(ctx context.Context, agentID string) (string, error) {
	b.mu.Lock()
	if b.slots == nil {
		b.slots = map[string]*slot{}
	}
	sl := b.slots[agentID]
	if sl == nil {
		sl = &slot{}
		b.slots[agentID] = sl
	}
	b.mu.Unlock()
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.br != nil {
		select {
		case <-sl.br.done:
			sl.br = nil
		default:
			return sl.br.url, nil
		}
	}
	br, err := b.start(ctx, agentID)
	if err != nil {
		return "", err
	}
	sl.br = br
	return br.url, nil
}

func (b *Browsers) log() *slog.Logger {
	if b.Log != nil {
		return b.Log
	}
	return slog.New(slog.DiscardHandler)
}

// start launches Chromium in the sandbox and waits for its DevTools port.
func (b *Browsers) start(ctx context.Context, agentID string) (*browser, error) {
	if _, err := exec.LookPath("chromium"); err != nil {
		return nil, fmt.Errorf("%w: chromium is not installed (apt-get install chromium, or run `make setup`)", ErrUnavailable)
	}
	if b.Provider == nil {
		return nil, errors.New("no sandbox provider: set GUILDS_SANDBOX to bubblewrap or local")
	}
	box, err := b.Provider.Open(ctx, agentID)
	if err != nil {
		return nil, fmt.Errorf("open the agent's sandbox: %w", err)
	}
	st, ok := box.(Starter)
	if !ok {
		return nil, fmt.Errorf("the %s sandbox cannot start a browser", b.Provider.Kind())
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	argv := append([]string{"chromium"}, chromiumFlags...)
	argv = append(argv, "--remote-debugging-port="+strconv.Itoa(port),
		"--user-data-dir="+box.Places().RunDir+"/chromium", "about:blank")
	out := &capped{limit: 64 << 10}
	// TMPDIR=/tmp: Chromium's singleton socket path must stay short (a local sandbox's own tmp
	// folder may be too deep; in bubblewrap /tmp is the agent's private one).
	cmd, err := st.Start(ExecRequest{Argv: argv, Env: []string{"TMPDIR=/tmp"}}, out)
	if err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	br := &browser{box: box, cmd: cmd, url: "http://127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{}), out: out}
	go func() { _ = cmd.Wait(); close(br.done) }()
	client := &http.Client{Timeout: time.Second}
	deadline := time.NewTimer(BrowserStartTimeout)
	defer deadline.Stop()
	for {
		if resp, err := client.Get(br.url + "/json/version"); err == nil {
			resp.Body.Close()
			b.log().Info("browser started", "agent_id", agentID, "cdp_url", br.url, "pid", cmd.Process.Pid)
			return br, nil
		}
		select {
		case <-br.done:
			b.log().Error("chromium exited at start", "agent_id", agentID, "output", out.String())
			return nil, fmt.Errorf("chromium exited (%s) before opening its DevTools port; its last output: %s", br.cmd.ProcessState, lastLines(out.String(), 3))
		case <-deadline.C:
			stop(br)
			return nil, fmt.Errorf("chromium did not open its DevTools port within %s", BrowserStartTimeout)
		case <-ctx.Done():
			stop(br)
			return nil, fmt.Errorf("start chromium: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop ends the agent's Chromium, if one runs.
func (b *Browsers) Stop(agentID string) {
	b.mu.Lock()
	sl := b.slots[agentID]
	b.mu.Unlock()
	if sl != nil {
		sl.stop()
	}
}

// Close ends every Chromium this Browsers started.
func (b *Browsers) Close() {
	b.mu.Lock()
	all := b.slots
	b.slots = nil
	b.mu.Unlock()
	for _, sl := range all {
		sl.stop()
	}
}

// stop ends the slot's browser, if any.
func (sl *slot) stop() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.br != nil {
		stop(sl.br)
		sl.br = nil
	}
}

// stop sends SIGTERM to the browser's process group, then SIGKILL after 5 s, and waits for it.
// The guilds-browser daemon attached to it (its PID in <RunDir>/browser/daemon.pid, read through
// the file API) gets SIGTERM too, so no helper outlives the browser it served.
func stop(br *browser) {
	defer stopDaemon(br.box)
	pid := br.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-br.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-br.done
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for the browser: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lastLines returns the last n non-empty lines of s, joined by " | ", at most 600 bytes.
func lastLines(s string, n int) string {
	var keep []string
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	out := strings.Join(keep, " | ")
	if len(out) > 600 {
		out = "…" + out[len(out)-600:]
	}
	if out == "" {
		return "none"
	}
	return out
}

// stopDaemon sends SIGTERM to the sandbox's guilds-browser daemon, when its PID file names one.
func stopDaemon(box Sandbox) {
	b, err := box.ReadFile(context.Background(), box.Places().RunDir+"/browser/daemon.pid")
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	// A stale file may name a reused PID: signal only a guilds-browser process.
	if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && strings.Contains(string(cmdline), "guilds-browser") {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
}
