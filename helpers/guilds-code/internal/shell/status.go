package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/proc"
	"github.com/guildsai/guilds/shared/shape"
	"github.com/guildsai/guilds/shared/toolspec"
)

// StatusLines is how many of a background command's last log lines shell_status shows.
const StatusLines = toolspec.ShellStatusLines

// status is what is known of one background command.
type status struct {
	job
	State    string // running, exited N, stopped, starting
	ExitCode *int
	pid      pidRecord
}

// Status runs the shell_status tool.
func Status(ctx context.Context, c *runs.Call) envelope.Reply {
	var a toolspec.ShellStatusArgs
	if err := c.DecodeArgs(&a); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	stop := a.Stop != nil && *a.Stop
	if a.ID == nil || *a.ID == "" {
		if stop {
			return envelope.Errorf(nil, "argument stop needs an id: pass {\"id\":\"b1\",\"stop\":true}; shell_status without arguments lists the background commands")
		}
		return list(c)
	}
	id := *a.ID
	if _, ok := parseID(id); !ok {
		return envelope.Errorf(nil, "argument id %q is not a background command id; ids look like b1, b2, … (shell_status without arguments lists them)", id)
	}
	st, err := load(c.RunDir, id)
	if errors.Is(err, fs.ErrNotExist) {
		return envelope.Errorf(nil, "argument id: there is no background command %s; %s", id, known(c.RunDir))
	}
	if err != nil {
		return envelope.Errorf(nil, "shell_status: %v", err)
	}
	var note string
	if stop {
		if st.State == "running" || st.State == "starting" {
			if st, err = stopJob(ctx, c.RunDir, st); err != nil {
				return envelope.Errorf(nil, "shell_status: stop %s: %v", id, err)
			}
		} else {
			note = fmt.Sprintf("%s was not running; nothing to stop.\n", id)
		}
	}
	return describe(c, st, note)
}

// list answers shell_status without an id.
func list(c *runs.Call) envelope.Reply {
	ids, err := jobIDs(c.RunDir)
	if err != nil {
		return envelope.Errorf(nil, "shell_status: %v", err)
	}
	if len(ids) == 0 {
		return envelope.Reply{Text: "no background commands; start one with shell and \"background\": true", Meta: map[string]any{}}
	}
	var lines []string
	for _, n := range ids {
		st, err := load(c.RunDir, "b"+strconv.Itoa(n))
		if err != nil {
			lines = append(lines, fmt.Sprintf("b%d  unreadable: %v", n, err))
			continue
		}
		lines = append(lines, fmt.Sprintf("%-4s %-10s %s  (log: %s)", st.ID, st.State, oneLine(st.Command, 120), st.LogPath))
	}
	text, _ := shape.FitLines("", lines, c.Max, func(n int) string {
		return fmt.Sprintf("… %d more; ask for one by id", n)
	})
	return envelope.Reply{Text: strings.TrimSuffix(text, "\n"), Meta: map[string]any{}}
}

// describe answers shell_status with an id: state, exit code and the last lines of the log.
func describe(c *runs.Call, st status, note string) envelope.Reply {
	meta := map[string]any{"background_id": st.ID, "state": st.State}
	if st.ExitCode != nil {
		meta["exit_code"] = *st.ExitCode
	}
	state := st.State
	if st.State == "stopped" && st.ExitCode != nil {
		state += fmt.Sprintf(" (exit code %d)", *st.ExitCode)
	}
	header := fmt.Sprintf("%s%s %s: %s\nlog: %s\n", note, st.ID, state, oneLine(st.Command, 200), st.LogPath)
	lines, err := lastLines(st.LogPath, StatusLines)
	if err != nil {
		return envelope.Reply{Text: header + fmt.Sprintf("(log unreadable: %v)", err), Meta: meta}
	}
	if lines == "" {
		return envelope.Reply{Text: header + "(no output yet)", Meta: meta}
	}
	header += fmt.Sprintf("--- last %d lines ---\n", StatusLines)
	body, _ := shape.CommandResult(lines, c.Max-len(header), st.LogPath, "")
	return envelope.Reply{Text: header + body, Meta: meta}
}

