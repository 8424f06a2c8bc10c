package orchestrator

import (
	"context"
	"encoding/json"
	"time"
)

// Run kinds: what started the run.
const (
	KindDirect    = "direct"     // an operator or user talking to the agent
	KindGroup     = "group"      // a group message that triggered the agent
	KindSchedule  = "schedule"   // a schedule wake-up
	KindGroupChat = "group_chat" // the agent taking part in a group chat
)

// RunKinds lists the valid run kinds.
var RunKinds = []string{KindDirect, KindGroup, KindSchedule, KindGroupChat}

// Run statuses.
const (
	RunOpen   = "open"
	RunClosed = "closed"
)

// Why a run closed (its close_reason).
const (
	CloseOperator     = "operator"      // POST /api/runs/{id}/close by an account or the admin token
	CloseRuntime      = "runtime"       // POST /api/runs/{id}/close by the run's token or its agent's key
	CloseIdle         = "idle"          // no call for GUILDS_RUN_IDLE
	CloseMissed       = "missed"        // a schedule fired it and nobody called within GUILDS_RUN_PICKUP
	CloseAgentDeleted = "agent_deleted" // DELETE /api/agents/{id}?close_runs=true
	CloseGuildDeleted = "guild_deleted" // DELETE /api/guilds/{id}?close_runs=true
	CloseOrgDeleted   = "org_deleted"   // DELETE /api/orgs/{id}?close_runs=true
	CloseMCPSession   = "mcp_session"   // the /mcp session that started it ended (DELETE, idle past GUILDS_MCP_SESSION_IDLE, a stop)
)

// Run triggers: what started a run.
const (
	TriggerDirect    = "direct"     // started through the API
	TriggerSchedule  = "schedule"   // fired by one of the agent's schedules
	TriggerGroupChat = "group_chat" // started for a message of the guild's group chat
)

// RunTriggers lists the valid triggers.
var RunTriggers = []string{TriggerDirect, TriggerSchedule, TriggerGroupChat}

// RunTrigger is what started a run: the schedule and the instruction it carried, or the group
// message, or neither (direct).
type RunTrigger struct {
	Type     string           `json:"type"`
	Schedule *ScheduleTrigger `json:"schedule,omitempty"` // schedule
	Message  *ChatMessage     `json:"message,omitempty"`  // group_chat
}

// ScheduleTrigger is the firing of a schedule that started a run.
type ScheduleTrigger struct {
	ID          string    `json:"id"`
	Instruction string    `json:"instruction"`
	DueAt       time.Time `json:"due_at"`
}

// Budget bounds: the default tool-call allowance of a run and the most a run may ask for.
const (
	DefaultToolCallBudget = 100
	MaxToolCallBudget     = 100000
)

// OfferedTool is one tool as offered to the model: its name, description and shaped input schema.
// An MCP tool also records its server, the connection whose login it uses, and its remote name.
type OfferedTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	Server       string          `json:"server,omitempty"`        // MCP tools: the catalog slug
	ConnectionID string          `json:"connection_id,omitempty"` // MCP tools: the login the call uses
	RemoteName   string          `json:"remote_name,omitempty"`   // MCP tools: the name on the server
	Ask          bool            `json:"ask,omitempty"`           // resolved Ask: each call waits for an operator's approval
}

// Run is one agent run: the snapshot of what it may do and how many calls it has left.
type Run struct {
	ID             string        `json:"id"`
	AgentID        string        `json:"agent_id"`
	GuildID        string        `json:"guild_id"`
	OrgID          string        `json:"org_id"`
	Kind           string        `json:"kind"`
	Status         string        `json:"status"`
	Config         AgentConfig   `json:"config"`
	ToolCallBudget int           `json:"tool_call_budget"`
	ToolCallsUsed  int           `json:"tool_calls_used"`
	OfferedTools   []OfferedTool `json:"offered_tools"`
	CreatedAt      time.Time     `json:"created_at"`
	ClosedAt       *time.Time    `json:"closed_at"`
	Exploration    *Exploration  `json:"exploration"` // coding runs, after each generation; null until then
	State          *RunState     `json:"state"`       // what the run started knowing besides its tools; null when nothing
	// Token is the run's own token, answered once by its start and never read back: it is good for
	// the run's calls, generations, close and reads until the run closes or TokenExpiresAt.
	Token string `json:"token,omitempty"`
	// TokenHash (its SHA-256, which finds it) and TokenSealed (its value sealed for the run's
	// redaction) are what the start stores of it.
	TokenHash      []byte     `json:"-"`
	TokenSealed    []byte     `json:"-"`
	TokenExpiresAt *time.Time `json:"-"`
	Trigger        RunTrigger `json:"trigger"`
	// LastActiveAt is the start of the run's latest call, or the run's own start: the idle close
	// counts from it.
	LastActiveAt time.Time `json:"last_active_at"`
	CloseReason  string    `json:"close_reason,omitempty"` // once closed: one of the Close* reasons
}

