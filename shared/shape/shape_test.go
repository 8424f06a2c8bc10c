package shape

import (
	"fmt"
	"strings"
	"testing"
)

func TestPrefixSuffix(t *testing.T) {
	tests := []struct {
		s        string
		n        int
		pre, suf string
	}{
		{"hello", 10, "hello", "hello"},
		{"hello", 5, "hello", "hello"},
		{"hello", 3, "hel", "llo"},
		{"hello", 0, "", ""},
		{"hello", -1, "", ""},
		{"héllo", 2, "h", "lo"}, // é is two bytes: the cut moves off its middle
		{"日本", 4, "日", "本"},     // three-byte characters
		{"日本", 2, "", ""},
		{"a日", 3, "a", "日"},
	}
	for _, tt := range tests {
		if got := Prefix(tt.s, tt.n); got != tt.pre {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.pre)
		}
		if got := Suffix(tt.s, tt.n); got != tt.suf {
			t.Errorf("Suffix(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.suf)
		}
	}
}

func TestClipLine(t *testing.T) {
	tests := []struct {
		line string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven chars", 6, "eleven… [6 more characters]"},
		{"日本語テキスト", 3, "日本語… [4 more characters]"},
	}
	for _, tt := range tests {
		if got := ClipLine(tt.line, tt.max); got != tt.want {
			t.Errorf("ClipLine(%q, %d) = %q, want %q", tt.line, tt.max, got, tt.want)
		}
	}
}

func TestFitLines(t *testing.T) {
	lines := []string{"aaaa", "bbbb", "cccc", "dddd"}
	note := func(n int) string { return fmt.Sprintf("… %d more", n) }
	tests := []struct {
		limit   int
		want    string
		leftOut int
	}{
		{100, "H\naaaa\nbbbb\ncccc\ndddd\n", 0},
		{22, "H\naaaa\nbbbb\ncccc\ndddd\n", 0}, // exactly fits
		{21, "H\naaaa\n… 3 more\n", 3},         // the note needs room too
		{5, "H\n… 4 more\n", 4},
	}
	for _, tt := range tests {
		got, left := FitLines("H\n", lines, tt.limit, note)
		if got != tt.want || left != tt.leftOut {
			t.Errorf("FitLines(limit %d) = %q, %d; want %q, %d", tt.limit, got, left, tt.want, tt.leftOut)
		}
		if tt.leftOut > 0 && len(got) > tt.limit && !strings.HasPrefix(got, "H\n…") {
			t.Errorf("FitLines(limit %d) is %d bytes, over the limit", tt.limit, len(got))
		}
	}
}
