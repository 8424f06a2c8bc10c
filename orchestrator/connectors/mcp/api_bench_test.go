package mcp_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/shared/benchtest"
)

// mcpBenchKey is the key the benchmark's MCP servers accept.
const mcpBenchKey = "mcp-bench-key-5e0b71"

// tokenMCPServer is a streamable-HTTP MCP server on loopback offering the named tools, refusing a
// request without the bearer key.
func tokenMCPServer(b *testing.B, tools ...string) string {
	s := server.NewMCPServer("bench", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	for _, name := range tools {
		s.AddTool(mcpgo.NewTool(name, mcpgo.WithDescription("Does "+name+" on the bench server's records."),
			mcpgo.WithString("query", mcpgo.Required(), mcpgo.Description("what to look for")),
			mcpgo.WithNumber("limit", mcpgo.Description("at most this many"))),
			func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText(name), nil
			})
	}
	h := server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+mcpBenchKey {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	b.Cleanup(ts.Close)
	return ts.URL
}

// BenchmarkRunStartThreeMCPServe times a run start through serve (the whole native registry, the
// bindings, the stored snapshot) for an agent offered three connected MCP servers with fresh
// listings (15 tools) against one without MCP, alternating in one run. Target: at most 1.2x.
func BenchmarkRunStartThreeMCPServe(b *testing.B) {
	api := wiretest.ServeIn(b, "local").API
	org, withMCP := wiretest.ScopesAt(b, api)
	_, without := wiretest.ScopesAt(b, api)
	for _, slug := range []string{"one", "two", "three"} {
		url := tokenMCPServer(b, "search", "fetch", "list", "get", "create")
		wiretest.Must(b, 201, "POST", api+"/api/admin/mcp/servers", map[string]any{"slug": slug, "name": slug, "url": url, "auth": "token"})
		wiretest.Must(b, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": slug, "scope": "org", "scope_id": org, "credentials": map[string]any{"api_key": mcpBenchKey}})
	}
	withTools := len(wiretest.OfferedNames(wiretest.Must(b, 201, "POST", api+"/api/agents/"+withMCP+"/runs", map[string]any{"kind": "direct"})))
	plainTools := len(wiretest.OfferedNames(wiretest.Must(b, 201, "POST", api+"/api/agents/"+without+"/runs", map[string]any{"kind": "direct"})))
	if withTools != plainTools+15 {
		b.Fatalf("the MCP agent is offered %d tools, the other %d; want 15 more", withTools, plainTools)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	start := func(agent string) func() {
		body := []byte(`{"kind":"direct"}`)
		return func() {
			req, _ := http.NewRequest("POST", api+"/api/agents/"+agent+"/runs", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+wiretest.Token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 {
				b.Fatalf("run start: %d", resp.StatusCode)
			}
		}
	}
	startMCP, startPlain := start(withMCP), start(without)
	for range 30 {
		startMCP()
		startPlain()
	}
	b.ResetTimer()
	for range b.N {
		d := benchtest.Alternate(300, startMCP, startPlain)
		m, p := d[0], d[1]
		ratio := float64(m) / float64(p)
		b.ReportMetric(float64(m.Microseconds())/1000, "mcp_start_p50_ms")
		b.ReportMetric(float64(p.Microseconds())/1000, "plain_start_p50_ms")
		b.ReportMetric(ratio, "x_vs_no_mcp")
		b.Logf("run start through serve offering three connected MCP servers (%d tools, 15 of them MCP, fresh lists): p50 %s | without MCP (%d tools): p50 %s | %.2fx; target <= 1.2x: %s",
			withTools, m.Round(time.Microsecond), plainTools, p.Round(time.Microsecond), ratio, map[bool]string{true: "met", false: "NOT met"}[ratio <= 1.2])
	}
}
