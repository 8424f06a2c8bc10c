// Package app is guilds-code's table of tools and modes, which the shared runner runs.
package app

import (
	"context"
	"io"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/files"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graphtools"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/shell"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/runner"
)

// Handler runs one tool call and returns its reply; tool failures are replies, not Go errors.
type Handler func(ctx context.Context, c *runs.Call) envelope.Reply

// helper is guilds-code: the eleven code tools (toolspec.Code) and the shell's supervisor mode.
// The file tools start no child process (Quiet: their writes are atomic, so SIGTERM may end them
// at once); the file and shell tools' work needs one thread (Serial: a whole call is ~10% faster).
var helper = runner.Helper{
	Name: "guilds-code",
	Tools: map[string]runner.Tool{
		"shell":        {Run: tool(shell.Shell), Serial: true},
		"shell_status": {Run: tool(shell.Status), Serial: true},
		"file_read":    {Run: tool(files.Read), Quiet: true, Serial: true},
		"file_edit":    {Run: tool(files.Edit), Quiet: true, Serial: true},
		"file_write":   {Run: tool(files.Write), Quiet: true, Serial: true},
		"code_search":  {Run: tool(codeSearch)},
		"code_match":   {Run: tool(codeMatch)},
		"code_map":     {Run: tool(graphtools.Map)},
		"code_find":    {Run: tool(graphtools.Find)},
		"code_outline": {Run: tool(graphtools.Outline)},
		"code_callers": {Run: tool(graphtools.Callers)},
	},
	Modes: map[string]runner.Mode{
		// A background command's supervisor, as the shell tool starts it.
		shell.SuperviseArg: {Args: 1, Run: func(args []string, _, _ io.Writer) int { return shell.Supervise(args[0]) }},
	},
}

// Main runs one invocation and returns the exit status: 0 whenever an envelope was written.
// `guilds-code --supervise <state file>` runs a background command's supervisor instead.
func Main(args []string, stdout, stderr io.Writer) int { return helper.Main(args, stdout, stderr) }

// tool adapts a handler over the workspace's call to the runner.
func tool(h Handler) runner.Handler {
	return func(ctx context.Context, c runner.Call) envelope.Reply {
		return h(ctx, &runs.Call{Req: c.Req, Home: c.Home, RunDir: c.RunDir, Max: c.Max})
	}
}
