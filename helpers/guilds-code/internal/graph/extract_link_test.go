package graph_test

// The tests parse in process, as builds with cgo do: linking extract sets graph.NewExtractor.
import _ "github.com/guildsai/guilds/helpers/guilds-code/internal/graph/extract"
