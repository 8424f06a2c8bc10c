package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTrailer(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{20, "\n\nremaining_tool_calls: 20"},
		{9, "\n\nremaining_tool_calls: 9"},
		{8, "\n\nOnly 8 tool calls left: wrap up and give your final answer.\nremaining_tool_calls: 8"},
		{2, "\n\nOnly 2 tool calls left: wrap up and give your final answer.\nremaining_tool_calls: 2"},
		{1, "\n\nOnly 1 tool call left: wrap up and give your final answer.\nremaining_tool_calls: 1"},
		{0, "\n\nNo tool calls left: write your final answer now.\nremaining_tool_calls: 0"},
		{-3, "\n\nNo tool calls left: write your final answer now.\nremaining_tool_calls: 0"},
	}
	for _, tt := range tests {
		if got := Stamp("", Options{Remaining: tt.n}); got != strings.TrimPrefix(tt.want, "\n\n") {
			t.Errorf("Stamp(empty, Remaining %d) = %q", tt.n, got)
		}
		if got := Stamp("out", Options{Remaining: tt.n}); got != "out"+tt.want {
			t.Errorf("Stamp(out, Remaining %d) = %q, want %q", tt.n, got, "out"+tt.want)
		}
	}
}

func TestStamp(t *testing.T) {
	const sec = "ghp_SECRETSECRETSECRET"
	red := NewRedactor([]string{sec})
	expand := func(s string) string { return strings.ReplaceAll(s, "$TOKEN", sec) }
	tests := []struct {
		name string
		raw  string
		o    Options
		want string // body, before the trailer
	}{
		{"untouched", "hello", Options{}, "hello"},
		{"filter runs first", "a line\nnoise\n", Options{Filter: func(s string) string { return strings.ReplaceAll(s, "noise\n", "") }}, "a line"},
		{"trailing newlines fold into the trailer's blank line", "out\n\n\n", Options{}, "out"},
		{"only newlines is an empty body", "\n\n", Options{}, ""},
		{"redaction sees the filter's output", "token $TOKEN", Options{Filter: expand, Redactor: red}, "token [REDACTED]"},
		{"secret in an error message", "ERROR: auth failed for " + sec + ": 401", Options{Redactor: red}, "ERROR: auth failed for [REDACTED]: 401"},
		{"filter that panics is skipped", "raw " + sec, Options{Filter: func(string) string { panic("boom") }, Redactor: red}, "raw [REDACTED]"},
		{"redaction before the cap", strings.Repeat(sec, 10), Options{Redactor: red, Cap: 100}, strings.Repeat(Marker, 10)},
		{"invalid utf-8 and NUL replaced", "a\xffb\x00c", Options{}, "a\uFFFDb\uFFFDc"},
		{"exactly at the cap", strings.Repeat("x", 200), Options{Cap: 200}, strings.Repeat("x", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Stamp(tt.raw, tt.o)
			want := tt.want + Trailer(tt.o.Remaining, tt.want == "")
			if got != want {
				t.Errorf("Stamp\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestStampCap(t *testing.T) {
	raw := strings.Repeat("é", 40000) // 80,000 bytes of 2-byte runes
	out := Stamp(raw, Options{Remaining: 30})
	body, _, _ := strings.Cut(out, "\n\nremaining_tool_calls: 30")
	if len(body) > DefaultCap {
		t.Fatalf("body is %d bytes, cap is %d", len(body), DefaultCap)
	}
	if !utf8.ValidString(out) {
		t.Fatal("capped output is not valid UTF-8")
	}
	kept, note, ok := strings.Cut(body, "\n[result cut at the 65536-byte cap on a UTF-8 boundary: first ")
	if !ok {
		t.Fatalf("no cut note in %q", body[len(body)-200:])
	}
	if !strings.HasSuffix(note, " of 80000 bytes shown; ask for less to see the rest]") {
		t.Errorf("note does not give the sizes: %q", note)
	}
	if len(kept)%2 != 0 || strings.Trim(kept, "é") != "" {
		t.Errorf("cut split a rune: kept %d bytes", len(kept))
	}
	if len(body) < DefaultCap-4 {
		t.Errorf("body %d bytes wastes the cap", len(body))
	}
}

// TestStampSecretAcrossCap puts a secret where the cap falls: redaction comes first, so no part
// of it survives the cut.
func TestStampSecretAcrossCap(t *testing.T) {
	const sec = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI"
	red := NewRedactor([]string{sec})
	for at := 900; at < 1000; at += 3 {
		raw := strings.Repeat("x", at) + sec + strings.Repeat("y", 2000)
		out := Stamp(raw, Options{Redactor: red, Cap: 1024})
		for n := 8; n <= len(sec); n++ {
			if strings.Contains(out, sec[:n]) {
				t.Fatalf("secret at %d: its first %d bytes survive: %q", at, n, out)
			}
		}
	}
}

func TestStampTinyCap(t *testing.T) {
	out := Stamp(strings.Repeat("z", 50), Options{Cap: 10, Remaining: 40})
	if !strings.HasPrefix(out, "\n[result cut at the 10-byte cap") {
		t.Errorf("a cap smaller than the note keeps only the note, got %q", out)
	}
}
