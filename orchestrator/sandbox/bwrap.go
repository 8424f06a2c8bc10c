package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxd"
)

var errEmptyArgv = errors.New("exec: empty command")

// ToolsMount is where the pinned engines folder appears inside a bubblewrap sandbox (an npm
// node_modules/.bin folder appears as ToolsMount/node_modules/.bin, as in the image).
const ToolsMount = "/opt/guilds/tools"

// Bubblewrap gives each agent its own folder at /home/agent, a private /run/guilds and /tmp, the
// helpers at /usr/local/bin, the system read-only, and nothing else of the host.
//
// Each agent's sandbox is one long-lived bwrap (started on the agent's first call) whose PID 1 is
// the exec server guilds-sandboxd; every Exec and Start asks that server to fork/exec the command
// inside the namespaces already built, so a call pays no bwrap start-up. The sandbox has its own
// PID namespace (background commands outlive their call and end with the sandbox) and shares the
// host's network, so a browser on its loopback stays reachable. A server that died is restarted on
// the next call; Close stops every sandbox.
type Bubblewrap struct {
	Root     string // host folder holding one folder per agent
	BinDir   string // host folder holding the guilds-* helpers and guilds-sandboxd
	ToolsDir string // optional host folder of pinned engines, mounted read-only at ToolsMount
	Env      []string
	Log      *slog.Logger  // nil discards; says when a sandbox starts, restarts or stops
	Idle     time.Duration // a sandbox with no call for this long stops; 0: DefaultSandboxIdle
	bwrap    string

	mu      sync.Mutex
	closed  bool
	servers map[string]*serverSlot
}

// DefaultSandboxIdle is how long an agent's sandbox may go without a call before it stops, and
// with it what still runs there (background commands, Chromium); the next call starts it again.
const DefaultSandboxIdle = 30 * time.Minute

// serverSlot holds one agent's running sandbox; its lock serializes that agent's starts. busy
// counts the Exec calls in flight; the idle timer runs only while it is zero.
type serverSlot struct {
	mu    sync.Mutex
	srv   *server
	ran   bool // a server ran before: a new start is a restart
	busy  int
	last  time.Time
	timer *time.Timer
}

// NewBubblewrap checks that bwrap is installed and returns the provider.
func NewBubblewrap(root, binDir, toolsDir string) (*Bubblewrap, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap is not installed (apt-get install bubblewrap, or run `make setup`)", ErrUnavailable)
	}
	return &Bubblewrap{Root: root, BinDir: binDir, ToolsDir: toolsDir, bwrap: path}, nil
}

// Kind names the provider.
func (p *Bubblewrap) Kind() string { return "bubblewrap" }

// Open returns the agent's sandbox, creating its folders on first use; its bwrap starts on the
// first Exec or Start.
func (p *Bubblewrap) Open(ctx context.Context, agentID string) (Sandbox, error) {
	d, err := agentDirs(p.Root, agentID)
	if err != nil {
		return nil, err
	}
	return &bwrapBox{p: p, agentID: agentID, d: d, fileAPI: fileAPI{places: Places{Home: Home, RunDir: RunDir}, d: d}}, nil
}

// Close stops every agent's sandbox (each server, and with it every process in its PID
// namespace) and refuses later calls.
func (p *Bubblewrap) Close() error {
	p.mu.Lock()
	p.closed = true
	all := p.servers
	p.servers = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for id, sl := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl.mu.Lock()
			defer sl.mu.Unlock()
			if sl.timer != nil {
				sl.timer.Stop()
			}
			if sl.srv != nil {
				sl.srv.kill()
				sl.srv = nil
				p.log().Info("sandbox stopped", "agent_id", id)
			}
		}()
	}
	wg.Wait()
	return nil
}

func (p *Bubblewrap) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}

