package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// seen is one HTTP request a fake received.
type seen struct {
	HTTPMethod string
	Path       string
	RPC        string // the JSON-RPC method of a POST
	ID         any    // its id
	Cancelled  any    // params.requestId of a notifications/cancelled
	Session    string
	Header     http.Header
}

// fake is a real MCP server (mcp-go's own) on loopback, behind a recording middleware that can
// demand a credential header and forget sessions.
type fake struct {
	t       testing.TB
	MCP     *server.MCPServer
	srv     *httptest.Server
	URL     string
	handler http.Handler

	authHeader, authValue string // when set, a request without this header value gets 401

	mu      sync.Mutex
	reqs    []seen
	expired map[string]int // session id → the status its requests now get
	// expiredBody, when set, is the JSON body answered with that status (else a plain text line).
	expiredBody string
	// tamper, when set, answers a POST whose JSON-RPC method it returns true for.
	tamper func(w http.ResponseWriter, r *http.Request, rpc string, id any) bool
}

type fakeOption func(*fake)

func withAuth(header, value string) fakeOption {
	return func(f *fake) { f.authHeader, f.authValue = header, value }
}

// newFake starts a stateful streamable HTTP MCP server at <url>/mcp with the echo tool.
func newFake(t testing.TB, opts ...fakeOption) *fake {
	t.Helper()
	f := &fake{t: t, expired: map[string]int{}}
	for _, o := range opts {
		o(f)
	}
	f.MCP = server.NewMCPServer("fake", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(discardHandler{})))
	f.MCP.AddTool(mcpgo.NewTool("echo", mcpgo.WithDescription("Echo the text."), mcpgo.WithString("text", mcpgo.Required())),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
		})
	f.handler = server.NewStreamableHTTPServer(f.MCP, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(discardHandler{})))
	f.srv = httptest.NewServer(f)
	f.URL = f.srv.URL + "/mcp"
	t.Cleanup(f.srv.Close)
	return f
}

// ServeHTTP records the request, applies the fake's rules, and hands it to the MCP server.
func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	var msg struct {
		Method string `json:"method"`
		ID     any    `json:"id"`
		Params struct {
			RequestID any `json:"requestId"`
		} `json:"params"`
	}
	if r.Method == http.MethodPost {
		_ = json.Unmarshal(body, &msg)
	}
	session := r.Header.Get(sessionHeader)
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{HTTPMethod: r.Method, Path: r.URL.Path, RPC: msg.Method, ID: msg.ID, Cancelled: msg.Params.RequestID, Session: session, Header: r.Header.Clone()})
	status := f.expired[session]
	expiredBody := f.expiredBody
	tamper := f.tamper
	authHeader, authValue := f.authHeader, f.authValue
	f.mu.Unlock()

	if authHeader != "" && r.Header.Get(authHeader) != authValue {
		http.Error(w, "bad key "+r.Header.Get(authHeader), http.StatusUnauthorized)
		return
	}
	if session != "" && status != 0 && expiredBody != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, expiredBody)
		return
	}
	if session != "" && status != 0 {
		http.Error(w, "Invalid session ID", status)
		return
	}
	if tamper != nil && r.Method == http.MethodPost && tamper(w, r, msg.Method, msg.ID) {
		return
	}
	f.handler.ServeHTTP(w, r)
}

// setTamper replaces the fake's tamper func.
func (f *fake) setTamper(fn func(w http.ResponseWriter, r *http.Request, rpc string, id any) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tamper = fn
}

// setAuth replaces the credential the fake demands ("" demands none).
func (f *fake) setAuth(header, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authHeader, f.authValue = header, value
}

// requests returns what the fake received, optionally only one JSON-RPC method (or HTTP method
// when rpc starts with "HTTP ").
func (f *fake) requests(rpc string) []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seen
	for _, s := range f.reqs {
		if rpc == "" || s.RPC == rpc || strings.TrimPrefix(rpc, "HTTP ") == s.HTTPMethod {
			out = append(out, s)
		}
	}
	return out
}

// expireAll makes the server forget every session it has handed out, answering status with body
// (JSON), or with a plain text line when body is "".
func (f *fake) expireAll(status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expiredBody = body
	for _, s := range f.reqs {
		if s.Session != "" {
			f.expired[s.Session] = status
		}
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a hang guard: cond normally holds within milliseconds
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logBuffer collects log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newPool returns a pool closed at the end of the test, logging into logs when it is not nil.
func newPool(t testing.TB, cfg Config, logs *logBuffer) *Pool {
	t.Helper()
	if logs != nil {
		cfg.Logger = logs.logger()
	}
	p := New(cfg)
	t.Cleanup(func() { p.Close() })
	return p
}

// echoTool is the fake's echo tool as a listing returns it.
func echoTool(t testing.TB, p *Pool, conn Connection) Tool {
	t.Helper()
	l, err := p.ListTools(context.Background(), conn)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	for _, tool := range l.Tools {
		if tool.RemoteName == "echo" {
			return tool
		}
	}
	t.Fatalf("no echo tool in %+v", l.Tools)
	return Tool{}
}

var callCount atomic.Int64

// echo calls the echo tool and fails the test on error.
func echo(t testing.TB, p *Pool, conn Connection, tool Tool) string {
	t.Helper()
	out, err := p.Call(context.Background(), conn, tool, map[string]any{"text": "hi"})
	if err != nil {
		t.Fatalf("call %d: %v", callCount.Add(1), err)
	}
	return out
}
