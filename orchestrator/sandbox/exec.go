package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// maxOutput bounds what one command may leave in memory per stream; helpers print one short line.
const maxOutput = 8 << 20

// stopGrace is how long a stopped command has after SIGTERM before its process group gets SIGKILL:
// longer than a helper's own grace for what it started (shared/proc's DefaultGrace, 2 s).
const stopGrace = 3 * time.Second

// run starts the command in its own process group, bounds it by ctx and the request's timeout
// (killing the whole group), and collects its output.
func run(ctx context.Context, req ExecRequest, name string, args []string, configure func(*exec.Cmd)) (ExecResult, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	if configure != nil {
		configure(cmd)
	}
	stdout := &capped{limit: maxOutput}
	stderr := &capped{limit: maxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if req.Stdin != nil {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Stopped (its caller gone, cancelled, or past its time): SIGTERM first, so a helper stops what
	// it started in process groups of its own (the shell's command), then SIGKILL to the group.
	waited := make(chan struct{})
	cmd.Cancel = func() error {
		pid := cmd.Process.Pid
		go func() {
			t := time.NewTimer(stopGrace)
			defer t.Stop()
			select {
			case <-waited:
			case <-t.C:
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}()
		return syscall.Kill(-pid, syscall.SIGTERM)
	}
	cmd.WaitDelay = stopGrace + 2*time.Second
	start := time.Now()
	err := cmd.Start()
	if err != nil {
		return ExecResult{}, fmt.Errorf("start %s: %w", cmd.Args[0], err)
	}
	err = cmd.Wait()
	close(waited)
	res := ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Duration: time.Since(start)}
	if ctx.Err() != nil {
		return res, fmt.Errorf("%s: %w", cmd.Args[0], ctx.Err())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		if res.ExitCode < 0 {
			res.ExitCode = 128 + int(exit.Sys().(syscall.WaitStatus).Signal())
		}
	case errors.Is(err, exec.ErrWaitDelay):
		// The command exited but left something holding its output open; its result stands.
	default:
		return res, fmt.Errorf("run %s: %w", cmd.Args[0], err)
	}
	return res, nil
}

// copyBufs holds the read buffers of capped.ReadFrom, reused across calls.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// capped keeps at most limit bytes and drops the rest.
type capped struct {
	bytes.Buffer
	limit int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// ReadFrom reads r to its end through Write, so io.Copy keeps the limit (bytes.Buffer's own
// ReadFrom would not).
func (c *capped) ReadFrom(r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			c.Write(buf[:k])
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Process is a long-lived command a sandbox started, in its own process group.
type Process struct {
	Pid    int // in the sandbox's PID namespace
	signal func(syscall.Signal) error
	done   chan struct{}
	state  string
}

// Signal sends sig to the command's process group.
func (p *Process) Signal(sig syscall.Signal) error { return p.signal(sig) }

// Done is closed once the command has exited and its output is collected.
func (p *Process) Done() <-chan struct{} { return p.done }

// State says how the command ended; valid once Done is closed.
func (p *Process) State() string { return p.state }

// start starts a long-lived command in its own process group, output to out, without waiting.
func start(name string, args []string, out io.Writer, configure func(*exec.Cmd)) (*Process, error) {
	cmd := exec.Command(name, args...)
	if configure != nil {
		configure(cmd)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = outputGrace
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Args[0], err)
	}
	pid := cmd.Process.Pid
	p := &Process{Pid: pid, signal: func(sig syscall.Signal) error { return syscall.Kill(-pid, sig) }, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState.String()
		close(p.done)
	}()
	return p, nil
}
