package orchestrator

import "time"

// Issue kinds: what report_issue files.
const (
	IssueToolFailure = "tool_failure" // a tool failed or misbehaved
	IssueTruncated   = "truncated"    // a result was cut short
	IssueAPI         = "api"          // an external API misbehaved
	IssueOther       = "other"        // anything else about the tooling
)

// IssueKinds lists the valid issue kinds.
var IssueKinds = []string{IssueToolFailure, IssueTruncated, IssueAPI, IssueOther}

// Issue statuses.
const (
	IssueOpen     = "open"
	IssueResolved = "resolved"
)

// PrefixIssue is the id prefix of issues.
const PrefixIssue = "iss"

// Issue is a tooling problem an agent filed onto its guild; operators resolve it from their inbox.
type Issue struct {
	ID         string     `json:"id"`
	OrgID      string     `json:"org_id"`
	GuildID    string     `json:"guild_id"`
	AgentID    string     `json:"agent_id"`
	RunID      string     `json:"run_id"`
	Kind       string     `json:"kind"`
	Message    string     `json:"message"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	ResolvedAt *time.Time `json:"resolved_at"`
}

// SecretInfo is what anyone outside the orchestrator's memory sees of a stored secret: its name and
// dates, never its value.
type SecretInfo struct {
	AgentID   string    `json:"agent_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Secret request statuses.
const (
	SecretRequestPending  = "pending"
	SecretRequestAnswered = "answered"
)

// PrefixSecretRequest is the id prefix of secret requests.
const PrefixSecretRequest = "sreq"

// SecretRequest is an agent's request (secret_request) for the operator to store a secret.
type SecretRequest struct {
	ID         string     `json:"id"`
	AgentID    string     `json:"agent_id"`
	RunID      string     `json:"run_id"`
	Name       string     `json:"name"`
	Reason     string     `json:"reason"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	AnsweredAt *time.Time `json:"answered_at"`
}
