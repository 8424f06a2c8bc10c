package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Starter is a Sandbox that can start a long-lived process (the browser) and leave it running.
type Starter interface {
	Start(req ExecRequest, out io.Writer) (*Process, error)
}

// chromiumFlags keep the sandbox's browser headless, its DevTools endpoint on loopback only, and
// its own background traffic (updates, sync, metrics, QUIC) off the network.
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
	"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
	"--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-quic",
	"--metrics-recording-only", "--remote-debugging-address=127.0.0.1"}

// DevToolsPort is where a sandbox's Chromium listens for DevTools on the sandbox's own loopback
// (GUILDS_CDP_URL's default, http://127.0.0.1:9222).
const DevToolsPort = 9222

// devToolsListening is what Chromium prints once its DevTools port is open.
const devToolsListening = "DevTools listening on ws://"

// BrowserStartTimeout bounds how long Chromium may take to open its DevTools port.
const BrowserStartTimeout = 30 * time.Second

// DefaultBrowserIdle is how long an agent's Chromium may go without a browser call before it is
// stopped; the next call starts it again.
const DefaultBrowserIdle = 10 * time.Minute

// Browsers starts and keeps one headless Chromium per agent sandbox, with its CDP endpoint on the
// sandbox's loopback, for guilds-browser to attach to, and stops it after Idle without a call. It
// is safe for concurrent use: calls for one agent wait for its start, other agents' calls do not.
type Browsers struct {
	Provider Provider
	Log      *slog.Logger  // nil discards
	Idle     time.Duration // 0: DefaultBrowserIdle

	mu     sync.Mutex
	closed bool
	slots  map[string]*slot
}

// slot holds one agent's browser; its lock serializes that agent's starts and stops. busy counts
// the calls using the browser now; the idle timer runs only while it is zero.
type slot struct {
	mu    sync.Mutex
	br    *browser
	busy  int
	last  time.Time
	timer *time.Timer
}

type browser struct {
	box  Sandbox
	proc *Process
	url  string
	out  *syncCapped
}

// CDPURL returns the agent's Chromium DevTools URL, starting Chromium in the agent's sandbox when
// none is running. The idle period counts from this call.
func (b *Browsers) CDPURL(ctx context.Context, agentID string) (string, error) {
	url, release, err := b.Acquire(ctx, agentID)
	if err != nil {
		return "", err
	}
	release()
	return url, nil
}

// Acquire returns the agent's Chromium DevTools URL, starting Chromium when none is running, and
// holds it until release is called: a browser in use is never stopped for idleness, and the idle
// period counts from the last release.
func (b *Browsers) Acquire(ctx context.Context, agentID string) (url string, release func(), err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return "", nil, errors.New("the browsers are closed (the orchestrator is shutting down)")
	}
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
		case <-sl.br.proc.Done():
			b.log().Warn("browser exited: starting it again", "agent_id", agentID, "state", sl.br.proc.State())
			stopDaemon(sl.br.box)
			sl.br = nil
		default:
		}
	}
	if sl.br == nil {
		br, err := b.start(ctx, agentID)
		if err != nil {
			return "", nil, err
		}
		sl.br = br
	}
	sl.busy++
	if sl.timer != nil {
		sl.timer.Stop()
	}
	var once sync.Once
	return sl.br.url, func() { once.Do(func() { b.release(agentID, sl) }) }, nil
}

// release ends one call's use of the slot's browser and arms the idle timer when none is left.
func (b *Browsers) release(agentID string, sl *slot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.busy--
	sl.last = time.Now()
	if sl.busy == 0 && sl.br != nil {
		idle := b.idle()
		if sl.timer == nil {
			sl.timer = time.AfterFunc(idle, func() { b.expire(agentID, sl) })
		} else {
			sl.timer.Reset(idle)
		}
	}
}

// expire stops the slot's browser when it has been idle for the whole period.
func (b *Browsers) expire(agentID string, sl *slot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	idle := b.idle()
	if sl.br == nil || sl.busy > 0 {
		return
	}
	if rest := idle - time.Since(sl.last); rest > 0 {
		sl.timer.Reset(rest)
		return
	}
	stop(sl.br)
	sl.br = nil
	b.log().Info("browser stopped after being idle", "agent_id", agentID, "idle", idle.String())
}

