package shell

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/atomicfile"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/proc"
	"github.com/guildsai/guilds/shared/shape"
)

// SuperviseArg, followed by a background command's state file, makes guilds-code that command's
// supervisor (see Supervise): the shell tool starts it as `guilds-code --supervise <state file>`.
const SuperviseArg = "--supervise"

// startWait bounds how long the shell tool waits for a supervisor to report its command started.
const startWait = 10 * time.Second

// job is a background command's state file, <GUILDS_RUN_DIR>/shell/b<N>.json.
type job struct {
	ID        string    `json:"id"`
	Command   string    `json:"command"`
	Dir       string    `json:"cwd"`
	LogPath   string    `json:"log_path"`
	RunID     string    `json:"run_id"`
	CallID    string    `json:"call_id"`
	Timeout   int       `json:"timeout_seconds,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// pidRecord is b<N>.pid: the supervisor (with its start time, against pid reuse) and the
// command's process group.
type pidRecord struct {
	Supervisor int    `json:"supervisor"`
	StartTime  uint64 `json:"supervisor_start"`
	Group      int    `json:"group"`
}

// exitRecord is b<N>.exit, written when the command ended.
type exitRecord struct {
	ExitCode *int      `json:"exit_code"`
	Stopped  bool      `json:"stopped"`
	TimedOut bool      `json:"timed_out,omitempty"`
	Leftover int       `json:"leftover,omitempty"`
	EndedAt  time.Time `json:"ended_at"`
}

// parseID reads a background command id, b1, b2, …, into its number.
func parseID(s string) (int, bool) {
	digits, ok := strings.CutPrefix(s, "b")
	if !ok || digits == "" || len(digits) > 9 || digits[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// stateDir is where background commands are recorded for the life of the container.
func stateDir(runDir string) string { return filepath.Join(runDir, "shell") }

func jobPath(runDir, id, ext string) string { return filepath.Join(stateDir(runDir), id+ext) }

// allocate records a new background command under the next free id, b1, b2, …; an exclusive
// lock on the state folder keeps two helpers from taking the same number.
func allocate(runDir string, j job) (job, error) {
	dir := stateDir(runDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return j, fmt.Errorf("create %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return j, fmt.Errorf("open lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return j, fmt.Errorf("lock %s: %w", dir, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	ids, err := jobIDs(runDir)
	if err != nil {
		return j, err
	}
	n := 1
	if len(ids) > 0 {
		n = ids[len(ids)-1] + 1
	}
	j.ID = "b" + strconv.Itoa(n)
	b, _ := json.Marshal(j)
	if err := atomicfile.WriteFile(jobPath(runDir, j.ID, ".json"), b, 0o644); err != nil {
		return j, err
	}
	return j, nil
}

// jobIDs lists the recorded background command numbers, ascending.
func jobIDs(runDir string) ([]int, error) {
	entries, err := os.ReadDir(stateDir(runDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list background commands: %w", err)
	}
	var ids []int
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if n, ok := parseID(name); ok {
			ids = append(ids, n)
		}
	}
	sort.Ints(ids)
	return ids, nil
}

// startBackground records the command and starts its supervisor, a copy of this helper in its
// own session that runs the command, writes its log and records its exit code.
func startBackground(ctx context.Context, c *runs.Call, r request, dir, note string) envelope.Reply {
	j := job{Command: r.command, Dir: dir, LogPath: c.LogPath(), RunID: c.Req.RunID, CallID: c.Req.CallID, StartedAt: time.Now().UTC()}
	if r.explicit {
		j.Timeout = int(r.timeout / time.Second)
	}
	logFile, err := os.OpenFile(j.LogPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return envelope.Errorf(nil, "shell: create log: %v", err)
	}
	logFile.Close()
	j, err = allocate(c.RunDir, j)
	if err != nil {
		return envelope.Errorf(nil, "shell: background: %v", err)
	}
	if err := launch(ctx, c.RunDir, j); err != nil {
		_ = writeExit(c.RunDir, j.ID, exitRecord{Stopped: true, EndedAt: time.Now().UTC()})
		return envelope.Errorf(map[string]any{"background_id": j.ID}, "shell: start background command %s: %v", j.ID, err)
	}
	var b strings.Builder
	if note != "" {
		b.WriteString(note + "\n")
	}
	fmt.Fprintf(&b, "started %s in %s: %s\nlog: %s\n", j.ID, dir, oneLine(j.Command, 200), j.LogPath)
	fmt.Fprintf(&b, "shell_status {\"id\":%q} shows its state and last lines; add \"stop\":true to end it.", j.ID)
	return envelope.Reply{Text: b.String(), Meta: map[string]any{"background_id": j.ID, "state": "running", "cwd": dir, "log_path": j.LogPath}}
}

// launch starts the supervisor for j and waits until it reports the command running.
func launch(ctx context.Context, runDir string, j job) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this helper's executable: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	defer pr.Close()
	cmd := exec.Command(exe, SuperviseArg, jobPath(runDir, j.ID, ".json"))
	cmd.Dir = j.Dir
	cmd.ExtraFiles = []*os.File{pw} // fd 3: the readiness line
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("start supervisor: %w", err)
	}
	pw.Close()
	// The supervisor outlives this helper; it is not waited for.
	_ = cmd.Process.Release()
	_ = pr.SetReadDeadline(time.Now().Add(startWait))
	line, err := bufio.NewReader(pr).ReadString('\n')
	switch {
	case strings.HasPrefix(line, "ok"):
		return nil
	case strings.HasPrefix(line, "error: "):
		return errors.New(strings.TrimSpace(strings.TrimPrefix(line, "error: ")))
	default:
		return fmt.Errorf("the supervisor did not report the command started (%v)", err)
	}
}

// Supervise is guilds-code's supervisor mode (SuperviseArg): it runs the background command of
// the state file, reporting on fd 3 once it runs, records its exit and returns the exit status.
func Supervise(state string) int {
	// fd 3 is the readiness pipe; the command must not inherit it.
	unix.CloseOnExec(3)
	ready := os.NewFile(3, "ready")
	report := func(s string) {
		if ready != nil {
			fmt.Fprintln(ready, s)
			ready.Close()
			ready = nil
		}
	}
	defer report("error: the supervisor ended before the command started")
	runDir := filepath.Dir(filepath.Dir(state))
	b, err := os.ReadFile(state)
	if err != nil {
		report("error: read state: " + err.Error())
		return 1
	}
	var j job
	if err := json.Unmarshal(b, &j); err != nil {
		report("error: read state: " + err.Error())
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	logFile, err := os.OpenFile(j.LogPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		report("error: open log: " + err.Error())
		return 1
	}
	defer logFile.Close()
	logBound := newBoundedLog(logFile, LogHalf) // start left the log empty
	render := shape.NewRenderer(logBound)
	c := &runs.Call{Req: envelope.Request{RunID: j.RunID, CallID: j.CallID}}
	extra := map[string]string{}
	if tok := repoToken(runDir, j.Dir); tok != "" {
		extra["GH_TOKEN"] = tok
	}
	env := commandEnv(c, extra)
	self, startTime := os.Getpid(), procStartTime(os.Getpid())
	res, err := proc.Run(ctx, proc.Cmd{
		Args:    []string{"bash", "-c", j.Command},
		Dir:     j.Dir,
		Env:     env,
		Output:  render,
		Timeout: time.Duration(j.Timeout) * time.Second,
		// A background command runs in its own session (the spec), apart from the supervisor's.
		NewSession: true,
		Started: func(pid int) {
			rec, _ := json.Marshal(pidRecord{Supervisor: self, StartTime: startTime, Group: pid})
			if err := atomicfile.WriteFile(jobPath(runDir, j.ID, ".pid"), rec, 0o644); err != nil {
				report("error: " + err.Error())
				return
			}
			report("ok")
		},
	})
	_ = render.Close()
	_ = logBound.Close()
	_, _ = logFile.Seek(logBound.End(), io.SeekStart) // the lines below follow the log
	if err != nil {
		report("error: " + err.Error())
		_ = writeExit(runDir, j.ID, exitRecord{Stopped: true, EndedAt: time.Now().UTC()})
		return 1
	}
	code := res.ExitCode
	switch {
	case res.TimedOut:
		fmt.Fprintf(logFile, "[timed out after %d s: stopped]\n", j.Timeout)
	case res.Canceled:
		fmt.Fprintln(logFile, "[stopped]")
	case res.Leftover > 0:
		fmt.Fprintf(logFile, "[stopped %s the command left running]\n", plural(res.Leftover, "process", "processes"))
	}
	_ = writeExit(runDir, j.ID, exitRecord{ExitCode: &code, Stopped: res.Canceled, TimedOut: res.TimedOut, Leftover: res.Leftover, EndedAt: time.Now().UTC()})
	return 0
}

func writeExit(runDir, id string, rec exitRecord) error {
	b, _ := json.Marshal(rec)
	return atomicfile.WriteFile(jobPath(runDir, id, ".exit"), b, 0o644)
}

// procStartTime is the start time of a live pid in clock ticks since boot (field 22 of its
// stat), or 0 when it is gone or a zombie.
func procStartTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// supervisorAlive reports whether the recorded supervisor still runs (same pid, same start time).
func supervisorAlive(p pidRecord) bool {
	if p.Supervisor <= 0 {
		return false
	}
	st := procStartTime(p.Supervisor)
	return st != 0 && st == p.StartTime
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ⏎ ")
	return shape.ClipLine(s, max)
}
