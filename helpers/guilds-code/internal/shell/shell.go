// Package shell runs the shell and shell_status tools: commands under a pseudo-terminal with
// shaped output, working-directory tracking, and background commands that outlive the helper.
package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/atomicfile"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/proc"
	"github.com/guildsai/guilds/shared/shape"
	"github.com/guildsai/guilds/shared/toolspec"
)

// Timeout bounds of the shell tool, in seconds (toolspec holds them).
const (
	DefaultTimeout = toolspec.ShellDefaultTimeout
	MaxTimeout     = toolspec.ShellMaxTimeout
)

// Variables the helper uses to talk to the shell it starts; they are not passed on further.
const (
	cwdFileEnv  = "GUILDS_CWD_FILE"
	userBashEnv = "GUILDS_USER_BASH_ENV"
)

// request is a validated shell call.
type request struct {
	command    string
	timeout    time.Duration
	explicit   bool // timeout_seconds was given
	background bool
}

func parseShellArgs(c *runs.Call) (request, error) {
	var a toolspec.ShellArgs
	if err := c.DecodeArgs(&a); err != nil {
		return request{}, err
	}
	if a.Command == nil {
		return request{}, errors.New("missing argument command: pass the bash command to run, e.g. {\"command\":\"ls -la\"}")
	}
	if strings.TrimSpace(*a.Command) == "" {
		return request{}, errors.New("argument command is empty: pass the bash command to run")
	}
	if strings.ContainsRune(*a.Command, 0) {
		return request{}, errors.New("argument command contains a NUL byte, which bash cannot run")
	}
	r := request{command: *a.Command, timeout: DefaultTimeout * time.Second}
	if a.TimeoutSeconds != nil {
		n := *a.TimeoutSeconds
		if n < 1 || n > MaxTimeout {
			return request{}, fmt.Errorf("argument timeout_seconds is %d; it must be between 1 and %d (omit it for the default %d)", n, MaxTimeout, DefaultTimeout)
		}
		r.timeout, r.explicit = time.Duration(n)*time.Second, true
	}
	if a.Background != nil {
		r.background = *a.Background
	}
	return r, nil
}

// Shell runs the shell tool.
func Shell(ctx context.Context, c *runs.Call) envelope.Reply {
	r, err := parseShellArgs(c)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	if err := c.Open(); err != nil {
		return envelope.Errorf(nil, "shell: %v", err)
	}
	dir, note := startDir(c)
	if r.background {
		return startBackground(ctx, c, r, dir, note)
	}
	return runForeground(ctx, c, r, dir, note)
}

// startDir is where the command starts: the run's working directory, with a note when the
// stored one no longer exists and the command starts in the workspace instead.
func startDir(c *runs.Call) (string, string) {
	dir := c.Cwd()
	b, err := os.ReadFile(filepath.Join(c.Dir(), "cwd"))
	if stored := strings.TrimSuffix(string(b), "\n"); err == nil && stored != "" && stored != dir {
		// Record the fallback, so the note is given once.
		_ = c.SetCwd(dir)
		return dir, fmt.Sprintf("[the working directory %s no longer exists; this command ran in %s]", stored, dir)
	}
	return dir, ""
}

func runForeground(ctx context.Context, c *runs.Call, r request, dir, note string) envelope.Reply {
	bashEnv, err := bashEnvFile(c.RunDir)
	if err != nil {
		// GUILDS_RUN_DIR is not writable here: keep the script in the run folder instead.
		if bashEnv, err = bashEnvFile(c.Dir()); err != nil {
			return envelope.Errorf(nil, "shell: %v", err)
		}
	}
	cwdFile := filepath.Join(c.Dir(), "."+c.Req.CallID+".cwd")
	defer os.Remove(cwdFile)
	logPath := c.LogPath()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return envelope.Errorf(nil, "shell: create log: %v", err)
	}
	out := shape.NewOutput(c.Max)
	logBound := newBoundedLog(logFile, LogHalf)
	logBuf := bufio.NewWriterSize(logBound, 8<<10) // small: each page touched costs a fault
	render := shape.NewRenderer(io.MultiWriter(&flushing{w: logBuf, every: logFlushEvery}, out))
	extra := map[string]string{"BASH_ENV": bashEnv, cwdFileEnv: cwdFile}
	if tok := repoToken(c.RunDir, dir); tok != "" {
		extra["GH_TOKEN"] = tok // for gh, the token of the repository holding the working directory
	}
	env := commandEnv(c, extra)
	res, err := proc.Run(ctx, proc.Cmd{
		Args:    []string{"bash", "-c", r.command},
		Dir:     dir,
		Env:     env,
		Output:  render,
		Timeout: r.timeout,
	})
	rerr := render.Close()
	if ferr := logBuf.Flush(); rerr == nil {
		rerr = ferr
	}
	if berr := logBound.Close(); rerr == nil {
		rerr = berr
	}
	if cerr := logFile.Close(); rerr == nil {
		rerr = cerr
	}
	if err != nil {
		return envelope.Errorf(nil, "shell: %v", err)
	}

	end, cwdNote := endDir(c, dir, cwdFile)
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	if rerr != nil {
		notes = append(notes, fmt.Sprintf("[the full log %s is incomplete: %v]", logPath, rerr))
	}
	if cwdNote != "" {
		notes = append(notes, cwdNote)
	}
	switch {
	case res.TimedOut:
		notes = append(notes, fmt.Sprintf("[timed out after %s: the command's process group got SIGTERM, then SIGKILL 2 s later if still running; pass a larger timeout_seconds (at most %d) or background: true]", seconds(r.timeout), MaxTimeout))
	case res.Canceled:
		notes = append(notes, "[interrupted: the helper was told to stop, so the command's processes were stopped]")
	case res.Leftover > 0:
		notes = append(notes, fmt.Sprintf("[stopped %s the command left running; start long-running commands with background: true]", plural(res.Leftover, "process", "processes")))
	}
	trailer := shape.Trailer(append(notes, shape.ExitTrailer(res.ExitCode))...)
	text, elided := out.Shape(c.Max, logPath, trailer)
	if out.Len() == 0 && res.ExitCode == 0 && trailer == "" {
		text = "(no output)"
	}
	meta := map[string]any{"exit_code": res.ExitCode, "cwd": end, "timed_out": res.TimedOut}
	if elided {
		meta["log_path"] = logPath
	}
	return envelope.Reply{Text: text, Meta: meta}
}

