// Package runner is a sandbox helper's command line (PROTOCOL.md): it reads the invocation, runs
// the named tool under the places and limits of the environment, caps its text and writes the
// envelope; or it runs one of the helper's other modes, named by the first argument.
package runner

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/places"
	"github.com/guildsai/guilds/shared/shape"
)

// Call is one tool call with the places and the cap it runs under.
type Call struct {
	Req    envelope.Request
	Home   string // GUILDS_HOME, absolute and cleaned
	RunDir string // GUILDS_RUN_DIR, absolute and cleaned
	Max    int    // CODE_RESULT_MAX_BYTES: the cap on the reply's text in bytes
}

// Handler runs one call and returns its reply; a tool's failure is a reply, not a Go error.
type Handler func(ctx context.Context, c Call) envelope.Reply

// Tool is how a helper runs one of its tools.
type Tool struct {
	Run Handler
	// Quiet marks a tool that starts no child process: it runs without signal handling, which
	// costs a thread on the hot path, so SIGTERM ends it at once (its writes must be atomic).
	// Any other tool's context ends on SIGTERM or SIGINT, so it stops its children and answers.
	Quiet bool
	// Serial marks a tool whose work needs one thread: it runs with GOMAXPROCS 1, which spares
	// the runtime the threads (and page faults) of a second processor.
	Serial bool
}

// Mode is a way the helper runs instead of a tool call, chosen by its first argument.
type Mode struct {
	Args int                                               // how many arguments follow the mode's own
	Run  func(args []string, stdout, stderr io.Writer) int // gets those arguments; returns the exit status
}

// Helper is one helper binary: its name, its tools and its modes.
type Helper struct {
	Name  string          // the binary's name, e.g. guilds-code
	Tools map[string]Tool // by the tool name the model sees
	Modes map[string]Mode // by the argument that selects the mode, e.g. --daemon
}

// Main runs one invocation and returns the exit status: for a tool call, 0 whenever an envelope
// was written, a failed tool included.
func (h Helper) Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(stdout, "usage: %s <base64 request JSON> | --request-file <path>\n", h.Name)
		return 0
	}
	if len(args) > 0 {
		if m, ok := h.Modes[args[0]]; ok && len(args) == 1+m.Args {
			return m.Run(args[1:], stdout, stderr)
		}
	}
	req, err := envelope.ParseInvocation(args, places.RunDir())
	if err != nil {
		return h.write(stdout, stderr, envelope.Errorf(nil, "%v", err))
	}
	t, ok := h.Tools[req.Tool]
	if !ok {
		return h.write(stdout, stderr, envelope.Errorf(nil, "unknown tool %q; %s runs %s", req.Tool, h.Name, strings.Join(h.Names(), ", ")))
	}
	if t.Serial {
		runtime.GOMAXPROCS(1)
	}
	ctx := context.Background()
	if !t.Quiet {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
	}
	c := Call{Req: req, Home: places.Home(), RunDir: places.RunDir(), Max: places.ResultMax()}
	return h.write(stdout, stderr, Run(ctx, t.Run, c))
}

// Run runs one call's handler, turning a panic into a tool error, and caps the reply's text and
// error at c.Max.
func Run(ctx context.Context, run Handler, c Call) (reply envelope.Reply) {
	defer func() {
		if p := recover(); p != nil {
			reply = envelope.Errorf(nil, "%s failed unexpectedly: %v", c.Req.Tool, p)
		}
		if reply.Meta == nil {
			reply.Meta = map[string]any{}
		}
		reply.Text = Cap(reply.Text, c.Max)
		reply.Error = Cap(reply.Error, c.Max)
	}()
	return run(ctx, c)
}

// Names lists the helper's tools, sorted.
func (h Helper) Names() []string {
	names := make([]string, 0, len(h.Tools))
	for n := range h.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Cap is the last guard on the helper's byte cap; tools shape their own text to fit first.
func Cap(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const note = "\n… [result cut at the helper's byte cap]"
	return shape.Prefix(s, max-len(note)) + note
}

// write prints the envelope; only a failure to print it makes the exit status non-zero.
func (h Helper) write(stdout, stderr io.Writer, r envelope.Reply) int {
	if _, err := fmt.Fprintln(stdout, envelope.EncodeReply(r)); err != nil {
		fmt.Fprintf(stderr, "%s: write envelope: %v\n", h.Name, err)
		return 1
	}
	return 0
}
