package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/guildsai/guilds/shared/envelope"
)

// StartTimeout bounds how long a call waits for a new daemon to listen.
const StartTimeout = 20 * time.Second

// errNoReply marks a connection that closed before any reply byte: the call never ran.
var errNoReply = errors.New("daemon closed the connection without a reply")

// Do hands the call to the daemon, starting it (as `exe --daemon`) when none is listening.
// Two calls racing to start it end with one daemon: the start happens under a file lock.
func Do(ctx context.Context, p Paths, exe string, c Call) (envelope.Reply, error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		conn, err := dial(p)
		if err != nil {
			conn, err = start(ctx, p, exe)
			if err != nil {
				return envelope.Reply{}, err
			}
		}
		reply, err := roundTrip(ctx, conn, c)
		if err == nil {
			return reply, nil
		}
		lastErr = err
		if !errors.Is(err, errNoReply) {
			break
		}
		// The daemon was exiting (quiet period) as we connected: start a fresh one.
	}
	return envelope.Reply{}, lastErr
}

func dial(p Paths) (net.Conn, error) {
	return net.DialTimeout("unix", p.Socket, 2*time.Second)
}

func roundTrip(ctx context.Context, conn net.Conn, c Call) (envelope.Reply, error) {
	defer conn.Close()
	deadline := time.Now().Add(CallTimeout + 15*time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	b, err := json.Marshal(c)
	if err != nil {
		return envelope.Reply{}, fmt.Errorf("encode call: %w", err)
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return envelope.Reply{}, fmt.Errorf("%w: %v", errNoReply, err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		if len(line) == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return envelope.Reply{}, errNoReply
		}
		return envelope.Reply{}, fmt.Errorf("read the daemon's reply: %w", err)
	}
	var r envelope.Reply
	if err := json.Unmarshal(line, &r); err != nil {
		return envelope.Reply{}, fmt.Errorf("decode the daemon's reply: %w", err)
	}
	if r.Meta == nil {
		r.Meta = map[string]any{}
	}
	return r, nil
}

// start takes the lock, and unless another call started a daemon meanwhile, starts one and waits
// for it to listen.
func start(ctx context.Context, p Paths, exe string) (net.Conn, error) {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create daemon folder: %w", err)
	}
	lock, err := os.OpenFile(p.Lock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open daemon lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", p.Lock, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if conn, err := dial(p); err == nil {
		return conn, nil // another call won the race
	}
	os.Remove(p.Socket) // stale socket of a daemon that died
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, io.SeekEnd)
	cmd := exec.Command(exe, "--daemon")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the browser daemon (%s --daemon): %w", exe, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(StartTimeout)
	for time.Now().Before(deadline) {
		if conn, err := dial(p); err == nil {
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the browser daemon: %w", ctx.Err())
		case <-exited:
			return nil, fmt.Errorf("the browser daemon exited at start: %s", logTail(p.Log, logStart))
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("the browser daemon did not listen on %s within %s; see %s", p.Socket, StartTimeout, p.Log)
}

func logTail(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < from {
		return "see " + path
	}
	s := strings.TrimSpace(string(b[from:]))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	if s == "" {
		return "no output; see " + path
	}
	return s
}
