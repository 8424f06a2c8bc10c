// Command crashparse is guilds-code-parse that dies of SIGSEGV, as a grammar crashing on a hostile
// file would, when it reaches a file whose name starts with "crash"; the worker tests start it.
package main

import (
	"context"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
)

func main() {
	err := graph.ServeParse(context.Background(), os.Stdin, os.Stdout, os.NewFile(3, "slots"), func(rel string) {
		if strings.HasPrefix(path.Base(rel), "crash") {
			_ = syscall.Kill(os.Getpid(), syscall.SIGSEGV)
			select {}
		}
	})
	if err != nil {
		os.Exit(1)
	}
}
