package mcp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// progressTool adds a tool that reports progress every tick, n times, then answers (n < 0: never
// answers, reporting until its request ends).
func progressTool(f *fake, name string, n int, tick time.Duration) {
	f.MCP.AddTool(mcpgo.NewTool(name), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		for i := 0; n < 0 || i < n; i++ {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(tick):
			}
			_ = f.MCP.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": req.Params.Meta.ProgressToken, "progress": i + 1, "message": "working"})
		}
		return mcpgo.NewToolResultText("finished"), nil
	})
}

// TestProgressExtendsACall: a call waits CallTimeout for an answer; each progress notice restarts
// that wait, up to CallMax in all. A timeout names the limit and the variable that sets it, and
// does not advise trying again.
func TestProgressExtendsACall(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	progressTool(f, "slow_but_reporting", 12, 150*time.Millisecond) // 1.8 s in all, 150 ms between notices
	progressTool(f, "reports_forever", -1, 150*time.Millisecond)
	hangTool(f)
	p := newPool(t, Config{CallTimeout: time.Second, CallMax: 3 * time.Second}, nil)
	conn := Connection{ID: "c1", Slug: "slow", URL: f.URL}

	start := time.Now()
	out, err := p.Call(context.Background(), conn, Tool{RemoteName: "slow_but_reporting"}, nil)
	if err != nil || out != "finished" {
		t.Fatalf("a call reporting progress past CallTimeout = %q, %v", out, err)
	}
	if d := time.Since(start); d < 1800*time.Millisecond {
		t.Fatalf("the call answered after %v, before its server finished", d)
	}

	_, err = p.Call(context.Background(), conn, Tool{RemoteName: "reports_forever"}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped after 3s") || !strings.Contains(err.Error(), CallMaxVar) {
		t.Fatalf("a call reporting progress forever = %v; want it stopped at CallMax, naming %s", err, CallMaxVar)
	}

	_, err = p.Call(context.Background(), conn, Tool{RemoteName: "hang"}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 1s without an answer or a progress notice ("+CallTimeoutVar+")") ||
		!strings.Contains(err.Error(), CallMaxVar) || strings.Contains(err.Error(), "try again") {
		t.Fatalf("a silent call = %v", err)
	}
	// The session survived the three.
	if got := echo(t, p, conn, Tool{RemoteName: "echo"}); got != "echo: hi" {
		t.Fatalf("echo after the timeouts = %q", got)
	}
}

// TestToolsThatCannotWork: a tool that requires task augmentation is not kept (each of its calls
// would fail), a namespaced name past 64 characters gets its deterministic short form, and what
// is left out is named in the listing with why.
func TestToolsThatCannotWork(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.MCP.AddTool(mcpgo.NewTool("long_running_export", mcpgo.WithTaskSupport(mcpgo.TaskSupportRequired)), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("never called without a task"), nil
	})
	long := "list_every_invoice_of_the_organisation_with_its_attachments_and_status"
	f.MCP.AddTool(mcpgo.NewTool(long), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("invoices"), nil
	})
	f.MCP.AddTool(mcpgo.NewTool(long+"_v2"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("invoices v2"), nil
	})
	p := newPool(t, Config{}, nil)
	slug := "accounting-self-hosted"
	conn := Connection{ID: "c1", Slug: slug, URL: f.URL}
	l, err := p.ListTools(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Tool{}
	for _, tool := range l.Tools {
		names[tool.RemoteName] = tool
		if len(tool.Name) > orchestrator.MaxToolName || strings.Trim(tool.Name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Errorf("tool name %q breaks the model-facing rules", tool.Name)
		}
	}
	if _, ok := names["long_running_export"]; ok || len(l.Skipped) != 1 || l.Skipped[0].Name != "long_running_export" || !strings.Contains(l.Skipped[0].Reason, "taskSupport: required") {
		t.Fatalf("listing %+v, skipped %+v: want the task-only tool skipped with why", names, l.Skipped)
	}
	a, b := names[long], names[long+"_v2"]
	if a.Name == "" || b.Name == "" || a.Name == b.Name || !strings.HasPrefix(a.Name, "accounting_self_hosted_list_every") {
		t.Fatalf("long names %q and %q", a.Name, b.Name)
	}
	if a.Name != orchestrator.NamespacedTool(slug, long) {
		t.Fatalf("%q is not the deterministic short form %q", a.Name, orchestrator.NamespacedTool(slug, long))
	}
	if out, err := p.Call(context.Background(), conn, b, nil); err != nil || out != "invoices v2" {
		t.Fatalf("call by the short name = %q, %v", out, err)
	}
	// Before: the server refuses the call every time.
	_, err = p.Call(context.Background(), conn, Tool{RemoteName: "long_running_export"}, nil)
	if err == nil || !strings.Contains(err.Error(), "requires task augmentation") {
		t.Fatalf("the task-only tool called without a task = %v", err)
	}
}
