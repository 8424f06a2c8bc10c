package shape

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerminal(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"plain", "hello\nworld\n", "hello\nworld\n"},
		{"no final newline", "a\nb", "a\nb"},
		{"CRLF", "one\r\ntwo\r\n", "one\ntwo\n"},
		{"CR redraw keeps last state", "10%\r50%\r100%\n", "100%\n"},
		{"CR redraw shorter keeps the tail like a terminal", "downloading\rok\n", "okwnloading\n"},
		{"CR then erase line", "downloading\r\x1b[Kok\n", "ok\n"},
		{"erase whole line", "abc\x1b[2K\rd\n", "d  \n"},
		{"erase to cursor", "abcd\b\b\x1b[1K\n", "  cd\n"},
		{"progress bar", "[#   ]\r[##  ]\r[### ]\r[####]\ndone\n", "[####]\ndone\n"},
		{"backspace overwrites", "abc\b\bX\n", "aXc\n"},
		{"backspace at line start", "\b\bab\n", "ab\n"},
		{"CSI colour", "\x1b[1;31merror\x1b[0m: x\n", "error: x\n"},
		{"CSI private mode", "\x1b[?25lhidden cursor\x1b[?25h\n", "hidden cursor\n"},
		{"OSC title BEL", "\x1b]0;title\x07text\n", "text\n"},
		{"OSC hyperlink ST", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n", "link\n"},
		{"charset designation", "\x1b(Bplain\n", "plain\n"},
		{"two-byte escape", "\x1b7saved\x1b8\n", "saved\n"},
		{"ESC at the very end", "text\x1b", "text"},
		{"unfinished CSI at end", "text\x1b[31", "text"},
		{"malformed CSI stops at newline", "a\x1b[12\nb\n", "a\nb\n"},
		{"bell and NUL dropped", "a\x07b\x00c\n", "abc\n"},
		{"DEL dropped", "ab\x7fc\n", "abc\n"},
		{"C1 control dropped", "a\u0085b\n", "ab\n"},
		{"tab kept", "a\tb\n", "a\tb\n"},
		{"invalid UTF-8", "a\xffb\xc3\n", "a\uFFFDb\uFFFD\n"},
		{"multibyte kept", "héllo wörld ✓ 日本\n", "héllo wörld ✓ 日本\n"},
		{"multibyte redraw counts characters, not cells", "日本語\rab\n", "ab語\n"},
		{"empty", "", ""},
		{"unterminated OSC keeps the line end", "\x1b]0;title\nnext\n", "\nnext\n"},
		{"ESC before newline", "a\x1b\nb", "a\nb"},
		{"charset designation before newline", "a\x1b(\nb", "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Terminal([]byte(tt.raw))
			if got != tt.want {
				t.Errorf("Terminal(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			// Fed one byte at a time, the streaming renderer agrees.
			var buf bytes.Buffer
			r := NewRenderer(&buf)
			for i := 0; i < len(tt.raw); i++ {
				if _, err := r.Write([]byte{tt.raw[i]}); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Errorf("byte-at-a-time render of %q = %q, want %q", tt.raw, buf.String(), tt.want)
			}
		})
	}
}

func TestTerminalLongLineIsBounded(t *testing.T) {
	raw := strings.Repeat("x", 3*maxLineRunes+5) + "\n"
	got := Terminal([]byte(raw))
	if got != raw {
		t.Fatalf("long line changed: got %d bytes, want %d", len(got), len(raw))
	}
	var buf bytes.Buffer
	r := NewRenderer(&buf)
	r.Write([]byte(strings.Repeat("y", 2*maxLineRunes)))
	if len(r.line) >= maxLineRunes {
		t.Fatalf("renderer holds %d runes of one line; want fewer than %d", len(r.line), maxLineRunes)
	}
}

func TestTerminalOverlongOSCIsDropped(t *testing.T) {
	raw := "\x1b]0;" + strings.Repeat("t", 2*maxPending)
	var buf bytes.Buffer
	r := NewRenderer(&buf)
	for i := 0; i < len(raw); i += 100 {
		r.Write([]byte(raw[i:min(i+100, len(raw))]))
	}
	if len(r.pending) > maxPending {
		t.Fatalf("renderer holds %d pending bytes; want at most %d", len(r.pending), maxPending)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFail }

var errFail = bytes.ErrTooLarge

func TestRendererReportsWriteErrors(t *testing.T) {
	r := NewRenderer(failWriter{})
	if _, err := r.Write([]byte("line\n")); err == nil {
		t.Fatal("Write: want the underlying error")
	}
	if err := r.Close(); err == nil {
		t.Fatal("Close: want the underlying error")
	}
}

// FuzzTerminal checks the renderer's invariants on arbitrary bytes: valid UTF-8 out, no ESC or
// CR or other C0 control left but tab and newline, as many lines as line feeds in, and the same
// text whether the input arrives whole or split in two.
func FuzzTerminal(f *testing.F) {
	for _, s := range []string{"a\r\nb", "\x1b[31mred\x1b[0m", "50%\r100%", "x\b\by", "\x1b]0;t\x07", "日本\xff", "\x1b[", "a\x1b[2Kb"} {
		f.Add([]byte(s), uint16(1))
	}
	f.Fuzz(func(t *testing.T, raw []byte, cut uint16) {
		got := Terminal(raw)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 out of %q: %q", raw, got)
		}
		for _, c := range []byte(got) {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				t.Fatalf("control byte %#x left in %q (from %q)", c, got, raw)
			}
		}
		if strings.Count(got, "\n") != bytes.Count(raw, []byte("\n")) {
			t.Fatalf("line count changed: %q -> %q", raw, got)
		}
		i := int(cut) % (len(raw) + 1)
		var buf bytes.Buffer
		r := NewRenderer(&buf)
		r.Write(raw[:i])
		r.Write(raw[i:])
		r.Close()
		if buf.String() != got && len(raw) < maxPending {
			t.Fatalf("split at %d renders %q, whole renders %q (input %q)", i, buf.String(), got, raw)
		}
	})
}
