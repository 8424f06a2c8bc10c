// Command guilds-code-parse parses source files with tree-sitter for guilds-code, which is built
// without cgo and starts it only when files need (re)parsing: a request on standard input, one
// record per file on standard output.
package main

import (
	"os"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"
)

func main() { os.Exit(worker.ParseMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
