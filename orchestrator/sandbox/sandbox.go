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
	// WriteFrom atomically writes what r holds as a file at a sandbox path under Places().Home,
	// creating missing folders, and returns its size; past limit bytes it writes nothing and
	// answers a *TooLargeError.
	WriteFrom(ctx context.Context, name string, r io.Reader, perm fs.FileMode, limit int64) (int64, error)
	// ReadFile reads a regular file at a sandbox path under Places().Home or Places().RunDir, at
	// most limit bytes: a larger file is a *TooLargeError, anything but a regular file a
	// *NotRegularError, a link a *LinkError; the read never blocks on a FIFO.
	ReadFile(ctx context.Context, name string, limit int64) ([]byte, error)
	// Open opens a regular file (to stream) or a folder (listed) at a sandbox path under
	// Places().Home, never through a link and never blocking; the caller closes it.
	Open(ctx context.Context, name string) (*Node, error)
	// Import unpacks a tar stream into the new folder dir under Places().Home (or one that is
	// empty), at most limit bytes unpacked. An entry that is absolute, leaves the folder (by its
	// name, a link's target or a hard link's), or is a device or a FIFO refuses the whole archive
	// with an *ImportError, and nothing is written.
	Import(ctx context.Context, dir string, archive io.Reader, limit int64) (Imported, error)
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
