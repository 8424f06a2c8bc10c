package app

import (
	"slices"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-browser/internal/browse"
	"github.com/guildsai/guilds/shared/toolspec"
)

// TestToolsMatchSpec: guilds-browser and its daemon run exactly the browser tools toolspec defines.
func TestToolsMatchSpec(t *testing.T) {
	t.Parallel()
	want := toolspec.Names(toolspec.Browser)
	slices.Sort(want)
	if got := helper.Names(); !slices.Equal(got, want) {
		t.Fatalf("guilds-browser runs %v, toolspec defines %v", got, want)
	}
	if got := browse.Names(); !slices.Equal(got, want) {
		t.Fatalf("the daemon runs %v, toolspec defines %v", got, want)
	}
}
