package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
)

// FromKind returns the provider named by kind ("bubblewrap", "local", or "" for bubblewrap where
// bwrap exists and local elsewhere). Choosing local logs that it isolates nothing.
func FromKind(kind, root, binDir, toolsDir string, log *slog.Logger) (Provider, error) {
	if kind == "" {
		if _, err := exec.LookPath("bwrap"); err == nil {
			kind = "bubblewrap"
		} else {
			kind = "local"
		}
	}
	switch kind {
	case "bubblewrap":
		p, err := NewBubblewrap(root, binDir, toolsDir)
		if err != nil {
			return nil, err
		}
		p.Log = log
		return p, nil
	case "local":
		log.Warn("sandbox kind local isolates nothing: helpers run directly on the host as this user", "root", root)
		return &Local{Root: root, BinDir: binDir, ToolsDir: toolsDir}, nil
	default:
		return nil, fmt.Errorf("sandbox kind %q is unknown: use bubblewrap or local", kind)
	}
}

// IsUnavailable reports whether err says a sandbox part is missing.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// Unavailable is the provider of an orchestrator whose sandbox cannot start: every Open fails with
// Err, which names the missing part and its install step.
type Unavailable struct{ Err error }

// Kind names the provider.
func (u Unavailable) Kind() string { return "unavailable" }

// Open returns Err.
func (u Unavailable) Open(context.Context, string) (Sandbox, error) { return nil, u.Err }

// Status says the sandbox is unavailable, and why.
func (u Unavailable) Status() Status {
	return Status{Backend: u.Kind(), DiskQuota: DiskQuotaNone, Missing: []string{u.Err.Error()}}
}
