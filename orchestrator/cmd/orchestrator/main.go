// Command orchestrator is the guilds orchestrator: `serve` runs the operator API, `migrate` applies
// the database migrations.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.LookupEnv, os.Stdin, os.Stdout, os.Stderr, hooks{}))
}