// endDir reads where the command ended up and records it as the run's working directory when
// it changed. It returns the working directory for the next command and a note when the one the
// command ended in was deleted.
func endDir(c *runs.Call, start, cwdFile string) (string, string) {
	b, err := os.ReadFile(cwdFile)
	end := string(b)
	if err != nil || end == "" || !filepath.IsAbs(end) {
		return start, "" // the shell was replaced (exec) or killed: nothing to record
	}
	end = filepath.Clean(end)
	if fi, err := os.Stat(end); err != nil || !fi.IsDir() {
		_ = c.SetCwd(c.Home)
		return c.Home, fmt.Sprintf("[the command ended in %s, which no longer exists; the next command starts in %s]", end, c.Home)
	}
	if end != start {
		if err := c.SetCwd(end); err != nil {
			return start, fmt.Sprintf("[could not record the working directory %s: %v]", end, err)
		}
	}
	return end, ""
}

// specEnv is the environment the spec gives every command, over the helper's own.
var specEnv = [][2]string{
	{"PAGER", "cat"},
	{"GIT_PAGER", "cat"},
	{"GIT_TERMINAL_PROMPT", "0"},
	{"NO_COLOR", "1"},
	{"TERM", "dumb"},
	{"DEBIAN_FRONTEND", "noninteractive"},
}

// commandEnv is the helper's environment with the spec's variables, GUILD_RUN_ID, and extra;
// GUILD_AGENT_ID passes through from the helper's own environment. The helper's internal
// variables are left out.
func commandEnv(c *runs.Call, extra map[string]string) []string {
	set := map[string]string{"GUILD_RUN_ID": c.Req.RunID}
	for _, kv := range specEnv {
		set[kv[0]] = kv[1]
	}
	for k, v := range extra {
		set[k] = v
	}
	env := make([]string, 0, len(os.Environ())+len(set)+1)
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if _, over := set[k]; over || k == proc.TokenEnv || k == cwdFileEnv || k == userBashEnv {
			if k == "BASH_ENV" && v != "" && extra["BASH_ENV"] != "" {
				env = append(env, userBashEnv+"="+v)
			}
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// bashEnvScript is sourced by the non-interactive bash (BASH_ENV) before the command: it stops
// the variable from reaching nested shells, sources a BASH_ENV the helper itself was given, and
// records the final working directory on exit.
const bashEnvScript = `# guilds-code: sourced by bash before each shell command (BASH_ENV).
__guilds_cwd_file=$GUILDS_CWD_FILE
unset GUILDS_CWD_FILE BASH_ENV
if [ -n "$GUILDS_USER_BASH_ENV" ]; then
  BASH_ENV=$GUILDS_USER_BASH_ENV; export BASH_ENV; unset GUILDS_USER_BASH_ENV
  . "$BASH_ENV"
fi
if [ -n "$__guilds_cwd_file" ]; then
  trap 'builtin printf "%s" "$PWD" > "$__guilds_cwd_file" 2>/dev/null' EXIT
fi
`

// bashEnvFile makes sure the BASH_ENV script exists under the run directory and returns its path.
func bashEnvFile(runDir string) (string, error) {
	path := filepath.Join(runDir, "shell", "bash-env.sh")
	if b, err := os.ReadFile(path); err == nil && string(b) == bashEnvScript {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := atomicfile.WriteFile(path, []byte(bashEnvScript), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

func seconds(d time.Duration) string { return fmt.Sprintf("%d s", int(d/time.Second)) }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// logFlushEvery bounds how long a line the command printed waits in the log's buffer, once more
// output follows it: the orchestrator reads the log's end while the command runs (a long call's
// progress shows its latest line).
const logFlushEvery = 250 * time.Millisecond

// flushing writes to a buffered writer and flushes it when its last flush is older than every.
type flushing struct {
	w     *bufio.Writer
	every time.Duration
	last  time.Time
}

func (f *flushing) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil && time.Since(f.last) >= f.every {
		err = f.w.Flush()
		f.last = time.Now()
	}
	return n, err
}
