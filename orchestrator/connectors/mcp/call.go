package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/guildsai/guilds/orchestrator/registry"
)

// progressTokens numbers the progress tokens of calls, so a server may report progress.
var progressTokens atomic.Int64

// Call calls tool on the connection's server with args and returns the result as one string.
// Optional empty strings are dropped and args are checked against tool.InputSchema first (an
// invalid call is a *registry.ArgsError and never reaches the server; an empty schema skips the
// check). A result the server marks isError is a *ToolError. The call waits CallTimeout for its
// answer; each progress notice of the call restarts that wait, up to CallMax in all.
func (p *Pool) Call(ctx context.Context, conn Connection, tool Tool, args map[string]any) (string, error) {
	op := fmt.Sprintf("tools/call %q", tool.RemoteName)
	if args == nil {
		args = map[string]any{}
	}
	if len(tool.InputSchema) > 0 && hasEmptyString(args) {
		args = registry.DropOptionalEmptyStrings(tool.InputSchema, args)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("mcp server %q: %s: arguments: %w", conn.Slug, op, err)
	}
	if len(tool.InputSchema) > 0 {
		if err := registry.ValidateArgs(tool.InputSchema, raw); err != nil {
			return "", fmt.Errorf("mcp server %q: %s: %w", conn.Slug, op, err)
		}
	}
	token := "guilds-" + strconv.FormatInt(progressTokens.Add(1), 10)
	params := callParams{Name: tool.RemoteName, Arguments: raw, Meta: callMeta{ProgressToken: token}}
	var result json.RawMessage
	_, err = p.do(ctx, conn, op, p.callLimit(token), func(ctx context.Context, s *session) error {
		var err error
		result, err = s.request(ctx, "tools/call", params)
		return err
	})
	if err != nil {
		return "", err
	}
	text, isError, err := resultText(result)
	if err != nil {
		return "", fmt.Errorf("mcp server %q: %s: %w", conn.Slug, op, err)
	}
	if isError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return "", &ToolError{Text: text}
	}
	return text, nil
}

// callLimit is the time limit of one tools/call: CallTimeout without an answer or a progress notice
// under token, CallMax in all.
func (p *Pool) callLimit(token string) limit {
	idle, most := p.cfg.CallTimeout, p.cfg.CallMax
	return limit{idle: idle, most: most, token: token, what: func(fromIdle bool) string {
		if fromIdle && most > idle {
			return fmt.Sprintf("timed out after %s without an answer or a progress notice (%s); a call whose server reports progress may run up to %s (%s)",
				idle, CallTimeoutVar, most, CallMaxVar)
		}
		if fromIdle {
			return fmt.Sprintf("timed out after %s without an answer (%s)", idle, CallTimeoutVar)
		}
		return fmt.Sprintf("stopped after %s, the longest a call may run even while its server reports progress (%s)", most, CallMaxVar)
	}}
}

// hasEmptyString reports whether any top-level argument is "", the only case the empty-string
// rule changes anything (and it reads the schema, so it is skipped otherwise).
func hasEmptyString(args map[string]any) bool {
	for _, v := range args {
		if s, ok := v.(string); ok && s == "" {
			return true
		}
	}
	return false
}

type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      callMeta        `json:"_meta"`
}

type callMeta struct {
	ProgressToken string `json:"progressToken"`
}

// contentBlock holds the fields of every content block type this client maps.
type contentBlock struct {
	Type     string  `json:"type"`
	Text     string  `json:"text"`
	Data     string  `json:"data"`
	MIMEType string  `json:"mimeType"`
	URI      string  `json:"uri"`
	Name     string  `json:"name"`
	Size     *uint64 `json:"size"`
	Resource *struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	} `json:"resource"`
}

// resultText maps a tools/call result to one string: text blocks as they are, each image, audio
// or resource block as one line naming its type, MIME type and size (an embedded text resource
// followed by its text), structuredContent as compact JSON when no block is text. isError reports
// the result's isError. The whole is capped later, like every result.
func resultText(raw json.RawMessage) (text string, isError bool, err error) {
	var res struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", false, fmt.Errorf("malformed tools/call result: %w", err)
	}
	parts := make([]string, 0, len(res.Content)+1)
	hasText := false
	for _, rb := range res.Content {
		var b contentBlock
		if err := json.Unmarshal(rb, &b); err != nil {
			parts = append(parts, "[malformed content block]")
			continue
		}
		if b.Type == "text" {
			hasText = true
			parts = append(parts, b.Text)
			continue
		}
		parts = append(parts, describeBlock(&b))
		if b.Type == "resource" && b.Resource != nil && b.Resource.Text != nil {
			hasText = true
			parts = append(parts, *b.Resource.Text)
		}
	}
	if !hasText {
		if sc := compactJSON(res.StructuredContent); sc != "" {
			parts = append([]string{sc}, parts...)
		}
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

// compactJSON returns structured content as compact JSON, or "" when there is none.
func compactJSON(sc json.RawMessage) string {
	var buf bytes.Buffer
	if len(sc) == 0 || json.Compact(&buf, sc) != nil || buf.String() == "null" {
		return ""
	}
	return buf.String()
}

// describeBlock is the one line that stands for a block that is not text.
func describeBlock(b *contentBlock) string {
	typ := oneLine(b.Type, 40)
	switch b.Type {
	case "image", "audio":
		return fmt.Sprintf("[%s %s, %s]", typ, mimeOf(b.MIMEType), sizeText(base64Size(b.Data)))
	case "resource":
		if b.Resource == nil {
			return "[resource, no contents]"
		}
		r := b.Resource
		size := 0
		switch {
		case r.Text != nil:
			size = len(*r.Text)
		case r.Blob != nil:
			size = base64Size(*r.Blob)
		}
		return fmt.Sprintf("[resource %s %s, %s]", oneLine(r.URI, 200), mimeOf(r.MIMEType), sizeText(size))
	case "resource_link":
		size := "size unknown"
		if b.Size != nil {
			size = sizeText(int(min(*b.Size, 1<<62)))
		}
		return fmt.Sprintf("[resource_link %s %s, %s]", oneLine(b.URI, 200), mimeOf(b.MIMEType), size)
	}
	if typ == "" {
		typ = "untyped"
	}
	return fmt.Sprintf("[%s content block]", typ)
}

func mimeOf(m string) string {
	if m = oneLine(m, 100); m == "" {
		return "(no MIME type)"
	}
	return m
}

func sizeText(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.Itoa(n) + " bytes"
}

// base64Size is the decoded size of base64 text, without decoding it.
func base64Size(s string) int {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	return len(s) * 3 / 4
}

// oneLine makes a server's string safe for one descriptive line: no control characters, at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '[' || r == ']' {
			return ' '
		}
		return r
	}, s)
	return clip(strings.TrimSpace(s), n)
}
