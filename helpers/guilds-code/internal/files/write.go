package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/atomicfile"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/toolspec"
)

// Write is file_write: it creates or replaces a file with content, creating missing folders,
// atomically and keeping an existing file's mode. Meta: path, lines_added, lines_removed,
// content_hash.
func Write(ctx context.Context, c *runs.Call) envelope.Reply {
	var a toolspec.FileWriteArgs
	if err := c.DecodeArgs(&a); err != nil {
		return argError("file_write", err)
	}
	switch {
	case a.Path == "":
		return argError("file_write", errors.New("missing argument path: the file to write"))
	case a.Content == nil:
		return argError("file_write", errors.New(`missing argument content: the whole new content of the file ("" for an empty file)`))
	}
	t, err := resolve(c, a.Path)
	if err != nil {
		return argError("file_write", err)
	}
	unlock, err := lockFile(ctx, c, t.real)
	if err != nil {
		return argError("file_write", err)
	}
	defer unlock()
	mode := fs.FileMode(0o644)
	old := ""
	if _, err := os.Lstat(t.real); err == nil {
		fi, err := statRegular(t, "file_write")
		if err != nil {
			return argError("file_write", err)
		}
		mode = fi.Mode().Perm()
		data, err := os.ReadFile(t.real)
		if err != nil {
			return argError("file_write", fmt.Errorf("read %s: %w", t.shown, err))
		}
		old = string(data)
	}
	if err := os.MkdirAll(filepath.Dir(t.real), 0o755); err != nil {
		return argError("file_write", fmt.Errorf("create the folders of %s: %w", t.shown, err))
	}
	content := *a.Content
	if err := atomicfile.WriteFile(t.real, []byte(content), mode); err != nil {
		return argError("file_write", fmt.Errorf("%s was left unchanged: %w", t.shown, err))
	}
	added, removed := lineChanges(old, content)
	n := countLines(content)
	unit := "lines"
	if n == 1 {
		unit = "line"
	}
	return envelope.Reply{
		Text: fmt.Sprintf("wrote %s (%d %s)", t.shown, n, unit),
		Meta: map[string]any{"path": t.shown, "lines_added": added, "lines_removed": removed, "content_hash": hashHex([]byte(content))},
	}
}