func (b *Browsers) idle() time.Duration {
	if b.Idle > 0 {
		return b.Idle
	}
	return DefaultBrowserIdle
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
	// A sandbox with a network of its own keeps DevTools on its own loopback at the spec's port; a
	// local one shares the host's loopback with every other agent's browser, so it takes a free one.
	port := DevToolsPort
	if shared, ok := box.(interface{ SharesHostNetwork() bool }); ok && shared.SharesHostNetwork() {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	argv := append([]string{"chromium"}, chromiumFlags...)
	argv = append(argv, "--remote-debugging-port="+strconv.Itoa(port),
		"--user-data-dir="+box.Places().Tmp+"/chromium", "about:blank")
	out := &syncCapped{c: capped{limit: 64 << 10}}
	// TMPDIR=/tmp: Chromium's singleton socket path must stay short (a local sandbox's own tmp
	// folder may be too deep; in bubblewrap /tmp is the agent's private one).
	proc, err := st.Start(ExecRequest{Argv: argv, Env: []string{"TMPDIR=/tmp"}}, out)
	if err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	br := &browser{box: box, proc: proc, url: "http://127.0.0.1:" + strconv.Itoa(port), out: out}
	// Chromium says when its DevTools port is open; the orchestrator need not reach that port
	// (inside a sandbox it cannot: only the sandbox's own processes can).
	deadline := time.NewTimer(BrowserStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if strings.Contains(out.String(), devToolsListening) {
			b.log().Info("browser started", "agent_id", agentID, "cdp_url", br.url, "pid", proc.Pid)
			return br, nil
		}
		select {
		case <-proc.Done():
			b.log().Error("chromium exited at start", "agent_id", agentID, "output", out.String())
			return nil, fmt.Errorf("chromium exited (%s) before opening its DevTools port; its last output: %s", proc.State(), lastLines(out.String(), 3))
		case <-deadline.C:
			stop(br)
			return nil, fmt.Errorf("chromium did not open its DevTools port within %s; its last output: %s", BrowserStartTimeout, lastLines(out.String(), 3))
		case <-ctx.Done():
			stop(br)
			return nil, fmt.Errorf("start chromium: %w", ctx.Err())
		case <-tick.C:
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

// Close ends every Chromium this Browsers started and refuses later calls.
func (b *Browsers) Close() {
	b.mu.Lock()
	all := b.slots
	b.slots = nil
	b.closed = true
	b.mu.Unlock()
	for _, sl := range all {
		sl.stop()
	}
}

// stop ends the slot's browser, if any, and its idle timer.
func (sl *slot) stop() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.timer != nil {
		sl.timer.Stop()
	}
	if sl.br != nil {
		stop(sl.br)
		sl.br = nil
	}
}

// stop sends SIGTERM to the browser's process group, then SIGKILL after 5 s, and waits for it.
// The guilds-browser daemon attached to it gets SIGTERM too, so no helper outlives the browser
// it served.
func stop(br *browser) {
	defer stopDaemon(br.box)
	_ = br.proc.Signal(syscall.SIGTERM)
	select {
	case <-br.proc.Done():
	case <-time.After(5 * time.Second):
		_ = br.proc.Signal(syscall.SIGKILL)
		<-br.proc.Done()
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

// stopDaemonScript signals the guilds-browser daemon named by the PID file $1, checking first
// that the PID is a guilds-browser process (a stale file may name a reused PID). It runs inside
// the sandbox, where the PID is meaningful (a bubblewrap sandbox has its own PID namespace).
const stopDaemonScript = `pid=$(cat "$1" 2>/dev/null) || exit 0
case "$pid" in ''|*[!0-9]*) exit 0 ;; esac
[ "$pid" -gt 1 ] && tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -q guilds-browser && kill -TERM "$pid"
exit 0`

// stopDaemon sends SIGTERM to the sandbox's guilds-browser daemon, when its PID file
// (<RunDir>/browser/daemon.pid) names one.
func stopDaemon(box Sandbox) {
	if r, ok := box.(interface{ Running() bool }); ok && !r.Running() {
		return // the daemon ended with its sandbox; do not start one to look for it
	}
	file := box.Places().RunDir + "/browser/daemon.pid"
	if _, err := box.ReadFile(context.Background(), file, 64); err != nil { // a pid
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = box.Exec(ctx, ExecRequest{Argv: []string{"/bin/sh", "-c", stopDaemonScript, "sh", file}, Timeout: 10 * time.Second})
}
