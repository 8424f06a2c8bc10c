//go:build cgo

package extract

import "github.com/guildsai/guilds/helpers/guilds-code/internal/graph"

func init() { graph.NewExtractor = func() graph.Extractor { return New() } }
