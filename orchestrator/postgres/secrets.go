package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// PutSealedSecret stores an agent's sealed secret under name (replacing one of that name) and
// marks the agent's pending requests for that name answered, in one transaction. A missing agent
// is ENOTFOUND.
func (s *Store) PutSealedSecret(ctx context.Context, agentID, name string, sealed []byte, at time.Time) (orchestrator.SecretInfo, error) {
	var out orchestrator.SecretInfo
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO agent_secrets (agent_id, name, sealed, created_at, updated_at)
			SELECT id, $2, $3, $4, $4 FROM agents WHERE id = $1
			ON CONFLICT (agent_id, name) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at
			RETURNING agent_id, name, created_at, updated_at`, agentID, name, sealed, at)
		if err != nil {
			return err
		}
		list, err := pgx.CollectRows(rows, scanSecretInfo)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return notFound("agent", agentID)
		}
		out = list[0]
		// Each request answered is reported (its name, never the value).
		rows, err = tx.Query(ctx, `UPDATE secret_requests r SET status = 'answered', answered_at = $3 FROM agents a
			WHERE r.agent_id = $1 AND r.name = $2 AND r.status = 'pending' AND a.id = r.agent_id
			RETURNING r.id, r.agent_id, coalesce(r.run_id, ''), r.name, r.reason, r.status, r.created_at, r.answered_at, a.org_id, a.guild_id`, agentID, name, at)
		if err != nil {
			return err
		}
		var evs []orchestrator.Event
		_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
			var q orchestrator.SecretRequest
			c := orchestrator.Chain{Scope: orchestrator.ScopeAgent}
			if err := r.Scan(&q.ID, &q.AgentID, &q.RunID, &q.Name, &q.Reason, &q.Status, &q.CreatedAt, &q.AnsweredAt, &c.OrgID, &c.GuildID); err != nil {
				return struct{}{}, err
			}
			c.AgentID = q.AgentID
			evs = append(evs, orchestrator.SecretAnsweredEvent(c, q))
			return struct{}{}, nil
		})
		if err != nil {
			return err
		}
		return appendEvents(ctx, tx, evs...)
	})
	if err != nil {
		if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
			return out, err
		}
		return out, fmt.Errorf("store secret %s of agent %s: %w", name, agentID, err)
	}
	return out, nil
}

func scanSecretInfo(r pgx.CollectableRow) (orchestrator.SecretInfo, error) {
	var i orchestrator.SecretInfo
	return i, r.Scan(&i.AgentID, &i.Name, &i.CreatedAt, &i.UpdatedAt)
}

// ListSecrets lists an agent's secrets by name, without values.
func (s *Store) ListSecrets(ctx context.Context, agentID string) ([]orchestrator.SecretInfo, error) {
	rows, err := s.pool.Query(ctx, "SELECT agent_id, name, created_at, updated_at FROM agent_secrets WHERE agent_id = $1 ORDER BY name", agentID)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanSecretInfo)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return nonNil(out), nil
}

// SealedSecrets returns every sealed secret of an agent, keyed by name (for the run's redaction set).
func (s *Store) SealedSecrets(ctx context.Context, agentID string) (map[string][]byte, error) {
	rows, err := s.pool.Query(ctx, "SELECT name, sealed FROM agent_secrets WHERE agent_id = $1", agentID)
	if err != nil {
		return nil, fmt.Errorf("read secrets of agent %s: %w", agentID, err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var name string
		var b []byte
		if err := rows.Scan(&name, &b); err != nil {
			return nil, fmt.Errorf("read secrets of agent %s: %w", agentID, err)
		}
		out[name] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read secrets of agent %s: %w", agentID, err)
	}
	return out, nil
}

// DeleteSecret removes one secret of an agent; a missing one is ENOTFOUND.
func (s *Store) DeleteSecret(ctx context.Context, agentID, name string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM agent_secrets WHERE agent_id = $1 AND name = $2", agentID, name)
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("secret", name)
	}
	return nil
}

// CreateSecretRequest stores an agent's pending request for a secret and reports
// secret.requested in the same transaction (the call's, for secret_request).
func (s *Store) CreateSecretRequest(ctx context.Context, r orchestrator.SecretRequest) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		c := orchestrator.Chain{Scope: orchestrator.ScopeAgent, AgentID: r.AgentID}
		err := tx.QueryRow(ctx, `INSERT INTO secret_requests (id, agent_id, run_id, name, reason, status, created_at)
			SELECT $1, id, (SELECT id FROM runs WHERE id = NULLIF($3, '')), $4, $5, 'pending', $6 FROM agents WHERE id = $2
			RETURNING coalesce(run_id, ''), (SELECT org_id FROM agents WHERE id = $2), (SELECT guild_id FROM agents WHERE id = $2)`,
			r.ID, r.AgentID, r.RunID, r.Name, r.Reason, r.CreatedAt).Scan(&r.RunID, &c.OrgID, &c.GuildID)
		if err != nil {
			return err
		}
		r.Status = orchestrator.SecretRequestPending
		return appendEvents(ctx, tx, orchestrator.SecretRequestedEvent(c, r))
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("agent", r.AgentID)
	}
	if err != nil {
		return fmt.Errorf("request secret %s: %w", r.Name, err)
	}
	return nil
}

// ListSecretRequests lists an agent's secret requests, oldest first; status "" means every status.
func (s *Store) ListSecretRequests(ctx context.Context, agentID, status string) ([]orchestrator.SecretRequest, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, agent_id, coalesce(run_id, ''), name, reason, status, created_at, answered_at
		FROM secret_requests WHERE agent_id = $1 AND ($2 = '' OR status = $2) ORDER BY created_at, id`, agentID, status)
	if err != nil {
		return nil, fmt.Errorf("list secret requests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.SecretRequest, error) {
		var q orchestrator.SecretRequest
		return q, r.Scan(&q.ID, &q.AgentID, &q.RunID, &q.Name, &q.Reason, &q.Status, &q.CreatedAt, &q.AnsweredAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list secret requests: %w", err)
	}
	return nonNil(out), nil
}
