// Package sandbox runs helper commands inside an agent's sandbox and moves files through its file API.
//
// Exec and the file API are the whole surface: a container or cluster backend plugs in by
// implementing Provider and Sandbox (exec into the container, copy files in and out of it and
// remove them), and Starter for the browser. The bubblewrap provider keeps one long-lived sandbox
// per agent whose exec server (package sandboxd) runs each command; the local one runs them on
// the host.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// In-sandbox places the helpers see (PROTOCOL.md), and the sandbox's own /tmp.
const (
	Home   = "/home/agent"
	RunDir = "/run/guilds"
	BinDir = "/usr/local/bin"
	Tmp    = "/tmp"
)

// Places are the paths a helper in this sandbox uses for GUILDS_HOME and GUILDS_RUN_DIR, and its
// temporary folder.
type Places struct {
	Home   string
	RunDir string
	Tmp    string
}

// ExecRequest is one command to run in the sandbox.
type ExecRequest struct {
	Argv    []string      // argv[0] is a sandbox path such as /usr/local/bin/guilds-code, or a name on PATH
	Env     []string      // extra KEY=VALUE pairs on top of the sandbox's base environment
	Stdin   []byte        // nil: stdin is /dev/null
	Timeout time.Duration // 0: only ctx bounds it
}

// ExecResult is what a finished command left behind.
type ExecResult struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	Duration time.Duration
	// OOMKilled counts the processes the kernel killed in the sandbox for want of memory while
	// the command ran (the sandbox's memory limit); 0 where the backend cannot tell.
	OOMKilled int
	// PidsRefused counts the new processes and threads the sandbox's process limit refused while
	// the command ran; 0 where the backend cannot tell.
	PidsRefused int
}

// StderrLine returns the first non-empty line of Stderr, at most 300 bytes, or def.
func (r ExecResult) StderrLine(def string) string {
	for _, l := range strings.Split(string(r.Stderr), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 300 {
				l = l[:300] + "…"
			}
			return l
		}
	}
	return def
}

// Sandbox is one agent's sandbox.
type Sandbox interface {
	// Places are the in-sandbox paths of the workspace and the run folder.
	Places() Places
	// Exec runs a command to completion; a non-zero exit is a result, not an error.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// WriteFile atomically writes a file at a sandbox path under Places().Home or Places().RunDir.
	WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error
	// ReadFile reads a file at a sandbox path under Places().Home or Places().RunDir.
	ReadFile(ctx context.Context, name string) ([]byte, error)
	// Remove deletes a file (or empty folder) at a sandbox path under Places().Home or
	// Places().RunDir; a link is removed, never followed. A missing file is not an error.
	Remove(ctx context.Context, name string) error
}

// Provider opens the sandbox of an agent, creating it on first use.
type Provider interface {
	Kind() string
	Open(ctx context.Context, agentID string) (Sandbox, error)
}

// ErrUnavailable is wrapped by errors that say a sandbox part is missing and how to install it.
var ErrUnavailable = errors.New("sandbox unavailable")

var agentIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// agentDirs creates (once) and returns the host folders behind one agent's local sandbox.
func agentDirs(root, agentID string) (dirs, error) {
	if !agentIDPattern.MatchString(agentID) {
		return dirs{}, fmt.Errorf("agent id %q cannot name a sandbox folder", agentID)
	}
	d := dirs{root: filepath.Join(root, agentID)}
	for _, p := range []string{d.home(), d.run(), d.tmp()} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return dirs{}, fmt.Errorf("create sandbox folder: %w", err)
		}
	}
	if err := os.Chmod(d.tmp(), 0o1777); err != nil {
		return dirs{}, fmt.Errorf("create sandbox tmp: %w", err)
	}
	return d, nil
}

type dirs struct{ root string }

func (d dirs) home() string { return filepath.Join(d.root, "home") }
func (d dirs) run() string  { return filepath.Join(d.root, "run") }
func (d dirs) tmp() string  { return filepath.Join(d.root, "tmp") }

