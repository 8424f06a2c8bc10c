package notes

import (
	"strings"
	"testing"
)

// FuzzKeySuggestion: every key ValidKey refuses gets a suggestion in its error, and the suggestion
// is itself a valid key.
func FuzzKeySuggestion(f *testing.F) {
	for _, k := range []string{"../../etc/passwd", ".md", "..md", "a/b.md", "plan.txt", ".hidden.md", "plan.md.", "", "/", "\\\\x",
		"a\x00b.md", "\xff.md", strings.Repeat("é", 150) + ".md", "-/.md", " .md", "\u0085.md", "plan"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := ValidKey(key)
		if err == nil {
			return
		}
		s := SuggestKey(key)
		if key == "" {
			s = "plan.md"
		}
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("ValidKey(%q) = %q, which does not suggest %q", key, err, s)
		}
		if err := ValidKey(s); err != nil {
			t.Fatalf("the suggestion %q for %q is refused: %v", s, key, err)
		}
	})
}

// TestKeySuggestions: the suggestions the issue found refused are now valid keys.
func TestKeySuggestions(t *testing.T) {
	for key, want := range map[string]string{"../../etc/passwd": "etc-passwd.md", ".md": "note.md", "a/b.md": "a-b.md", "plan.txt": "plan.txt.md", ".hidden.md": "hidden.md"} {
		if got := SuggestKey(key); got != want {
			t.Errorf("SuggestKey(%q) = %q, want %q", key, got, want)
		}
	}
}
