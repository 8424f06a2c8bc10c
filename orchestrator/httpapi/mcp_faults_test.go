package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/mcp"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// faultServer is a real MCP server (mcp-go's streamable HTTP) on loopback with the faults a remote
// server shows: a result over the size cap, a call that hangs, a death in the middle of a call, a
// redirect to another host, and 10,000 tools.
type faultServer struct {
	ts        *httptest.Server
	URL       string
	redirect  atomic.Value // string: where every request is sent instead, "" for none
	cancelled atomic.Int64 // hang calls whose context ended before they answered
	mu        sync.Mutex
	methods   map[string]int
}

func newFaultServer(t *testing.T, tls bool, tools int) *faultServer {
	t.Helper()
	f := &faultServer{methods: map[string]int{}}
	f.redirect.Store("")
	s := server.NewMCPServer("faults", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	text := func(text string) (*mcpgo.CallToolResult, error) { return mcpgo.NewToolResultText(text), nil }
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(_ context.Context, r mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return text("echo: " + r.GetString("text", ""))
	})
	s.AddTool(mcpgo.NewTool("huge"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return text(strings.Repeat("z", 20<<20))
	})
	s.AddTool(mcpgo.NewTool("hang"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		select {
		case <-ctx.Done():
			f.cancelled.Add(1)
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return text("too late")
		}
	})
	s.AddTool(mcpgo.NewTool("die"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		f.ts.CloseClientConnections() // the server's process dies with the call open
		<-ctx.Done()
		return nil, ctx.Err()
	})
	for i := range tools {
		s.AddTool(mcpgo.NewTool(fmt.Sprintf("t%05d", i)), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) { return text("ok") })
	}
	h := server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := f.redirect.Load().(string); to != "" {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		f.mu.Lock()
		f.methods[r.Method]++
		f.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	if tls {
		f.ts = httptest.NewTLSServer(wrapped)
	} else {
		f.ts = httptest.NewServer(wrapped)
	}
	t.Cleanup(func() { f.ts.CloseClientConnections(); f.ts.Close() })
	f.URL = f.ts.URL + "/mcp"
	return f
}

// faultRun connects the fault server f as "faulty" for a new agent of e and returns a function
// that calls one of its tools in a run, and one that checks echo still answers.
func faultRun(t *testing.T, e *mcpEnv, f *faultServer) (call func(name string) string, echoWorks func(after string)) {
	t.Helper()
	org, _, agent := e.scopes()
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "faulty", "name": "Faulty", "url": f.URL, "auth": "token"})
	e.must(201, "POST", "/api/mcp/connections", connectBody("faulty", org, goodKey))
	run := e.run(agent, map[string]any{"kind": "direct"})
	call = func(name string) string {
		t.Helper()
		res := e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": name, "arguments": map[string]any{"text": "hi"}})
		return res["result"].(string)
	}
	echoWorks = func(after string) {
		t.Helper()
		if got := call("faulty_echo"); !strings.HasPrefix(got, "echo: hi") {
			t.Fatalf("after %s, echo answered %q", after, got)
		}
	}
	t.Cleanup(func() {
		for _, c := range e.must(200, "GET", "/api/runs/"+run+"/calls", nil)["calls"].([]any) {
			if s := fmt.Sprint(c); strings.Contains(s, goodKey) || strings.Contains(s, strings.Repeat("z", 1<<10)) {
				t.Errorf("a stored call holds the key or the oversized result: %.300s", s)
			}
		}
	})
	return call, echoWorks
}

