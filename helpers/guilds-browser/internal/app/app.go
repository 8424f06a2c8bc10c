// Package app is guilds-browser's table of tools and modes, which the shared runner runs: each
// call goes to the warm per-sandbox daemon, and the --daemon mode is that daemon.
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
	"github.com/guildsai/guilds/shared/runner"
)

// helper is guilds-browser: the eight browser tools (toolspec.Browser), each handed to the warm
// daemon, and the daemon itself.
var helper = runner.Helper{
	Name: "guilds-browser",
	Tools: map[string]runner.Tool{
		"browser_navigate":   {Run: call},
		"browser_snapshot":   {Run: call},
		"browser_click":      {Run: call},
		"browser_type":       {Run: call},
		"browser_fill":       {Run: call},
		"browser_scroll":     {Run: call},
		"browser_screenshot": {Run: call},
		"browser_eval":       {Run: call},
	},
	Modes: map[string]runner.Mode{
		// The warm per-sandbox daemon, as the first call starts it.
		"--daemon": {Run: func(_ []string, _, stderr io.Writer) int { return serve(stderr) }},
	},
}

// Main runs one invocation and returns the exit status: 0 whenever an envelope was written.
// `guilds-browser --daemon` is the daemon instead.
func Main(args []string, stdout, stderr io.Writer) int { return helper.Main(args, stdout, stderr) }

// call checks the call's arguments, then hands it to the daemon, starting the daemon if none runs.
func call(ctx context.Context, c runner.Call) envelope.Reply {
	if err := browse.Check(c.Req.Tool, c.Req.Args); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	dc := daemon.Call{Req: c.Req, Home: c.Home, Max: c.Max, CDPURL: places.CDPURL()}
	reply, err := daemon.Do(ctx, daemon.PathsFor(c.RunDir), self(), dc)
	if err != nil {
		return envelope.Errorf(nil, "%s: %v", c.Req.Tool, err)
	}
	return reply
}

// serve is the daemon: one Playwright session, serving calls until the quiet period passes or
// SIGTERM or SIGINT comes.
func serve(stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
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
