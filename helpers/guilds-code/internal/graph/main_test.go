package graph_test

import (
	"os"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
)

// TestMain removes the worker binaries built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	graphtest.RemoveWorkerBins()
	os.Exit(code)
}
