//go:build !cgo

package graph

import (
	"context"
	"fmt"
	"io"
)

// inProcess is nil without cgo: files are parsed by guilds-code-parse.
var inProcess func(ctx context.Context, root string, todo []seen) []*File

// ParseMain is guilds-code-parse built without cgo: it cannot parse and says how to build it.
func ParseMain(args []string, in io.Reader, out, errOut io.Writer) int {
	fmt.Fprintf(errOut, "%s was built without cgo, so it has no tree-sitter grammars: build it with CGO_ENABLED=1 (`make build` does)\n", ParserName)
	return 1
}
