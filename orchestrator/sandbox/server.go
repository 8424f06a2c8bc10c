package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxd"
)

// ServerPath is where the exec server (bin/guilds-sandboxd) appears inside a bubblewrap sandbox:
// not on PATH, and not among the helpers.
const ServerPath = "/usr/local/lib/guilds/sandboxd"

// ServerName is the exec server's file name in the host's bin folder.
const ServerName = "guilds-sandboxd"

// serverStartTimeout bounds how long a fresh sandbox may take to report its exec server ready.
const serverStartTimeout = 15 * time.Second

// outputGrace is how long a finished command's output may stay open (held by something it left
// running) before the call stops reading it; exec.Cmd's WaitDelay in the local provider.
const outputGrace = 2 * time.Second

// errServerGone says the exec server ended before it started the command: safe to retry once.
var errServerGone = errors.New("the sandbox's exec server is gone")

// server is one agent's long-lived bubblewrap sandbox with guilds-sandboxd as its PID 1.
type server struct {
	cmd  *exec.Cmd     // bwrap
	ctl  *net.UnixConn // the control socket's orchestrator end
	done chan struct{} // closed once bwrap exited and what the sandbox held is released
	out  *syncCapped   // what bwrap and the server printed
	dead chan struct{} // closed by kill
	once sync.Once
	pid  int     // the exec server's host pid
	cg   *cgroup // nil: no control groups
}

// startServer starts cmd (bwrap, its arguments ending in "--" and the server path) through launch,
// with the control socket as its fd 3 and extra after it, and waits until the exec server inside
// reports ready and bwrap names its host pid. release (nil: nothing) runs once bwrap has exited,
// or at once when it could not start: it frees what the sandbox held beside bwrap.
func startServer(ctx context.Context, cmd *exec.Cmd, extra []*os.File, launch func(*exec.Cmd) error, release func()) (*server, error) {
	if release == nil {
		release = func() {}
	}
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		release()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "control"), os.NewFile(uintptr(pair[1]), "control")
	defer theirs.Close()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		release()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		c.Close()
		release()
		return nil, fmt.Errorf("bwrap info pipe: %w", err)
	}
	defer infoR.Close()
	s := &server{ctl: c.(*net.UnixConn), done: make(chan struct{}), dead: make(chan struct{}),
		out: &syncCapped{c: capped{limit: 64 << 10}}}
	// fd 3 = sandboxd.CtlFD, then extra, then bwrap's --info-fd.
	cmd.ExtraFiles = append(append([]*os.File{theirs}, extra...), infoW)
	cmd.Args = append([]string{cmd.Args[0], "--info-fd", strconv.Itoa(sandboxd.CtlFD + 1 + len(extra))}, cmd.Args[1:]...)
	cmd.Env = []string{}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	s.cmd = cmd
	err = launch(cmd)
	infoW.Close()
	if err != nil {
		s.ctl.Close()
		release()
		return nil, fmt.Errorf("start bwrap: %w", err)
	}
	theirs.Close()
	go func() {
		_ = s.cmd.Wait()
		release()
		close(s.done)
	}()

	info := make(chan error, 1)
	go func() {
		var v struct {
			Pid int `json:"child-pid"`
		}
		raw, err := io.ReadAll(io.LimitReader(infoR, 64<<10))
		if err == nil {
			err = json.Unmarshal(raw, &v)
		}
		if err == nil && v.Pid <= 0 {
			err = fmt.Errorf("bwrap named no child pid: %.200q", raw)
		}
		s.pid = v.Pid
		info <- err
	}()
	ready := make(chan error, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := s.ctl.Read(buf)
		switch {
		case err != nil:
			ready <- err
		case string(buf[:n]) != sandboxd.Ready:
			ready <- fmt.Errorf("unexpected first message %q", buf[:n])
		default:
			ready <- nil
		}
	}()
	timer := time.NewTimer(serverStartTimeout)
	defer timer.Stop()
	for _, ch := range []chan error{info, ready} {
		select {
		case err = <-ch:
		case <-timer.C:
			err = fmt.Errorf("no ready message within %s", serverStartTimeout)
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	if err != nil {
		s.kill()
		return nil, fmt.Errorf("start the sandbox (bwrap with its exec server): %v; its output: %s", err, lastLines(s.out.String(), 3))
	}
	return s, nil
}

// events counts what the sandbox's limits refused so far.
func (s *server) events() limitEvents {
	if s.cg == nil {
		return limitEvents{}
	}
	return s.cg.events()
}

// alive reports whether the sandbox still runs and was not given up.
func (s *server) alive() bool {
	select {
	case <-s.done:
		return false
	case <-s.dead:
		return false
	default:
		return true
	}
}

// ended reports whether the sandbox ends within d (a server that dropped a request but still
// runs is not restarted).
func (s *server) ended(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.done:
		return true
	case <-s.dead:
		return true
	case <-t.C:
		return false
	}
}