// RunSummary is a run as listings and events show it: what started it and its counts, without its
// snapshot (config and offered tools) and never its token.
type RunSummary struct {
	ID                 string     `json:"id"`
	AgentID            string     `json:"agent_id"`
	GuildID            string     `json:"guild_id"`
	OrgID              string     `json:"org_id"`
	Kind               string     `json:"kind"`
	Status             string     `json:"status"`
	Trigger            RunTrigger `json:"trigger"`
	ToolCallBudget     int        `json:"tool_call_budget"`
	ToolCallsUsed      int        `json:"tool_calls_used"`
	RemainingToolCalls int        `json:"remaining_tool_calls"`
	CreatedAt          time.Time  `json:"created_at"`
	LastActiveAt       time.Time  `json:"last_active_at"`
	ClosedAt           *time.Time `json:"closed_at"`
	CloseReason        string     `json:"close_reason,omitempty"`
}

// Summary is the run's summary.
func (r Run) Summary() RunSummary {
	return RunSummary{ID: r.ID, AgentID: r.AgentID, GuildID: r.GuildID, OrgID: r.OrgID, Kind: r.Kind, Status: r.Status, Trigger: r.Trigger,
		ToolCallBudget: r.ToolCallBudget, ToolCallsUsed: r.ToolCallsUsed, RemainingToolCalls: r.Remaining(), CreatedAt: r.CreatedAt,
		LastActiveAt: r.LastActiveAt, ClosedAt: r.ClosedAt, CloseReason: r.CloseReason}
}

// RunQuery selects a page of one agent's or one guild's runs, newest first.
type RunQuery struct {
	AgentID string // the agent's runs; or
	GuildID string // the guild's runs
	Status  string // "" any, RunOpen or RunClosed
	Kind    string // "" any, or one of RunKinds
	Trigger string // "" any, or one of RunTriggers
	After   string // the id of the last run of the previous page; "" the newest first
	Limit   int
}

// RunState is what a run starts knowing besides its tools.
type RunState struct {
	Prices      []PinnedPrice `json:"prices"`                 // the agent's Pinned prices login's coins, quoted at run start
	PricesError string        `json:"prices_error,omitempty"` // why they could not be quoted (the run started anyway)
	// Repositories are a coding run's guild repositories as its start cloned (or fetched) them
	// into /home/agent/repos; a clone that failed says why and did not stop the others.
	Repositories []RepoClone `json:"repositories,omitempty"`
}

// Coin is one coin of Pinned prices: a picker's answer, or one a login pins.
type Coin struct {
	ID     string `json:"id"` // the provider's id (CoinGecko's, e.g. bitcoin)
	Symbol string `json:"symbol"`
	Name   string `json:"name"`
}

// PinnedPrice is one pinned coin's quote at run start.
type PinnedPrice struct {
	Coin
	USD       *float64  `json:"price_usd"`  // null when the provider did not quote it
	Change24h *float64  `json:"change_24h"` // percent over 24 hours
	QuotedAt  time.Time `json:"quoted_at"`
}

// Remaining returns how many tool calls the run has left.
func (r Run) Remaining() int {
	if n := r.ToolCallBudget - r.ToolCallsUsed; n > 0 {
		return n
	}
	return 0
}

