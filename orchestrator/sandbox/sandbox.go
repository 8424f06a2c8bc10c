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
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// In-sandbox places the helpers see (PROTOCOL.md).
const (
	Home   = "/home/agent"
	RunDir = "/run/guilds"
	BinDir = "/usr/local/bin"
)

// Places are the paths a helper in this sandbox uses for GUILDS_HOME and GUILDS_RUN_DIR.
type Places struct {
	Home   string
	RunDir string
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

// agentDirs creates (once) and returns the host folders behind one agent's sandbox.
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

// fileAPI maps sandbox paths onto an agent's host folders through os.Root, so a link the agent
// planted can never make the orchestrator read or write outside those folders.
type fileAPI struct {
	places Places
	d      dirs
}

// locate splits a sandbox path into the host folder that holds it and the path inside that folder.
func (f fileAPI) locate(name string) (hostDir, rel string, err error) {
	if !path.IsAbs(name) {
		return "", "", fmt.Errorf("sandbox path %q is not absolute", name)
	}
	clean := path.Clean(name)
	for _, m := range []struct{ sandbox, host string }{{f.places.RunDir, f.d.run()}, {f.places.Home, f.d.home()}} {
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
	root, err := os.OpenRoot(hostDir)
	if err != nil {
		return fmt.Errorf("open sandbox folder: %w", err)
	}
	defer root.Close()
	dir := path.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := path.Join(dir, fmt.Sprintf(".%s.tmp-%d", path.Base(rel), time.Now().UnixNano()))
	file, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, werr := file.Write(data)
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

func (f fileAPI) ReadFile(ctx context.Context, name string) ([]byte, error) {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return nil, err
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

func (f fileAPI) Remove(ctx context.Context, name string) error {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("sandbox path %q is a top folder of the sandbox and cannot be removed", name)
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
