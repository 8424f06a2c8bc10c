// Package mcptest runs a real MCP server for tests (mcp-go's own, stateful streamable HTTP) on a
// loopback address it keeps across restarts, as a redeployed server keeps its URL: a restart
// starts a new server instance that knows none of the sessions the last one handed out.
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Option configures a Server.
type Option func(*Server)

// WithTools adds tools to each server instance as it starts.
func WithTools(add func(*server.MCPServer)) Option {
	return func(s *Server) { s.tools = add }
}

// LikeTypeScriptSDK answers a session id the running instance did not hand out (or none, on
// anything but initialize) as the TypeScript SDK's example server does: HTTP 400, with the
// JSON-RPC error -32000 "Bad Request: No valid session ID provided" to a POST and a plain
// "Invalid or missing session ID" to a GET or DELETE. mcp-go's own server answers 404 to an
// unknown session's POST and opens a new session for an unknown GET.
func LikeTypeScriptSDK() Option {
	return func(s *Server) { s.tsStyle = true }
}

// Server is the running server.
type Server struct {
	URL string // the MCP endpoint, http://127.0.0.1:<port>/mcp

	t       testing.TB
	addr    string
	tools   func(*server.MCPServer)
	tsStyle bool

	mu      sync.Mutex
	http    *http.Server
	mcp     *server.MCPServer
	stream  *server.StreamableHTTPServer
	known   map[string]bool // session ids this instance handed out
	counts  map[string]int  // JSON-RPC methods, and "GET", "DELETE", "refused"
	initErr *answer         // when set, every initialize gets it
}

// answer is a canned HTTP answer.
type answer struct {
	status int
	body   string
}

// Start starts a server on a free loopback port; it stops when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t}
	for _, o := range opts {
		o(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr + "/mcp"
	s.serve(ln)
	t.Cleanup(s.Stop)
	return s
}

// MCP returns the running instance's MCP server (to add or delete tools).
func (s *Server) MCP() *server.MCPServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mcp
}

// serve starts a new instance on ln.
func (s *Server) serve(ln net.Listener) {
	m := server.NewMCPServer("mcptest", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	if s.tools != nil {
		s.tools(m)
	}
	st := server.NewStreamableHTTPServer(m, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	hs := &http.Server{Handler: http.HandlerFunc(s.front), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.http, s.mcp, s.stream, s.known = hs, m, st, map[string]bool{}
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	s.mu.Unlock()
	go func() { _ = hs.Serve(ln) }()
}

// Restart stops the running instance, cutting every connection (the GET streams too), and starts
// a new one on the same address.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ln, err = net.Listen("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		s.t.Fatalf("listen again on %s: %v", s.addr, err)
	}
	s.serve(ln)
}

// Stop stops the running instance as a process dies, cutting every connection mid-stream: the
// address refuses connections until a Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	hs, st := s.http, s.stream
	s.mu.Unlock()
	_ = hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = st.Shutdown(ctx) // its session sweeper and what the cut connections left
}

// RefuseInitialize makes every initialize answer status with body ("" status 0 lifts it): a
// server that takes no new session.
func (s *Server) RefuseInitialize(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initErr = nil
	if status != 0 {
		s.initErr = &answer{status: status, body: body}
	}
}

// Count is how many requests of a JSON-RPC method ("initialize", "tools/call"), or of an HTTP
// method ("GET", "DELETE"), every instance received; "refused" counts the requests answered as
// an unknown session.
func (s *Server) Count(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[what]
}

// ResetCounts zeroes every count.
func (s *Server) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = map[string]int{}
}

// front counts the request, applies the server's rules and hands it to the instance.
func (s *Server) front(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	if r.Method == http.MethodPost {
		_ = json.Unmarshal(body, &msg)
	}
	session := r.Header.Get("Mcp-Session-Id")
	s.mu.Lock()
	if msg.Method != "" {
		s.counts[msg.Method]++
	} else {
		s.counts[r.Method]++
	}
	initErr, known, h := s.initErr, s.known[session], s.stream
	unknown := s.tsStyle && msg.Method != "initialize" && !known
	if unknown {
		s.counts["refused"]++
	}
	if r.Method == http.MethodDelete && known {
		delete(s.known, session)
	}
	s.mu.Unlock()
	switch {
	case msg.Method == "initialize" && initErr != nil:
		http.Error(w, initErr.body, initErr.status)
		return
	case unknown && r.Method == http.MethodPost:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
		return
	case unknown:
		http.Error(w, "Invalid or missing session ID", http.StatusBadRequest)
		return
	}
	h.ServeHTTP(&recorder{ResponseWriter: w, onHeader: func(hdr http.Header) {
		if id := hdr.Get("Mcp-Session-Id"); id != "" && msg.Method == "initialize" {
			s.mu.Lock()
			s.known[id] = true
			s.mu.Unlock()
		}
	}}, r)
}

// recorder tells onHeader the response's header as it is written, and passes flushes on (the
// server streams events).
type recorder struct {
	http.ResponseWriter
	onHeader func(http.Header)
	wrote    bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.wrote = true
		r.onHeader(r.Header())
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (r *recorder) Flush() {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
