package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

const issueColumns = "id, org_id, guild_id, coalesce(agent_id, ''), coalesce(run_id, ''), kind, message, status, created_at, resolved_at"

func scanIssue(r pgx.Row) (orchestrator.Issue, error) {
	var i orchestrator.Issue
	err := r.Scan(&i.ID, &i.OrgID, &i.GuildID, &i.AgentID, &i.RunID, &i.Kind, &i.Message, &i.Status, &i.CreatedAt, &i.ResolvedAt)
	return i, err
}

// CreateIssue files i onto its guild and reports issue.reported in the same transaction (the
// call's, for report_issue); the guild's organisation is taken from the guild row, and a missing
// guild is ENOTFOUND.
func (s *Store) CreateIssue(ctx context.Context, i orchestrator.Issue) (orchestrator.Issue, error) {
	var out orchestrator.Issue
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanIssue(tx.QueryRow(ctx, `INSERT INTO issues (id, org_id, guild_id, agent_id, run_id, kind, message, status, created_at)
			SELECT $1, g.org_id, g.id, NULLIF($3, ''), (SELECT id FROM runs WHERE id = NULLIF($4, '')), $5, $6, 'open', $7
			FROM guilds g WHERE g.id = $2
			RETURNING `+issueColumns, i.ID, i.GuildID, i.AgentID, i.RunID, i.Kind, i.Message, i.CreatedAt))
		if err != nil {
			return err
		}
		return appendEvents(ctx, tx, orchestrator.IssueReportedEvent(out))
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return out, notFound("guild", i.GuildID)
	}
	if err != nil {
		return out, fmt.Errorf("file issue: %w", err)
	}
	return out, nil
}

// ListIssues lists a page of the issues q selects, newest first. An after that names no issue of
// the owner is an EINVALID error.
func (s *Store) ListIssues(ctx context.Context, q orchestrator.IssueQuery) ([]orchestrator.Issue, error) {
	col := "guild_id"
	if q.Level == orchestrator.LevelOrg {
		col = "org_id"
	}
	if q.After != "" {
		var ok bool
		if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM issues WHERE id = $1 AND "+col+" = $2)", q.After, q.Owner).Scan(&ok); err != nil {
			return nil, fmt.Errorf("list issues: %w", err)
		}
		if !ok {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "after names no issue here (%.64q): pass the previous page's next_after", q.After)
		}
	}
	rows, err := s.pool.Query(ctx, "SELECT i.id, i.org_id, i.guild_id, coalesce(i.agent_id, ''), coalesce(i.run_id, ''), i.kind, i.message,"+
		" i.status, i.created_at, i.resolved_at, coalesce(a.name, ''), g.name"+
		" FROM issues i JOIN guilds g ON g.id = i.guild_id LEFT JOIN agents a ON a.id = i.agent_id"+
		" WHERE i."+col+" = $1 AND ($2 = '' OR i.status = $2) AND ($3::text[] IS NULL OR i.guild_id = ANY ($3))"+
		" AND ($4 = '' OR (i.created_at, i.id) < (SELECT created_at, id FROM issues WHERE id = $4))"+
		" ORDER BY i.created_at DESC, i.id DESC LIMIT $5",
		q.Owner, q.Status, q.Guilds, q.After, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("list issues: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Issue, error) {
		var i orchestrator.Issue
		err := r.Scan(&i.ID, &i.OrgID, &i.GuildID, &i.AgentID, &i.RunID, &i.Kind, &i.Message, &i.Status, &i.CreatedAt, &i.ResolvedAt, &i.AgentName, &i.GuildName)
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("list issues: %w", err)
	}
	return nonNil(out), nil
}

// ResolveIssue marks one issue resolved and returns it; resolving a resolved issue changes nothing.
func (s *Store) ResolveIssue(ctx context.Context, id string, at time.Time) (orchestrator.Issue, error) {
	row := s.pool.QueryRow(ctx, `UPDATE issues SET status = 'resolved', resolved_at = coalesce(resolved_at, $2)
		WHERE id = $1 RETURNING `+issueColumns, id, at)
	out, err := scanIssue(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, notFound("issue", id)
	}
	if err != nil {
		return out, fmt.Errorf("resolve issue %s: %w", id, err)
	}
	return out, nil
}

// ResolveGuildIssues resolves every open issue of a guild at once and returns how many it resolved.
func (s *Store) ResolveGuildIssues(ctx context.Context, guildID string, at time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, "UPDATE issues SET status = 'resolved', resolved_at = $2 WHERE guild_id = $1 AND status = 'open'", guildID, at)
	if err != nil {
		return 0, fmt.Errorf("resolve the issues of guild %s: %w", guildID, err)
	}
	return int(tag.RowsAffected()), nil
}
