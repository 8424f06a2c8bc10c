package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/guildsai/guilds/orchestrator"
)

// WalletNonces is the Wallet's nonce store (the wallet's Nonces) over the wallet_nonces table: a
// row lock per (chain id, address) held across the signing and broadcast, shared by every replica
// on the database. Within one process a send first waits its turn on a lock of its own (holding no
// database connection), so at most one connection per (chain, address) and replica waits on the
// row: concurrent sends never starve the shared pool.
type WalletNonces struct {
	Pool  *pgxpool.Pool
	mu    sync.Mutex
	turns map[string]chan struct{}
}

// turn is the (chain, address)'s in-process turn, a channel of one slot.
func (n *WalletNonces) turn(key string) chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.turns == nil {
		n.turns = map[string]chan struct{}{}
	}
	c := n.turns[key]
	if c == nil {
		c = make(chan struct{}, 1)
		n.turns[key] = c
	}
	return c
}

// Use locks the (chain, address) row for the length of fn, in one transaction; what fn returns
// is committed even when the caller's context ended meanwhile (a broadcast happened).
func (n *WalletNonces) Use(ctx context.Context, chainID uint64, address string, fn func(*orchestrator.NonceState) (*orchestrator.NonceState, error)) error {
	turn := n.turn(strconv.FormatUint(chainID, 10) + "/" + address)
	select {
	case turn <- struct{}{}:
		defer func() { <-turn }()
	case <-ctx.Done():
		return fmt.Errorf("wait for the wallet nonce: %w", ctx.Err())
	}
	tx, err := n.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("wallet nonce: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `INSERT INTO wallet_nonces (chain_id, address) VALUES ($1, $2) ON CONFLICT DO NOTHING`, int64(chainID), address); err != nil {
		return fmt.Errorf("wallet nonce row: %w", err)
	}
	var next *int64
	var hash string
	if err := tx.QueryRow(ctx, `SELECT next_nonce, last_hash FROM wallet_nonces WHERE chain_id = $1 AND address = $2 FOR UPDATE`, int64(chainID), address).Scan(&next, &hash); err != nil {
		return fmt.Errorf("lock the wallet nonce: %w", err)
	}
	var stored *orchestrator.NonceState
	if next != nil {
		stored = &orchestrator.NonceState{Next: uint64(*next), Hash: hash}
	}
	out, fnErr := fn(stored)
	if out == nil {
		return fnErr
	}
	bg := context.WithoutCancel(ctx)
	if _, err := tx.Exec(bg, `UPDATE wallet_nonces SET next_nonce = $3, last_hash = $4, updated_at = now() WHERE chain_id = $1 AND address = $2`,
		int64(chainID), address, int64(out.Next), out.Hash); err != nil {
		return errors.Join(fnErr, fmt.Errorf("record the wallet nonce: %w", err))
	}
	if err := tx.Commit(bg); err != nil {
		return errors.Join(fnErr, fmt.Errorf("record the wallet nonce: commit: %w", err))
	}
	return fnErr
}
