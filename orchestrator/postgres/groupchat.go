package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// PostGroupMessage appends m to its guild's group chat and returns it with its id; a missing guild
// is ENOTFOUND.
func (s *Store) PostGroupMessage(ctx context.Context, m orchestrator.ChatMessage) (orchestrator.ChatMessage, error) {
	err := s.pool.QueryRow(ctx, `INSERT INTO group_messages (guild_id, agent_id, run_id, text, created_at)
		SELECT id, (SELECT id FROM agents WHERE id = NULLIF($2, '')), (SELECT id FROM runs WHERE id = NULLIF($3, '')), $4, $5
		FROM guilds WHERE id = $1 RETURNING id`, m.GuildID, m.AgentID, m.RunID, m.Text, m.CreatedAt).Scan(&m.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, notFound("guild", m.GuildID)
	}
	if err != nil {
		return m, fmt.Errorf("post to the group chat: %w", err)
	}
	return m, nil
}

// ListGroupMessages returns up to limit messages of a guild's chat older than before (0: the
// newest), oldest first.
func (s *Store) ListGroupMessages(ctx context.Context, guildID string, before int64, limit int) ([]orchestrator.ChatMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT * FROM (
			SELECT id, guild_id, coalesce(agent_id, ''), coalesce(run_id, ''), text, created_at FROM group_messages
			WHERE guild_id = $1 AND ($2 = 0 OR id < $2) ORDER BY id DESC LIMIT $3) m ORDER BY id`, guildID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list the group chat: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.ChatMessage, error) {
		var m orchestrator.ChatMessage
		return m, r.Scan(&m.ID, &m.GuildID, &m.AgentID, &m.RunID, &m.Text, &m.CreatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list the group chat: %w", err)
	}
	return nonNil(out), nil
}
