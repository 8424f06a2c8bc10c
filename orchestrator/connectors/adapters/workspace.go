package adapters

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// Workspace is a run's files by the workspace file rules (paths under /home/agent, relative to
// the run's working directory, size capped): Qonto's uploads read it, Drive's downloads and
// uploads read and write it.
type Workspace interface {
	FileReader
	// WriteFile writes a file and returns its path as the agent names it.
	WriteFile(ctx context.Context, path string, data []byte) (string, error)
}

// Workspace is the run's workspace through its agent's sandbox; nil without Sandboxes.
func (a Local) Workspace(run orchestrator.Run) Workspace {
	if a.Sandboxes == nil {
		return nil
	}
	return workspaceFiles{boxes: a.Sandboxes, agentID: run.AgentID, runID: run.ID}
}

// workspaceFiles reads and writes a run's workspace files through its agent's sandbox file API: a
// relative path starts at the run's working directory (the one the file tools keep in
// /home/agent/.runs/<run>/cwd), and a path outside /home/agent is refused.
type workspaceFiles struct {
	boxes          sandbox.Provider
	agentID, runID string
}

// ReadFile reads one workspace file.
func (w workspaceFiles) ReadFile(ctx context.Context, name string) ([]byte, error) {
	box, err := w.boxes.Open(ctx, w.agentID)
	if err != nil {
		return nil, fmt.Errorf("open the agent's sandbox: %w", err)
	}
	name, err = w.resolve(ctx, box, name)
	if err != nil {
		return nil, err
	}
	// The size as the sandbox sees it (links followed there) before anything is read.
	res, err := box.Exec(ctx, sandbox.ExecRequest{Argv: []string{"stat", "-L", "-c", "%s", "--", name}, Timeout: 10 * time.Second})
	if err == nil && res.ExitCode == 0 {
		if n, perr := strconv.ParseInt(strings.TrimSpace(string(res.Stdout)), 10, 64); perr == nil && n > maxWorkspaceRead {
			return nil, fmt.Errorf("%s is %d bytes; at most %d MiB is read from the workspace", name, n, maxWorkspaceRead>>20)
		}
	}
	b, err := box.ReadFile(ctx, name)
	if err == nil && len(b) > maxWorkspaceRead {
		clear(b)
		return nil, fmt.Errorf("%s is %d bytes; at most %d MiB is read from the workspace", name, len(b), maxWorkspaceRead>>20)
	}
	return b, err
}

// WriteFile writes a downloaded file at a workspace path and returns it as the agent names it.
func (w workspaceFiles) WriteFile(ctx context.Context, name string, data []byte) (string, error) {
	if len(data) > maxWorkspaceRead {
		return "", fmt.Errorf("the file is %d bytes; at most %d MiB is written to the workspace", len(data), maxWorkspaceRead>>20)
	}
	box, err := w.boxes.Open(ctx, w.agentID)
	if err != nil {
		return "", fmt.Errorf("open the agent's sandbox: %w", err)
	}
	p, err := w.resolve(ctx, box, name)
	if err != nil {
		return "", err
	}
	if err := box.WriteFile(ctx, p, data, 0o644); err != nil {
		return "", err
	}
	return agentHome + strings.TrimPrefix(p, box.Places().Home), nil
}

// resolve places a workspace path in the sandbox: ~ and /home/agent are its home, a relative path
// starts at the run's working directory, and nothing outside the home is allowed.
func (w workspaceFiles) resolve(ctx context.Context, box sandbox.Sandbox, name string) (string, error) {
	home := box.Places().Home
	if name == "~" || strings.HasPrefix(name, "~/") {
		name = home + name[1:]
	} else if within(agentHome, name) && home != agentHome {
		name = home + strings.TrimPrefix(name, agentHome) // a local sandbox's home is a host folder
	}
	if !path.IsAbs(name) {
		cwd := home
		if b, err := box.ReadFile(ctx, path.Join(home, ".runs", w.runID, "cwd")); err == nil {
			if d := path.Clean(strings.TrimSpace(string(b))); within(home, d) {
				cwd = d
			}
		}
		name = path.Join(cwd, name)
	}
	name = path.Clean(name)
	if !within(home, name) {
		return "", errors.New("the path is outside " + agentHome)
	}
	return name, nil
}

// maxWorkspaceRead is the largest workspace file an adapter reads (Qonto's own limit is lower).
const maxWorkspaceRead = 16 << 20

// agentHome is the workspace as the agent and the adapters name it.
const agentHome = "/home/agent"

// within reports whether p is root or under it.
func within(root, p string) bool { return p == root || strings.HasPrefix(p, root+"/") }
