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
// most MaxTools, skips (and logs) a tool whose input schema is not a JSON Schema object, and
// clears the connection's changed mark.
func (p *Pool) ListTools(ctx context.Context, conn Connection) (Listing, error) {
	wasChanged := p.takeChanged(conn.ID)
	var entries []json.RawMessage
	var more bool
	s, err := p.do(ctx, conn, "tools/list", p.cfg.ListTimeout, func(ctx context.Context, s *session) error {
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
	return Listing{Tools: shapeTools(s.log, conn.Slug, entries, more, p.cfg.MaxTools), Transport: s.transport}, nil
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

// shapeTools turns raw tool entries into Tools: namespaced, deduplicated, schema-checked, at most
// limit of them. Everything left out is logged.
func shapeTools(log *slog.Logger, slug string, entries []json.RawMessage, more bool, limit int) []Tool {
	out := make([]Tool, 0, min(len(entries), limit))
	taken := make(map[string]bool, len(entries))
	dropped := 0
	for _, e := range entries {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(e, &t); err != nil || t.Name == "" {
			log.Warn("mcp: skipped a malformed tool entry", "entry", clip(string(e), 200))
			continue
		}
		if len(out) == limit {
			dropped++
			continue
		}
		if err := checkSchema(t.InputSchema); err != nil {
			log.Warn("mcp: skipped a tool whose input schema is not a JSON Schema object", "tool", clip(t.Name, 100), "err", err)
			continue
		}
		name := orchestrator.NamespacedTool(slug, t.Name)
		if taken[name] {
			base := name
			for n := 2; taken[name]; n++ {
				name = base + "_" + strconv.Itoa(n)
			}
			log.Warn("mcp: tool name collides after namespacing; suffixed", "tool", clip(t.Name, 100), "name", name)
		}
		taken[name] = true
		out = append(out, Tool{RemoteName: t.Name, Name: name, Description: t.Description, InputSchema: t.InputSchema})
	}
	if dropped > 0 || more {
		log.Warn("mcp: the server lists more tools than are kept", "kept", len(out), "left_out", dropped, "pages_unread", more)
	}
	return out
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
