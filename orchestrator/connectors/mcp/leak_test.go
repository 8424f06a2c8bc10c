package mcp

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// restartable is an MCP server on a fixed loopback address that can die and come back, each
// time as a new server that knows none of the old sessions.
type restartable struct {
	t    *testing.T
	addr string
	srv  *http.Server
	done chan struct{}
}

func (r *restartable) start() {
	r.t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	m := server.NewMCPServer("phoenix", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(discardHandler{})))
	m.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	h := server.NewStreamableHTTPServer(m, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(discardHandler{})))
	r.srv = &http.Server{Handler: h, ErrorLog: nil}
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
}

func (r *restartable) stop() {
	_ = r.srv.Close()
	<-r.done
}

// openSockets counts the process's open socket descriptors.
func openSockets(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

// settled waits until the goroutine and socket counts are back to at most the baseline.
func settled(t *testing.T, goroutines, sockets int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, s := runtime.NumGoroutine(), openSockets(t)
		if g <= goroutines && s <= sockets {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines %d (baseline %d), sockets %d (baseline %d)\n%s", g, goroutines, s, sockets, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNoLeakWhenTheServerDiesAndComesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 calls")
	}
	goroutines, sockets := runtime.NumGoroutine(), openSockets(t)

	r := &restartable{t: t, addr: "127.0.0.1:0"}
	r.start()
	p := New(Config{})
	conn := Connection{ID: "c1", Slug: "phoenix", URL: "http://" + r.addr + "/mcp", Headers: TokenHeader("", "", "k-0123456789")}
	tool := Tool{RemoteName: "echo", InputSchema: []byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
	ok, failed, failedUp := 0, 0, 0
	up := true
	for i := range 1000 {
		switch i % 100 {
		case 40:
			r.stop()
			up = false
		case 50:
			r.start()
			up = true
		}
		_, err := p.Call(context.Background(), conn, tool, map[string]any{"text": "x"})
		switch {
		case err == nil:
			ok++
		case up:
			failedUp++
			t.Logf("call %d with the server up: %v", i, err)
		default:
			failed++
		}
	}
	if ok != 900 || failed != 100 || failedUp != 0 {
		t.Errorf("ok %d, failed while down %d, failed while up %d; want 900, 100, 0", ok, failed, failedUp)
	}
	// Before Close, only the live session's share remains: its GET stream and a few kept-alive
	// connections, each counted at both ends.
	t.Logf("before Close: goroutines %d (baseline %d), sockets %d (baseline %d)", runtime.NumGoroutine(), goroutines, openSockets(t), sockets)
	settled(t, goroutines+30, sockets+12)
	p.Close()
	r.stop()
	settled(t, goroutines, sockets)
}
