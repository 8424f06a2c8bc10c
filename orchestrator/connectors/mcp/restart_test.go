package mcp_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/mcp"
	"github.com/guildsai/guilds/orchestrator/connectors/mcp/mcptest"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// echoTools adds the echo tool to each server instance.
func echoTools(m *server.MCPServer) {
	m.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())), func(_ context.Context, r mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + r.GetString("text", "")), nil
	})
}

// lines collects log lines.
type lines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }

// count is how many lines hold every one of subs.
func (l *lines) count(subs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range strings.Split(l.buf.String(), "\n") {
		all := line != ""
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

func (l *lines) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// settle waits long enough for mcp-go's GET-stream loop, which retries every second, to have
// retried twice: a lower bound, so that counting what reached the server proves it did not.
const settle = 2500 * time.Millisecond

// TestRestartedServerUnderALiveSession: a stateful streamable HTTP server restarted under a live,
// listening session (a new server on the same address) is met by one reopen: the next call and
// listing answer as before, whether the new server answers the old session 404 (mcp-go) or 400
// with a JSON-RPC error body (the TypeScript SDK's example server, which the orchestrator kept
// the session for); the broken event stream is logged once at WARN and never retried every
// second, even with no call to notice it.
func TestRestartedServerUnderALiveSession(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []mcptest.Option
	}{
		{"mcp-go answers 404", nil},
		{"TypeScript SDK answers 400 with a JSON-RPC error", []mcptest.Option{mcptest.LikeTypeScriptSDK()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := mcptest.Start(t, append(c.opts, mcptest.WithTools(echoTools))...)
			logs := &lines{}
			p := mcp.New(mcp.Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			t.Cleanup(func() { p.Close() })
			conn := mcp.Connection{ID: "c1", Slug: "srv", URL: srv.URL}
			l, err := p.ListTools(context.Background(), conn)
			if err != nil || len(l.Tools) != 1 {
				t.Fatalf("ListTools = %+v, %v", l, err)
			}
			waitUntil(t, "the GET stream", func() bool { return srv.Count("GET") == 1 })

			// Restarted, then a call. (A call sent in the instant the old server dies, on a
			// connection it had open, is lost with it: it is answered "the server closed the
			// connection", and not sent again, since the server may have run it.)
			srv.Restart()
			srv.ResetCounts()
			waitUntil(t, "the broken stream to be noticed", func() bool { return logs.count("level=WARN", "dropped the session's event stream") == 1 })
			out, err := p.Call(context.Background(), conn, l.Tools[0], map[string]any{"text": "after"})
			if err != nil || out != "echo: after" {
				t.Fatalf("call after the restart = %q, %v", out, err)
			}
			if n := srv.Count("initialize"); n != 1 {
				t.Fatalf("%d initializes on the new server, want 1 (one reopen)", n)
			}
			if l, err := p.ListTools(context.Background(), conn); err != nil || len(l.Tools) != 1 {
				t.Fatalf("listing after the restart = %+v, %v", l, err)
			}

			// Restarted with nothing to do: the broken stream is noticed once, not every second.
			srv.Restart()
			srv.ResetCounts()
			time.Sleep(settle)
			if n := srv.Count("refused"); n > 1 {
				t.Errorf("the new server refused %d requests of the old session: a retry loop", n)
			}
			if n := logs.count("level=ERROR"); n != 0 {
				t.Errorf("%d ERROR lines:\n%s", n, logs)
			}
			if n := logs.count("level=WARN"); n > 2 {
				t.Errorf("%d WARN lines for two restarts:\n%s", n, logs)
			}
			out, err = p.Call(context.Background(), conn, l.Tools[0], map[string]any{"text": "later"})
			if err != nil || out != "echo: later" {
				t.Fatalf("call after the quiet restart = %q, %v", out, err)
			}
		})
	}
}

// TestServerThatCannotReopen: a restarted server that takes no new session is reported on every
// call and listing with what it answered, logged once at WARN for the incident, and used again
// as soon as it takes one.
func TestServerThatCannotReopen(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.LikeTypeScriptSDK(), mcptest.WithTools(echoTools))
	logs := &lines{}
	p := mcp.New(mcp.Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(func() { p.Close() })
	conn := mcp.Connection{ID: "c1", Slug: "srv", URL: srv.URL}
	tool := mcp.Tool{RemoteName: "echo", Name: "srv_echo"}
	if _, err := p.Call(context.Background(), conn, tool, map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	srv.RefuseInitialize(503, "down for maintenance until 14:00")
	srv.Restart()
	waitUntil(t, "the broken stream to be noticed", func() bool { return logs.count("level=WARN", "dropped the session's event stream") == 1 })
	for i := 0; i < 3; i++ {
		_, err := p.Call(context.Background(), conn, tool, map[string]any{"text": "x"})
		if err == nil || !strings.Contains(err.Error(), `mcp server "srv"`) || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "down for maintenance until 14:00") {
			t.Fatalf("call %d while the server takes no session: %v", i, err)
		}
		_, err = p.ListTools(context.Background(), conn)
		if err == nil || !strings.Contains(err.Error(), "down for maintenance until 14:00") {
			t.Fatalf("listing %d while the server takes no session: %v", i, err)
		}
	}
	if n, m := logs.count("level=WARN"), logs.count("level=WARN", "cannot be opened"); n != 2 || m != 1 {
		t.Errorf("%d WARN lines for one incident, %d of them for the reopen, want the broken stream's and one for the 6 failed reopens:\n%s", n, m, logs)
	}
	srv.RefuseInitialize(0, "")
	if out, err := p.Call(context.Background(), conn, tool, map[string]any{"text": "back"}); err != nil || out != "echo: back" {
		t.Fatalf("call once the server takes sessions again = %q, %v", out, err)
	}
	if logs.count("level=INFO", "session open again") != 1 {
		t.Errorf("the recovery is not logged:\n%s", logs)
	}

}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
