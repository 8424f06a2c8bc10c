package mcp

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// BenchmarkPoolCall times a tools/call through the pool (argument check, credentials, session
// lookup, result mapping) against the same call with mcp-go's client on a warm session, both to
// one loopback server, alternating in one run, and reports both medians and their ratio.
func BenchmarkPoolCall(b *testing.B) {
	m := server.NewMCPServer("bench", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(discardHandler{})))
	m.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(m, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(discardHandler{}))))
	defer ts.Close()
	url := ts.URL + "/mcp"
	ctx := context.Background()

	p := New(Config{})
	defer p.Close()
	conn := Connection{ID: "bench", Slug: "bench", URL: url, Headers: TokenHeader("", "", "bench-key-0123456789")}
	l, err := p.ListTools(ctx, conn)
	if err != nil {
		b.Fatal(err)
	}
	tool := l.Tools[0]

	direct, err := client.NewStreamableHttpClient(url, transport.WithHTTPLogger(slog.New(discardHandler{})),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer bench-key-0123456789"}))
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	if err := direct.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := direct.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ProtocolVersion: mcpgo.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcpgo.Implementation{Name: "bench", Version: "1"}}}); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"text": "hello"}
	// The pool asks for progress with a token; so does this call, so that both ask the server
	// for the same work.
	req := mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "echo", Arguments: args, Meta: &mcpgo.Meta{ProgressToken: "bench"}}}
	viaPool := func() {
		if _, err := p.Call(ctx, conn, tool, args); err != nil {
			b.Fatal(err)
		}
	}
	viaClient := func() {
		if _, err := direct.CallTool(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	for range 20 {
		viaPool()
		viaClient()
	}

	pool := make([]time.Duration, 0, b.N)
	raw := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate which goes first, so neither always finds the connection warmer.
		first, second, fd, sd := viaPool, viaClient, &pool, &raw
		if i%2 == 1 {
			first, second, fd, sd = viaClient, viaPool, &raw, &pool
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		t2 := time.Now()
		*fd = append(*fd, t1.Sub(t0))
		*sd = append(*sd, t2.Sub(t1))
	}
	b.StopTimer()
	mp, mr := median(pool), median(raw)
	b.ReportMetric(float64(mp)/1e3, "pool-µs/call")
	b.ReportMetric(float64(mr)/1e3, "mcpgo-µs/call")
	b.ReportMetric(float64(mp)/float64(mr), "ratio")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
