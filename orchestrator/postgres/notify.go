package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// IdentityChannel is the channel the identity tables' triggers notify on.
const IdentityChannel = "guilds_identity"

// RunsChannel is the channel a run's id is announced on when its offered tools or its status
// change (a new generation, a close), by whichever replica changed it.
const RunsChannel = "guilds_runs"

// Listener delivers a channel's notices from a connection of its own, reconnecting with a
// growing wait when it drops.
type Listener struct {
	Pool    *pgxpool.Pool
	Channel string
	Log     *slog.Logger
}

// Listen calls handle with each notice's payload until ctx ends. live(true) is called once the
// channel is listened to, live(false) whenever it stops (notices may then be missed: the caller
// drops what it cached).
func (l Listener) Listen(ctx context.Context, handle func(string), live func(bool)) {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listenOnce(ctx, handle, live, func() { wait = 100 * time.Millisecond })
		live(false)
		if ctx.Err() != nil {
			return
		}
		if l.Log != nil {
			l.Log.Warn("change notices stopped: reconnecting (what they announce is read from the database meanwhile)", "channel", l.Channel, "err", err.Error(), "retry_in", wait.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// listenOnce holds one connection listening until it fails or ctx ends.
func (l Listener) listenOnce(ctx context.Context, handle func(string), live func(bool), ok func()) error {
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool: it holds a LISTEN, and a cancelled wait may leave it unusable.
	raw := conn.Hijack()
	defer raw.Close(context.WithoutCancel(ctx))
	if _, err := raw.Exec(ctx, "LISTEN "+pgx.Identifier{l.Channel}.Sanitize()); err != nil {
		return err
	}
	live(true)
	ok()
	for {
		n, err := raw.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		handle(n.Payload)
	}
}
