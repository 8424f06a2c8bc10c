// Package browser declares the eight browser tools; each call runs /usr/local/bin/guilds-browser in
// the agent's sandbox per PROTOCOL.md, attached to that sandbox's Chromium (started on first use).
package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// HelperTimeout bounds one guilds-browser process: each call has a 60-second timeout in the
// helper, plus the time to start its warm daemon and attach.
const HelperTimeout = 90 * time.Second

// Tools registers the browser tools over a sandbox provider and its browsers.
type Tools struct {
	Sandbox  sandbox.Provider
	Browsers *sandbox.Browsers // starts each agent's Chromium; its CDP URL reaches the helper as GUILDS_CDP_URL
}

// Names lists the eight browser tools.
var Names = []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_type",
	"browser_fill", "browser_scroll", "browser_screenshot", "browser_eval"}

// Register adds the eight browser tools, Family orchestrator.FamilyBrowser. Each call holds the
// agent's Chromium (started on first use) for its whole length, so the idle stop never ends a
// browser a call is using.
func (t *Tools) Register(reg *registry.Registry) error {
	h := &sandbox.HelperTools{Provider: t.Sandbox, Helper: sandbox.BrowserHelper, Timeout: HelperTimeout,
		Env: func(ctx context.Context, call *registry.Call) ([]string, error) {
			url, _ := ctx.Value(cdpURL{}).(string)
			return []string{"GUILDS_CDP_URL=" + url}, nil
		}}
	for _, name := range Names {
		d := decls[name]
		run := h.Handler(name)
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
		if err := reg.Register(registry.Tool{Name: name, Description: d.desc, Schema: json.RawMessage(d.schema),
			Handler: handler, Family: orchestrator.FamilyBrowser}); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	return nil
}

// cdpURL is the context key of the call's Chromium DevTools URL.
type cdpURL struct{}

type decl struct{ desc, schema string }

const locatorDoc = "An element from the latest browser_snapshot: its ref (e12) or role and name (button \"Save\")."

// decls hold each tool's description and explicit JSON Schema, matching guilds-browser's arguments.
var decls = map[string]decl{
	"browser_navigate": {
		"Open a URL (http, https, file, about or data) in the sandbox's browser and wait for it to load. Each browser call has a 60-second timeout.",
		`{"type":"object","properties":{"url":{"type":"string","minLength":1,"description":"Full URL, e.g. https://example.com"}},"required":["url"],"additionalProperties":false}`,
	},
	"browser_snapshot": {
		"The current page's accessibility tree, with a ref for each element; click, type and fill take locators from it.",
		`{"type":"object","properties":{},"additionalProperties":false}`,
	},
	"browser_click": {
		"Click an element of the page, named by a locator from the snapshot.",
		`{"type":"object","properties":{"locator":{"type":"string","minLength":1,"description":` + jsonString(locatorDoc) + `}},"required":["locator"],"additionalProperties":false}`,
	},
	"browser_type": {
		"Type text at the end of a field, key by key, as a user would (use browser_fill to replace its value).",
		`{"type":"object","properties":{"locator":{"type":"string","minLength":1,"description":` + jsonString(locatorDoc) + `},"text":{"type":"string","minLength":1,"description":"The keys to type."}},"required":["locator","text"],"additionalProperties":false}`,
	},
	"browser_fill": {
		"Set a field's whole value (\"\" empties it).",
		`{"type":"object","properties":{"locator":{"type":"string","minLength":1,"description":` + jsonString(locatorDoc) + `},"value":{"type":"string","description":"What the field should hold."}},"required":["locator","value"],"additionalProperties":false}`,
	},
	"browser_scroll": {
		"Move one viewport up, down, left or right in a visible overflow panel when the page has one, otherwise the window; target picks the panel.",
		`{"type":"object","properties":{"direction":{"type":"string","enum":["up","down","left","right"],"description":"Where to scroll."},"target":{"type":"string","description":"Locator of the panel to scroll (default: the page's visible overflow panel, else the window)."}},"required":["direction"],"additionalProperties":false}`,
	},
	"browser_screenshot": {
		"Take a screenshot of the page; it is written to /home/agent/screenshots/latest.jpg.",
		`{"type":"object","properties":{},"additionalProperties":false}`,
	},
	"browser_eval": {
		"Run JavaScript in the current page as the body of an async function and return its JSON-serializable value (return document.title). Reuse a snippet by writing it to an agent note and reading it back with note_get.",
		`{"type":"object","properties":{"script":{"type":"string","minLength":1,"description":"Async function body; use return for the value."}},"required":["script"],"additionalProperties":false}`,
	},
}

// jsonString encodes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
