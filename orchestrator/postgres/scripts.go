package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

const scriptColumns = "a.agent_id, a.key, d.description, a.content, d.parameters, d.hash, a.updated_at"

func scanScript(r pgx.Row) (orchestrator.Script, error) {
	var s orchestrator.Script
	var params []byte
	err := r.Scan(&s.AgentID, &s.Name, &s.Description, &s.Source, &params, &s.Hash, &s.UpdatedAt)
	if len(params) > 0 {
		s.Parameters = json.RawMessage(params)
	}
	return s, err
}

// PutScript creates or replaces an agent's script. A new name is refused with ECONFLICT when the
// agent already has max scripts; the agent row is locked meanwhile, so concurrent creates cannot
// pass the limit. It reports whether the script is new.
func (s *Store) PutScript(ctx context.Context, sc orchestrator.Script, max int, now time.Time) (bool, error) {
	created := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var orgID, guildID string
		err := tx.QueryRow(ctx, "SELECT org_id, guild_id FROM agents WHERE id = $1 FOR UPDATE", sc.AgentID).Scan(&orgID, &guildID)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("agent", sc.AgentID)
		}
		if err != nil {
			return err
		}
		var id string
		err = tx.QueryRow(ctx, "SELECT id FROM artifacts WHERE kind = 'script' AND level = 'agent' AND agent_id = $1 AND key = $2", sc.AgentID, sc.Name).Scan(&id)
		var params any
		if len(sc.Parameters) > 0 {
			params = string(sc.Parameters)
		}
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM artifacts WHERE kind = 'script' AND level = 'agent' AND agent_id = $1", sc.AgentID).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return orchestrator.Errorf(orchestrator.ECONFLICT, "you already have %d scripts, the most allowed (max_scripts %d); delete one with script_delete or replace one by creating it under its name", n, max)
			}
			id = orchestrator.NewID("art")
			if _, err := tx.Exec(ctx, `INSERT INTO artifacts (id, kind, level, org_id, guild_id, agent_id, key, content, created_at, updated_at)
				VALUES ($1, 'script', 'agent', $2, $3, $4, $5, $6, $7, $7)`, id, orgID, guildID, sc.AgentID, sc.Name, sc.Source, now); err != nil {
				return err
			}
			created = true
		case err != nil:
			return err
		default:
			if _, err := tx.Exec(ctx, "UPDATE artifacts SET content = $2, updated_at = $3 WHERE id = $1", id, sc.Source, now); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO script_details (artifact_id, description, parameters, hash) VALUES ($1, $2, $3::jsonb, $4)
			ON CONFLICT (artifact_id) DO UPDATE SET description = EXCLUDED.description, parameters = EXCLUDED.parameters, hash = EXCLUDED.hash`,
			id, sc.Description, params, sc.Hash)
		return err
	})
	if err != nil {
		if orchestrator.ErrorCode(err) != orchestrator.EINTERNAL {
			return false, err
		}
		return false, fmt.Errorf("save script %s: %w", sc.Name, err)
	}
	return created, nil
}

// ListScripts lists an agent's scripts by name.
func (s *Store) ListScripts(ctx context.Context, agentID string) ([]orchestrator.Script, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+scriptColumns+` FROM artifacts a JOIN script_details d ON d.artifact_id = a.id
		WHERE a.kind = 'script' AND a.level = 'agent' AND a.agent_id = $1 ORDER BY a.key`, agentID)
	if err != nil {
		return nil, fmt.Errorf("list scripts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Script, error) { return scanScript(r) })
	if err != nil {
		return nil, fmt.Errorf("list scripts: %w", err)
	}
	return nonNil(out), nil
}

// DeleteScript removes an agent's script from the catalog; a missing one is ENOTFOUND.
func (s *Store) DeleteScript(ctx context.Context, agentID, name string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM artifacts WHERE kind = 'script' AND level = 'agent' AND agent_id = $1 AND key = $2", agentID, name)
	if err != nil {
		return fmt.Errorf("delete script %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("script", name)
	}
	return nil
}

// SnapshotRunScripts takes the run's snapshot of its agent's scripts (source and hash) unless it
// was taken already; later catalog changes do not reach it.
func (s *Store) SnapshotRunScripts(ctx context.Context, runID, agentID string, at time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "INSERT INTO run_script_snapshots (run_id, taken_at) SELECT id, $2 FROM runs WHERE id = $1 ON CONFLICT DO NOTHING", runID, at)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO run_scripts (run_id, name, source, hash)
			SELECT $1, a.key, a.content, d.hash FROM artifacts a JOIN script_details d ON d.artifact_id = a.id
			WHERE a.kind = 'script' AND a.level = 'agent' AND a.agent_id = $2`, runID, agentID)
		return err
	})
	if err != nil {
		return fmt.Errorf("snapshot the run's scripts: %w", err)
	}
	return nil
}

// RunScript returns a script as the run's snapshot holds it; one the snapshot lacks is ENOTFOUND.
func (s *Store) RunScript(ctx context.Context, runID, name string) (source, hash string, err error) {
	err = s.pool.QueryRow(ctx, "SELECT source, hash FROM run_scripts WHERE run_id = $1 AND name = $2", runID, name).Scan(&source, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", orchestrator.Errorf(orchestrator.ENOTFOUND, "script %s is not among this run's scripts; script_list shows them", name)
	}
	if err != nil {
		return "", "", fmt.Errorf("read script %s of run %s: %w", name, runID, err)
	}
	return source, hash, nil
}

// PutRunScript adds or replaces a script in the run's snapshot.
func (s *Store) PutRunScript(ctx context.Context, runID, name, source, hash string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO run_scripts (run_id, name, source, hash) SELECT id, $2, $3, $4 FROM runs WHERE id = $1
		ON CONFLICT (run_id, name) DO UPDATE SET source = EXCLUDED.source, hash = EXCLUDED.hash`, runID, name, source, hash)
	if err != nil {
		return fmt.Errorf("update the run's script %s: %w", name, err)
	}
	return nil
}

// DeleteRunScript removes a name from the run's snapshot.
func (s *Store) DeleteRunScript(ctx context.Context, runID, name string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM run_scripts WHERE run_id = $1 AND name = $2", runID, name); err != nil {
		return fmt.Errorf("drop script %s from run %s: %w", name, runID, err)
	}
	return nil
}
