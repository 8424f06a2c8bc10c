package main

import "github.com/guildsai/guilds/orchestrator/registry"

// registerTools is the one place tool families are wired: each family package registers its
// native tools here (e.g. notes.Register(reg, deps)). No family is available yet.
func registerTools(reg *registry.Registry) error {
	_ = reg
	return nil
}
