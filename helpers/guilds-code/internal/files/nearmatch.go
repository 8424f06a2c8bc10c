package files

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/guildsai/guilds/shared/shape"
)

// lineNumberPrefix returns the length of a line number pasted from file_read-like output at the
// start of l ("  12\t", "12: ", "12:", "12→"), or -1.
func lineNumberPrefix(l string) int {
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	digits := i
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i == digits || i == len(l) {
		return -1
	}
	switch rest := l[i:]; {
	case rest[0] == '\t':
		return i + 1
	case strings.HasPrefix(rest, ": "):
		return i + 2
	case rest[0] == ':':
		return i + 1
	case strings.HasPrefix(rest, "→"):
		return i + len("→")
	}
	return -1
}

// nearMatches explains where old almost occurs in content, so the model can fix its old_string:
// a match with other line endings, with pasted line numbers, or ignoring whitespace and
// indentation; else where its first line occurs.
func nearMatches(content, old string) string {
	if strings.Contains(old, "\r\n") {
		if ls := matchLines(content, strings.ReplaceAll(old, "\r\n", "\n")); len(ls) > 0 {
			return fmt.Sprintf(`old_string has CRLF (\r\n) line endings where the file has LF (\n); with LF endings it occurs at %s`, lineList(ls))
		}
	}
	if stripped, ok := stripLineNumbers(old); ok {
		for _, cand := range []string{stripped, toCRLF(stripped)} {
			if ls := matchLines(content, cand); len(ls) > 0 {
				return fmt.Sprintf(`old_string starts its lines with line numbers copied from file_read output (like "  12\t" or "12: "); without them it occurs at %s: send the text without the numbers`, lineList(ls))
			}
		}
		if ls := looseMatches(content, stripped); len(ls) > 0 {
			return fmt.Sprintf(`old_string starts its lines with line numbers copied from file_read output (like "  12\t" or "12: "), and without them it matches only ignoring whitespace, at %s, where the file reads:
%s
copy the text exactly from those lines, without the numbers`, lineList(starts(ls)), excerpt(content, ls[0]))
		}
	}
	if ls := looseMatches(content, old); len(ls) > 0 {
		return fmt.Sprintf(`it matches ignoring whitespace and indentation at %s, where the file reads:
%s
copy old_string exactly from those lines (spaces, tabs and indentation count)`, lineList(starts(ls)), excerpt(content, ls[0]))
	}
	if first := firstLine(old); first != "" && strings.Contains(strings.TrimSpace(old), "\n") {
		var at []int
		for i, l := range strings.Split(content, "\n") {
			if strings.Contains(l, first) {
				at = append(at, i+1)
			}
		}
		if len(at) > 0 {
			return fmt.Sprintf("its first line occurs at %s but the lines after it differ; read from there with file_read (offset %d) and copy old_string exactly", lineList(at), at[0])
		}
	}
	return "there is no near match either (ignoring whitespace, line endings or pasted line numbers); read the file again with file_read and copy old_string exactly"
}

// stripLineNumbers removes a pasted line-number prefix from every line of s; ok is false unless
// every non-blank line carried one.
func stripLineNumbers(s string) (string, bool) {
	lines := strings.Split(s, "\n")
	seen := false
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := lineNumberPrefix(l)
		if n < 0 {
			return "", false
		}
		lines[i], seen = l[n:], true
	}
	return strings.Join(lines, "\n"), seen
}

// maxLooseContent bounds the file size searched ignoring whitespace (it keeps a line number per byte).
const maxLooseContent = 32 << 20

// span is a loose match: its first and last line in the file.
type span struct{ first, last int }

func starts(ss []span) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = s.first
	}
	return out
}

// looseMatches finds old in content with all whitespace removed from both.
func looseMatches(content, old string) []span {
	needle := strings.Map(dropSpace, old)
	if needle == "" || len(content) > maxLooseContent {
		return nil
	}
	var hay strings.Builder
	lineOf := make([]int32, 0, len(content))
	line := int32(1)
	for i := 0; i < len(content); i++ {
		ch := content[i]
		if ch == '\n' {
			line++
		}
		if ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f' {
			continue
		}
		hay.WriteByte(ch)
		lineOf = append(lineOf, line)
	}
	h := hay.String()
	var out []span
	for pos := 0; ; {
		i := strings.Index(h[pos:], needle)
		if i < 0 {
			return out
		}
		start := pos + i
		end := start + len(needle) - 1
		out = append(out, span{int(lineOf[start]), int(lineOf[end])})
		pos = start + len(needle)
	}
}

func dropSpace(r rune) rune {
	if unicode.IsSpace(r) {
		return -1
	}
	return r
}

// excerpt renders the file's lines of s (at most 8), numbered as file_read numbers them.
func excerpt(content string, s span) string {
	lines := strings.Split(content, "\n")
	last := min(s.last, s.first+7, len(lines))
	var b strings.Builder
	width := len(fmt.Sprint(last))
	for n := s.first; n <= last; n++ {
		fmt.Fprintf(&b, "%*d\t%s\n", width, n, shape.ClipLine(strings.TrimSuffix(lines[n-1], "\r"), 200))
	}
	if s.last > last {
		fmt.Fprintf(&b, "… (through line %d)\n", s.last)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// firstLine is the first non-blank line of s, trimmed, when it is long enough to mean something.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			if len(t) < 4 {
				return ""
			}
			return t
		}
	}
	return ""
}
