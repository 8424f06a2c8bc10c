package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestTenThousandToolsAndBadSchemas(t *testing.T) {
	f := newFake(t)
	// A server of its own, paginating by 1,000.
	f.MCP = server.NewMCPServer("many", "1", server.WithToolCapabilities(true), server.WithPaginationLimit(1000), server.WithLogger(slog.New(discardHandler{})))
	f.handler = server.NewStreamableHTTPServer(f.MCP, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(discardHandler{})))
	noop := func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) { return nil, nil }
	bad := map[string]string{
		"b_string":        `"an object, honestly"`,
		"b_array":         `[{"type":"object"}]`,
		"b_not_object":    `{"type":"string"}`,
		"b_invalid":       `{"type":"object","properties":{"x":{"type":12}}}`,
		"b_external_refs": `{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`,
	}
	var tools []server.ServerTool
	for name, schema := range bad {
		tools = append(tools, server.ServerTool{Tool: mcpgo.NewToolWithRawSchema(name, "", json.RawMessage(schema)), Handler: noop})
	}
	// Names that collide once namespaced, and one without a type (accepted, as remote schemas may).
	for _, name := range []string{"a.b", "a_b", "A-B", "a_b_2"} {
		tools = append(tools, server.ServerTool{Tool: mcpgo.NewTool(name), Handler: noop})
	}
	tools = append(tools, server.ServerTool{Tool: mcpgo.NewToolWithRawSchema("a_untyped", "", json.RawMessage(`{"properties":{}}`)), Handler: noop})
	for i := range 10000 {
		tools = append(tools, server.ServerTool{Tool: mcpgo.NewTool(fmt.Sprintf("t%05d", i)), Handler: noop})
	}
	f.MCP.AddTools(tools...)

	logs := &logBuffer{}
	p := newPool(t, Config{}, logs)
	l, err := p.ListTools(context.Background(), Connection{ID: "c1", Slug: "many", URL: f.URL})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tools) != DefaultMaxTools {
		t.Fatalf("kept %d tools, want %d", len(l.Tools), DefaultMaxTools)
	}
	names := map[string]string{}
	for _, tool := range l.Tools {
		if prev, dup := names[tool.Name]; dup {
			t.Fatalf("%s and %s both namespaced as %s", prev, tool.RemoteName, tool.Name)
		}
		names[tool.Name] = tool.RemoteName
		if _, isBad := bad[tool.RemoteName]; isBad {
			t.Errorf("kept %s, whose schema is not a JSON Schema object", tool.RemoteName)
		}
	}
	// mcp-go serves tools sorted by name: A-B, a.b, a_b, a_b_2.
	for name, remote := range map[string]string{"many_a_b": "A-B", "many_a_b_2": "a.b", "many_a_b_3": "a_b", "many_a_b_2_2": "a_b_2", "many_a_untyped": "a_untyped"} {
		if names[name] != remote {
			t.Errorf("%s is %q, want %q", name, names[name], remote)
		}
	}
	text := logs.String()
	for name := range bad {
		if !strings.Contains(text, "tool="+name) {
			t.Errorf("no log line for skipped %s", name)
		}
	}
	if strings.Count(text, "collides after namespacing") != 3 {
		t.Errorf("want 3 collision log lines:\n%s", text)
	}
	if !strings.Contains(text, "more tools than are kept") {
		t.Errorf("no log line for the tools left out")
	}
}

func TestResultOverTenMiB(t *testing.T) {
	f := newFake(t)
	big := strings.Repeat("x", 20<<20)
	f.MCP.AddTool(mcpgo.NewTool("big"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(big), nil
	})
	f.MCP.AddTool(mcpgo.NewTool("big_stream"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		// A notification first upgrades the response to an event stream.
		_ = f.MCP.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1})
		return mcpgo.NewToolResultText(big), nil
	})
	p := newPool(t, Config{}, nil)
	conn := Connection{ID: "c1", Slug: "huge", URL: f.URL}
	for _, name := range []string{"big", "big_stream"} {
		_, err := p.Call(context.Background(), conn, Tool{RemoteName: name}, nil)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "result too large") || !strings.Contains(err.Error(), `"huge"`) {
			t.Fatalf("%s: err = %v, want ErrTooLarge", name, err)
		}
		if got := echo(t, p, conn, Tool{RemoteName: "echo"}); got != "echo: hi" {
			t.Fatalf("after %s: %q", name, got)
		}
	}
	if n := len(f.requests("initialize")); n != 1 {
		t.Errorf("initializes = %d: an oversized result should not cost the session", n)
	}
}

func TestResultOverTenMiBOnSSE(t *testing.T) {
	mcpSrv := server.NewMCPServer("legacy", "1", server.WithToolCapabilities(true))
	mcpSrv.AddTool(mcpgo.NewTool("big"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(strings.Repeat("y", 20<<20)), nil
	})
	mcpSrv.AddTool(mcpgo.NewTool("small"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("fine"), nil
	})
	f := newFake(t)
	sse := server.NewSSEServer(mcpSrv, server.WithSSEEndpoint("/mcp"), server.WithMessageEndpoint("/message"))
	server.WithBaseURL(f.srv.URL)(sse)
	f.handler = sse
	p := newPool(t, Config{}, nil)
	conn := Connection{ID: "c1", Slug: "legacy", URL: f.URL, Transport: SSE}
	_, err := p.Call(context.Background(), conn, Tool{RemoteName: "big"}, nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	out, err := p.Call(context.Background(), conn, Tool{RemoteName: "small"}, nil)
	if err != nil || out != "fine" {
		t.Fatalf("after the oversized result: %q, %v", out, err)
	}
}