// fileAPI maps sandbox paths onto the agent's files. The workspace (and a local sandbox's run
// folder) is a host folder reached through os.Root, so a link the agent planted can never make the
// orchestrator read or write outside it; files it creates there belong to the agent's host owner.
// A run folder that lives only inside the sandbox (bubblewrap's tmpfs) is reached by commands run
// in the sandbox as the agent.
type fileAPI struct {
	places Places
	home   string // host folder behind places.Home
	run    string // host folder behind places.RunDir; "" when it lives only inside the sandbox
	owner  owner
	exec   func(ctx context.Context, req ExecRequest) (ExecResult, error) // runs in the sandbox, for run files
}

// locate splits a sandbox path into the host folder that holds it ("" for the in-sandbox run
// folder) and the path inside that folder.
func (f fileAPI) locate(name string) (hostDir, rel string, err error) {
	if !path.IsAbs(name) {
		return "", "", fmt.Errorf("sandbox path %q is not absolute", name)
	}
	clean := path.Clean(name)
	for _, m := range []struct{ sandbox, host string }{{f.places.RunDir, f.run}, {f.places.Home, f.home}} {
		if clean == m.sandbox {
			return m.host, ".", nil
		}
		if strings.HasPrefix(clean, m.sandbox+"/") {
			return m.host, strings.TrimPrefix(clean, m.sandbox+"/"), nil
		}
	}
	return "", "", fmt.Errorf("sandbox path %q is outside %s and %s", name, f.places.Home, f.places.RunDir)
}

func (f fileAPI) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("sandbox path %q is a folder", name)
	}
	if hostDir == "" {
		return f.inside(ctx, "write", name, writeScript, data, fmt.Sprintf("%o", perm.Perm()))
	}
	root, err := os.OpenRoot(hostDir)
	if err != nil {
		return fmt.Errorf("open sandbox folder: %w", err)
	}
	defer root.Close()
	dir := path.Dir(rel)
	if err := f.mkdirAll(root, dir); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := path.Join(dir, fmt.Sprintf(".%s.tmp-%d", path.Base(rel), time.Now().UnixNano()))
	file, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	var werr error
	if f.owner.set() {
		werr = file.Chown(f.owner.uid, f.owner.gid)
	}
	if werr == nil {
		_, werr = file.Write(data)
	}
	cerr := file.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		// Rename replaces a link at the destination rather than writing through it.
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, werr)
	}
	return nil
}

// mkdirAll creates dir and its missing parents inside root, owned by the agent's host owner.
func (f fileAPI) mkdirAll(root *os.Root, dir string) error {
	if !f.owner.set() {
		return root.MkdirAll(dir, 0o755)
	}
	at := ""
	for _, part := range strings.Split(dir, "/") {
		if part == "" || part == "." {
			continue
		}
		at = path.Join(at, part)
		err := root.Mkdir(at, 0o755)
		switch {
		case err == nil:
			if err := root.Lchown(at, f.owner.uid, f.owner.gid); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrExist):
			return err
		}
	}
	return nil
}

func (f fileAPI) ReadFile(ctx context.Context, name string) ([]byte, error) {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return nil, err
	}
	if hostDir == "" {
		var out []byte
		err := f.insideRead(ctx, name, &out)
		return out, err
	}
	root, err := os.OpenRoot(hostDir)
	if err != nil {
		return nil, fmt.Errorf("open sandbox folder: %w", err)
	}
	defer root.Close()
	b, err := root.ReadFile(rel)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// TailReader is a Sandbox that reads the end of a workspace file without reading all of it (the
// local and bubblewrap sandboxes are): a long call's progress follows its log this way.
type TailReader interface {
	// ReadTail reads at most n bytes from the end of a file at a sandbox path under Places().Home.
	ReadTail(ctx context.Context, name string, n int) ([]byte, error)
}

