package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/mcp/mcptest"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// restartTools are the tools of each instance of TestMCPRestartThroughTheCallPath's server: echo,
// a tool only callable as a task, a tool whose namespaced name passes 64 characters, and one that
// answers with an embedded text resource.
func restartTools(m *server.MCPServer) {
	m.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())), func(_ context.Context, r mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + r.GetString("text", "")), nil
	})
	m.AddTool(mcpgo.NewTool("export_all", mcpgo.WithTaskSupport(mcpgo.TaskSupportRequired)), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("exported"), nil
	})
	m.AddTool(mcpgo.NewTool("summarise_the_quarterly_ledger"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("ledger summary"), nil
	})
	m.AddTool(mcpgo.NewTool("readme"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{
			URI: "repo://README.md", MIMEType: "text/plain", Text: "Build with make; test with make test."})}}, nil
	})
}

// TestMCPRestartThroughTheCallPath: through the API, a connected custom server that restarts under
// its live session (answering the old session 400 with a JSON-RPC error, as the TypeScript SDK's
// servers do) keeps answering the run's calls and refreshes; one that takes no new session is
// reported on the next call and refresh with what it answered; Connect and the refresh name the
// tool that cannot be called and why, a 71-character name is offered in its short form, and an
// embedded text resource reaches the model as text.
func TestMCPRestartThroughTheCallPath(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	srv := mcptest.Start(t, mcptest.LikeTypeScriptSDK(), mcptest.WithTools(restartTools))
	org, _, agent := e.scopes()
	slug := "accounting-ledger-self-hosted-staging"
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": slug, "name": "Ledger", "url": srv.URL, "auth": "none"})
	conn := e.must(201, "POST", "/api/mcp/connections", connectBody(slug, org, ""))
	connID := conn["id"].(string)
	skipped, _ := conn["skipped_tools"].([]any)
	if conn["tool_count"] != float64(3) || len(skipped) != 1 || !strings.Contains(stringOf(skipped[0], "name"), "export_all") || !strings.Contains(stringOf(skipped[0], "reason"), "task augmentation") {
		t.Fatalf("Connect answered %v: want 3 tools and export_all skipped with why", conn)
	}
	run := e.run(agent, map[string]any{"kind": "direct"})
	names := map[string]bool{}
	for _, n := range offered(e.must(200, "GET", "/api/runs/"+run, nil)) {
		names[n] = true
		if len(n) > 64 {
			t.Errorf("offered name %q is longer than 64", n)
		}
	}
	prefix := "accounting_ledger_self_hosted_staging_"
	long := ""
	for n := range names {
		if strings.HasPrefix(n, prefix+"summarise") {
			long = n
		}
	}
	if !names[prefix+"echo"] || long == "" || names[prefix+"export_all"] {
		t.Fatalf("offered %v", names)
	}
	call := func(name string) string {
		t.Helper()
		return e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": name, "arguments": map[string]any{"text": "hi"}})["result"].(string)
	}
	if got := call(prefix + "echo"); !strings.HasPrefix(got, "echo: hi") {
		t.Fatalf("echo = %q", got)
	}
	if got := call(long); !strings.HasPrefix(got, "ledger summary") {
		t.Fatalf("the long-named tool = %q", got)
	}
	if got := call(prefix + "readme"); !strings.Contains(got, "Build with make; test with make test.") {
		t.Fatalf("the embedded resource = %q", got)
	}

	srv.Restart()
	waitFor(t, "the broken stream to be noticed", func() bool { return strings.Contains(e.logs.String(), "dropped the session's event stream") })
	if got := call(prefix + "echo"); !strings.HasPrefix(got, "echo: hi") {
		t.Fatalf("echo after the restart = %q", got)
	}
	diff := e.must(200, "POST", "/api/mcp/connections/"+connID+"/refresh", nil)
	if sk, _ := diff["skipped"].([]any); len(sk) != 1 {
		t.Fatalf("refresh after the restart: %v", diff)
	}

	srv.RefuseInitialize(503, "ledger is migrating, back at 14:00")
	srv.Restart()
	waitFor(t, "the second broken stream", func() bool {
		return strings.Count(e.logs.String(), "dropped the session's event stream") == 2
	})
	for i := 0; i < 2; i++ {
		if got := call(prefix + "echo"); !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, "503") || !strings.Contains(got, "ledger is migrating, back at 14:00") {
			t.Fatalf("call %d while the server takes no session = %q", i, got)
		}
		st, out := e.do("POST", "/api/mcp/connections/"+connID+"/refresh", nil)
		if st != 502 || !strings.Contains(errMessage(out), "ledger is migrating, back at 14:00") {
			t.Fatalf("refresh %d while the server takes no session: %d %v", i, st, out)
		}
	}
	if got := e.must(200, "GET", "/api/mcp/connections/"+connID, nil); !strings.Contains(got["list_error"].(string), "ledger is migrating") {
		t.Fatalf("the connection does not say why: %v", got)
	}
	srv.RefuseInitialize(0, "")
	if got := call(prefix + "echo"); !strings.HasPrefix(got, "echo: hi") {
		t.Fatalf("echo once the server takes sessions again = %q", got)
	}
	// The MCP client logs the incident once at WARN; the API's own line for each 502 it answers
	// is not the client's.
	var errorLines, reopenWarnings int
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) && !strings.Contains(line, `"msg":"request failed"`) {
			errorLines++
		}
		if strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, "cannot be opened") {
			reopenWarnings++
		}
	}
	if errorLines != 0 || reopenWarnings != 1 {
		t.Errorf("%d ERROR lines and %d WARN lines for the failed reopens (want 0 and 1):\n%s", errorLines, reopenWarnings, e.logs.String())
	}
}

// stringOf reads a string member of a JSON object.
func stringOf(v any, key string) string {
	m, _ := v.(map[string]any)
	s, _ := m[key].(string)
	return s
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
