// Package walletpg is the Wallet's nonce store in PostgreSQL: a row lock per (chain id, address)
// held across the signing and broadcast, shared by every replica on the database.
package walletpg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet"
)

// Nonces is wallet.Nonces over the wallet_nonces table.
type Nonces struct {
	Pool *pgxpool.Pool
}

var _ wallet.Nonces = Nonces{}

// Use locks the (chain, address) row for the length of fn, in one transaction; what fn returns
// is committed even when the caller's context ended meanwhile (a broadcast happened).
func (n Nonces) Use(ctx context.Context, chainID uint64, address string, fn func(*wallet.NonceState) (*wallet.NonceState, error)) error {
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
	var stored *wallet.NonceState
	if next != nil {
		stored = &wallet.NonceState{Next: uint64(*next), Hash: hash}
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
