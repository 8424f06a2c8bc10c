package postgres

import (
	"context"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// db is the stores' handle on the database: the pool, except that a statement whose ctx carries a
// call's transaction (CompleteWith) runs in that transaction, so a native tool's writes and its
// call's completion commit together without the stores knowing. What it does not override (Acquire,
// Ping, Stat) is the pool's.
type db struct{ *pgxpool.Pool }

// callTxKey carries a call's transaction in a context.
type callTxKey struct{}

// callTx returns the call's transaction ctx carries, or nil.
func callTx(ctx context.Context) pgx.Tx {
	tx, _ := ctx.Value(callTxKey{}).(pgx.Tx)
	return tx
}

// Exec runs sql in the call's transaction, or on the pool.
func (d db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if tx := callTx(ctx); tx != nil {
		return tx.Exec(ctx, sql, args...)
	}
	return d.Pool.Exec(ctx, sql, args...)
}

// Query runs sql in the call's transaction, or on the pool.
func (d db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if tx := callTx(ctx); tx != nil {
		return tx.Query(ctx, sql, args...)
	}
	return d.Pool.Query(ctx, sql, args...)
}

// QueryRow runs sql in the call's transaction, or on the pool.
func (d db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if tx := callTx(ctx); tx != nil {
		return tx.QueryRow(ctx, sql, args...)
	}
	return d.Pool.QueryRow(ctx, sql, args...)
}

// SendBatch sends b in the call's transaction, or on the pool.
func (d db) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if tx := callTx(ctx); tx != nil {
		return tx.SendBatch(ctx, b)
	}
	return d.Pool.SendBatch(ctx, b)
}

// Begin opens a transaction: a savepoint inside the call's transaction, or one on the pool.
func (d db) Begin(ctx context.Context) (pgx.Tx, error) {
	if tx := callTx(ctx); tx != nil {
		return tx.Begin(ctx)
	}
	return d.Pool.Begin(ctx)
}

// CompleteWith runs work with a ctx whose store statements share one transaction, then stores the
// call work returns as completed in that transaction and commits: a native tool's writes and its
// call's completion land together or not at all. When work says its writes must not stay (the tool
// failed), the transaction is rolled back and the completion stored alone. An error means nothing
// of it was stored.
func (s *Store) CompleteWith(ctx context.Context, work func(ctx context.Context) (orchestrator.ToolCall, bool)) error {
	tx, err := s.pool.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin a call's transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	call, keep := work(context.WithValue(ctx, callTxKey{}, tx))
	if !keep {
		if err := tx.Rollback(ctx); err != nil {
			return fmt.Errorf("roll back a failed call's writes: %w", err)
		}
		return s.CompleteCall(ctx, call)
	}
	if err := s.CompleteCall(context.WithValue(ctx, callTxKey{}, tx), call); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit call %d of run %s: %w", call.Seq, call.RunID, err)
	}
	return nil
}
