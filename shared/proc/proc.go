// Package proc runs a command under a pseudo-terminal with a timeout, process-group and
// descendant cleanup, and full-output capture: the runner behind the shell and script helpers.
package proc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Defaults for Cmd's zero values.
const (
	DefaultGrace  = 2 * time.Second
	DefaultLinger = 100 * time.Millisecond
	// TimeoutExit is the exit code a command reports when its timeout stopped it (as timeout(1)).
	TimeoutExit = 124
	// TokenEnv carries a per-run token in the command's environment, so descendants that left
	// its session can still be told apart from other processes.
	TokenEnv = "GUILDS_PROC_TOKEN"
)

// Cmd describes one command to run.
type Cmd struct {
	Args    []string  // the program and its arguments; Args[0] is looked up in PATH
	Dir     string    // working directory
	Env     []string  // the whole environment
	Stdin   io.Reader // nil: standard input is closed (reads see end of file); else it is fed from here
	Output  io.Writer // receives everything the command writes to its terminal, raw; may be nil
	Timeout time.Duration
	Grace   time.Duration // between SIGTERM and SIGKILL; default 2 s
	// Linger is how long the terminal may stay open after the command exits before what still
	// holds it is stopped; default 100 ms.
	Linger time.Duration
	// NewSession runs the command in a session of its own; otherwise it gets a process group of
	// its own in this process's session. A process that has a controlling terminal always starts
	// a new session, so the command cannot read from that terminal and hang.
	NewSession bool
	// Started, when set, is called with the command's process id (also its process group id)
	// once it runs.
	Started func(pid int)
}

// Result is how a command ended.
type Result struct {
	ExitCode int  // the exit status; 128+N for signal N; TimeoutExit when the timeout stopped it
	TimedOut bool // the timeout ran out and the process group was stopped
	Canceled bool // the context ended first and the process group was stopped
	// Leftover counts the processes the command left running after it exited (background
	// children and the like); Run stopped them.
	Leftover int
	Elapsed  time.Duration
}

var subreaperOnce sync.Once

// BecomeSubreaper makes the calling process the reaper of its orphaned descendants
// (PR_SET_CHILD_SUBREAPER), so Run can find and stop what a command leaves behind even after
// its parent exited. Run calls it; it is idempotent.
func BecomeSubreaper() {
	subreaperOnce.Do(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}

// Run starts the command in its own process group (see Cmd.NewSession), with a pseudo-terminal
// as standard output and error, and waits for it. Past the timeout (or when ctx ends) the whole process group and every
// descendant that carries the run's token get SIGTERM, then SIGKILL after Grace. When the command
// exits, what it left running is stopped the same way and counted in Leftover. The error is set
// only when the command could not be started.
func Run(ctx context.Context, c Cmd) (Result, error) {
	if len(c.Args) == 0 {
		return Result{}, errors.New("run: no command")
	}
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	linger := c.Linger
	if linger <= 0 {
		linger = DefaultLinger
	}
	BecomeSubreaper()
	master, tty, err := openPTY()
	if err != nil {
		return Result{}, err
	}
	defer master.Close()

	token := newToken()
	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	if cmd.Err != nil {
		tty.Close()
		return Result{}, fmt.Errorf("run %s: %w", c.Args[0], cmd.Err)
	}
	cmd.Dir = c.Dir
	cmd.Env = append(append([]string(nil), c.Env...), TokenEnv+"="+token)
	// Standard input: nil is /dev/null; a reader is fed through a pipe by a goroutine of our own,
	// so a reader that never ends cannot hold Run once the command has exited.
	var stdinR, stdinW *os.File
	if c.Stdin != nil {
		if stdinR, stdinW, err = os.Pipe(); err != nil {
			tty.Close()
			return Result{}, fmt.Errorf("stdin pipe: %w", err)
		}
		cmd.Stdin = stdinR
	}
	cmd.Stdout, cmd.Stderr = tty, tty
	// Output is a terminal (programs line-buffer), but not a controlling one: a program that
	// opens /dev/tty to ask for a password fails at once instead of hanging. A process group of
	// its own is enough for that when this process has no controlling terminal either, and it
	// is cheaper than a session: each new session is a new scheduler autogroup, which costs
	// milliseconds on a busy machine.
	if c.NewSession || hasControllingTerminal() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tty.Close()
		if stdinR != nil {
			stdinR.Close()
			stdinW.Close()
		}
		return Result{}, fmt.Errorf("start %s: %w", c.Args[0], err)
	}
	tty.Close()
	if stdinR != nil {
		stdinR.Close()
		var once sync.Once
		closeW := func() { once.Do(func() { stdinW.Close() }) }
		defer closeW()
		go func() {
			_, _ = io.Copy(stdinW, c.Stdin)
			closeW()
		}()
	}
	pid := cmd.Process.Pid
	if c.Started != nil {
		c.Started(pid)
	}

	copied := make(chan struct{})
	go func() {
		defer close(copied)
		copyOutput(c.Output, master)
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	var res Result
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-exited:
	case <-timeout:
		res.TimedOut = true
	case <-ctx.Done():
		res.Canceled = true
	}
	if res.TimedOut || res.Canceled {
		stopAll(pid, token, exited, grace)
		<-exited
	}
	res.ExitCode = exitCode(cmd.ProcessState, waitErr)
	if res.TimedOut {
		res.ExitCode = TimeoutExit
	}
	res.Elapsed = time.Since(start)

	// The command is gone; give the terminal a moment to drain, then stop what it left behind.
	t := time.NewTimer(linger)
	select {
	case <-copied:
	case <-t.C:
	}
	t.Stop()
	if left := descendants(pid, token); len(left) > 0 {
		if !res.TimedOut && !res.Canceled {
			res.Leftover = len(left)
		}
		stopPIDs(left, grace)
		killRest(pid, token, grace) // what they forked meanwhile
	}
	// Whatever still holds the terminal now is outside our reach; stop reading after a last moment.
	_ = master.SetReadDeadline(time.Now().Add(linger))
	<-copied
	return res, nil
}

