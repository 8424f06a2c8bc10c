package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// The workspace file rules, shared by everything that reaches an agent's files from the host (the
// adapters' uploads and downloads, the API's file routes): a path is /home/agent/…, ~/… or relative
// (to a run's working directory, or the home), and never leaves the home.

// WorkspacePath places a path as the agent names it in box: ~ and /home/agent are its home, a
// relative path starts at cwd (a sandbox path under the home; "" for the home), and a path outside
// the home is an error saying so.
func WorkspacePath(box Sandbox, name, cwd string) (string, error) {
	home := box.Places().Home
	switch {
	case name == "~" || strings.HasPrefix(name, "~/"):
		name = home + name[1:]
	case within(Home, name) && home != Home:
		name = home + strings.TrimPrefix(name, Home) // a local sandbox's home is a host folder
	}
	if !path.IsAbs(name) {
		if cwd == "" || !within(home, path.Clean(cwd)) {
			cwd = home
		}
		name = path.Join(cwd, name)
	}
	name = path.Clean(name)
	if !within(home, name) {
		return "", errors.New("the path is outside " + Home)
	}
	return name, nil
}

// AgentPath is a sandbox path under box's home as the agent names it (/home/agent/…).
func AgentPath(box Sandbox, p string) string {
	return Home + strings.TrimPrefix(p, box.Places().Home)
}

// RunCwd is a run's working directory as the file tools keep it (home/.runs/<run>/cwd), "" when
// it has none; the file is read without following a link, at most 4 KiB.
func RunCwd(ctx context.Context, box Sandbox, runID string) string {
	home := box.Places().Home
	b, err := box.ReadFile(ctx, path.Join(home, ".runs", runID, "cwd"), 4096)
	if err != nil {
		return ""
	}
	if d := path.Clean(strings.TrimSpace(string(b))); within(home, d) {
		return d
	}
	return ""
}

// within reports whether p is root or under it.
func within(root, p string) bool { return p == root || strings.HasPrefix(p, root+"/") }

// Upload and import limits.
const (
	DefaultUploadMax = 100 << 20 // GUILDS_UPLOAD_MAX: one uploaded file, or one archive as sent
	DefaultImportMax = 1 << 30   // GUILDS_IMPORT_MAX: what one archive unpacks to
)

// Workspace reaches agents' workspace files for the operator API through their sandboxes' file
// API, as the agent, by the workspace file rules (a relative path starts at the home).
type Workspace struct {
	Provider  Provider
	UploadMax int64 // 0: DefaultUploadMax
	ImportMax int64 // 0: DefaultImportMax
}

// Limits are the workspace's upload limit and what one archive may unpack to.
func (w Workspace) Limits() (upload, unpacked int64) {
	upload, unpacked = w.UploadMax, w.ImportMax
	if upload <= 0 {
		upload = DefaultUploadMax
	}
	if unpacked <= 0 {
		unpacked = DefaultImportMax
	}
	return upload, unpacked
}

// place opens the agent's sandbox and places name in its workspace.
func (w Workspace) place(ctx context.Context, agentID, name string) (Sandbox, string, error) {
	if w.Provider == nil {
		return nil, "", orchestrator.Errorf(orchestrator.EINTERNAL, "no sandbox is configured")
	}
	if strings.ContainsRune(name, 0) {
		return nil, "", orchestrator.Errorf(orchestrator.EINVALID, "path holds a NUL character")
	}
	box, err := w.Provider.Open(ctx, agentID)
	if err != nil {
		return nil, "", fmt.Errorf("open the agent's sandbox: %w", err)
	}
	if name == "" {
		name = "~"
	}
	p, err := WorkspacePath(box, name, "")
	if err != nil {
		return nil, "", orchestrator.Errorf(orchestrator.EINVALID, "path %q: %v; name a path under %s (absolute, ~/…, or relative to it)", name, err, Home)
	}
	return box, p, nil
}

// Open opens a file (to stream) or a folder (listed) of the agent's workspace. Node.Name is the
// path as the agent names it.
func (w Workspace) Open(ctx context.Context, agentID, name string) (*Node, error) {
	box, p, err := w.place(ctx, agentID, name)
	if err != nil {
		return nil, err
	}
	n, err := box.Open(ctx, p)
	if err != nil {
		return nil, workspaceError(box, err)
	}
	n.Name = AgentPath(box, p)
	return n, nil
}

// Written is a file an upload wrote.
type Written struct {
	Path string `json:"path"` // as the agent names it
	Size int64  `json:"size"`
}

// Write streams r into the workspace file name (replacing it atomically), at most the upload
// limit: past it nothing is written and the error is a *TooLargeError.
func (w Workspace) Write(ctx context.Context, agentID, name string, r io.Reader) (Written, error) {
	box, p, err := w.place(ctx, agentID, name)
	if err != nil {
		return Written{}, err
	}
	upload, _ := w.Limits()
	n, err := box.WriteFrom(ctx, p, r, 0o644, upload)
	if err != nil {
		return Written{}, workspaceError(box, err)
	}
	return Written{Path: AgentPath(box, p), Size: n}, nil
}

// ImportResult is what an import unpacked, and where.
type ImportResult struct {
	Path string `json:"path"` // the new folder, as the agent names it
	Imported
}

// Import unpacks a tar stream into the new (or empty) workspace folder name; see Sandbox.Import.
func (w Workspace) Import(ctx context.Context, agentID, name string, archive io.Reader) (ImportResult, error) {
	box, p, err := w.place(ctx, agentID, name)
	if err != nil {
		return ImportResult{}, err
	}
	_, unpacked := w.Limits()
	got, err := box.Import(ctx, p, archive, unpacked)
	if err != nil {
		return ImportResult{}, workspaceError(box, err)
	}
	return ImportResult{Path: AgentPath(box, p), Imported: got}, nil
}

// workspaceError gives a file API error its code, in the agent's path names; a *TooLargeError is
// kept as it is (the API answers it 413).
func workspaceError(box Sandbox, err error) error {
	var tl *TooLargeError
	if errors.As(err, &tl) {
		tl.Name = AgentPath(box, tl.Name)
		return tl
	}
	msg := strings.ReplaceAll(err.Error(), box.Places().Home, Home)
	var link *LinkError
	var nr *NotRegularError
	var imp *ImportError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "%s", msg)
	case errors.Is(err, fs.ErrExist):
		return orchestrator.Errorf(orchestrator.ECONFLICT, "%s", msg)
	case errors.Is(err, fs.ErrPermission):
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s", msg)
	case errors.As(err, &link), errors.As(err, &nr), errors.As(err, &imp):
		return orchestrator.Errorf(orchestrator.EINVALID, "%s", msg)
	case errors.Is(err, context.Canceled):
		return err
	}
	var coded *orchestrator.Error
	if errors.As(err, &coded) {
		return err
	}
	if errors.Is(err, ErrFull) || errors.Is(err, ErrBusy) {
		return orchestrator.Errorf(orchestrator.ECONFLICT, "%s", msg)
	}
	return err
}
