package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/drive"
)

// driveAPI is Google Drive's folder confinement, with a run's workspace through the sandboxes the
// local adapters use.
func driveAPI(local bindings.LocalAdapters) bindings.DriveAPI {
	d := drive.Drive{}
	if la, ok := local.(localAdapters); ok && la.Sandboxes != nil {
		d.Files = func(run orchestrator.Run) drive.Workspace {
			return driveWorkspace{workspaceFiles{boxes: la.Sandboxes, agentID: run.AgentID, runID: run.ID}}
		}
	}
	return d
}

// driveWorkspace reads and writes a run's workspace files by the workspace file rules.
type driveWorkspace struct{ workspaceFiles }

// WriteFile writes a downloaded file at a workspace path and returns it as the agent names it.
func (w driveWorkspace) WriteFile(ctx context.Context, name string, data []byte) (string, error) {
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
