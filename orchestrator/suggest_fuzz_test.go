package orchestrator

import (
	"strings"
	"testing"
)

// FuzzCollectionSuggestion: every collection or column name ValidateCollection refuses gets a
// suggestion in its error, and a collection declared with the suggestions is accepted.
func FuzzCollectionSuggestion(f *testing.F) {
	for _, n := range []string{"Tasks", "my tasks", "9lives", "", "_x", "é", "id", "created_at", strings.Repeat("a", 80), "a-b"} {
		f.Add(n, n)
	}
	f.Fuzz(func(t *testing.T, name, column string) {
		err := ValidateCollection(name, []Column{{Name: column, Type: ColText}})
		if err == nil {
			return
		}
		sn, sc := name, column
		if !nameOfCollection.MatchString(name) {
			sn = SuggestCollectionName(name)
			if !strings.Contains(err.Error(), "e.g. "+sn) {
				t.Fatalf("name %q: %q does not suggest %q", name, err, sn)
			}
		}
		if !nameOfColumn.MatchString(column) || reservedColumns[column] {
			sc = SuggestColumnName(column)
			if !strings.Contains(err.Error(), "e.g. "+sc) {
				t.Fatalf("column %q: %q does not suggest %q", column, err, sc)
			}
		}
		if err := ValidateCollection(sn, []Column{{Name: sc, Type: ColText}}); err != nil {
			t.Fatalf("the suggestions %q, %q for %q, %q are refused: %v", sn, sc, name, column, err)
		}
	})
}
