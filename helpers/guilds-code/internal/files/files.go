// Package files implements the workspace file tools file_read, file_edit and file_write.
package files

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
)

// binarySniff is how many leading bytes decide whether a file is binary.
const binarySniff = 8000

// target is a file a tool works on: where it really is and how the model names it.
type target struct {
	real  string // resolved, links followed, inside Home
	shown string // the path as the model can pass it back
}

// resolve turns the path argument into a target, refusing paths outside the workspace.
func resolve(c *runs.Call, p string) (target, error) {
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		return target{}, fmt.Errorf("path %s ends with /, so it names a folder; name a file", p)
	}
	real, err := c.Resolve(p)
	if err != nil {
		if errors.Is(err, runs.ErrOutside) {
			return target{}, fmt.Errorf("%w; pass a path inside %s", err, c.Home)
		}
		return target{}, err
	}
	// Show the name the model used (cleaned) when it stays inside the workspace; else the real one.
	lexical := c.Abs(p)
	shown := c.Rel(real)
	if runs.Within(c.Home, lexical) {
		shown = c.Rel(lexical)
	}
	return target{real: real, shown: shown}, nil
}

// statRegular returns the file's info, with errors that say what to do for a missing file,
// a folder or a special file.
func statRegular(t target, tool string) (fs.FileInfo, error) {
	fi, err := os.Stat(t.real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if tool == "file_edit" {
			return nil, fmt.Errorf("%s does not exist; check the path, or create it with file_write", t.shown)
		}
		return nil, fmt.Errorf("%s does not exist; check the path (code_search mode files finds files by name)", t.shown)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", t.shown, err)
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a folder, not a file; list it with shell (ls %s)", t.shown, t.shown)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s); %s works on regular files only", t.shown, fi.Mode().Type(), tool)
	}
	return fi, nil
}

// hashHex is the lowercase hex SHA-256 of data.
func hashHex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// isBinary reports whether the leading bytes of a file look like binary data: a NUL byte, or
// mostly control characters.
func isBinary(head []byte) bool {
	if len(head) > binarySniff {
		head = head[:binarySniff]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	control := 0
	for _, b := range head {
		if b < 0x20 && b != '\n' && b != '\r' && b != '\t' && b != '\f' && b != '\v' && b != '\b' && b != 0x1b {
			control++
		}
	}
	return len(head) > 0 && control*10 > len(head)
}

// countLines counts lines the way file_read numbers them: a last line without a newline counts.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// argError is a reply for bad arguments.
func argError(tool string, err error) envelope.Reply {
	return envelope.Errorf(nil, "%s: %v", tool, err)
}
