// Package issues holds report_issue, the always-offered tool with which an agent files a tooling
// problem onto its guild for the operators' inbox.
package issues

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// MaxMessageChars is the most characters an issue's message may hold.
const MaxMessageChars = 4000

// Store is what report_issue needs (postgres.Store implements it).
type Store interface {
	CreateIssue(ctx context.Context, i orchestrator.Issue) (orchestrator.Issue, error)
}

// Tools serves report_issue over a store.
type Tools struct {
	Store Store
	Now   func() time.Time
}

// Register adds report_issue to reg, in the always-offered family.
func (t *Tools) Register(reg *registry.Registry) error {
	err := reg.Register(registry.Tool{
		Name: "report_issue",
		Description: "Report a problem with your tools to the operators of your guild: a tool that failed (tool_failure), " +
			"a result cut short (truncated), an external API that misbehaved (api), or anything else (other). " +
			"Say what you called, what happened and what you expected.",
		Schema:        json.RawMessage(schema),
		Handler:       t.report,
		Family:        orchestrator.FamilyAlways,
		Transactional: true, // it writes only to the database
	})
	if err != nil {
		return fmt.Errorf("register report_issue: %w", err)
	}
	return nil
}

const schema = `{"type":"object","properties":{
"kind":{"type":"string","enum":["tool_failure","truncated","api","other"],"description":"what sort of problem"},
"message":{"type":"string","description":"what you called, what happened, what you expected (at most 4000 characters)"}},
"required":["kind","message"],"additionalProperties":false}`

func (t *Tools) report(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("report_issue arguments: %w", err)
	}
	if !slices.Contains(orchestrator.IssueKinds, in.Kind) {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "kind must be one of %s, got %q", strings.Join(orchestrator.IssueKinds, ", "), in.Kind)
	}
	msg := strings.TrimSpace(in.Message)
	if msg == "" {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "message is empty; say what you called, what happened and what you expected")
	}
	if !utf8.ValidString(msg) {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "message is not valid UTF-8 text")
	}
	if n := utf8.RuneCountInString(msg); n > MaxMessageChars {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "message is %d characters; at most %d: keep the essentials", n, MaxMessageChars)
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	is, err := t.Store.CreateIssue(ctx, orchestrator.Issue{
		ID: orchestrator.NewID(orchestrator.PrefixIssue), GuildID: c.GuildID, AgentID: c.AgentID, RunID: c.RunID,
		Kind: in.Kind, Message: msg, CreatedAt: now().UTC().Truncate(time.Microsecond),
	})
	if err != nil {
		return "", err
	}
	c.Meta["issue_id"] = is.ID
	return fmt.Sprintf("filed issue %s (%s) for your guild's operators; they will see it in their inbox", is.ID, is.Kind), nil
}
