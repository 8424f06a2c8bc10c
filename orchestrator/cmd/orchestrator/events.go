package main

import (
	"context"
	"log/slog"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// startEvents runs what keeps going beside the API until the returned stop: the outbox's delivery
// (woken by the events channel's notices), and the sweep that closes idle and missed runs.
func startEvents(ctx context.Context, pool *pgxpool.Pool, g *wire.Graph, log *slog.Logger) (stop func()) {
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{}, 3)
	run := func(f func()) { go func() { defer func() { done <- struct{}{} }(); f() }() }
	run(func() {
		postgres.Listener{Pool: pool, Channel: postgres.EventsChannel, Log: log}.Listen(bg, g.Events.Notify, g.Events.Live)
	})
	run(func() { g.Events.Run(bg) })
	run(func() { g.Runs.KeepSweeping(bg) })
	return func() {
		cancel()
		for range 3 {
			<-done
		}
	}
}