// acquire returns the agent's running sandbox, starting it (again, if it died or stopped) as
// needed, and holds it awake until release is called.
func (p *Bubblewrap) acquire(ctx context.Context, b *bwrapBox) (*server, func(), error) {
	sl, srv, err := p.server(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	sl.busy++
	if sl.timer != nil {
		sl.timer.Stop()
	}
	sl.mu.Unlock()
	var once sync.Once
	return srv, func() { once.Do(func() { p.release(b.agentID, sl) }) }, nil
}

// release ends one call's hold on the slot's sandbox and arms the idle timer when none is left.
func (p *Bubblewrap) release(agentID string, sl *serverSlot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.busy--
	sl.last = time.Now()
	if sl.busy > 0 || sl.srv == nil {
		return
	}
	if sl.timer == nil {
		sl.timer = time.AfterFunc(p.idle(), func() { p.expire(agentID, sl) })
	} else {
		sl.timer.Reset(p.idle())
	}
}

// expire stops the slot's sandbox when it has had no call for the whole idle period.
func (p *Bubblewrap) expire(agentID string, sl *serverSlot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.srv == nil || sl.busy > 0 {
		return
	}
	if rest := p.idle() - time.Since(sl.last); rest > 0 {
		sl.timer.Reset(rest)
		return
	}
	sl.srv.kill()
	sl.srv = nil
	p.log().Info("sandbox stopped after being idle", "agent_id", agentID, "idle", p.idle().String())
}

func (p *Bubblewrap) idle() time.Duration {
	if p.Idle > 0 {
		return p.Idle
	}
	return DefaultSandboxIdle
}

// server returns the agent's slot, locked, and its running sandbox, starting it (again, if it
// died or stopped) as needed.
func (p *Bubblewrap) server(ctx context.Context, b *bwrapBox) (sl *serverSlot, srv *server, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, errClosed
	}
	if p.servers == nil {
		p.servers = map[string]*serverSlot{}
	}
	sl = p.servers[b.agentID]
	if sl == nil {
		sl = &serverSlot{}
		p.servers[b.agentID] = sl
	}
	p.mu.Unlock()
	locked := sl
	locked.mu.Lock()
	defer func() {
		if err != nil {
			locked.mu.Unlock()
		}
	}()
	if sl.srv != nil && sl.srv.alive() {
		return sl, sl.srv, nil
	}
	if sl.srv != nil {
		p.log().Warn("sandbox exec server ended: restarting the sandbox", "agent_id", b.agentID, "state", sl.srv.state())
		sl.srv.kill()
		sl.srv = nil
	}
	args, err := b.serverArgs()
	if err != nil {
		return nil, nil, err
	}
	// The sandbox outlives this call and serves the agent's next ones: the call's cancellation or
	// short timeout does not abort its start (serverStartTimeout bounds it).
	srv, err = startServer(context.WithoutCancel(ctx), p.bwrap, args)
	if err != nil {
		return nil, nil, err
	}
	p.log().Info("sandbox started", "agent_id", b.agentID, "pid", srv.cmd.Process.Pid, "restart", sl.ran)
	sl.srv, sl.ran = srv, true
	// Closed meanwhile: do not leave this one behind.
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		srv.kill()
		sl.srv = nil
		return nil, nil, errClosed
	}
	return sl, srv, nil
}

// errClosed is the error of a call after Close.
var errClosed = errors.New("the sandbox provider is closed (the orchestrator is shutting down)")

type bwrapBox struct {
	fileAPI
	p       *Bubblewrap
	agentID string
	d       dirs
}

func (b *bwrapBox) Places() Places { return b.places }

