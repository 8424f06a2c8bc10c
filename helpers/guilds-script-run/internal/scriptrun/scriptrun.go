// Package scriptrun is guilds-script-run: it runs $GUILDS_HOME/scripts/<name>.py with python3 in
// $GUILDS_HOME, writes the call's arguments object to its standard input as JSON ({} without one),
// stops it (and everything it started) after 120 seconds with exit_code 124, and shapes its
// output like shell: the whole output when it fits, else its head and tail around a line naming the
// full log under .runs/<run id>/<call id>.log.
package scriptrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/proc"
	"github.com/guildsai/guilds/shared/runner"
	"github.com/guildsai/guilds/shared/shape"
)

// Timeout is how long a script may run.
const Timeout = 120 * time.Second

// TimeoutEnv overrides Timeout in seconds (tests use it; the orchestrator does not set it).
const TimeoutEnv = "GUILDS_SCRIPT_TIMEOUT_SECONDS"

// namePattern is what a script name must match (manifest is reserved).
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// args is the script_run request's arguments.
type args struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// helper is guilds-script-run's command line: its one tool, script_run, ends on SIGTERM or
// SIGINT by stopping the script and answering.
var helper = runner.Helper{
	Name: "guilds-script-run",
	Tools: map[string]runner.Tool{
		"script_run": {Run: func(ctx context.Context, c runner.Call) envelope.Reply { return Run(ctx, c.Req, c.Home, c.Max) }},
	},
}

// Main runs one request and returns the exit status: 0 whenever an envelope was written, a bad
// invocation's error included (PROTOCOL.md).
func Main(argv []string, stdout, stderr io.Writer) int { return helper.Main(argv, stdout, stderr) }

// Run carries one request with the workspace at home and results capped at max bytes.
func Run(ctx context.Context, req envelope.Request, home string, max int) envelope.Reply {
	var a args
	if len(req.Args) > 0 {
		if err := json.Unmarshal(req.Args, &a); err != nil {
			return envelope.Errorf(nil, "script_run arguments: %v", err)
		}
	}
	if !namePattern.MatchString(a.Name) || a.Name == "manifest" {
		return envelope.Errorf(nil, "script name %q must match %s (and is not manifest)", a.Name, namePattern)
	}
	input := []byte("{}")
	if n := bytes.TrimSpace(a.Arguments); len(n) > 0 && string(n) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(n, &obj); err != nil {
			return envelope.Errorf(nil, "arguments must be a JSON object; it reaches the script's standard input as JSON")
		}
		input = n
	}
	script := filepath.Join(home, "scripts", a.Name+".py")
	if fi, err := os.Lstat(script); err != nil || !fi.Mode().IsRegular() {
		return envelope.Errorf(nil, "script %s is not in the workspace (%s); create it with script_create", a.Name, script)
	}
	timeout := Timeout
	if s, err := strconv.Atoi(os.Getenv(TimeoutEnv)); err == nil && s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	logDir := filepath.Join(home, ".runs", req.RunID)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return envelope.Errorf(nil, "script_run: create the run folder: %v", err)
	}
	logPath := filepath.Join(logDir, req.CallID+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return envelope.Errorf(nil, "script_run: create log: %v", err)
	}
	out := shape.NewOutput(max)
	logBuf := bufio.NewWriterSize(logFile, 64<<10)
	render := shape.NewRenderer(io.MultiWriter(logBuf, out))
	check := &utf8Check{}
	res, err := proc.Run(ctx, proc.Cmd{
		Args:    []string{"python3", script},
		Dir:     home,
		Env:     append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONIOENCODING=utf-8"),
		Stdin:   bytes.NewReader(input),
		Output:  io.MultiWriter(check, render),
		Timeout: timeout,
	})
	rerr := render.Close()
	if ferr := logBuf.Flush(); rerr == nil {
		rerr = ferr
	}
	if cerr := logFile.Close(); rerr == nil {
		rerr = cerr
	}
	if err != nil {
		return envelope.Errorf(nil, "script_run: %v", err)
	}
	var notes []string
	if rerr != nil {
		notes = append(notes, fmt.Sprintf("[the full log %s is incomplete: %v]", logPath, rerr))
	}
	if check.invalid() {
		notes = append(notes, "[the script's output was not valid UTF-8; invalid bytes are shown as \uFFFD: print text, or encode binary data (base64)]")
	}
	switch {
	case res.TimedOut:
		notes = append(notes, fmt.Sprintf("[timed out after %s: the script and everything it started were stopped]", timeout))
	case res.Canceled:
		notes = append(notes, "[interrupted: the helper was told to stop, so the script was stopped]")
	case res.Leftover > 0:
		notes = append(notes, fmt.Sprintf("[stopped %d process(es) the script left running]", res.Leftover))
	}
	trailer := shape.Trailer(append(notes, shape.ExitTrailer(res.ExitCode))...)
	text, elided := out.Shape(max, logPath, trailer)
	if out.Len() == 0 && res.ExitCode == 0 && trailer == "" {
		text = "(no output)"
	}
	meta := map[string]any{"exit_code": res.ExitCode, "timed_out": res.TimedOut, "script": a.Name}
	if elided {
		meta["log_path"] = logPath
	}
	return envelope.Reply{Text: text, Meta: meta}
}

// utf8Check notes whether a byte stream, read in pieces, holds invalid UTF-8.
type utf8Check struct {
	carry []byte
	bad   bool
}

func (u *utf8Check) Write(p []byte) (int, error) {
	if u.bad {
		return len(p), nil
	}
	b := append(u.carry, p...)
	u.carry = nil
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(b) && len(b) < utf8.UTFMax {
				u.carry = append([]byte(nil), b...) // an incomplete character at the end: wait for more
				break
			}
			u.bad = true
			break
		}
		b = b[size:]
	}
	return len(p), nil
}

func (u *utf8Check) invalid() bool { return u.bad || len(u.carry) > 0 }
