// Package memory holds memory_write: the full replacement of an agent's memory row, the previous
// version archived in memory_revisions.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Store is what memory_write needs from the artifact store (postgres.Store implements it).
type Store interface {
	WriteMemory(ctx context.Context, agent orchestrator.Agent, content string, now time.Time) (orchestrator.Artifact, bool, error)
}

// Tools serves memory_write over a store.
type Tools struct {
	Store Store
	Now   func() time.Time
}

func (t *Tools) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

// Register adds memory_write to reg, in the memory family.
func (t *Tools) Register(reg *registry.Registry) error {
	err := reg.Register(registry.Tool{
		Name: "memory_write",
		Description: fmt.Sprintf("Replace your whole memory with content (at most %d characters). It is your own, kept across runs: "+
			"rewrite it completely each time, keeping what still matters. The previous version is archived.", orchestrator.MemoryMaxChars),
		Schema: json.RawMessage(`{"type":"object","properties":{
"content":{"type":"string","description":"the whole new memory, Markdown"}},
"required":["content"],"additionalProperties":false}`),
		Handler:       t.write,
		Family:        orchestrator.FamilyMemory,
		Transactional: true, // it writes only to the database
	})
	if err != nil {
		return fmt.Errorf("register memory_write: %w", err)
	}
	return nil
}

func (t *Tools) write(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("memory_write arguments: %w", err)
	}
	if err := orchestrator.CheckMemory(in.Content); err != nil {
		return "", err
	}
	n := utf8.RuneCountInString(in.Content)
	agent := orchestrator.Agent{ID: c.AgentID, GuildID: c.GuildID, OrgID: c.OrgID}
	_, archived, err := t.Store.WriteMemory(ctx, agent, in.Content, t.now())
	if err != nil {
		return "", err
	}
	if c.Meta == nil {
		c.Meta = map[string]any{}
	}
	c.Meta["chars"] = n
	if archived {
		return fmt.Sprintf("memory replaced (%d of %d characters); the previous version is archived", n, orchestrator.MemoryMaxChars), nil
	}
	return fmt.Sprintf("memory written (%d of %d characters)", n, orchestrator.MemoryMaxChars), nil
}
