//go:build cgo

package extract

import "github.com/guildsai/guilds/helpers/guilds-code/internal/graph"

// fixtures is the shared folder of fixture repositories.
const fixtures = "../../../../../testdata/repos"

// langs lists every language of the graph, in its order.
var langs = func() []*graph.Lang {
	var out []*graph.Lang
	for _, name := range graph.LangNames() {
		out = append(out, graph.LangNamed(name))
	}
	return out
}()
