package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// This file holds the artifact store's notes and memory; collections.go and records.go hold the
// collections and their records.

const artifactColumns = "id, kind, level, org_id, COALESCE(guild_id, ''), COALESCE(agent_id, ''), key, content, created_at, updated_at"

func scanArtifact(r pgx.Row) (orchestrator.Artifact, error) {
	var a orchestrator.Artifact
	err := r.Scan(&a.ID, &a.Kind, &a.Level, &a.OrgID, &a.GuildID, &a.AgentID, &a.Key, &a.Content, &a.CreatedAt, &a.UpdatedAt)
	return a, err
}

// ArtifactGrantBindings returns the artifact_grant binding rows of an agent's chain.
func (s *Store) ArtifactGrantBindings(ctx context.Context, orgID, guildID, agentID string) ([]orchestrator.Binding, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+bindingColumns+" FROM bindings b WHERE b.catalog_kind = 'artifact_grant' AND "+chainWhere, orgID, guildID, agentID)
	if err != nil {
		return nil, fmt.Errorf("read artifact grants of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Binding, error) { return scanBinding(r) })
	if err != nil {
		return nil, fmt.Errorf("read artifact grants of agent %s: %w", agentID, err)
	}
	return out, nil
}

// noteOwnerWhere selects notes of the owners $1 (org), $2 (guild), $3 (agent).
const noteOwnerWhere = `kind = 'note' AND ((level = 'org' AND owner = $1) OR (level = 'guild' AND owner = $2) OR (level = 'agent' AND owner = $3))`

// FindNotes lists the notes owned by the organisation, guild and agent given (an empty id leaves
// that level out), newest change first, at most limit. A non-empty query matches in the websearch
// grammar, or as a substring when substring is set (a single token).
func (s *Store) FindNotes(ctx context.Context, orgID, guildID, agentID, query string, substring bool, limit int) ([]orchestrator.Artifact, error) {
	sql := "SELECT " + artifactColumns + " FROM artifacts WHERE " + noteOwnerWhere
	args := []any{nullable(orgID), nullable(guildID), nullable(agentID)}
	switch {
	case query == "":
	case substring:
		sql += ` AND strpos(lower(key || ' ' || content), lower($4)) > 0`
		args = append(args, query)
	default:
		sql += ` AND search @@ websearch_to_tsquery('simple', $4)`
		args = append(args, query)
	}
	sql += fmt.Sprintf(" ORDER BY updated_at DESC, id LIMIT %d", limit)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("find notes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Artifact, error) { return scanArtifact(r) })
	if err != nil {
		return nil, fmt.Errorf("find notes: %w", err)
	}
	return out, nil
}

// GetNote reads the note key at level of owner.
func (s *Store) GetNote(ctx context.Context, level, owner, key string) (orchestrator.Artifact, error) {
	a, err := scanArtifact(s.pool.QueryRow(ctx, "SELECT "+artifactColumns+" FROM artifacts WHERE kind = 'note' AND level = $1 AND owner = $2 AND key = $3", level, owner, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, orchestrator.Errorf(orchestrator.ENOTFOUND, "no note %s/%s", level, key)
	}
	if err != nil {
		return a, fmt.Errorf("read note %s/%s: %w", level, key, err)
	}
	return a, nil
}

// PutNote writes a note, replacing the content of an existing one with the same level, owner and
// key. It reports whether the note is new.
func (s *Store) PutNote(ctx context.Context, a orchestrator.Artifact, now time.Time) (orchestrator.Artifact, bool, error) {
	var created bool
	err := s.pool.QueryRow(ctx, `INSERT INTO artifacts (id, kind, level, org_id, guild_id, agent_id, key, content, created_at, updated_at)
		VALUES ($1, 'note', $2, $3, $4, $5, $6, $7, $8, $8)
		ON CONFLICT (kind, level, owner, key) DO UPDATE SET content = EXCLUDED.content, updated_at = EXCLUDED.updated_at
		RETURNING `+artifactColumns+`, xmax = 0`,
		orchestrator.NewID(orchestrator.PrefixArtifact), a.Level, a.OrgID, nullable(a.GuildID), nullable(a.AgentID), a.Key, a.Content, now).
		Scan(&a.ID, &a.Kind, &a.Level, &a.OrgID, &a.GuildID, &a.AgentID, &a.Key, &a.Content, &a.CreatedAt, &a.UpdatedAt, &created)
	if err != nil {
		return a, false, fmt.Errorf("write note %s: %w", a.Path(), err)
	}
	return a, created, nil
}

// DeleteNote deletes the note key at level of owner.
func (s *Store) DeleteNote(ctx context.Context, level, owner, key string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM artifacts WHERE kind = 'note' AND level = $1 AND owner = $2 AND key = $3", level, owner, key)
	if err != nil {
		return fmt.Errorf("delete note %s/%s: %w", level, key, err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "no note %s/%s", level, key)
	}
	return nil
}

// ListNotes lists every note owned at one scope (level and owner id), for the operator, newest change first.
func (s *Store) ListNotes(ctx context.Context, level, owner string) ([]orchestrator.Artifact, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+artifactColumns+" FROM artifacts WHERE kind = 'note' AND level = $1 AND owner = $2 ORDER BY updated_at DESC, id", level, owner)
	if err != nil {
		return nil, fmt.Errorf("list notes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Artifact, error) { return scanArtifact(r) })
	if err != nil {
		return nil, fmt.Errorf("list notes: %w", err)
	}
	return out, nil
}

// GetNoteByID reads one note by its id, for the operator.
func (s *Store) GetNoteByID(ctx context.Context, id string) (orchestrator.Artifact, error) {
	a, err := scanArtifact(s.pool.QueryRow(ctx, "SELECT "+artifactColumns+" FROM artifacts WHERE kind = 'note' AND id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, notFound("note", id)
	}
	if err != nil {
		return a, fmt.Errorf("read note %s: %w", id, err)
	}
	return a, nil
}

// WriteMemory replaces the agent's memory with content, archiving the previous version in
// memory_revisions and keeping the newest orchestrator.MemoryRevisionsKept of them, in one
// transaction. It returns the stored memory and whether a previous version was archived.
func (s *Store) WriteMemory(ctx context.Context, agent orchestrator.Agent, content string, now time.Time) (orchestrator.Artifact, bool, error) {
	var mem orchestrator.Artifact
	var archived bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Serialise writers of this agent's memory, including the very first write.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('memory:' || $1, 0))", agent.ID); err != nil {
			return err
		}
		var prev string
		var prevAt time.Time
		err := tx.QueryRow(ctx, "SELECT content, updated_at FROM artifacts WHERE kind = 'memory' AND level = 'agent' AND owner = $1 FOR UPDATE", agent.ID).Scan(&prev, &prevAt)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			archived = true
			if _, err := tx.Exec(ctx, "INSERT INTO memory_revisions (agent_id, content, written_at, archived_at) VALUES ($1, $2, $3, $4)", agent.ID, prev, prevAt, now); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM memory_revisions WHERE agent_id = $1 AND id NOT IN
				(SELECT id FROM memory_revisions WHERE agent_id = $1 ORDER BY id DESC LIMIT $2)`, agent.ID, orchestrator.MemoryRevisionsKept); err != nil {
				return err
			}
		}
		mem, err = scanArtifact(tx.QueryRow(ctx, `INSERT INTO artifacts (id, kind, level, org_id, guild_id, agent_id, key, content, created_at, updated_at)
			VALUES ($1, 'memory', 'agent', $2, $3, $4, 'memory.md', $5, $6, $6)
			ON CONFLICT (kind, level, owner, key) DO UPDATE SET content = EXCLUDED.content, updated_at = EXCLUDED.updated_at
			RETURNING `+artifactColumns, orchestrator.NewID(orchestrator.PrefixArtifact), agent.OrgID, agent.GuildID, agent.ID, content, now))
		return err
	})
	if err != nil {
		return mem, false, fmt.Errorf("write memory of agent %s: %w", agent.ID, err)
	}
	return mem, archived, nil
}

// GetMemory reads the agent's memory; an agent that never wrote one is ENOTFOUND.
func (s *Store) GetMemory(ctx context.Context, agentID string) (orchestrator.Artifact, error) {
	a, err := scanArtifact(s.pool.QueryRow(ctx, "SELECT "+artifactColumns+" FROM artifacts WHERE kind = 'memory' AND level = 'agent' AND owner = $1", agentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, orchestrator.Errorf(orchestrator.ENOTFOUND, "agent %s has no memory yet (memory_write creates it)", agentID)
	}
	if err != nil {
		return a, fmt.Errorf("read memory of agent %s: %w", agentID, err)
	}
	return a, nil
}

// ListMemoryRevisions lists the agent's archived memory versions, newest first.
func (s *Store) ListMemoryRevisions(ctx context.Context, agentID string) ([]orchestrator.MemoryRevision, error) {
	rows, err := s.pool.Query(ctx, "SELECT id, agent_id, content, written_at, archived_at FROM memory_revisions WHERE agent_id = $1 ORDER BY id DESC", agentID)
	if err != nil {
		return nil, fmt.Errorf("list memory revisions of agent %s: %w", agentID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.MemoryRevision, error) {
		var m orchestrator.MemoryRevision
		err := r.Scan(&m.ID, &m.AgentID, &m.Content, &m.WrittenAt, &m.ArchivedAt)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("list memory revisions of agent %s: %w", agentID, err)
	}
	return out, nil
}
