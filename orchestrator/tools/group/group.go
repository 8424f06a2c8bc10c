// Package group holds group_post: an agent posts a message to its guild's group chat, which the
// operator API lists.
package group

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// MaxTextChars is the most characters one message may hold.
const MaxTextChars = 4000

// Store is what group_post needs (postgres.Store implements it).
type Store interface {
	PostGroupMessage(ctx context.Context, m orchestrator.ChatMessage) (orchestrator.ChatMessage, error)
}

// Tools serves group_post.
type Tools struct {
	Store Store
	Now   func() time.Time
}

// Register adds group_post to reg, in the group family (offered when its binding is on).
func (t *Tools) Register(reg *registry.Registry) error {
	err := reg.Register(registry.Tool{
		Name:        "group_post",
		Description: "Post a message to your guild's group chat, where the other agents and the operators read it. Markdown, at most 4000 characters.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"text":{"type":"string","description":"the message, markdown, at most 4000 characters"}},
"required":["text"],"additionalProperties":false}`),
		Handler:       t.post,
		Family:        orchestrator.FamilyGroup,
		Transactional: true, // it writes only to the database
	})
	if err != nil {
		return fmt.Errorf("register group_post: %w", err)
	}
	return nil
}

func (t *Tools) post(ctx context.Context, c *registry.Call) (string, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("group_post arguments: %w", err)
	}
	text := strings.TrimSpace(in.Text)
	switch {
	case text == "":
		return "", orchestrator.Errorf(orchestrator.EINVALID, "text is empty; write the message to post")
	case !utf8.ValidString(text):
		return "", orchestrator.Errorf(orchestrator.EINVALID, "text is not valid UTF-8")
	case utf8.RuneCountInString(text) > MaxTextChars:
		return "", orchestrator.Errorf(orchestrator.EINVALID, "text is %d characters; at most %d: split it or put the detail in a note", utf8.RuneCountInString(text), MaxTextChars)
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	m, err := t.Store.PostGroupMessage(ctx, orchestrator.ChatMessage{GuildID: c.GuildID, AgentID: c.AgentID, RunID: c.RunID, Text: text,
		CreatedAt: now().UTC().Truncate(time.Microsecond)})
	if err != nil {
		return "", err
	}
	c.Meta["message_id"] = m.ID
	return fmt.Sprintf("posted message %d to your guild's group chat", m.ID), nil
}
