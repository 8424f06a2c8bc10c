// Package code declares the eleven code tools (shell, files, search, graph); each call runs
// /usr/local/bin/guilds-code in the agent's sandbox per PROTOCOL.md.
package code

import (
	"context"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/tools"
	"github.com/guildsai/guilds/shared/toolspec"
)

// Helper is guilds-code's path in every sandbox.
const Helper = sandbox.BinDir + "/guilds-code"

// HelperTimeout bounds one guilds-code process: the longest tool limit (a Graft-backed call waits up
// to 11 minutes; shell at most 600 s plus its 2 s kill grace) plus a margin.
const HelperTimeout = 12 * time.Minute

// Tools registers the code tools over a sandbox provider.
type Tools struct {
	Sandbox sandbox.Provider
}

// Names lists the eleven code tools, in the spec's order.
var Names = toolspec.Names(toolspec.Code)

// Register adds the eleven code tools as toolspec.Code defines them (name, description, schema),
// Family orchestrator.FamilyCode.
func (t *Tools) Register(reg *registry.Registry) error {
	h := &tools.HelperTools{Provider: t.Sandbox, Helper: Helper, Timeout: HelperTimeout}
	for _, spec := range toolspec.Code {
		schema, err := spec.Schema()
		if err != nil {
			return fmt.Errorf("register %s: %w", spec.Name, err)
		}
		handler := h.Handler(spec.Name)
		if spec.Name == "file_read" {
			handler = countBytes(handler)
		}
		if err := reg.Register(registry.Tool{Name: spec.Name, Description: spec.Description, Schema: schema,
			Handler: handler, Family: orchestrator.FamilyCode}); err != nil {
			return fmt.Errorf("register %s: %w", spec.Name, err)
		}
	}
	return nil
}

// countBytes records the bytes a file_read returned as the call's "bytes" metadata, which the
// run's exploration figures (read_bytes_unedited) sum.
func countBytes(next registry.Handler) registry.Handler {
	return func(ctx context.Context, call *registry.Call) (string, error) {
		out, err := next(ctx, call)
		if err == nil {
			call.Meta["bytes"] = len(out)
		}
		return out, err
	}
}
