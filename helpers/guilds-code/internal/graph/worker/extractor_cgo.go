//go:build cgo

package worker

import "github.com/guildsai/guilds/helpers/guilds-code/internal/graph/extract"

// newExtractor makes a tree-sitter Extractor in this process.
var newExtractor = func() Extractor { return extract.New() }
