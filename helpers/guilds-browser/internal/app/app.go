// Package app decodes a guilds-browser invocation and hands it to the warm per-sandbox daemon,
// or, in the hidden --daemon mode, is that daemon.
package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/guildsai/guilds/helpers/guilds-browser/internal/browse"
	"github.com/guildsai/guilds/helpers/guilds-browser/internal/daemon"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/places"
	"github.com/guildsai/guilds/shared/shape"
)

// Main runs one invocation and returns the exit status: 0 whenever an envelope was written.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if len(args) == 1 {
		switch args[0] {
		case "-h", "--help":
			fmt.Fprintln(stdout, "usage: guilds-browser <base64 request JSON> | --request-file <path>")
			return 0
		case "--daemon":
			return serve(ctx, stderr)
		}
	}
	req, err := envelope.ParseInvocation(args, places.RunDir())
	if err != nil {
		return write(stdout, stderr, envelope.Errorf(nil, "%v", err))
	}
	if err := browse.Check(req.Tool, req.Args); err != nil {
		return write(stdout, stderr, envelope.Errorf(nil, "%v", err))
	}
	call := daemon.Call{Req: req, Home: places.Home(), Max: places.ResultMax(), CDPURL: places.CDPURL()}
	reply, err := daemon.Do(ctx, daemon.PathsFor(places.RunDir()), self(), call)
	if err != nil {
		reply = envelope.Errorf(nil, "%s: %v", req.Tool, err)
	}
	reply.Text = capText(reply.Text, call.Max)
	reply.Error = capText(reply.Error, call.Max)
	return write(stdout, stderr, reply)
}

// serve is the daemon: one Playwright session, serving calls until the quiet period passes.
func serve(ctx context.Context, stderr io.Writer) int {
	p := daemon.PathsFor(places.RunDir())
	logf := os.Stderr // the starter points it at the daemon log

	s := browse.New(self(), p.Dir, logf)
	defer s.Close()
	if err := daemon.Serve(ctx, p, daemon.Idle(), s.Handle, logf); err != nil {
		fmt.Fprintf(stderr, "guilds-browser daemon: %v\n", err)
		return 1
	}
	return 0
}

// self is this binary's path, keeping the name it was invoked by (a link's name selects the
// command in test harnesses), so the daemon and the driver lookup see the same binary.
func self() string {
	arg0 := os.Args[0]
	if strings.Contains(arg0, "/") {
		if abs, err := filepath.Abs(arg0); err == nil {
			return abs
		}
	}
	if p, err := exec.LookPath(arg0); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	exe, _ := os.Executable()
	return exe
}

// capText is the last guard on the helper's byte cap; tools shape their own text to fit first.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const note = "\n… [result cut at the helper's byte cap]"
	return shape.Prefix(s, max-len(note)) + note
}

func write(stdout, stderr io.Writer, r envelope.Reply) int {
	if _, err := fmt.Fprintln(stdout, envelope.EncodeReply(r)); err != nil {
		fmt.Fprintf(stderr, "guilds-browser: write envelope: %v\n", err)
		return 1
	}
	return 0
}
