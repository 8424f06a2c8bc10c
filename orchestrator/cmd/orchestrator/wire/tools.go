package wire

import (
	"fmt"

	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/group"
	"github.com/guildsai/guilds/orchestrator/tools/issues"
	"github.com/guildsai/guilds/orchestrator/tools/memory"
	"github.com/guildsai/guilds/orchestrator/tools/notes"
	"github.com/guildsai/guilds/orchestrator/tools/records"
	"github.com/guildsai/guilds/orchestrator/tools/schedules"
)

// registerTools is the one place tool families are wired: each family package registers its
// native tools here over the store they use.
func registerTools(reg *registry.Registry, store *postgres.Store) error {
	for name, register := range map[string]func(*registry.Registry) error{
		"notes":     (&notes.Tools{Store: store}).Register,
		"memory":    (&memory.Tools{Store: store}).Register,
		"records":   (&records.Tools{Store: store}).Register,
		"issues":    (&issues.Tools{Store: store}).Register,
		"schedules": (&schedules.Tools{Store: store}).Register,
		"group":     (&group.Tools{Store: store}).Register,
	} {
		if err := register(reg); err != nil {
			return fmt.Errorf("register %s tools: %w", name, err)
		}
	}
	return nil
}
