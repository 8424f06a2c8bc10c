// Package sandboxd is the exec server of a long-lived bubblewrap sandbox, and its wire format.
//
// The orchestrator starts bwrap once per agent with sandboxd as the namespace's PID 1 and one end
// of a SOCK_SEQPACKET socket pair as its fd 3 (the control socket). Each command is one control
// message: the Request as JSON plus four file descriptors (SCM_RIGHTS): the request's own stream
// connection, then the command's stdin, stdout and stderr. The command's output therefore goes
// straight to the orchestrator's pipes and never passes through the server. Each command runs in a
// session of its own. On the request connection the server writes one Event with the command's
// pid (or why it could not start), then one Event with its exit status once the command exited and
// what it left running in its session is gone; the orchestrator may write Control lines (a signal
// for the command's process group), and closing its side, like the request's timeout, ends the
// whole session. A process that moved to a session of its own (a background command) is left
// alone. The server reaps every child (it is PID 1: background commands that outlive their helper
// are reparented to it) and exits when the control socket closes, which ends the whole PID
// namespace with it.
package sandboxd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// CtlFD is the control socket's descriptor in the server.
const CtlFD = 3

// Ready is the control message the server sends once it serves requests.
const Ready = "ready"

// MaxRequest bounds one control message's JSON (argv, environment).
const MaxRequest = 1 << 20

// Fds is the number of descriptors each control message carries: connection, stdin, stdout, stderr.
const Fds = 4

// Request is one command to run.
type Request struct {
	Argv      []string `json:"argv"`                 // argv[0]: a path, or a name looked up on the PATH of Env
	Env       []string `json:"env"`                  // the whole environment
	Dir       string   `json:"dir"`                  // working directory; "" is /
	TimeoutMS int64    `json:"timeout_ms,omitempty"` // 0: none; past it the command's session is killed
}

// Event is one line the server writes on a request's connection: first Started with Pid (or
// Error when the command could not start), then Exited with its status.
type Event struct {
	Pid      int    `json:"pid,omitempty"`
	Error    string `json:"error,omitempty"`
	Exited   bool   `json:"exited,omitempty"`
	ExitCode int    `json:"exit_code"`           // 128+signal when a signal ended it
	TimedOut bool   `json:"timed_out,omitempty"` // the server's own timeout fired
}

// Control is one line the orchestrator may write on a request's connection.
type Control struct {
	Signal int `json:"signal"` // sent to the command's process group
}

// server runs commands and reaps children; waiters maps a command's pid to its status channel.
type server struct {
	mu      sync.Mutex
	waiters map[int]chan syscall.WaitStatus
	log     io.Writer
}

// Serve answers requests on ctl until it closes. It sends Ready first.
func Serve(ctl *net.UnixConn, log io.Writer) error {
	s := &server{waiters: map[int]chan syscall.WaitStatus{}, log: log}
	// The agent's processes run as this server's user: not dumpable, it cannot be ptraced, nor its
	// memory, environment or descriptors read through /proc (the commands it starts are dumpable
	// again once they exec).
	if err := prctl(prSetDumpable, 0); err != nil {
		return fmt.Errorf("make the exec server undumpable: %w", err)
	}
	// Outside a PID namespace (tests) orphans still come to this process.
	_ = prctl(prSetChildSubreaper, 1)
	// Signals from inside the sandbox do not stop it; the orchestrator closes the control socket.
	// They are caught and dropped, not ignored: an ignored signal would stay ignored in every
	// command the server starts.
	stops := make(chan os.Signal, 1)
	signal.Notify(stops, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range stops {
		}
	}()
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	go s.reap(children)
	if _, err := ctl.Write([]byte(Ready)); err != nil {
		return fmt.Errorf("send ready: %w", err)
	}
	buf := make([]byte, MaxRequest)
	oob := make([]byte, syscall.CmsgSpace(Fds*4))
	for {
		n, oobn, flags, _, err := ctl.ReadMsgUnix(buf, oob)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the control socket: %w", err)
		}
		if n == 0 && oobn == 0 {
			return nil // the orchestrator closed the control socket
		}
		files, ferr := parseRights(oob[:oobn])
		switch {
		case ferr != nil:
			fmt.Fprintf(s.log, "sandboxd: dropped a request: %v\n", ferr)
			closeAll(files)
			continue
		case flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0:
			fmt.Fprintf(s.log, "sandboxd: dropped a request: over %d bytes or %d descriptors\n", MaxRequest, Fds)
			closeAll(files)
			continue
		}
		// One buffer for every message (a fresh megabyte per call would cost its page faults).
		go s.handle(append([]byte(nil), buf[:n]...), files)
	}
}

