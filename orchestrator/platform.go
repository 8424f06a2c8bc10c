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