// TestMCPFaultsThroughAPI: each fault of a remote MCP server, met through the run's call API,
// answers one clear ERROR: line (stored as the call's result, never the key), leaves the run and
// the login usable, and sends nothing to another host.
func TestMCPFaultsThroughAPI(t *testing.T) {
	t.Run("a 20 MiB result, a death mid-call, a redirect to another host", func(t *testing.T) {
		e := newMCPEnv(t, nil, nil, newBox(t))
		f := newFaultServer(t, false, 0)
		call, echoWorks := faultRun(t, e, f)
		got := call("faulty_huge")
		if !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, "too large") || len(got) > 4096 {
			t.Errorf("a 20 MiB result: %.300q (%d bytes)", got, len(got))
		}
		echoWorks("the oversized result")

		got = call("faulty_die")
		if !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, "closed the connection before it answered") || strings.Contains(got, "127.0.0.1") {
			t.Errorf("a server that died mid-call: %q", got)
		}
		echoWorks("the server's death")

		other := newFaultServer(t, false, 0)
		f.redirect.Store(strings.Replace(other.URL, "127.0.0.1", "localhost", 1))
		got = call("faulty_echo")
		if !strings.HasPrefix(got, "ERROR:") || !strings.Contains(strings.ToLower(got), "redirect") {
			t.Errorf("a redirect to another host: %q", got)
		}
		other.mu.Lock()
		reached := len(other.methods)
		other.mu.Unlock()
		if reached != 0 {
			t.Errorf("the other host received requests %v", other.methods)
		}
		f.redirect.Store("")
		echoWorks("the redirect")
	})
	t.Run("a call past its timeout", func(t *testing.T) {
		e := newMCPEnvWith(t, nil, nil, newBox(t), mcp.Config{CallTimeout: 3 * time.Second}) // the echo after it must answer within it on a loaded machine too
		f := newFaultServer(t, false, 0)
		call, echoWorks := faultRun(t, e, f)
		start := time.Now()
		got := call("faulty_hang")
		if !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, `"faulty"`) || !strings.Contains(got, "timed out after 3s without an answer or a progress notice (GUILDS_MCP_CALL_TIMEOUT)") || strings.Contains(got, "try again") || time.Since(start) > time.Minute { // a hang guard: the tool hangs until cancelled
			t.Errorf("a hanging call: %q after %s", got, time.Since(start))
		}
		deadline := time.Now().Add(30 * time.Second)
		for f.cancelled.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if f.cancelled.Load() == 0 {
			t.Errorf("the server's handler of the timed-out call was never cancelled (no notifications/cancelled)")
		}
		echoWorks("the timed-out call")
	})
}

// TestMCPListAndTLSFaultsAtConnect: a server listing 10,000 tools connects with the first 1,000
// (the cap), and a server whose certificate is not trusted is refused at Connect with the reason,
// writing nothing.
func TestMCPListAndTLSFaultsAtConnect(t *testing.T) {
	e := newMCPEnv(t, nil, nil, newBox(t))
	org, _, agent := e.scopes()
	many := newFaultServer(t, false, 10000)
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "many", "name": "Many", "url": many.URL, "auth": "token"})
	conn := e.must(201, "POST", "/api/mcp/connections", connectBody("many", org, goodKey))
	if conn["tool_count"] != float64(1000) {
		t.Fatalf("10,000 tools listed as %v, want the cap of 1000", conn["tool_count"])
	}
	run := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	n := 0
	for _, name := range offered(run) {
		if strings.HasPrefix(name, "many_") {
			n++
		}
	}
	if n != 1000 {
		t.Fatalf("the run offers %d tools of the server, want 1000", n)
	}

	tls := newFaultServer(t, true, 0)
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "selfsigned", "name": "Self-signed", "url": tls.URL, "auth": "token"})
	before := e.count("SELECT count(*) FROM mcp_connections")
	st, out := e.do("POST", "/api/mcp/connections", connectBody("selfsigned", org, goodKey))
	if st < 400 || !strings.Contains(errMessage(out), "certificate") || strings.Contains(errMessage(out), goodKey) {
		t.Fatalf("an untrusted certificate: %d %v", st, out)
	}
	if after := e.count("SELECT count(*) FROM mcp_connections"); after != before {
		t.Fatalf("a refused Connect wrote %d connections", after-before)
	}
}
