// Package app decodes a guilds-code invocation, runs the named tool and writes the envelope.
package app

import (
	"context"
	"fmt"
	"io"

	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/places"
	"github.com/guildsai/guilds/shared/shape"
)

// Handler runs one tool call and returns its reply; tool failures are replies, not Go errors.
type Handler func(ctx context.Context, c *runs.Call) envelope.Reply

// tools maps each tool name the model sees to its handler.
var tools = map[string]Handler{}

// quiet names the tools that start no child process. They run without signal handling: it costs
// a thread on the hot path, and SIGTERM may end them at once, since their writes are atomic.
var quiet = map[string]bool{}

// serial names the tools whose work needs one thread: they run with GOMAXPROCS 1, which spares
// the runtime the threads (and page faults) of a second processor; a whole call is ~10% faster.
var serial = map[string]bool{}

// mark adds names to one of the sets above; tools_<pkg>.go files call it from init.
func mark(set map[string]bool, names ...string) {
	for _, n := range names {
		set[n] = true
	}
}

// register adds a package's tools; each internal/app/tools_<pkg>.go calls it from init.
func register(m map[string]Handler) {
	for name, h := range m {
		if _, dup := tools[name]; dup {
			panic("guilds-code: tool " + name + " registered twice")
		}
		tools[name] = h
	}
}

// Main runs one invocation and returns the exit status: 0 whenever an envelope was written.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "usage: guilds-code <base64 request JSON> | --request-file <path>")
		return 0
	}
	req, err := envelope.ParseInvocation(args, places.RunDir())
	if err != nil {
		return write(stdout, stderr, envelope.Errorf(nil, "%v", err))
	}
	if serial[req.Tool] {
		runtime.GOMAXPROCS(1)
	}
	ctx := context.Background()
	if !quiet[req.Tool] {
		// SIGTERM or SIGINT ends the call's context, so a tool stops its children and still answers.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
	}
	return write(stdout, stderr, Dispatch(ctx, runs.New(req)))
}

// Dispatch runs the call's tool, turning a panic into a tool error and capping the text.
func Dispatch(ctx context.Context, c *runs.Call) (reply envelope.Reply) {
	h, ok := tools[c.Req.Tool]
	if !ok {
		return envelope.Errorf(nil, "unknown tool %q; guilds-code runs %s", c.Req.Tool, strings.Join(Names(), ", "))
	}
	defer func() {
		if p := recover(); p != nil {
			reply = envelope.Errorf(nil, "%s failed unexpectedly: %v", c.Req.Tool, p)
		}
		if reply.Meta == nil {
			reply.Meta = map[string]any{}
		}
		reply.Text = capText(reply.Text, c.Max)
		reply.Error = capText(reply.Error, c.Max)
	}()
	return h(ctx, c)
}

// Names lists the tools this helper runs, sorted.
func Names() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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
		fmt.Fprintf(stderr, "guilds-code: write envelope: %v\n", err)
		return 1
	}
	return 0
}
