package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/atomicfile"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/toolspec"
)

// Edit is file_edit: it replaces an exact string (every occurrence with replace_all) and
// writes the file atomically, keeping its mode and its line endings. A missing or ambiguous
// old_string changes nothing and the error says where the near matches or the matches are.
// Meta: path, lines_added, lines_removed, content_hash.
func Edit(ctx context.Context, c *runs.Call) envelope.Reply {
	var a toolspec.FileEditArgs
	if err := c.DecodeArgs(&a); err != nil {
		return argError("file_edit", err)
	}
	switch {
	case a.Path == "":
		return argError("file_edit", errors.New("missing argument path: the file to edit"))
	case a.OldString == nil:
		return argError("file_edit", errors.New("missing argument old_string: the exact text to replace"))
	case a.NewString == nil:
		return argError("file_edit", errors.New(`missing argument new_string: the replacement text ("" deletes old_string)`))
	case *a.OldString == "":
		return argError("file_edit", errors.New("old_string is empty: pass the exact text to replace (to create or overwrite a whole file use file_write)"))
	case *a.OldString == *a.NewString:
		return argError("file_edit", errors.New("old_string and new_string are the same, so the edit would change nothing; pass the text you want in new_string"))
	}
	t, err := resolve(c, a.Path)
	if err != nil {
		return argError("file_edit", err)
	}
	unlock, err := lockFile(ctx, c, t.real)
	if err != nil {
		return argError("file_edit", err)
	}
	defer unlock()
	fi, err := statRegular(t, "file_edit")
	if err != nil {
		return argError("file_edit", err)
	}
	data, err := os.ReadFile(t.real)
	if err != nil {
		return argError("file_edit", fmt.Errorf("read %s: %w", t.shown, err))
	}
	if isBinary(data) {
		return argError("file_edit", fmt.Errorf("%s is a binary file (%s); file_edit edits text files", t.shown, size(int64(len(data)))))
	}
	content := string(data)
	old, repl := *a.OldString, *a.NewString
	crlf := usesCRLF(content)
	count := strings.Count(content, old)
	if count == 0 && crlf && strings.Contains(old, "\n") && !strings.Contains(old, "\r") {
		// file_read shows lines without their \r; match them in the file's own line endings.
		if n := strings.Count(content, toCRLF(old)); n > 0 {
			old, count = toCRLF(old), n
		}
	}
	if crlf {
		repl = toCRLF(repl)
	}
	switch {
	case count == 0:
		return envelope.Errorf(nil, "file_edit: old_string was not found in %s; %s", t.shown, nearMatches(content, old))
	case count > 1 && !a.ReplaceAll:
		return envelope.Errorf(nil, "file_edit: old_string occurs %d times in %s (%s); pass replace_all: true to replace every one, or include more surrounding lines so it occurs once",
			count, t.shown, lineList(matchLines(content, old)))
	}
	times := 1
	if a.ReplaceAll {
		times = -1
	}
	updated := strings.Replace(content, old, repl, times)
	if err := atomicfile.WriteFile(t.real, []byte(updated), fi.Mode().Perm()); err != nil {
		return argError("file_edit", fmt.Errorf("%s was left unchanged: %w", t.shown, err))
	}
	added, removed := lineChanges(content, updated)
	return envelope.Reply{
		Text: fmt.Sprintf("edited %s (+%d −%d)", t.shown, added, removed),
		Meta: map[string]any{"path": t.shown, "lines_added": added, "lines_removed": removed, "content_hash": hashHex([]byte(updated))},
	}
}

// usesCRLF reports whether most of the file's line endings are CRLF.
func usesCRLF(s string) bool {
	crlf := strings.Count(s, "\r\n")
	return crlf > 0 && crlf*2 >= strings.Count(s, "\n")
}

// toCRLF gives every line ending of s as CRLF.
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// matchLines returns the line number of each occurrence of sub in s.
func matchLines(s, sub string) []int {
	if sub == "" {
		return nil
	}
	var lines []int
	line, pos := 1, 0
	for {
		i := strings.Index(s[pos:], sub)
		if i < 0 {
			return lines
		}
		line += strings.Count(s[pos:pos+i], "\n")
		lines = append(lines, line)
		line += strings.Count(sub, "\n")
		pos += i + len(sub)
	}
}

// lineList renders line numbers as "line 4" or "lines 4, 19, 80", at most 20 of them.
func lineList(lines []int) string {
	if len(lines) == 1 {
		return fmt.Sprintf("line %d", lines[0])
	}
	var b strings.Builder
	b.WriteString("lines ")
	for i, l := range lines {
		if i == 20 {
			fmt.Fprintf(&b, ", … (%d more)", len(lines)-20)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, l)
	}
	return b.String()
}