// state describes how the sandbox ended, for the log.
func (s *server) state() string {
	select {
	case <-s.done:
		return fmt.Sprintf("%s; output: %s", s.cmd.ProcessState, lastLines(s.out.String(), 3))
	default:
		return "running"
	}
}

// kill ends the sandbox: the control socket closes (the server exits, and with it the PID
// namespace), and bwrap's process group gets SIGKILL if it has not exited within 5 s.
func (s *server) kill() {
	s.once.Do(func() {
		close(s.dead)
		s.ctl.Close()
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	})
}

// remote is one command running in the sandbox.
type remote struct {
	conn   *net.UnixConn
	r      *bufio.Reader
	pid    int
	wmu    sync.Mutex
	srv    *server
	before limitEvents // the sandbox's limit counters before the command started
}

// start asks the server to run req with the given stdio; it returns once the command runs. An
// error wrapping errServerGone means the command never started because the server is gone.
func (s *server) start(ctx context.Context, req sandboxd.Request, stdin, stdout, stderr *os.File) (*remote, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // a call cancelled already does not run at all
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the command: %w", err)
	}
	if len(raw) > sandboxd.MaxRequest {
		return nil, fmt.Errorf("the command line and environment take %d bytes, over the sandbox's %d", len(raw), sandboxd.MaxRequest)
	}
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("request socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "request"), os.NewFile(uintptr(pair[1]), "request")
	rights := syscall.UnixRights(int(theirs.Fd()), int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd()))
	_, _, err = s.ctl.WriteMsgUnix(raw, rights, nil)
	theirs.Close()
	c, cerr := net.FileConn(mine)
	mine.Close()
	if err != nil {
		if c != nil {
			c.Close()
		}
		if errors.Is(err, syscall.EMSGSIZE) {
			return nil, fmt.Errorf("the command line and environment (%d bytes) do not fit one control message", len(raw))
		}
		return nil, fmt.Errorf("%w: send the command: %v", errServerGone, err)
	}
	if cerr != nil {
		return nil, fmt.Errorf("request socket: %w", cerr)
	}
	r := &remote{conn: c.(*net.UnixConn)}
	r.r = bufio.NewReader(r.conn)
	stopWatch := watch(ctx, r.conn)
	ev, err := r.event()
	stopWatch()
	if err != nil {
		r.conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %v", errServerGone, err)
	}
	if ev.Error != "" {
		r.conn.Close()
		return nil, errors.New(ev.Error)
	}
	r.pid = ev.Pid
	return r, nil
}

// watch makes reads on conn return at once when ctx ends; the returned func stops watching.
func watch(ctx context.Context, conn *net.UnixConn) func() {
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	return func() { stop() }
}

// event reads the next event line.
func (r *remote) event() (sandboxd.Event, error) {
	line, err := r.r.ReadBytes('\n')
	if err != nil {
		return sandboxd.Event{}, err
	}
	return parseEvent(line)
}

// parseEvent decodes one event line. The server runs inside the sandbox, so its lines are
// untrusted: anything but one JSON object with the known fields is an error.
func parseEvent(line []byte) (sandboxd.Event, error) {
	var ev sandboxd.Event
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return sandboxd.Event{}, fmt.Errorf("decode the exec server's event %.200q: %w", line, err)
	}
	if dec.More() {
		return sandboxd.Event{}, fmt.Errorf("decode the exec server's event %.200q: more than one value", line)
	}
	if ev.Pid < 0 || ev.ExitCode < 0 || ev.ExitCode > 255+128 {
		return sandboxd.Event{}, fmt.Errorf("the exec server's event %.200q is out of range", line)
	}
	return ev, nil
}

// signal sends sig to the command's process group.
func (r *remote) signal(sig syscall.Signal) error {
	b, _ := json.Marshal(sandboxd.Control{Signal: int(sig)})
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_, err := r.conn.Write(append(b, '\n'))
	return err
}

// wait returns the command's exit event. When ctx ends first, the command's process group is
// killed (the server does it when this side of the connection closes) and ctx's error returned
// once the server confirms the exit.
func (r *remote) wait(ctx context.Context) (sandboxd.Event, error) {
	defer r.conn.Close()
	stopWatch := watch(ctx, r.conn)
	ev, err := r.event()
	stopWatch()
	if ctx.Err() != nil && (err != nil || !ev.Exited) {
		r.wmu.Lock()
		_ = r.conn.CloseWrite()
		r.wmu.Unlock()
		_ = r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = r.event()
		return ev, ctx.Err()
	}
	if err != nil {
		return ev, fmt.Errorf("the sandbox's exec server ended during the command: %w", err)
	}
	return ev, nil
}

// syncCapped is a capped buffer safe for concurrent writers and readers.
type syncCapped struct {
	mu sync.Mutex
	c  capped
}

func (s *syncCapped) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Write(p)
}

func (s *syncCapped) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.String()
}

// drain copies r into w until EOF or until r is closed; done closes when it stops.
func drain(w io.Writer, r *os.File) chan struct{} {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(w, r)
		close(done)
	}()
	return done
}
