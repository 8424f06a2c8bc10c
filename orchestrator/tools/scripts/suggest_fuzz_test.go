package scripts

import (
	"strings"
	"testing"
)

// FuzzNameSuggestion: every script name CheckName refuses gets a suggestion in its error, and the
// suggestion is itself a valid name.
func FuzzNameSuggestion(f *testing.F) {
	for _, n := range []string{"manifest", "Get Weather", "../x", "9lives", "", "-", "é", "MANIFEST", strings.Repeat("a", 80), "a b"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := CheckName(name)
		if err == nil {
			return
		}
		s := SuggestName(name)
		if !strings.Contains(err.Error(), "e.g. "+s) {
			t.Fatalf("CheckName(%q) = %q, which does not suggest %q", name, err, s)
		}
		if err := CheckName(s); err != nil {
			t.Fatalf("the suggestion %q for %q is refused: %v", s, name, err)
		}
	})
}
