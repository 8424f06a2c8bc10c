package orchestrator

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// PrefixEvent is the id prefix of events; an event keeps its id across every delivery of it.
const PrefixEvent = "evt"

// Event types: what the outbox reports.
const (
	EventRunStarted             = "run.started"
	EventRunClosed              = "run.closed"
	EventIssueReported          = "issue.reported"
	EventSecretRequested        = "secret.requested"
	EventSecretAnswered         = "secret.answered"
	EventGroupPosted            = "group.posted"
	EventConnectionDisconnected = "connection.disconnected"
	EventApprovalRequested      = "approval.requested"
	EventApprovalDecided        = "approval.decided"
)

// EventType is one kind of event: its name, what it reports, and the least role a principal holds
// where the event happened to see it (webhooks are an organisation operator's, so they get all).
type EventType struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Role        string `json:"role"`
}

// EventTypes is the one list of event types. A new kind of event (the approvals') is one more
// entry here and a builder below; stores write it in the transaction of what it reports.
var EventTypes = []EventType{
	{EventRunStarted, "a run started: data.run with its trigger (direct, a schedule and its instruction, a group message)", RoleViewer},
	{EventRunClosed, "a run closed: data.reason (operator, runtime, idle, missed, agent_deleted, guild_deleted, org_deleted, mcp_session) and data.run", RoleViewer},
	{EventIssueReported, "an agent filed a tooling issue (report_issue): data.issue", RoleViewer},
	{EventSecretRequested, "an agent asked for a secret (secret_request): data.request names the secret, never a value", RoleOperator},
	{EventSecretAnswered, "an operator stored the secret a pending request asked for: data.request, never the value", RoleOperator},
	{EventGroupPosted, "an agent posted to its guild's group chat (group_post): data.message", RoleViewer},
	{EventConnectionDisconnected, "a login stopped working: data.reason (credentials_refused, invalid_grant, server_moved), data.message and data.connection", RoleViewer},
	{EventApprovalRequested, "a call of a tool set to Ask waits for an operator's approval: data.approval (pending, with the call's redacted arguments and their digest)", RoleOperator},
	{EventApprovalDecided, "an approval request ended: data.approval with its status (approved or denied, with decided_by and a denial's reason; expired, with why)", RoleOperator},
}

// EventTypeNames lists the event types' names in the list's order.
func EventTypeNames() []string {
	out := make([]string, len(EventTypes))
	for i, t := range EventTypes {
		out[i] = t.Name
	}
	return out
}

// LookupEventType returns the named event type; ok is false for an unknown name.
func LookupEventType(name string) (EventType, bool) {
	i := slices.IndexFunc(EventTypes, func(t EventType) bool { return t.Name == name })
	if i < 0 {
		return EventType{}, false
	}
	return EventTypes[i], true
}

// Event is one thing that happened, as the outbox stores it and every delivery sends it: a webhook's
// body is its JSON, {id, type, created_at, org_id, data}. Where it happened (its guild, agent and
// run) decides who sees it; data repeats what a receiver needs.
type Event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	OrgID     string          `json:"org_id"` // "" for an event of the platform itself (seen by admins only)
	Data      json.RawMessage `json:"data"`
	GuildID   string          `json:"-"`
	AgentID   string          `json:"-"`
	RunID     string          `json:"-"` // deliveries of one run's events go out in order
	// Pos is the event's place in the stream (GET /api/events' ids), given once its transaction
	// committed; 0 until then.
	Pos int64 `json:"-"`
}

// Chain is where the event happened: its agent, guild, organisation or the platform.
func (e Event) Chain() Chain {
	switch {
	case e.AgentID != "":
		return Chain{Scope: ScopeAgent, OrgID: e.OrgID, GuildID: e.GuildID, AgentID: e.AgentID}
	case e.GuildID != "":
		return Chain{Scope: ScopeGuild, OrgID: e.OrgID, GuildID: e.GuildID}
	case e.OrgID != "":
		return Chain{Scope: ScopeOrg, OrgID: e.OrgID}
	}
	return Chain{Scope: ScopePlatform}
}

// newEvent makes an event of type typ at chain c about run (may be "") with data as its payload.
func newEvent(typ string, c Chain, run string, at time.Time, data any) Event {
	b, err := json.Marshal(data)
	if err != nil { // the payloads are plain structs of this package: marshalling cannot fail
		panic(fmt.Sprintf("event %s payload: %v", typ, err))
	}
	return Event{ID: NewID(PrefixEvent), Type: typ, CreatedAt: at.UTC().Truncate(time.Microsecond), OrgID: c.OrgID, GuildID: c.GuildID,
		AgentID: c.AgentID, RunID: run, Data: b}
}

