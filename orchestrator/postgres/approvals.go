package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// ApprovalsChannel is the channel a decided or expired approval request's id is announced on.
const ApprovalsChannel = "guilds_approvals"

// waiting holds when the approval request a's call still waits for it: the call is recorded as
// started (a call its orchestrator left when it stopped is interrupted, and waits no more).
const waiting = `EXISTS (SELECT 1 FROM tool_calls c WHERE c.run_id = a.run_id AND c.seq = a.seq AND c.status = 'started')`

// decidable holds when a pending request may still be decided at $now (the parameter named by %s).
const decidable = `a.status = 'pending' AND a.expires_at > %s AND ` + waiting

// approvalColumns reads a request as it stands at $1 (now): a pending request whose time is up or
// whose call no longer waits reads as expired, with the reason.
const approvalColumns = `a.id, a.tool, a.run_id, a.seq, a.call_id, a.agent_id, a.guild_id, a.org_id, a.arguments, a.arguments_sha256,
	a.created_at, a.expires_at, a.decided_at, a.decided_by,
	CASE WHEN a.status <> 'pending' THEN a.status WHEN a.expires_at <= $1 OR NOT ` + waiting + ` THEN 'expired' ELSE 'pending' END,
	CASE WHEN a.status <> 'pending' THEN a.reason WHEN a.expires_at <= $1 THEN 'nobody decided before it expired'
		WHEN NOT ` + waiting + ` THEN 'its call stopped waiting (the orchestrator that ran it stopped)' ELSE '' END`

// scanApproval reads approvalColumns.
func scanApproval(r pgx.Row) (orchestrator.Approval, error) {
	var a orchestrator.Approval
	var args []byte
	err := r.Scan(&a.ID, &a.Tool, &a.RunID, &a.Seq, &a.CallID, &a.AgentID, &a.GuildID, &a.OrgID, &args, &a.ArgumentsSHA256,
		&a.CreatedAt, &a.ExpiresAt, &a.DecidedAt, &a.DecidedBy, &a.Status, &a.Reason)
	a.Arguments = args
	return a, err
}

// CreateApproval stores a new pending request, reporting approval.requested in its transaction.
func (s *Store) CreateApproval(ctx context.Context, a orchestrator.Approval) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO approvals (id, run_id, seq, call_id, agent_id, guild_id, org_id, tool, arguments, arguments_sha256, status, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', $11, $12)`,
			a.ID, a.RunID, a.Seq, a.CallID, a.AgentID, a.GuildID, a.OrgID, a.Tool, []byte(a.Arguments), a.ArgumentsSHA256, a.CreatedAt, a.ExpiresAt); err != nil {
			return err
		}
		a.Status = orchestrator.ApprovalPending
		return appendEvents(ctx, tx, orchestrator.ApprovalRequestedEvent(a))
	})
	if err != nil {
		return fmt.Errorf("store approval request %s: %w", a.ID, err)
	}
	return nil
}

// GetApproval reads one request as it stands at now.
func (s *Store) GetApproval(ctx context.Context, id string, now time.Time) (orchestrator.Approval, error) {
	a, err := scanApproval(s.pool.QueryRow(ctx, "SELECT "+approvalColumns+" FROM approvals a WHERE a.id = $2", now, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, notFound("approval", id)
	}
	if err != nil {
		return a, fmt.Errorf("read approval %s: %w", id, err)
	}
	return a, nil
}

// ListApprovals lists a scope's requests as they stand at now, newest first.
func (s *Store) ListApprovals(ctx context.Context, q orchestrator.ApprovalQuery, now time.Time) ([]orchestrator.Approval, error) {
	var where string
	var id string
	switch q.Chain.Scope {
	case orchestrator.ScopeOrg:
		where, id = "a.org_id = $2", q.Chain.OrgID
	case orchestrator.ScopeGuild:
		where, id = "a.guild_id = $2", q.Chain.GuildID
	case orchestrator.ScopeAgent:
		where, id = "a.agent_id = $2", q.Chain.AgentID
	default:
		return nil, fmt.Errorf("list approvals: no scope to list (%q)", q.Chain.Scope)
	}
	args := []any{now, id, q.Limit}
	if q.Before != "" {
		args = append(args, q.Before)
		where += fmt.Sprintf(" AND (a.created_at, a.id) < (SELECT b.created_at, b.id FROM approvals b WHERE b.id = $%d)", len(args))
	}
	switch q.Status {
	case "":
	case orchestrator.ApprovalPending:
		where += " AND " + fmt.Sprintf(decidable, "$1")
	case orchestrator.ApprovalExpired:
		where += " AND (a.status = 'expired' OR (a.status = 'pending' AND NOT (" + fmt.Sprintf(decidable, "$1") + ")))"
	default:
		args = append(args, q.Status)
		where += fmt.Sprintf(" AND a.status = $%d", len(args))
	}
	rows, err := s.pool.Query(ctx, "SELECT "+approvalColumns+" FROM approvals a WHERE "+where+" ORDER BY a.created_at DESC, a.id DESC LIMIT $3", args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Approval, error) { return scanApproval(r) })
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return nonNil(out), nil
}