// serverArgs builds the bwrap command line of the agent's long-lived sandbox: its mounts, its base
// environment, its own PID namespace with the exec server as PID 1.
func (b *bwrapBox) serverArgs() ([]string, error) {
	srv := filepath.Join(b.p.BinDir, ServerName)
	if fi, err := os.Stat(srv); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("%w: the sandbox exec server %s is missing (run `make build`)", ErrUnavailable, srv)
	}
	a := []string{"--die-with-parent", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--ro-bind", "/usr", "/usr", "--tmpfs", "/usr/local"}
	// Merged-/usr systems link /bin, /lib, … into /usr; others get them bound read-only.
	for _, top := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(top)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(top)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", top, err)
			}
			a = append(a, "--symlink", target, top)
		default:
			a = append(a, "--ro-bind", top, top)
		}
	}
	a = append(a, "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
		"--bind", b.d.tmp(), "/tmp", "--bind", b.d.home(), Home, "--bind", b.d.run(), RunDir)
	helpers, err := filepath.Glob(filepath.Join(b.p.BinDir, "guilds-*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(helpers)
	n := 0
	for _, h := range helpers {
		if filepath.Base(h) == ServerName {
			continue
		}
		a = append(a, "--ro-bind", h, filepath.Join(BinDir, filepath.Base(h)))
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no guilds-* helpers in %s (run `make build`)", ErrUnavailable, b.p.BinDir)
	}
	if b.p.ToolsDir != "" {
		src, dst := b.p.ToolsDir, ToolsMount
		if filepath.Base(src) == ".bin" && filepath.Base(filepath.Dir(src)) == "node_modules" {
			// An npm .bin folder links into its node_modules: mount that whole folder where the
			// image keeps it (/opt/guilds/tools/node_modules), so the links and playwright-core resolve.
			src, dst = filepath.Dir(src), ToolsMount+"/node_modules"
		}
		a = append(a, "--ro-bind", src, dst)
	}
	a = append(a, "--ro-bind", srv, ServerPath, "--chdir", Home, "--clearenv")
	for _, kv := range b.baseEnv() {
		k, v, _ := cut(kv)
		a = append(a, "--setenv", k, v)
	}
	return append(a, "--", ServerPath), nil
}

// baseEnv is the sandbox's environment before the provider's and the request's additions.
func (b *bwrapBox) baseEnv() []string {
	path := BinDir + ":/usr/bin:/bin"
	env := []string{"HOME=" + Home, "TMPDIR=/tmp", "LANG=C.UTF-8", "GUILDS_HOME=" + Home, "GUILDS_RUN_DIR=" + RunDir}
	if b.p.ToolsDir != "" {
		tools := ToolsMount
		if filepath.Base(b.p.ToolsDir) == ".bin" && filepath.Base(filepath.Dir(b.p.ToolsDir)) == "node_modules" {
			tools = ToolsMount + "/node_modules/.bin"
		}
		path = BinDir + ":" + tools + ":/usr/bin:/bin"
		env = append(env, "GUILDS_TOOLS_DIR="+tools)
	}
	return append([]string{"PATH=" + path}, env...)
}

// request builds the exec server's request: the whole environment (base, provider, request; a
// later KEY wins) and the workspace as the working directory.
func (b *bwrapBox) request(req ExecRequest) (sandboxd.Request, error) {
	if len(req.Argv) == 0 {
		return sandboxd.Request{}, errEmptyArgv
	}
	all := append(append(b.baseEnv(), b.p.Env...), req.Env...)
	env := make([]string, 0, len(all))
	at := map[string]int{}
	for _, kv := range all {
		k, _, ok := cut(kv)
		if !ok {
			return sandboxd.Request{}, fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
		if i, seen := at[k]; seen {
			env[i] = kv
			continue
		}
		at[k] = len(env)
		env = append(env, kv)
	}
	return sandboxd.Request{Argv: req.Argv, Env: env, Dir: Home, TimeoutMS: req.Timeout.Milliseconds()}, nil
}

// launch starts req through the agent's exec server, restarting the sandbox once when its server
// turns out to be gone before the command started. The sandbox stays awake until release.
func (b *bwrapBox) launch(ctx context.Context, req sandboxd.Request, stdin, stdout, stderr *os.File) (r *remote, release func(), err error) {
	for attempt := 0; ; attempt++ {
		srv, release, err := b.p.acquire(ctx, b)
		if err != nil {
			return nil, nil, err
		}
		r, err := srv.start(ctx, req, stdin, stdout, stderr)
		if errors.Is(err, errServerGone) && attempt == 0 && ctx.Err() == nil && srv.ended(time.Second) {
			release()
			continue // server() logs the restart
		}
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("start %s in the sandbox: %w", req.Argv[0], err)
		}
		return r, release, nil
	}
}

func (b *bwrapBox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	sreq, err := b.request(req)
	if err != nil {
		return ExecResult{}, err
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	stdin, feed, err := stdinFor(req.Stdin)
	if err != nil {
		return ExecResult{}, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return ExecResult{}, fmt.Errorf("output pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		outR.Close()
		outW.Close()
		return ExecResult{}, fmt.Errorf("output pipe: %w", err)
	}
	start := time.Now()
	r, release, err := b.launch(ctx, sreq, stdin, outW, errW)
	stdin.Close()
	outW.Close()
	errW.Close()
	stdout, stderr := &capped{limit: maxOutput}, &capped{limit: maxOutput}
	outDone, errDone := drain(stdout, outR), drain(stderr, errR)
	defer feed()
	if err != nil {
		outR.Close()
		errR.Close()
		<-outDone
		<-errDone
		return ExecResult{}, err
	}
	defer release()
	ev, werr := r.wait(ctx)
	// The command exited; what it left holding its output gets outputGrace before reading stops.
	grace, stopGrace := context.WithTimeout(context.Background(), outputGrace)
	for _, done := range []chan struct{}{outDone, errDone} {
		select {
		case <-done:
		case <-grace.Done():
		}
	}
	stopGrace()
	outR.Close()
	errR.Close()
	<-outDone
	<-errDone
	res := ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: ev.ExitCode, Duration: time.Since(start)}
	switch {
	case werr != nil && ctx.Err() != nil:
		return res, fmt.Errorf("%s: %w", req.Argv[0], werr)
	case werr != nil:
		return res, fmt.Errorf("run %s: %w", req.Argv[0], werr)
	case ev.TimedOut:
		return res, fmt.Errorf("%s: %w", req.Argv[0], context.DeadlineExceeded)
	}
	return res, nil
}

// stdinFor returns the command's stdin: /dev/null, or a pipe that feed fills with data (feed
// returns once the writer is done or the command stopped reading).
func stdinFor(data []byte) (*os.File, func(), error) {
	if data == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, fmt.Errorf("open %s: %w", os.DevNull, err)
		}
		return f, func() {}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("input pipe: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_, _ = w.Write(data)
		w.Close()
		close(done)
	}()
	// A command that ends without reading all of it: closing the write side unblocks the writer.
	return r, func() { _ = w.Close(); <-done }, nil
}

// Start starts a long-lived command in the sandbox (its own process group; stdout and stderr
// to out) and returns without waiting.
func (b *bwrapBox) Start(req ExecRequest, out io.Writer) (*Process, error) {
	sreq, err := b.request(req)
	if err != nil {
		return nil, err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer null.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	r, release, err := b.launch(context.Background(), sreq, null, pw, pw)
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	// A long-lived process, like a background command, does not hold the sandbox awake.
	release()
	copied := drain(out, pr)
	p := &Process{Pid: r.pid, signal: r.signal, done: make(chan struct{})}
	go func() {
		ev, err := r.wait(context.Background())
		select {
		case <-copied:
		case <-time.After(outputGrace):
		}
		pr.Close()
		<-copied
		if err != nil {
			p.state = err.Error()
		} else {
			p.state = fmt.Sprintf("exit status %d", ev.ExitCode)
		}
		close(p.done)
	}()
	return p, nil
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], i > 0
		}
	}
	return "", "", false
}
