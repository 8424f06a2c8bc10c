package orchestrator

import (
	"strings"
	"testing"
)

// FuzzNoteKeySuggestion: every key ValidNoteKey refuses gets a suggestion in its error, and the suggestion
// is itself a valid key.
func FuzzNoteKeySuggestion(f *testing.F) {
	for _, k := range []string{"../../etc/passwd", ".md", "..md", "a/b.md", "plan.txt", ".hidden.md", "plan.md.", "", "/", "\\\\x",
		"a\x00b.md", "\xff.md", strings.Repeat("é", 150) + ".md", "-/.md", " .md", "\u0085.md", "plan"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := ValidNoteKey(key)
		if err == nil {
			return
		}
		s := SuggestNoteKey(key)
		if key == "" {
			s = "plan.md"
		}
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("ValidNoteKey(%q) = %q, which does not suggest %q", key, err, s)
		}
		if err := ValidNoteKey(s); err != nil {
			t.Fatalf("the suggestion %q for %q is refused: %v", s, key, err)
		}
	})
}

// TestNoteKeySuggestions: the suggestions the issue found refused are now valid keys.
func TestNoteKeySuggestions(t *testing.T) {
	for key, want := range map[string]string{"../../etc/passwd": "etc-passwd.md", ".md": "note.md", "a/b.md": "a-b.md", "plan.txt": "plan.txt.md", ".hidden.md": "hidden.md"} {
		if got := SuggestNoteKey(key); got != want {
			t.Errorf("SuggestNoteKey(%q) = %q, want %q", key, got, want)
		}
	}
}
