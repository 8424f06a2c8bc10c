package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// oidcStateColumns is the column list scanOIDCState reads.
const oidcStateColumns = "state_hash, nonce_hash, verifier, return_to, redirect_uri, created_at, expires_at, used_at"

// scanOIDCState reads one oidc_states row (oidcStateColumns).
func scanOIDCState(r pgx.Row) (orchestrator.OIDCState, error) {
	var st orchestrator.OIDCState
	return st, r.Scan(&st.Hash, &st.NonceHash, &st.Verifier, &st.ReturnTo, &st.RedirectURI, &st.CreatedAt, &st.ExpiresAt, &st.UsedAt)
}

// PutOIDCState stores a single sign-on's state, and drops the states that expired over a day ago.
func (s *Store) PutOIDCState(ctx context.Context, st orchestrator.OIDCState) error {
	b := &pgx.Batch{}
	b.Queue("DELETE FROM oidc_states WHERE expires_at < $1", st.CreatedAt.Add(-keepExpired))
	b.Queue(`INSERT INTO oidc_states (state_hash, nonce_hash, verifier, return_to, redirect_uri, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, st.Hash, st.NonceHash, st.Verifier, st.ReturnTo, st.RedirectURI, st.CreatedAt, st.ExpiresAt)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store the single sign-on state: %w", err)
	}
	return nil
}

// TakeOIDCState marks a state used and returns it, once, while it has not expired; a used or
// expired state comes back as it stands with taken false, an unknown one is ENOTFOUND.
func (s *Store) TakeOIDCState(ctx context.Context, hash []byte, now time.Time) (orchestrator.OIDCState, bool, error) {
	st, err := scanOIDCState(s.pool.QueryRow(ctx, `UPDATE oidc_states SET used_at = $2
		WHERE state_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING `+oidcStateColumns, hash, now))
	if err == nil {
		return st, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return st, false, fmt.Errorf("take the single sign-on state: %w", err)
	}
	st, err = scanOIDCState(s.pool.QueryRow(ctx, "SELECT "+oidcStateColumns+" FROM oidc_states WHERE state_hash = $1", hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, orchestrator.Errorf(orchestrator.ENOTFOUND, "no single sign-on has this state")
	}
	if err != nil {
		return st, false, fmt.Errorf("read the single sign-on state: %w", err)
	}
	return st, false, nil
}
