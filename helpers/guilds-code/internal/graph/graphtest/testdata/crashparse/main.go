// Command crashparse is guilds-code-parse that dies of SIGSEGV, as a grammar crashing on a hostile
// file would, when it reaches a file whose name starts with "crash", and that hangs on a file whose
// name starts with "stall" until it is asked to stop (SIGTERM); the worker tests start it.
package main

import (
	"context"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := worker.ServeParse(ctx, os.Stdin, os.Stdout, os.NewFile(3, "slots"), func(rel string) {
		switch base := path.Base(rel); {
		case strings.HasPrefix(base, "crash"):
			_ = syscall.Kill(os.Getpid(), syscall.SIGSEGV)
			select {}
		case strings.HasPrefix(base, "stall"):
			<-ctx.Done()
		}
	})
	if err != nil {
		os.Exit(1)
	}
}