// openPTY opens a pseudo-terminal whose master is non-blocking, so reads can be given deadlines.
func openPTY() (*os.File, *os.File, error) {
	p, tty, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pseudo-terminal: %w", err)
	}
	// A wide terminal keeps programs from wrapping lines the model then reads broken.
	_ = pty.Setsize(p, &pty.Winsize{Rows: 50, Cols: 200})
	fd, err := unix.FcntlInt(p.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	p.Close()
	if err != nil {
		tty.Close()
		return nil, nil, fmt.Errorf("open pseudo-terminal: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		tty.Close()
		return nil, nil, fmt.Errorf("open pseudo-terminal: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), tty, nil
}

// hasControllingTerminal reports whether this process has a controlling terminal.
func hasControllingTerminal() bool {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func copyOutput(w io.Writer, r io.Reader) {
	buf := make([]byte, 8<<10) // a terminal hands over at most 4 KiB per read
	for {
		n, err := r.Read(buf)
		if n > 0 && w != nil {
			if _, werr := w.Write(buf[:n]); werr != nil {
				w = nil // keep draining so the command never blocks on a full terminal
			}
		}
		if err != nil {
			return
		}
	}
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return -1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stopAll sends SIGTERM to the process group and the token's descendants, and SIGKILL to
// whatever is left after grace (or at once when the leader is gone and nothing else remains).
func stopAll(pid int, token string, exited <-chan struct{}, grace time.Duration) {
	_ = unix.Kill(-pid, unix.SIGTERM)
	for _, p := range descendants(pid, token) {
		_ = unix.Kill(p, unix.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			if len(descendants(pid, token)) == 0 {
				return
			}
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = unix.Kill(-pid, unix.SIGKILL)
	killRest(pid, token, grace)
}

// killRest sends SIGKILL to every descendant of the command that is left, round after round until
// none is, so what was forked while a round ran goes in the next however fast it forks; it gives
// up after limit.
func killRest(pid int, token string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		left := descendants(pid, token) // reaps the exited ones
		if len(left) == 0 || time.Now().After(deadline) {
			return
		}
		for _, p := range left {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopPIDs stops processes that outlived their command: SIGTERM to each and its group, then
// SIGKILL to whatever is left after grace. It reaps them.
func stopPIDs(pids []int, grace time.Duration) {
	for _, p := range pids {
		_ = unix.Kill(p, unix.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for {
		reap(pids)
		alive := pids[:0:0]
		for _, p := range pids {
			if unix.Kill(p, 0) == nil && !zombie(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range alive {
				_ = unix.Kill(p, unix.SIGKILL)
			}
			time.Sleep(10 * time.Millisecond)
			reap(alive)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reap collects the exit status of those pids that are our children, without blocking.
func reap(pids []int) {
	for _, p := range pids {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p, &ws, unix.WNOHANG, nil)
	}
}

// zombie reports whether pid has exited but not yet been reaped by its parent.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, state, _, _, ok := parseStat(b)
	return !ok || state == 'Z' || state == 'X'
}

// hasToken reports whether the environment of pid carries TokenEnv=token.
func hasToken(pid int, token string) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	want := []byte(TokenEnv + "=" + token)
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}
