package orchestrator

import (
	"encoding/json"
	"time"
)

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
// IssueQuery selects a page of issues: a guild's (level guild) or an organisation's (level org),
// newest first.
type IssueQuery struct {
	Level, Owner string
	Status       string   // "" for every status
	Guilds       []string // only these guilds' issues; nil for every guild of the owner
	Limit        int      // at most this many (1 to MaxIssuePage)
	After        string   // only issues older than this one (the previous page's last)
}

// Issue pages: the default and the most a page holds.
const (
	DefaultIssuePage = 100
	MaxIssuePage     = 500
)

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
	// The names of its agent and guild, on a listing (an inbox shows them without more reads).
	AgentName string `json:"agent_name,omitempty"`
	GuildName string `json:"guild_name,omitempty"`
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

// Schedule kinds and statuses.
const (
	ScheduleCron   = "cron"   // a five-field UTC cron expression
	ScheduleWindow = "window" // a daily random window in a timezone
	ScheduleActive = "active"
	SchedulePaused = "paused"
)

// PrefixSchedule is the id prefix of schedules.
const PrefixSchedule = "sch"

// Schedule wakes an agent: each firing starts a schedule-triggered run carrying the instruction.
type Schedule struct {
	ID          string     `json:"id"`
	AgentID     string     `json:"agent_id"`
	GuildID     string     `json:"guild_id"`
	OrgID       string     `json:"org_id"`
	Kind        string     `json:"kind"`
	Cron        string     `json:"cron,omitempty"`
	Timezone    string     `json:"timezone,omitempty"`
	Start       string     `json:"start,omitempty"` // window: local HH:MM
	End         string     `json:"end,omitempty"`   // window: local HH:MM
	MaxWakes    int        `json:"max_wakes,omitempty"`
	Seed        int64      `json:"-"` // window: fixes each day's random draw
	Description string     `json:"description"`
	Instruction string     `json:"instruction"`
	Status      string     `json:"status"`
	NextRunAt   *time.Time `json:"next_run_at"`
	LastRunAt   *time.Time `json:"last_run_at"`
	LastRunID   string     `json:"last_run_id"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// ScheduleFiring is one wake-up of a schedule: the run it started and the instruction it carried,
// or its skip while the schedule's last run was still open, and how a started run stands: missed
// when nobody called it within GUILDS_RUN_PICKUP.
type ScheduleFiring struct {
	RunID       string    `json:"run_id"` // the run it started; "" when skipped
	ScheduleID  string    `json:"schedule_id"`
	Instruction string    `json:"instruction"`
	DueAt       time.Time `json:"due_at"`
	FiredAt     time.Time `json:"fired_at"`               // when its run started, or it was skipped
	Outcome     string    `json:"outcome"`                // FiringStarted or FiringSkipped
	OpenRunID   string    `json:"open_run_id,omitempty"`  // skipped: the schedule's last run, still open then
	RunStatus   string    `json:"run_status,omitempty"`   // a started run's status
	CloseReason string    `json:"close_reason,omitempty"` // once that run closed
	Missed      bool      `json:"missed"`                 // nobody called it within GUILDS_RUN_PICKUP
}

// A firing's outcome.
const (
	FiringStarted = "started" // the wake-up started its run
	FiringSkipped = "skipped" // the schedule's last run was still open: no run started
)

// ChatMessage is one message of a guild's group chat.
type ChatMessage struct {
	ID        int64     `json:"id"`
	GuildID   string    `json:"guild_id"`
	AgentID   string    `json:"agent_id"`
	RunID     string    `json:"run_id"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// Script is an agent's saved Python script (an artifact of kind script) with its description,
// optional parameters JSON Schema, and the SHA-256 of its source.
type Script struct {
	AgentID     string          `json:"agent_id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Source      string          `json:"source"`
	Parameters  json.RawMessage `json:"parameters"`
	Hash        string          `json:"hash"`
	UpdatedAt   time.Time       `json:"updated_at"`
}
