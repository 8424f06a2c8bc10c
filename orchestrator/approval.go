package orchestrator

import (
	"context"
	"encoding/json"
	"time"
)

// PrefixApproval is the id prefix of approval requests.
const PrefixApproval = "apv"

// An approval request's status: pending until an operator approves or denies it, or until nobody
// did in time (or its call can no longer wait: the run closed, the orchestrator stopped) and it
// expired.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// ApprovalStatuses lists the statuses a listing may filter on.
var ApprovalStatuses = []string{ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired}

// DecidedByAdmin is the decided_by of a decision made with the bootstrap admin token (no account).
const DecidedByAdmin = "admin"

// Approval is one request for an operator's approval of one call of a tool resolved Ask: the call
// waits for it, and runs only once it is approved, with exactly the arguments whose digest it holds.
type Approval struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Tool    string `json:"tool"`
	RunID   string `json:"run_id"`
	Seq     int64  `json:"seq"`     // the waiting call's seq in its run
	CallID  string `json:"call_id"` // the waiting call's id
	AgentID string `json:"agent_id"`
	GuildID string `json:"guild_id"`
	OrgID   string `json:"org_id"`
	// Arguments are the call's arguments as its record stores them (redacted for display); null in
	// a viewer's listing (Withheld).
	Arguments json.RawMessage `json:"arguments"`
	// ArgumentsSHA256 is the lowercase hex SHA-256 of the canonical arguments (keys sorted, no
	// insignificant space): what an approval is bound to.
	ArgumentsSHA256 string     `json:"arguments_sha256"`
	CreatedAt       time.Time  `json:"created_at"`
	ExpiresAt       time.Time  `json:"expires_at"`
	DecidedAt       *time.Time `json:"decided_at"`
	DecidedBy       string     `json:"decided_by"` // the deciding account's id, DecidedByAdmin, or "" (expired, or pending)
	Reason          string     `json:"reason"`     // a denial's reason, or why it expired
	Withheld        bool       `json:"withheld,omitempty"`
}

// Chain is the chain of the request's agent.
func (a Approval) Chain() Chain {
	return Chain{Scope: ScopeAgent, OrgID: a.OrgID, GuildID: a.GuildID, AgentID: a.AgentID}
}

// ApprovalQuery selects approval requests: those of a scope (an organisation, guild or agent), of
// one status when Status is set, newest first, before the request Before when set, at most Limit.
type ApprovalQuery struct {
	Chain  Chain
	Status string
	Before string
	Limit  int
}

// ApprovalDecision is an operator's decision on a pending request.
type ApprovalDecision struct {
	ID     string
	Status string // ApprovalApproved or ApprovalDenied
	Reason string
	By     string // the account id, or DecidedByAdmin
	At     time.Time
}

// PendingApprovals counts the pending requests of one agent.
type PendingApprovals struct {
	OrgID   string `json:"org_id"`
	GuildID string `json:"guild_id"`
	AgentID string `json:"agent_id"`
	Pending int    `json:"pending"`
}

// ApprovalStore persists approval requests. Reads report a pending request whose time is up, or
// whose call is no longer started, as expired.
type ApprovalStore interface {
	CreateApproval(ctx context.Context, a Approval) error
	// GetApproval reads one request; none is ENOTFOUND.
	GetApproval(ctx context.Context, id string, now time.Time) (Approval, error)
	ListApprovals(ctx context.Context, q ApprovalQuery, now time.Time) ([]Approval, error)
	// PendingApprovals counts the pending requests per agent, of one organisation ("" all).
	PendingApprovals(ctx context.Context, orgID string, now time.Time) ([]PendingApprovals, error)
	// DecideApproval records a decision on a pending request whose time is not up and whose call
	// still waits, and answers it as decided. Otherwise nothing is written: an unknown request is
	// ENOTFOUND, one that was decided or expired ECONFLICT naming which.
	DecideApproval(ctx context.Context, d ApprovalDecision) (Approval, error)
	// ExpireApproval marks a pending request expired with the reason and answers the request as
	// it then stands: expired, or decided by an operator who came first.
	ExpireApproval(ctx context.Context, id, reason string, at time.Time) (Approval, error)
	// ExpireRunApprovals marks the run's pending requests expired with the reason.
	ExpireRunApprovals(ctx context.Context, runID, reason string, at time.Time) error
}
