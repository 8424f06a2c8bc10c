package app

import "github.com/guildsai/guilds/helpers/guilds-code/internal/graph"

func init() {
	register(map[string]Handler{
		"code_map":     graph.Map,
		"code_find":    graph.Find,
		"code_outline": graph.Outline,
		"code_callers": graph.Callers,
	})
}
