package graphtools

import (
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/store"
)

// TestBudgetRunsOut: an answer from a graph the budget left incomplete says what is missing (store's
// TestBudgetRunsOut checks that such a build keeps the parsed files and counts the rest).
func TestBudgetRunsOut(t *testing.T) {
	r := &repo{g: &store.Graph{Missing: 3}}
	if note := r.missingNote(nil); note == "" {
		t.Fatal("missing files must be reported")
	}
}