// parseRights returns the descriptors of a control message, which must be exactly Fds.
func parseRights(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse control message: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return files, fmt.Errorf("parse descriptors: %w", err)
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "fd"))
		}
	}
	if len(files) != Fds {
		return files, fmt.Errorf("got %d descriptors, want %d", len(files), Fds)
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// handle runs one request: files are its connection, stdin, stdout and stderr.
func (s *server) handle(raw []byte, files []*os.File) {
	connFile, stdio := files[0], files[1:]
	c, err := net.FileConn(connFile)
	connFile.Close()
	if err != nil {
		closeAll(stdio)
		fmt.Fprintf(s.log, "sandboxd: request connection: %v\n", err)
		return
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	send := func(ev Event) {
		b, _ := json.Marshal(ev)
		_, _ = conn.Write(append(b, '\n'))
	}
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Argv) == 0 {
		closeAll(stdio)
		send(Event{Error: fmt.Sprintf("bad request: %v (want JSON with a non-empty argv)", err)})
		return
	}
	pid, status, err := s.spawn(req, stdio)
	closeAll(stdio)
	if err != nil {
		send(Event{Error: err.Error()})
		return
	}
	send(Event{Pid: pid})

	// The orchestrator's side: signals for the group; its end closing (a cancelled call, or the
	// orchestrator gone) ends the command's session, unless the command already exited (its
	// session is ended then anyway).
	var exited atomic.Bool
	go func() {
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				if !exited.Load() {
					endSession(pid)
				}
				return
			}
			var ctl Control
			if json.Unmarshal(line, &ctl) == nil && ctl.Signal > 0 && !exited.Load() {
				_ = syscall.Kill(-pid, syscall.Signal(ctl.Signal))
			}
		}
	}()
	var timeout <-chan time.Time
	if req.TimeoutMS > 0 {
		t := time.NewTimer(time.Duration(req.TimeoutMS) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	ev := Event{Exited: true}
	var st syscall.WaitStatus
	select {
	case st = <-status:
	case <-timeout:
		endSession(pid)
		ev.TimedOut = true
		st = <-status
	}
	exited.Store(true)
	// What the command left running in its session goes with it, before the exit is reported: the
	// next command must not meet the sandbox's process limit still held by this one's forks.
	endSession(pid)
	ev.ExitCode = st.ExitStatus()
	if st.Signaled() {
		ev.ExitCode = 128 + int(st.Signal())
	}
	send(ev)
}

// spawn starts the command in a session of its own and registers it with the reaper. The lock
// spans fork and registration, so the reaper cannot take the status before anyone waits for it.
func (s *server) spawn(req Request, stdio []*os.File) (int, chan syscall.WaitStatus, error) {
	path, err := lookPath(req.Argv[0], req.Env)
	if err != nil {
		return 0, nil, err
	}
	dir := req.Dir
	if dir == "" {
		dir = "/"
	}
	attr := &syscall.ProcAttr{Dir: dir, Env: req.Env,
		Files: []uintptr{stdio[0].Fd(), stdio[1].Fd(), stdio[2].Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true}}
	s.mu.Lock()
	defer s.mu.Unlock()
	pid, err := syscall.ForkExec(path, req.Argv, attr)
	if err != nil {
		return 0, nil, fmt.Errorf("start %s: %w", req.Argv[0], err)
	}
	ch := make(chan syscall.WaitStatus, 1)
	s.waiters[pid] = ch
	return pid, ch, nil
}

// reap collects every exited child: a command's status goes to its waiter, an orphan's is dropped.
func (s *server) reap(children <-chan os.Signal) {
	for range children {
		for {
			var st syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &st, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if pid <= 0 || err != nil {
				break
			}
			s.mu.Lock()
			ch := s.waiters[pid]
			delete(s.waiters, pid)
			s.mu.Unlock()
			if ch != nil {
				ch <- st
			}
		}
	}
}

// lookPath resolves a command name on the PATH of env, as execvp would.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathList := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathList = v
		}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("start %s: executable file not found in $PATH (%s)", name, pathList)
}

// prctl options the server sets.
const (
	prSetDumpable       = 4
	prSetChildSubreaper = 36
)

// prctl sets one process attribute.
func prctl(option, value uintptr) error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, option, value, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