// Offers reports whether the run offered the named tool.
func (r Run) Offers(name string) bool {
	for _, t := range r.OfferedTools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// A call's status: recorded as started before anything runs, completed with its result after,
// cancelled when its client cancelled it while it ran (MCP's notifications/cancelled: the tool was
// stopped as its timeout would stop it), and interrupted when the orchestrator stopped while it ran
// (marked at the next start).
const (
	CallStarted     = "started"
	CallCompleted   = "completed"
	CallCancelled   = "cancelled"
	CallInterrupted = "interrupted"
)

// ToolCall is one stored tool call: the redacted arguments and the stamped result, never the raw one.
type ToolCall struct {
	RunID        string          `json:"run_id"`
	Seq          int64           `json:"seq"`
	CallID       string          `json:"call_id"`
	ClientCallID string          `json:"client_call_id,omitempty"` // the caller's id for retries, unique in the run
	Status       string          `json:"status"`
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments"`
	Result       string          `json:"result"`
	Metadata     json.RawMessage `json:"metadata"`
	IsError      bool            `json:"is_error"`
	StartedAt    time.Time       `json:"started_at"`
	FinishedAt   *time.Time      `json:"finished_at"` // nil while started
	DurationMS   float64         `json:"duration_ms"`
	Withheld     bool            `json:"withheld,omitempty"` // a viewer's listing: arguments, result and metadata left out
	RequestHash  string          `json:"-"`                  // the request's digest: a retry under the same client id must match it
	Process      string          `json:"-"`                  // the orchestrator process that runs a started call (Process.ID)
}

// CallPage bounds a listing of a run's calls: those after seq After, at most Limit (0: all).
type CallPage struct {
	After int64
	Limit int
}

// RunStore persists runs and their calls.
type RunStore interface {
	// CreateRun stores r and reports run.started in the same transaction; a missing agent is ENOTFOUND.
	CreateRun(ctx context.Context, r Run) error
	GetRun(ctx context.Context, id string) (Run, error)
	// CloseRun marks the run closed for the reason (a Close* constant), reporting run.closed in the
	// same transaction; closing a closed run is not an error and keeps its first close.
	CloseRun(ctx context.Context, id string, at time.Time, reason string) (Run, error)
	// CloseStaleRuns closes, in one transaction, at most limit open runs whose latest activity is
	// before idleBefore (reason idle) or that a schedule fired before pickupBefore and nobody called
	// (reason missed), reporting each; replicas sweeping at once never close a run twice.
	CloseStaleRuns(ctx context.Context, at, idleBefore, pickupBefore time.Time, limit int) ([]RunSummary, error)
	// ListRuns lists a page of an agent's or a guild's runs, newest first.
	ListRuns(ctx context.Context, q RunQuery) ([]RunSummary, error)
	// StartCall records c as started and advances the run's counter in one statement, returning
	// the seq it took. It fails with ECONFLICT, writing nothing, when the run is closed or spent,
	// and with ErrDuplicateCall when c.ClientCallID is already recorded for the run.
	StartCall(ctx context.Context, c ToolCall) (int64, error)
	// CompleteCall stores a started call's result (c.RunID, c.Seq) and marks it completed.
	CompleteCall(ctx context.Context, c ToolCall) error
	// GetClientCall returns the call recorded under the client's call id, ENOTFOUND when none.
	GetClientCall(ctx context.Context, runID, clientCallID string) (ToolCall, error)
	// InterruptCalls marks as interrupted, with the given result, every call still started whose
	// process is gone: none recorded, or no beat since staleBefore (its own process's calls are
	// never among them); it returns how many it marked.
	InterruptCalls(ctx context.Context, at time.Time, result string, staleBefore time.Time) (int64, error)
	// BeatProcess records that a process taking calls runs (its first beat registers it);
	// EndProcess removes it at a clean stop.
	BeatProcess(ctx context.Context, p Process, at time.Time) error
	EndProcess(ctx context.Context, id string) error
	// HostProcesses lists the processes registered from host (a restart looks for its
	// predecessor among them).
	HostProcesses(ctx context.Context, host string) ([]Process, error)
	ListCalls(ctx context.Context, runID string, page CallPage) ([]ToolCall, error)
}

// Process is one running orchestrator process that takes calls (a replica).
type Process struct {
	ID        string
	Host      string
	PID       int
	StartedAt time.Time
}

// ErrDuplicateCall is StartCall's answer when the client's call id is already recorded.
var ErrDuplicateCall = Errorf(ECONFLICT, "a call with this call_id is already recorded for the run")

// RunSecrets yields the secret values granted to a run, which join its redaction set. The secrets
// work implements it; until then NoRunSecrets stands in.
type RunSecrets interface {
	RunSecretValues(ctx context.Context, run Run) ([]string, error)
}

// NoRunSecrets is the RunSecrets of a box without granted secrets: it yields none.
type NoRunSecrets struct{}

// RunSecretValues returns no values.
func (NoRunSecrets) RunSecretValues(context.Context, Run) ([]string, error) { return nil, nil }

// JoinSecrets is a RunSecrets that yields the values of every source (nil sources are skipped).
func JoinSecrets(sources ...RunSecrets) RunSecrets { return joinedSecrets(sources) }

type joinedSecrets []RunSecrets

// RunSecretValues concatenates the sources' values; the first error stops it.
func (j joinedSecrets) RunSecretValues(ctx context.Context, run Run) ([]string, error) {
	var out []string
	for _, s := range j {
		if s == nil {
			continue
		}
		v, err := s.RunSecretValues(ctx, run)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}
