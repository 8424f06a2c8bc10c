package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// maxListPages bounds how many tools/list pages one listing reads.
const maxListPages = 100

// ListTools lists the connection's tools, following pagination under one ListTimeout. It keeps at
// most MaxTools, skips (and logs, and names in Listing.Skipped with why) a tool whose entry is
// malformed, whose input schema is not a JSON Schema object, or that requires task augmentation,
// and clears the connection's changed mark.
func (p *Pool) ListTools(ctx context.Context, conn Connection) (Listing, error) {
	wasChanged := p.takeChanged(conn.ID)
	var entries []json.RawMessage
	var more bool
	lim := limit{idle: p.cfg.ListTimeout, what: func(bool) string {
		return fmt.Sprintf("timed out after %s: the server did not list its tools in time", p.cfg.ListTimeout)
	}}
	s, err := p.do(ctx, conn, "tools/list", lim, func(ctx context.Context, s *session) error {
		var err error
		entries, more, err = s.listPages(ctx, 2*p.cfg.MaxTools)
		return err
	})
	if err != nil {
		if wasChanged {
			p.markChanged(conn.ID)
		}
		return Listing{}, err
	}
	tools, skipped := shapeTools(s.log, conn.Slug, entries, more, p.cfg.MaxTools)
	return Listing{Tools: tools, Skipped: skipped, Transport: s.transport}, nil
}

// listPages reads tools/list pages until the last one, or until it holds enough entries (more
// then reports that pages were left unread).
func (s *session) listPages(ctx context.Context, enough int) (entries []json.RawMessage, more bool, err error) {
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := s.request(ctx, "tools/list", params)
		if err != nil {
			return nil, false, err
		}
		tools, next, err := parseListPage(raw)
		if err != nil {
			return nil, false, err
		}
		entries = append(entries, tools...)
		if next == "" {
			return entries, false, nil
		}
		if len(entries) >= enough || page+1 >= maxListPages {
			return entries, true, nil
		}
		if seen[next] {
			return nil, false, fmt.Errorf("malformed tools/list result: the cursor %q came back", clip(next, 40))
		}
		seen[next] = true
		cursor = next
	}
}

// parseListPage reads one tools/list result: its tool entries, each still raw, and its cursor.
func parseListPage(raw json.RawMessage) (tools []json.RawMessage, next string, err error) {
	var page struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor *string           `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, "", fmt.Errorf("malformed tools/list result: %w", err)
	}
	if page.NextCursor != nil {
		next = *page.NextCursor
	}
	return page.Tools, next, nil
}

// shapeTools turns raw tool entries into Tools: namespaced (a name past 64 characters in its
// deterministic short form), deduplicated, schema-checked, at most limit of them. What it leaves
// out is logged, and each tool named in skipped with why.
func shapeTools(log *slog.Logger, slug string, entries []json.RawMessage, more bool, limit int) (out []Tool, skipped []Skipped) {
	out = make([]Tool, 0, min(len(entries), limit))
	taken := make(map[string]bool, len(entries))
	skip := func(name, reason string) {
		log.Warn("mcp: skipped a tool", "tool", clip(name, 100), "reason", reason)
		skipped = append(skipped, Skipped{Name: clip(name, 200), Reason: reason})
	}
	dropped := 0
	for _, e := range entries {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Execution   struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		}
		if err := json.Unmarshal(e, &t); err != nil || t.Name == "" {
			skip(t.Name, "its entry in tools/list is malformed: "+clip(string(e), 200))
			continue
		}
		if len(out) == limit {
			dropped++
			continue
		}
		if field, ok := orchestrator.NULPath(e); ok {
			skip(t.Name, fmt.Sprintf("its listing holds a NUL character (in %s), which cannot be stored", field))
			continue
		}
		if t.Execution.TaskSupport == "required" {
			skip(t.Name, "it requires task augmentation (execution.taskSupport: required), which this client does not support, so every call would fail")
			continue
		}
		if err := checkSchema(t.InputSchema); err != nil {
			skip(t.Name, "its input schema is not a JSON Schema object: "+err.Error())
			continue
		}
		name := orchestrator.NamespacedTool(slug, t.Name)
		if taken[name] {
			base := name
			for n := 2; taken[name]; n++ {
				name = orchestrator.FitToolName(base + "_" + strconv.Itoa(n))
			}
			log.Warn("mcp: tool name collides after namespacing; suffixed", "tool", clip(t.Name, 100), "name", name)
		}
		taken[name] = true
		out = append(out, Tool{RemoteName: t.Name, Name: name, Description: t.Description, InputSchema: t.InputSchema})
	}
	if dropped > 0 || more {
		log.Warn("mcp: the server lists more tools than are kept", "kept", len(out), "left_out", dropped, "pages_unread", more)
		reason := fmt.Sprintf("the server lists more than the %d tools kept of one listing", limit)
		if dropped > 0 {
			skipped = append(skipped, Skipped{Reason: fmt.Sprintf("%d more tools: %s", dropped, reason)})
		} else {
			skipped = append(skipped, Skipped{Reason: "pages left unread: " + reason})
		}
	}
	return out, skipped
}

// checkSchema reports why schema is not a JSON Schema for an object, or nil when it is one.
func checkSchema(schema json.RawMessage) error {
	if t := bytes.TrimSpace(schema); len(t) == 0 || t[0] != '{' {
		return errors.New("the input schema is not a JSON object")
	}
	// ValidateArgs compiles the schema (cached for the calls to come); an *ArgsError only says
	// that {} does not satisfy it.
	err := registry.ValidateArgs(schema, nil)
	var argsErr *registry.ArgsError
	if err != nil && !errors.As(err, &argsErr) {
		return err
	}
	return nil
}
