// Package browser declares the eight browser tools; each call runs /usr/local/bin/guilds-browser in
// the agent's sandbox per PROTOCOL.md, attached to that sandbox's Chromium (started on first use).
package browser

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

// Helper is guilds-browser's path in every sandbox.
const Helper = sandbox.BinDir + "/guilds-browser"

// HelperTimeout bounds one guilds-browser process: each call has a 60-second timeout in the
// helper, plus the time to start its warm daemon and attach.
const HelperTimeout = 90 * time.Second

// Tools registers the browser tools over a sandbox provider and its browsers.
type Tools struct {
	Sandbox  sandbox.Provider
	Browsers *sandbox.Browsers // starts each agent's Chromium; its CDP URL reaches the helper as GUILDS_CDP_URL
}

// Names lists the eight browser tools, in the spec's order.
var Names = toolspec.Names(toolspec.Browser)

// Register adds the eight browser tools as toolspec.Browser defines them (name, description,
// schema), Family orchestrator.FamilyBrowser. Each call holds the agent's Chromium (started on
// first use) for its whole length, so the idle stop never ends a browser a call is using.
func (t *Tools) Register(reg *registry.Registry) error {
	h := &tools.HelperTools{Provider: t.Sandbox, Helper: Helper, Timeout: HelperTimeout,
		Env: func(ctx context.Context, call *registry.Call) ([]string, error) {
			url, _ := ctx.Value(cdpURL{}).(string)
			return []string{"GUILDS_CDP_URL=" + url}, nil
		}}
	for _, spec := range toolspec.Browser {
		schema, err := spec.Schema()
		if err != nil {
			return fmt.Errorf("register %s: %w", spec.Name, err)
		}
		run := h.Handler(spec.Name)
		handler := func(ctx context.Context, call *registry.Call) (string, error) {
			if t.Browsers == nil {
				return "", fmt.Errorf("the browser is not available on this orchestrator (no sandbox browser configured)")
			}
			url, release, err := t.Browsers.Acquire(ctx, call.AgentID)
			if err != nil {
				return "", fmt.Errorf("start the sandbox's browser: %w", err)
			}
			defer release()
			return run(context.WithValue(ctx, cdpURL{}, url), call)
		}
		if err := reg.Register(registry.Tool{Name: spec.Name, Description: spec.Description, Schema: schema,
			Handler: handler, Family: orchestrator.FamilyBrowser}); err != nil {
			return fmt.Errorf("register %s: %w", spec.Name, err)
		}
	}
	return nil
}

// cdpURL is the context key of the call's Chromium DevTools URL.
type cdpURL struct{}