// PendingApprovals counts the requests that may still be decided, per agent, of one organisation
// ("" every organisation).
func (s *Store) PendingApprovals(ctx context.Context, orgID string, now time.Time) ([]orchestrator.PendingApprovals, error) {
	rows, err := s.pool.Query(ctx, `SELECT a.org_id, a.guild_id, a.agent_id, count(*) FROM approvals a
		WHERE `+fmt.Sprintf(decidable, "$1")+` AND ($2 = '' OR a.org_id = $2)
		GROUP BY a.org_id, a.guild_id, a.agent_id ORDER BY a.org_id, a.guild_id, a.agent_id`, now, orgID)
	if err != nil {
		return nil, fmt.Errorf("count pending approvals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.PendingApprovals, error) {
		var p orchestrator.PendingApprovals
		err := r.Scan(&p.OrgID, &p.GuildID, &p.AgentID, &p.Pending)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("count pending approvals: %w", err)
	}
	return nonNil(out), nil
}

// DecideApproval records a decision on a request that may still be decided, reporting
// approval.decided in its transaction; the row's lock makes two deciders at once take turns, and
// the second finds it decided.
func (s *Store) DecideApproval(ctx context.Context, d orchestrator.ApprovalDecision) (orchestrator.Approval, error) {
	a, err := s.endApproval(ctx, `UPDATE approvals a SET status = $3, reason = $4, decided_by = $5, decided_at = $1
		WHERE a.id = $2 AND `+fmt.Sprintf(decidable, "$1")+` RETURNING `+approvalColumns, d.At, d.ID, d.Status, d.Reason, d.By)
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("decide approval %s: %w", d.ID, err)
	}
	cur, err := s.GetApproval(ctx, d.ID, d.At)
	if err != nil {
		return cur, err
	}
	return cur, undecidable(cur)
}

// endApproval runs an update ending one request (RETURNING approvalColumns) and reports it with
// approval.decided in the same transaction; pgx.ErrNoRows when no row was updated.
func (s *Store) endApproval(ctx context.Context, sql string, args ...any) (orchestrator.Approval, error) {
	var a orchestrator.Approval
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if a, err = scanApproval(tx.QueryRow(ctx, sql, args...)); err != nil {
			return err
		}
		return appendEvents(ctx, tx, orchestrator.ApprovalDecidedEvent(a))
	})
	return a, err
}

// undecidable says why a request can no longer be decided.
func undecidable(a orchestrator.Approval) error {
	var err *orchestrator.Error
	switch a.Status {
	case orchestrator.ApprovalExpired:
		err = orchestrator.Errorf(orchestrator.ECONFLICT, "approval %s has expired (%s), so it can no longer be decided and its call did not run; the model may call the tool again, which makes a new request", a.ID, a.Reason)
	case orchestrator.ApprovalPending: // decidable meanwhile cannot happen under the row lock; said plainly should it
		err = orchestrator.Errorf(orchestrator.ECONFLICT, "approval %s could not be decided now; try again", a.ID)
	default:
		by := a.DecidedBy
		if by == "" {
			by = "an operator"
		}
		err = orchestrator.Errorf(orchestrator.ECONFLICT, "approval %s was already %s by %s at %s; a decision is final", a.ID, a.Status, by, a.DecidedAt.UTC().Format(time.RFC3339))
	}
	err.Fields = map[string]any{"status": a.Status}
	return err
}

// ExpireApproval marks a pending request expired, reporting approval.decided in its transaction,
// and answers it as it then stands.
func (s *Store) ExpireApproval(ctx context.Context, id, reason string, at time.Time) (orchestrator.Approval, error) {
	a, err := s.endApproval(ctx, `UPDATE approvals a SET status = 'expired', reason = $3, decided_at = $1
		WHERE a.id = $2 AND a.status = 'pending' RETURNING `+approvalColumns, at, id, reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.GetApproval(ctx, id, at)
	}
	if err != nil {
		return a, fmt.Errorf("expire approval %s: %w", id, err)
	}
	return a, nil
}

// ExpireRunApprovals marks the run's pending requests expired, reporting each with
// approval.decided in the same transaction.
func (s *Store) ExpireRunApprovals(ctx context.Context, runID, reason string, at time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return expireApprovals(ctx, tx, "run_id", runID, reason, at) })
	if err != nil {
		return fmt.Errorf("expire the approval requests of run %s: %w", runID, err)
	}
	return nil
}

// expireApprovals marks the pending requests whose column col (run_id, org_id, guild_id or
// agent_id) is id expired with the reason, reporting each with approval.decided in tx; each is
// announced once tx commits, so its waiting call answers at once on whichever replica it waits.
func expireApprovals(ctx context.Context, tx pgx.Tx, col, id, reason string, at time.Time) error {
	rows, err := tx.Query(ctx, `UPDATE approvals a SET status = 'expired', reason = $3, decided_at = $1 WHERE a.`+col+` = $2 AND a.status = 'pending'
		RETURNING `+approvalColumns, at, id, reason)
	if err != nil {
		return err
	}
	expired, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Approval, error) { return scanApproval(r) })
	if err != nil {
		return err
	}
	evs := make([]orchestrator.Event, len(expired))
	for i, a := range expired {
		evs[i] = orchestrator.ApprovalDecidedEvent(a)
	}
	return appendEvents(ctx, tx, evs...)
}
