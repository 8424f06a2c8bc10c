package shape

import (
	"io"
	"unicode/utf8"
)

// maxLineRunes bounds the line a Renderer holds in memory; a longer line without a newline is
// written out in pieces (a carriage return then only redraws the piece still held).
const maxLineRunes = 64 << 10

// maxPending bounds an unfinished escape sequence held across writes; a longer one is dropped.
const maxPending = 4 << 10

// Terminal renders raw terminal output as plain text: ANSI escape sequences are removed, a line
// redrawn with carriage returns (or backspaces, or erased with CSI K) keeps its last visible state,
// CRLF becomes LF, other control characters are dropped and invalid UTF-8 becomes U+FFFD.
// The result is valid UTF-8 and holds no ESC byte.
func Terminal(raw []byte) string {
	var b stringWriter
	r := NewRenderer(&b)
	_, _ = r.Write(raw)
	_ = r.Close()
	return string(b)
}

type stringWriter []byte

func (s *stringWriter) Write(p []byte) (int, error) {
	*s = append(*s, p...)
	return len(p), nil
}

// Renderer is the streaming form of Terminal: raw output goes in through Write in chunks of any
// size (an escape sequence or a character may be split between them), rendered text comes out to
// the underlying writer a line at a time. Close writes the last, unterminated line.
type Renderer struct {
	w       io.Writer
	line    []rune // the current line as a terminal would show it
	col     int
	pending []byte // an unfinished escape sequence or UTF-8 character from the previous Write
	out     []byte
	err     error
}

// NewRenderer returns a Renderer writing rendered text to w.
func NewRenderer(w io.Writer) *Renderer { return &Renderer{w: w} }

// Write renders p; it fails only when the underlying writer does.
func (r *Renderer) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := len(p)
	if len(r.pending) > 0 {
		p = append(r.pending, p...)
		r.pending = nil
	}
	r.render(p, false)
	return n, r.emit()
}

// Close renders what is still held (an unfinished sequence is dropped) and writes the last line.
func (r *Renderer) Close() error {
	if r.err != nil {
		return r.err
	}
	if len(r.pending) > 0 {
		p := r.pending
		r.pending = nil
		r.render(p, true)
	}
	r.flushLine()
	return r.emit()
}

func (r *Renderer) emit() error {
	if len(r.out) == 0 {
		return nil
	}
	_, err := r.w.Write(r.out)
	r.out = r.out[:0]
	if err != nil {
		r.err = err
	}
	return err
}

func (r *Renderer) flushLine() {
	for _, c := range r.line {
		r.out = utf8.AppendRune(r.out, c)
	}
	r.line = r.line[:0]
	r.col = 0
}

func (r *Renderer) put(c rune) {
	if r.col < len(r.line) {
		r.line[r.col] = c
	} else {
		r.line = append(r.line, c)
	}
	r.col++
	if len(r.line) >= maxLineRunes && r.col == len(r.line) {
		r.flushLine()
	}
}

// render consumes raw; at the end it keeps an unfinished sequence in pending unless final.
func (r *Renderer) render(raw []byte, final bool) {
	for i := 0; i < len(raw); {
		if r.col == 0 && len(r.line) == 0 {
			// Fast path: a whole clean line is copied as it is.
			if n := plainLine(raw[i:]); n > 0 {
				r.out = append(r.out, raw[i:i+n]...)
				i += n
				continue
			}
		}
		c := raw[i]
		switch {
		case c == 0x1b:
			end, done := r.escape(raw, i)
			if !done && !final && len(raw)-i <= maxPending {
				r.pending = append(r.pending[:0], raw[i:]...)
				return
			}
			i = end
			continue
		case c == '\n':
			r.flushLine()
			r.out = append(r.out, '\n')
		case c == '\r':
			r.col = 0
		case c == '\b':
			if r.col > 0 {
				r.col--
			}
		case c == '\t':
			r.put('\t')
		case c < 0x20 || c == 0x7f:
			// Other control characters (bell, NUL, …) are dropped.
		case c < utf8.RuneSelf:
			r.put(rune(c))
		default:
			if !final && !utf8.FullRune(raw[i:]) {
				r.pending = append(r.pending[:0], raw[i:]...)
				return
			}
			cr, size := utf8.DecodeRune(raw[i:])
			switch {
			case cr == utf8.RuneError && size == 1:
				r.put(utf8.RuneError)
			case cr >= 0x80 && cr < 0xa0:
				// C1 control characters are dropped like the C0 ones.
			default:
				r.put(cr)
			}
			i += size
			continue
		}
		i++
	}
}

// plainLine returns the length of the line at the start of b, its newline included, when it
// needs no rendering: valid UTF-8 without control characters other than tab. Otherwise 0.
func plainLine(b []byte) int {
	for j, c := range b {
		switch {
		case c == '\n':
			if utf8.Valid(b[:j]) {
				return j + 1
			}
			return 0
		case c < 0x20 && c != '\t', c == 0x7f:
			return 0
		case c == 0xc2 && j+1 < len(b) && b[j+1] >= 0x80 && b[j+1] < 0xa0:
			return 0 // a C1 control character
		}
	}
	return 0
}

// escape interprets the escape sequence at raw[i] (ESC): it returns the index just past it and
// whether the sequence was complete. Erase-in-line (CSI K) is applied; the rest is dropped.
func (r *Renderer) escape(raw []byte, i int) (int, bool) {
	i++ // ESC
	if i >= len(raw) {
		return i, false
	}
	if raw[i] < 0x20 || raw[i] >= 0x7f {
		// ESC before a control or non-ASCII byte is dropped alone.
		return i, true
	}
	switch raw[i] {
	case '[': // CSI: parameter and intermediate bytes, then a final byte 0x40–0x7e.
		start := i + 1
		i++
		for i < len(raw) && (raw[i] < 0x40 || raw[i] > 0x7e) {
			if raw[i] < 0x20 || raw[i] > 0x7e {
				// A malformed sequence: stop before the control or non-ASCII byte.
				return i, true
			}
			i++
		}
		if i >= len(raw) {
			return i, false
		}
		if raw[i] == 'K' {
			r.eraseInLine(string(raw[start:i]))
		}
		return i + 1, true
	case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS: up to BEL or ST (ESC \).
		i++
		for i < len(raw) {
			if raw[i] == 0x07 {
				return i + 1, true
			}
			if raw[i] == '\n' {
				// Unterminated at a line end: keep the line, drop the sequence.
				return i, true
			}
			if raw[i] == 0x1b {
				if i+1 >= len(raw) {
					return i + 1, false
				}
				if raw[i+1] == '\\' {
					return i + 2, true
				}
			}
			i++
		}
		return i, false
	case '(', ')', '*', '+', '-', '.', '/', '#', '%': // charset designation and similar: one more byte.
		if i+1 >= len(raw) {
			return i + 1, false
		}
		if raw[i+1] < 0x20 {
			return i + 1, true
		}
		return i + 2, true
	default: // two-byte sequences such as ESC 7, ESC =, ESC M.
		return i + 1, true
	}
}

// eraseInLine applies CSI K: 0 (or none) erases to the end of the line, 1 to the cursor, 2 all of it.
func (r *Renderer) eraseInLine(param string) {
	switch param {
	case "", "0":
		if r.col < len(r.line) {
			r.line = r.line[:r.col]
		}
	case "1":
		for j := 0; j < r.col && j < len(r.line); j++ {
			r.line[j] = ' '
		}
	case "2":
		r.line = r.line[:0]
		for j := 0; j < r.col; j++ {
			r.line = append(r.line, ' ')
		}
	}
}