// ReadTail reads at most n bytes from the end of a workspace file, through os.Root like ReadFile.
func (f fileAPI) ReadTail(ctx context.Context, name string, n int) ([]byte, error) {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return nil, err
	}
	if hostDir == "" || hostDir != f.home {
		return nil, fmt.Errorf("sandbox path %q is not in %s: only workspace files have their end read", name, f.places.Home)
	}
	root, err := os.OpenRoot(hostDir)
	if err != nil {
		return nil, fmt.Errorf("open sandbox folder: %w", err)
	}
	defer root.Close()
	file, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file", name)
	}
	from := max(fi.Size()-int64(n), 0)
	buf := make([]byte, fi.Size()-from)
	got, err := file.ReadAt(buf, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return buf[:got], nil
}

func (f fileAPI) Remove(ctx context.Context, name string) error {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("sandbox path %q is a top folder of the sandbox and cannot be removed", name)
	}
	if hostDir == "" {
		return f.inside(ctx, "remove", name, removeScript, nil)
	}
	root, err := os.OpenRoot(hostDir)
	if err != nil {
		return fmt.Errorf("open sandbox folder: %w", err)
	}
	defer root.Close()
	if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// The scripts behind the in-sandbox file API; $1 is the sandbox path. They run as the agent, so
// whatever the agent planted in its run folder can lead them nowhere but the agent's own files.
const (
	// writeScript writes stdin to $1 atomically with mode $2, creating missing folders.
	writeScript = `set -e; umask 077; d=$(dirname -- "$1"); mkdir -p -- "$d"
t=$(mktemp -- "$d/.guilds-write.XXXXXX"); trap 'rm -f -- "$t"' EXIT
cat > "$t"; chmod -- "$2" "$t"; mv -f -T -- "$t" "$1"; trap - EXIT`
	// readScript prints $1, and exits 3 when there is no such file.
	readScript = `[ -e "$1" ] || [ -L "$1" ] || exit 3; exec cat -- "$1"`
	// removeScript removes $1 (an empty folder with rmdir), never following a link.
	removeScript = `if [ -d "$1" ] && [ ! -L "$1" ]; then exec rmdir -- "$1"; fi; exec rm -f -- "$1"`
)

// fileOpTimeout bounds one in-sandbox file operation.
const fileOpTimeout = 30 * time.Second

// inside runs one of the file scripts (op names it in errors) in the sandbox for name, with stdin
// (nil: none) and extra arguments.
func (f fileAPI) inside(ctx context.Context, op, name, script string, stdin []byte, args ...string) error {
	argv := append([]string{"/bin/sh", "-c", script, "sh", path.Clean(name)}, args...)
	res, err := f.exec(ctx, ExecRequest{Argv: argv, Stdin: stdin, Timeout: fileOpTimeout})
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s %s: %s", op, name, res.StderrLine(fmt.Sprintf("exit status %d", res.ExitCode)))
	}
	return nil
}

// insideRead reads name from inside the sandbox into out.
func (f fileAPI) insideRead(ctx context.Context, name string, out *[]byte) error {
	res, err := f.exec(ctx, ExecRequest{Argv: []string{"/bin/sh", "-c", readScript, "sh", path.Clean(name)}, Timeout: fileOpTimeout})
	switch {
	case err != nil:
		return fmt.Errorf("read %s: %w", name, err)
	case res.ExitCode == 3:
		return fmt.Errorf("read %s: %w", name, fs.ErrNotExist)
	case res.ExitCode != 0:
		return fmt.Errorf("read %s: %s", name, res.StderrLine(fmt.Sprintf("exit status %d", res.ExitCode)))
	}
	if len(res.Stdout) >= maxOutput {
		return fmt.Errorf("read %s: the file passes the %d bytes one read may take", name, maxOutput)
	}
	*out = res.Stdout
	return nil
}
