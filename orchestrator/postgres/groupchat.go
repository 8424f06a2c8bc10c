package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// PostGroupMessage appends m to its guild's group chat, reporting group.posted in the same
// transaction (the call's, for group_post), and returns it with its id; a missing guild is ENOTFOUND.
func (s *Store) PostGroupMessage(ctx context.Context, m orchestrator.ChatMessage) (orchestrator.ChatMessage, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var org string
		if err := tx.QueryRow(ctx, `INSERT INTO group_messages (guild_id, agent_id, run_id, text, created_at)
			SELECT id, (SELECT id FROM agents WHERE id = NULLIF($2, '')), (SELECT id FROM runs WHERE id = NULLIF($3, '')), $4, $5
			FROM guilds WHERE id = $1 RETURNING id, (SELECT org_id FROM guilds WHERE id = $1)`, m.GuildID, m.AgentID, m.RunID, m.Text, m.CreatedAt).Scan(&m.ID, &org); err != nil {
			return err
		}
		return appendEvents(ctx, tx, orchestrator.GroupPostedEvent(org, m))
	})
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

// GroupMessage reads one message of a guild's chat; another guild's, or none, is ENOTFOUND.
func (s *Store) GroupMessage(ctx context.Context, guildID string, id int64) (orchestrator.ChatMessage, error) {
	var m orchestrator.ChatMessage
	err := s.pool.QueryRow(ctx, `SELECT id, guild_id, coalesce(agent_id, ''), coalesce(run_id, ''), text, created_at FROM group_messages
		WHERE id = $1 AND guild_id = $2`, id, guildID).Scan(&m.ID, &m.GuildID, &m.AgentID, &m.RunID, &m.Text, &m.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, orchestrator.Errorf(orchestrator.ENOTFOUND, "group message %d not found in guild %s", id, guildID)
	}
	if err != nil {
		return m, fmt.Errorf("read group message %d: %w", id, err)
	}
	return m, nil
}