// lastLines returns the last n lines of the (rendered) log at path.
func lastLines(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	const window = 256 << 10
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}
	off := max(size-window, 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if off > 0 {
		// Drop the partial first line of the window.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	text := strings.TrimSuffix(shape.Terminal(buf), "\n")
	if text == "" {
		return "", nil
	}
	all := strings.Split(text, "\n")
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n"), nil
}

// load reads a background command's records and works out its state.
func load(runDir, id string) (status, error) {
	b, err := os.ReadFile(jobPath(runDir, id, ".json"))
	if err != nil {
		return status{}, err
	}
	var st status
	if err := json.Unmarshal(b, &st.job); err != nil {
		return status{}, fmt.Errorf("read %s: %w", id, err)
	}
	if b, err := os.ReadFile(jobPath(runDir, id, ".exit")); err == nil {
		var rec exitRecord
		if err := json.Unmarshal(b, &rec); err == nil {
			st.ExitCode = rec.ExitCode
			switch {
			case rec.Stopped:
				st.State = "stopped"
			case rec.ExitCode != nil:
				st.State = "exited " + strconv.Itoa(*rec.ExitCode)
			}
			if st.State != "" {
				return st, nil
			}
		}
	}
	b, err = os.ReadFile(jobPath(runDir, id, ".pid"))
	if err != nil {
		if time.Since(st.StartedAt) < startWait {
			st.State = "starting"
		} else {
			st.State = "stopped" // its supervisor never reported; nothing runs
		}
		return st, nil
	}
	if err := json.Unmarshal(b, &st.pid); err != nil {
		return status{}, fmt.Errorf("read %s: %w", id, err)
	}
	if supervisorAlive(st.pid) {
		st.State = "running"
	} else {
		// Its supervisor is gone without recording an exit (killed from outside).
		st.State = "stopped"
	}
	return st, nil
}

// stopJob ends a running background command: its supervisor stops the whole process group
// (SIGTERM, then SIGKILL after 2 s) and records the exit. Without a live supervisor the group
// is stopped from here.
func stopJob(ctx context.Context, runDir string, st status) (status, error) {
	if st.State == "starting" {
		// Wait for the supervisor to record the group it runs.
		for i := 0; i < 100 && st.State == "starting"; i++ {
			time.Sleep(50 * time.Millisecond)
			next, err := load(runDir, st.ID)
			if err != nil {
				return st, err
			}
			st = next
		}
	}
	if st.State != "running" && st.State != "starting" {
		return st, nil
	}
	if supervisorAlive(st.pid) {
		if err := unix.Kill(st.pid.Supervisor, unix.SIGTERM); err != nil && !errors.Is(err, unix.ESRCH) {
			return st, fmt.Errorf("signal supervisor: %w", err)
		}
		deadline := time.Now().Add(proc.DefaultGrace + 3*time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(jobPath(runDir, st.ID, ".exit")); err == nil {
				return load(runDir, st.ID)
			}
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// No supervisor (or it did not finish): stop the group directly and record it.
	if g := st.pid.Group; g > 0 {
		_ = unix.Kill(-g, unix.SIGTERM)
		deadline := time.Now().Add(proc.DefaultGrace)
		for time.Now().Before(deadline) && unix.Kill(-g, 0) == nil {
			time.Sleep(20 * time.Millisecond)
		}
		_ = unix.Kill(-g, unix.SIGKILL)
	}
	if err := writeExit(runDir, st.ID, exitRecord{Stopped: true, EndedAt: time.Now().UTC()}); err != nil {
		return st, err
	}
	return load(runDir, st.ID)
}

// known names the background ids that exist, for an unknown-id error.
func known(runDir string) string {
	ids, _ := jobIDs(runDir)
	switch len(ids) {
	case 0:
		return "none have been started"
	case 1:
		return fmt.Sprintf("only b%d exists", ids[0])
	default:
		return fmt.Sprintf("b%d to b%d exist (shell_status without arguments lists them)", ids[0], ids[len(ids)-1])
	}
}
