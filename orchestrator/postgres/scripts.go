package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
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

// PutScript creates or replaces an agent's script and, when runID is set, puts it in that run's
// snapshot in the same transaction. A new name is refused with ECONFLICT when the agent already has
// its config's max_scripts; the agent row is locked meanwhile (the limit is read from it under that
// lock), so concurrent creates, or a create beside a config change, cannot pass the limit. It
// reports whether the script is new.
func (s *Store) PutScript(ctx context.Context, sc orchestrator.Script, runID string, now time.Time) (bool, error) {
	created := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var orgID, guildID string
		var cfgJSON []byte
		err := tx.QueryRow(ctx, "SELECT org_id, guild_id, config FROM agents WHERE id = $1 FOR UPDATE", sc.AgentID).Scan(&orgID, &guildID, &cfgJSON)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("agent", sc.AgentID)
		}
		if err != nil {
			return err
		}
		var cfg orchestrator.AgentConfig
		if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
			return fmt.Errorf("agent %s config: %w", sc.AgentID, err)
		}
		max := cfg.ScriptLimit()
		if runID != "" {
			var has bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM run_script_snapshots WHERE run_id = $1 AND agent_id = $2)", runID, sc.AgentID).Scan(&has); err != nil {
				return err
			}
			if !has {
				return noSnapshot(runID)
			}
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
				return orchestrator.Errorf(orchestrator.ECONFLICT, "you already have %d scripts, the most your config allows (max_scripts %d); delete one with script_delete or replace one by creating it under its name", n, max)
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
		if _, err := tx.Exec(ctx, `INSERT INTO script_details (artifact_id, description, parameters, hash) VALUES ($1, $2, $3::jsonb, $4)
			ON CONFLICT (artifact_id) DO UPDATE SET description = EXCLUDED.description, parameters = EXCLUDED.parameters, hash = EXCLUDED.hash`,
			id, sc.Description, params, sc.Hash); err != nil {
			return err
		}
		if runID == "" {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO run_scripts (run_id, name, source, hash, description, parameters) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
			ON CONFLICT (run_id, name) DO UPDATE SET source = EXCLUDED.source, hash = EXCLUDED.hash,
				description = EXCLUDED.description, parameters = EXCLUDED.parameters`, runID, sc.Name, sc.Source, sc.Hash, sc.Description, params)
		return err
	})
	if err != nil {
		var noSnap *noSnapshotError
		if orchestrator.ErrorCode(err) != orchestrator.EINTERNAL || errors.As(err, &noSnap) {
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

// DeleteScript removes an agent's script from the catalog and, when runID is set, the name from
// that run's snapshot, in one transaction. A name in neither is ENOTFOUND.
func (s *Store) DeleteScript(ctx context.Context, agentID, runID, name string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM artifacts WHERE kind = 'script' AND level = 'agent' AND agent_id = $1 AND key = $2", agentID, name)
		if err != nil {
			return err
		}
		n := tag.RowsAffected()
		if runID != "" {
			if tag, err = tx.Exec(ctx, "DELETE FROM run_scripts WHERE run_id = $1 AND name = $2", runID, name); err != nil {
				return err
			}
			n += tag.RowsAffected()
		}
		if n == 0 {
			return notFound("script", name)
		}
		return nil
	})
	if err != nil {
		if orchestrator.ErrorCode(err) != orchestrator.EINTERNAL {
			return err
		}
		return fmt.Errorf("delete script %s: %w", name, err)
	}
	return nil
}

const runScriptColumns = "s.agent_id, rs.name, rs.description, rs.source, rs.parameters, rs.hash, s.taken_at"

// snapshotSQL takes a run's snapshot in one statement: the header (once per run id), then the
// agent's catalog copied under it and returned; when the header was there already (a retried
// start), the rows it holds. Snapshots of this agent's starts that never wrote their run row are
// swept once they are an hour old.
const snapshotSQL = `WITH hdr AS (
	INSERT INTO run_script_snapshots (run_id, agent_id, taken_at) VALUES ($1, $2, $3) ON CONFLICT (run_id) DO NOTHING RETURNING run_id
), ins AS (
	INSERT INTO run_scripts (run_id, name, source, hash, description, parameters)
	SELECT $1, a.key, a.content, d.hash, d.description, d.parameters FROM artifacts a JOIN script_details d ON d.artifact_id = a.id
	WHERE a.kind = 'script' AND a.level = 'agent' AND a.agent_id = $2 AND EXISTS (SELECT 1 FROM hdr)
	RETURNING name, description, source, parameters, hash
), swept AS (
	DELETE FROM run_script_snapshots s WHERE EXISTS (SELECT 1 FROM hdr) AND s.agent_id = $2 AND s.taken_at < $4 AND s.run_id <> $1
	AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = s.run_id)
)
SELECT $2::text, i.name, i.description, i.source, i.parameters, i.hash FROM ins i
UNION ALL
SELECT s.agent_id, rs.name, rs.description, rs.source, rs.parameters, rs.hash
FROM run_script_snapshots s LEFT JOIN run_scripts rs ON rs.run_id = s.run_id
WHERE s.run_id = $1 AND NOT EXISTS (SELECT 1 FROM hdr)`

// SnapshotRunScripts takes the snapshot of the agent's scripts (source, hash, description and
// parameters) for the run that is starting with id runID, and returns it by name. It is written
// before the run's row, keyed by the id: a start retried with the same id gets the snapshot taken
// first. A snapshot of another agent under that id is ECONFLICT. One statement, one round trip.
func (s *Store) SnapshotRunScripts(ctx context.Context, runID, agentID string, at time.Time) ([]orchestrator.Script, error) {
	rows, err := s.pool.Query(ctx, snapshotSQL, runID, agentID, at, at.Add(-time.Hour))
	if err != nil {
		return nil, fmt.Errorf("snapshot the run's scripts: %w", err)
	}
	defer rows.Close()
	out := []orchestrator.Script{}
	for rows.Next() {
		var owner string
		var name, desc, src, hash *string
		var params []byte
		if err := rows.Scan(&owner, &name, &desc, &src, &params, &hash); err != nil {
			return nil, fmt.Errorf("snapshot the run's scripts: %w", err)
		}
		if owner != agentID {
			return nil, orchestrator.Errorf(orchestrator.ECONFLICT, "run id %s already holds the script snapshot of another agent", runID)
		}
		if name == nil {
			continue // a snapshot without scripts
		}
		sc := orchestrator.Script{AgentID: owner, Name: *name, Description: *desc, Source: *src, Hash: *hash, UpdatedAt: at}
		if len(params) > 0 {
			sc.Parameters = json.RawMessage(params)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("snapshot the run's scripts: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// noSnapshotError is the error of a run without a script snapshot.
type noSnapshotError struct{ runID string }

func (e *noSnapshotError) Error() string {
	return fmt.Sprintf("run %s has no script snapshot: it was started without the script tools' start hook (runs.Service.Dynamic); start a new run", e.runID)
}

func noSnapshot(runID string) error { return &noSnapshotError{runID} }

// RunScripts lists the run's snapshot of its agent's scripts by name (UpdatedAt is when the
// snapshot was taken).
func (s *Store) RunScripts(ctx context.Context, runID string) ([]orchestrator.Script, error) {
	var has bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM run_script_snapshots WHERE run_id = $1)", runID).Scan(&has); err != nil {
		return nil, fmt.Errorf("list the run's scripts: %w", err)
	}
	if !has {
		return nil, noSnapshot(runID)
	}
	rows, err := s.pool.Query(ctx, "SELECT "+runScriptColumns+` FROM run_script_snapshots s JOIN run_scripts rs ON rs.run_id = s.run_id
		WHERE s.run_id = $1 ORDER BY rs.name`, runID)
	if err != nil {
		return nil, fmt.Errorf("list the run's scripts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Script, error) { return scanScript(r) })
	if err != nil {
		return nil, fmt.Errorf("list the run's scripts: %w", err)
	}
	return nonNil(out), nil
}

// RunScript returns a script as the run's snapshot holds it; one the snapshot lacks is ENOTFOUND.
func (s *Store) RunScript(ctx context.Context, runID, name string) (orchestrator.Script, error) {
	var sc orchestrator.Script
	var src, hash, desc *string
	var params []byte
	err := s.pool.QueryRow(ctx, `SELECT s.agent_id, rs.source, rs.hash, rs.description, rs.parameters FROM run_script_snapshots s
		LEFT JOIN run_scripts rs ON rs.run_id = s.run_id AND rs.name = $2 WHERE s.run_id = $1`, runID, name).Scan(&sc.AgentID, &src, &hash, &desc, &params)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return sc, noSnapshot(runID)
	case err != nil:
		return sc, fmt.Errorf("read script %s of run %s: %w", name, runID, err)
	case src == nil:
		return sc, orchestrator.Errorf(orchestrator.ENOTFOUND, "script %s is not among this run's scripts (a run sees the scripts as they were when it started, and its own changes); script_list shows them", name)
	}
	sc.Name, sc.Source, sc.Hash, sc.Description = name, *src, *hash, *desc
	if len(params) > 0 {
		sc.Parameters = json.RawMessage(params)
	}
	return sc, nil
}
