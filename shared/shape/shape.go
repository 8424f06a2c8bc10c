// Package shape turns raw tool output into the bounded text a model reads.
package shape

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Prefix returns the longest prefix of s of at most n bytes that ends on a rune boundary.
func Prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// Suffix returns the longest suffix of s of at most n bytes that starts on a rune boundary.
func Suffix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// ClipLine shortens a line longer than max characters, saying how many characters were cut.
func ClipLine(line string, max int) string {
	n := utf8.RuneCountInString(line)
	if n <= max {
		return line
	}
	i, count := 0, 0
	for i < len(line) && count < max {
		_, size := utf8.DecodeRuneInString(line[i:])
		i += size
		count++
	}
	return fmt.Sprintf("%s… [%d more characters]", line[:i], n-max)
}

// FitLines joins lines (each followed by a newline) after header, stopping at the first line that
// would take the text, plus the note leftOut(n) adds, past limit bytes. It returns the text and how
// many lines were left out.
func FitLines(header string, lines []string, limit int, leftOut func(n int) string) (string, int) {
	var b strings.Builder
	b.WriteString(header)
	total := len(header)
	for _, l := range lines {
		total += len(l) + 1
	}
	if total <= limit {
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		return b.String(), 0
	}
	for i, l := range lines {
		note := leftOut(len(lines) - i - 1)
		if b.Len()+len(l)+1+len(note)+1 > limit {
			rest := len(lines) - i
			b.WriteString(leftOut(rest))
			b.WriteByte('\n')
			return b.String(), rest
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), 0
}
