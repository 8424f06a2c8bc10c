// Package daemon keeps Playwright warm between calls: a per-sandbox server on a unix socket under
// GUILDS_RUN_DIR that the first call starts, later calls hand their request to, and that exits
// after a quiet period.
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
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/toolspec"
)

// DefaultIdle is how long the daemon waits for a call before it exits (GUILDS_BROWSER_IDLE overrides it).
const DefaultIdle = 10 * time.Minute

// CallTimeout bounds one tool call end to end (toolspec holds it).
const CallTimeout = toolspec.BrowserCallTimeout

// Call is what the client hands the daemon: the request plus the places it was made with.
type Call struct {
	Req    envelope.Request `json:"req"`
	Home   string           `json:"home"`
	Max    int              `json:"max"`
	CDPURL string           `json:"cdp_url"`
}

// Handler runs one call; it never returns a Go error, failures are replies.
type Handler func(ctx context.Context, c Call) envelope.Reply

// Paths are the daemon's files under GUILDS_RUN_DIR/browser.
type Paths struct {
	Dir, Socket, Lock, PID, Log string
}

// PathsFor returns the daemon's files for a run folder.
func PathsFor(runDir string) Paths {
	dir := filepath.Join(runDir, "browser")
	return Paths{
		Dir:    dir,
		Socket: filepath.Join(dir, "daemon.sock"),
		Lock:   filepath.Join(dir, "daemon.lock"),
		PID:    filepath.Join(dir, "daemon.pid"),
		Log:    filepath.Join(dir, "daemon.log"),
	}
}

// Idle reads GUILDS_BROWSER_IDLE (a Go duration such as 30s), falling back to DefaultIdle.
func Idle() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("GUILDS_BROWSER_IDLE")); err == nil && d > 0 {
		return d
	}
	return DefaultIdle
}

// Serve listens on the socket and runs calls one at a time until ctx ends or no call came for idle.
func Serve(ctx context.Context, p Paths, idle time.Duration, h Handler, logw io.Writer) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return fmt.Errorf("create daemon folder: %w", err)
	}
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", p.Socket, err)
	}
	defer ln.Close()
	if err := os.WriteFile(p.PID, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	defer removeIfOurs(p.PID)
	fmt.Fprintf(logw, "%s daemon %d listening on %s (exits after %s without a call)\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), p.Socket, idle)
	defer func() {
		fmt.Fprintf(logw, "%s daemon %d exiting\n", time.Now().UTC().Format(time.RFC3339), os.Getpid())
	}()

	conns := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
		}
	}()
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
			return nil
		case c, ok := <-conns:
			if !ok {
				return errors.New("socket closed")
			}
			serveConn(ctx, c, h)
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(idle)
		}
	}
}

func removeIfOurs(pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		os.Remove(pidFile)
	}
}

func serveConn(ctx context.Context, c net.Conn, h Handler) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return
	}
	var call Call
	var reply envelope.Reply
	if err := json.Unmarshal(line, &call); err != nil {
		reply = envelope.Errorf(nil, "daemon: bad call: %v", err)
	} else {
		cctx, cancel := context.WithTimeout(ctx, CallTimeout)
		reply = h(cctx, call)
		cancel()
	}
	if reply.Meta == nil {
		reply.Meta = map[string]any{}
	}
	b, err := json.Marshal(reply)
	if err != nil {
		b, _ = json.Marshal(envelope.Errorf(nil, "daemon: encode reply: %v", err))
	}
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	c.Write(append(b, '\n'))
}
