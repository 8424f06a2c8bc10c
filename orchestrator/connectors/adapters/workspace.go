package adapters

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// ReadFile reads one workspace file, at most maxWorkspaceRead bytes, on the host without following
// a link or blocking on a FIFO (the sandbox's file API).
func (w workspaceFiles) ReadFile(ctx context.Context, name string) ([]byte, error) {
	box, err := w.boxes.Open(ctx, w.agentID)
	if err != nil {
		return nil, fmt.Errorf("open the agent's sandbox: %w", err)
	}
	p, err := sandbox.WorkspacePath(box, name, sandbox.RunCwd(ctx, box, w.runID))
	if err != nil {
		return nil, err
	}
	b, err := box.ReadFile(ctx, p, maxWorkspaceRead)
	var tl *sandbox.TooLargeError
	if errors.As(err, &tl) {
		if tl.Size >= 0 {
			return nil, fmt.Errorf("%s is %d bytes; at most %d MiB is read from the workspace", sandbox.AgentPath(box, p), tl.Size, maxWorkspaceRead>>20)
		}
		return nil, fmt.Errorf("%s grew past %d MiB while it was read; at most %d MiB is read from the workspace", sandbox.AgentPath(box, p), maxWorkspaceRead>>20, maxWorkspaceRead>>20)
	}
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), box.Places().Home, sandbox.Home))
	}
	return b, nil
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
	p, err := sandbox.WorkspacePath(box, name, sandbox.RunCwd(ctx, box, w.runID))
	if err != nil {
		return "", err
	}
	if err := box.WriteFile(ctx, p, data, 0o644); err != nil {
		return "", errors.New(strings.ReplaceAll(err.Error(), box.Places().Home, sandbox.Home))
	}
	return sandbox.AgentPath(box, p), nil
}

// maxWorkspaceRead is the largest workspace file an adapter reads (Qonto's own limit is lower).
const maxWorkspaceRead = 16 << 20
