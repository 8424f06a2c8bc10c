package adapters

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// TestWorkspaceFiles: the adapters' file reader finds a file by /home/agent, ~ and a path relative
// to the run's working directory on a local sandbox (whose home is a host folder), and refuses a
// path that leaves the workspace.
func TestWorkspaceFiles(t *testing.T) {
	ctx := context.Background()
	p := &sandbox.Local{Root: sandboxtest.Root(t)}
	box, err := p.Open(ctx, "agent1")
	if err != nil {
		t.Fatal(err)
	}
	home := box.Places().Home
	for name, data := range map[string]string{"docs/a.pdf": "%PDF-1.4 a", ".runs/run1/cwd": path.Join(home, "docs") + "\n"} {
		if err := box.WriteFile(ctx, path.Join(home, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w := workspaceFiles{boxes: p, agentID: "agent1", runID: "run1"}
	for _, name := range []string{"a.pdf", "./a.pdf", "/home/agent/docs/a.pdf", "~/docs/a.pdf", "../docs/a.pdf"} {
		if b, err := w.ReadFile(ctx, name); err != nil || string(b) != "%PDF-1.4 a" {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	for _, name := range []string{"../../../../etc/passwd", "/etc/passwd", "/home/agentx/a.pdf"} {
		if _, err := w.ReadFile(ctx, name); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("%s: %v, want outside", name, err)
		}
	}
	// A file over the cap is refused by its size.
	if err := box.WriteFile(ctx, path.Join(home, "docs/big.pdf"), make([]byte, maxWorkspaceRead+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReadFile(ctx, "big.pdf"); err == nil || !strings.Contains(err.Error(), "at most 16 MiB") {
		t.Errorf("big file: %v", err)
	}
	// Without a stored working directory a relative path starts at home.
	w.runID = "run2"
	if b, err := w.ReadFile(ctx, "docs/a.pdf"); err != nil || string(b) != "%PDF-1.4 a" {
		t.Errorf("no cwd: %q %v", b, err)
	}
}
