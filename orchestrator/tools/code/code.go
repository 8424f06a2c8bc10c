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
	// SecretEnv returns the calling agent's granted secrets as NAME=value for shell's environment
	// (adding their values to the call's redaction); nil exports none.
	SecretEnv func(ctx context.Context, call *registry.Call) ([]string, error)
	// GitEnv returns shell's git configuration for the GitHub App (its credential helper, after
	// replacing a token near expiry; the tokens join the call's redaction); nil adds none.
	GitEnv func(ctx context.Context, call *registry.Call) ([]string, error)
}

// secretsNote ends shell's description when the agent's secrets reach its environment.
const secretsNote = " Your secrets (secret_store, or given by the operator) are environment variables of their names, e.g. $SERVICE_API_KEY; their values are masked in results."

// Names lists the eleven code tools, in the spec's order.
var Names = toolspec.Names(toolspec.Code)

// Register adds the eleven code tools as toolspec.Code defines them (name, description, schema),
// Family orchestrator.FamilyCode.
func (t *Tools) Register(reg *registry.Registry) error {
	h := &tools.HelperTools{Provider: t.Sandbox, Helper: Helper, Timeout: HelperTimeout}
	shell := &tools.HelperTools{Provider: t.Sandbox, Helper: Helper, Timeout: HelperTimeout, Env: joinEnv(t.GitEnv, t.SecretEnv)}
	for _, spec := range toolspec.Code {
		schema, err := spec.Schema()
		if err != nil {
			return fmt.Errorf("register %s: %w", spec.Name, err)
		}
		handler, desc := h.Handler(spec.Name), spec.Description
		switch {
		case spec.Name == "file_read":
			handler = countBytes(handler)
		case spec.Name == "shell" && (t.SecretEnv != nil || t.GitEnv != nil):
			handler = shell.Handler(spec.Name)
			if t.SecretEnv != nil {
				desc += secretsNote
			}
		}
		if spec.Name == "shell" {
			handler = followLog(t.Sandbox, handler)
		}
		if err := reg.Register(registry.Tool{Name: spec.Name, Description: desc, Schema: schema,
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

// joinEnv runs each environment source in order (nil ones skipped); the first error stops it.
func joinEnv(fns ...func(context.Context, *registry.Call) ([]string, error)) func(context.Context, *registry.Call) ([]string, error) {
	var set []func(context.Context, *registry.Call) ([]string, error)
	for _, f := range fns {
		if f != nil {
			set = append(set, f)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return func(ctx context.Context, call *registry.Call) ([]string, error) {
		var env []string
		for _, f := range set {
			e, err := f(ctx, call)
			if err != nil {
				return nil, err
			}
			env = append(env, e...)
		}
		return env, nil
	}
}
