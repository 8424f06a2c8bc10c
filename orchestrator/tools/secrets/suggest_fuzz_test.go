package secrets

import (
	"strings"
	"testing"
)

// FuzzNameSuggestion: every secret name refused for storing gets a suggestion in its error, and
// the suggestion is itself accepted.
func FuzzNameSuggestion(f *testing.F) {
	for _, n := range []string{"lower-case-dash", "PATH", "GUILD_AGENT_ID", "9KEY", "", "_", "ß", "service api key", strings.Repeat("A", 70), "LD_" + strings.Repeat("X", 62)} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := checkNewName(name)
		if err == nil {
			return
		}
		s := SuggestName(name)
		if !strings.Contains(err.Error(), "e.g. "+s) {
			t.Fatalf("checkNewName(%q) = %q, which does not suggest %q", name, err, s)
		}
		if err := checkNewName(s); err != nil {
			t.Fatalf("the suggestion %q for %q is refused: %v", s, name, err)
		}
	})
}