// runChain is the run's agent's chain.
func runChain(r RunSummary) Chain {
	return Chain{Scope: ScopeAgent, OrgID: r.OrgID, GuildID: r.GuildID, AgentID: r.AgentID}
}

// RunStartedEvent reports a run's start, with its trigger.
func RunStartedEvent(r RunSummary) Event {
	return newEvent(EventRunStarted, runChain(r), r.ID, r.CreatedAt, struct {
		Run RunSummary `json:"run"`
	}{r})
}

// RunClosedEvent reports a run's close, with its reason (r as closed).
func RunClosedEvent(r RunSummary) Event {
	at := r.CreatedAt
	if r.ClosedAt != nil {
		at = *r.ClosedAt
	}
	return newEvent(EventRunClosed, runChain(r), r.ID, at, struct {
		Reason string     `json:"reason"`
		Run    RunSummary `json:"run"`
	}{r.CloseReason, r})
}

// IssueReportedEvent reports an issue an agent filed.
func IssueReportedEvent(i Issue) Event {
	c := Chain{Scope: ScopeGuild, OrgID: i.OrgID, GuildID: i.GuildID}
	if i.AgentID != "" {
		c.Scope, c.AgentID = ScopeAgent, i.AgentID
	}
	return newEvent(EventIssueReported, c, i.RunID, i.CreatedAt, struct {
		Issue Issue `json:"issue"`
	}{i})
}

// SecretRequestedEvent reports an agent's request for a secret: its name and reason, never a value.
func SecretRequestedEvent(c Chain, r SecretRequest) Event {
	return newEvent(EventSecretRequested, c, r.RunID, r.CreatedAt, struct {
		Request SecretRequest `json:"request"`
	}{r})
}

// SecretAnsweredEvent reports that a pending request was answered (the secret stored), never the value.
func SecretAnsweredEvent(c Chain, r SecretRequest) Event {
	at := r.CreatedAt
	if r.AnsweredAt != nil {
		at = *r.AnsweredAt
	}
	return newEvent(EventSecretAnswered, c, r.RunID, at, struct {
		Request SecretRequest `json:"request"`
	}{r})
}

// GroupPostedEvent reports a message posted to a guild's group chat (orgID is the guild's).
func GroupPostedEvent(orgID string, m ChatMessage) Event {
	c := Chain{Scope: ScopeGuild, OrgID: orgID, GuildID: m.GuildID}
	if m.AgentID != "" {
		c.Scope, c.AgentID = ScopeAgent, m.AgentID
	}
	return newEvent(EventGroupPosted, c, m.RunID, m.CreatedAt, struct {
		Message ChatMessage `json:"message"`
	}{m})
}

// Reasons a login is disconnected.
const (
	DisconnectCredentialsRefused = "credentials_refused" // the provider refused the stored key, or the GitHub App's installation is gone
	DisconnectInvalidGrant       = "invalid_grant"       // the authorization server refused to renew an OAuth login
	DisconnectServerMoved        = "server_moved"        // an instance admin changed the server's URL or an endpoint (ServerMovedReason)
)

// ConnectionDisconnectedEvent reports a login that stopped working, with why; never a credential.
func ConnectionDisconnectedEvent(c Connection, reason, message string, at time.Time) Event {
	chain := Chain{Scope: c.Scope, OrgID: c.OrgID, GuildID: c.GuildID, AgentID: c.AgentID}
	type conn struct {
		ID          string `json:"id"`
		Server      string `json:"server"`
		Scope       string `json:"scope"`
		ScopeID     string `json:"scope_id"`
		AccountHint string `json:"account_hint"`
	}
	return newEvent(EventConnectionDisconnected, chain, "", at, struct {
		Reason     string `json:"reason"`
		Message    string `json:"message"`
		Connection conn   `json:"connection"`
	}{reason, message, conn{c.ID, c.Server, c.Scope, c.ScopeID, c.AccountHint}})
}

// ApprovalRequestedEvent reports a new approval request a call waits for.
func ApprovalRequestedEvent(a Approval) Event {
	return newEvent(EventApprovalRequested, a.Chain(), a.RunID, a.CreatedAt, struct {
		Approval Approval `json:"approval"`
	}{a})
}

// ApprovalDecidedEvent reports an approval request approved, denied or expired (a as it then stands).
func ApprovalDecidedEvent(a Approval) Event {
	at := a.CreatedAt
	if a.DecidedAt != nil {
		at = *a.DecidedAt
	}
	return newEvent(EventApprovalDecided, a.Chain(), a.RunID, at, struct {
		Approval Approval `json:"approval"`
	}{a})
}
