package shape

import (
	"strings"
	"unicode/utf8"
)

// Terminal renders raw terminal output as plain text: ANSI escape sequences are removed, a line
// redrawn with carriage returns (or backspaces) keeps its last visible state, CRLF becomes LF,
// and invalid UTF-8 becomes U+FFFD.
func Terminal(raw []byte) string {
	var out strings.Builder
	out.Grow(len(raw))
	var line []rune // the current line as a terminal would show it
	col := 0
	flush := func() {
		out.WriteString(string(line))
		line = line[:0]
		col = 0
	}
	put := func(r rune) {
		if col < len(line) {
			line[col] = r
		} else {
			line = append(line, r)
		}
		col++
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == 0x1b:
			i = skipEscape(raw, i)
			continue
		case c == '\n':
			flush()
			out.WriteByte('\n')
		case c == '\r':
			if i+1 < len(raw) && raw[i+1] == '\n' {
				// CRLF is a line end, not a redraw.
				break
			}
			col = 0
		case c == '\b':
			if col > 0 {
				col--
			}
		case c == '\t':
			put('\t')
		case c < 0x20 || c == 0x7f:
			// Other control characters (bell, NUL, …) are dropped.
		case c < utf8.RuneSelf:
			put(rune(c))
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				put(utf8.RuneError)
			} else if r >= 0x80 && r < 0xa0 {
				// C1 control characters are dropped like the C0 ones.
			} else {
				put(r)
			}
			i += size
			continue
		}
		i++
	}
	flush()
	return out.String()
}

// skipEscape returns the index just past the escape sequence that starts at raw[i] (ESC).
func skipEscape(raw []byte, i int) int {
	i++ // ESC
	if i >= len(raw) {
		return i
	}
	switch raw[i] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7e.
		i++
		for i < len(raw) && (raw[i] < 0x40 || raw[i] > 0x7e) {
			i++
		}
		return min(i+1, len(raw))
	case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS: up to BEL or ST (ESC \).
		i++
		for i < len(raw) {
			if raw[i] == 0x07 {
				return i + 1
			}
			if raw[i] == 0x1b && i+1 < len(raw) && raw[i+1] == '\\' {
				return i + 2
			}
			i++
		}
		return i
	case '(', ')', '*', '+', '-', '.', '/', '#', '%': // charset designation and similar: one more byte.
		return min(i+2, len(raw))
	default: // two-byte sequences such as ESC 7, ESC =, ESC M.
		return i + 1
	}
}
