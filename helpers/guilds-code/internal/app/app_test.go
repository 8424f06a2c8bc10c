package app

import (
	"slices"
	"testing"

	"github.com/guildsai/guilds/shared/toolspec"
)

// TestToolsMatchSpec: guilds-code runs exactly the code tools toolspec defines.
func TestToolsMatchSpec(t *testing.T) {
	want := toolspec.Names(toolspec.Code)
	slices.Sort(want)
	if got := helper.Names(); !slices.Equal(got, want) {
		t.Fatalf("guilds-code runs %v, toolspec defines %v", got, want)
	}
}
