// Package mcp holds the orchestrator's client sessions with remote MCP servers: one pooled session
// per connection, tool listing with namespaced names, and tool calls mapped to one string.
package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// Transport names the wire a session runs over; the caller persists the one that worked.
type Transport string

// The two transports of a remote MCP server.
const (
	StreamableHTTP Transport = "streamable-http" // MCP 2025-03-26 and later: one POST per message
	SSE            Transport = "sse"             // the older HTTP+SSE transport: a GET stream plus POSTs
)

// Connection is one login on one remote MCP server, as the pool needs it.
type Connection struct {
	ID        string     // connection_id: the pool key; two connections are two sessions
	Slug      string     // server slug: prefixes namespaced tool names and names the server in errors
	URL       string     // the server's MCP endpoint
	Transport Transport  // the transport that worked last time, tried first; "" starts with streamable HTTP
	Headers   HeaderFunc // the login's credentials for each request; nil for a server without auth
}

// Tool is one listed tool of a connection.
type Tool struct {
	RemoteName  string          // the name the server knows
	Name        string          // {slug}_{name}, the name the model sees
	Description string          // the server's description, as sent
	InputSchema json.RawMessage // the server's JSON Schema for the arguments, as sent
}

// Listing is the result of one tools/list.
type Listing struct {
	Tools     []Tool    // in the server's order, at most Config.MaxTools
	Skipped   []Skipped // what the server listed that is not kept, each with why
	Transport Transport // the transport the session runs over
}

// Skipped is one tool entry of a listing that is not kept, and why.
type Skipped struct {
	Name   string // the server's name for it ("" when the entry had none)
	Reason string
}

// Config tunes a Pool; every zero field takes its default.
type Config struct {
	Logger           *slog.Logger                           // nil discards
	Now              func() time.Time                       // the clock idle sessions are measured by; default time.Now
	HTTPTransport    http.RoundTripper                      // the base transport under each connection's; default a clone of http.DefaultTransport
	IdleTimeout      time.Duration                          // a session unused this long is closed; default 10 minutes
	CallTimeout      time.Duration                          // tools/call deadline without an answer or a progress notice (GUILDS_MCP_CALL_TIMEOUT); default 90 s
	CallMax          time.Duration                          // the longest a tools/call runs while its server reports progress (GUILDS_MCP_CALL_MAX); default 10 minutes
	ListTimeout      time.Duration                          // tools/list deadline, all pages; default 15 s
	InitTimeout      time.Duration                          // initialize deadline, both transports; default 15 s
	MaxResponseBytes int64                                  // the most read of any response (of an event, on a stream); default 10 MiB
	MaxTools         int                                    // the most tools kept of one listing; default 1,000
	ClientName       string                                 // clientInfo.name sent at initialize; default "guilds"
	ClientVersion    string                                 // clientInfo.version; default "1"
	OnOpen           func(connectionID string, t Transport) // called as a session opens, with the transport that worked; callers wait on it, so keep it short
}

// Defaults of Config.
const (
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultCallTimeout      = 90 * time.Second
	DefaultCallMax          = 10 * time.Minute
	DefaultListTimeout      = 15 * time.Second
	DefaultInitTimeout      = 15 * time.Second
	DefaultMaxResponseBytes = 10 << 20
	DefaultMaxTools         = 1000
)

// The variables that set Config.CallTimeout and Config.CallMax, named in a timed-out call's error.
const (
	CallTimeoutVar = "GUILDS_MCP_CALL_TIMEOUT"
	CallMaxVar     = "GUILDS_MCP_CALL_MAX"
)

// Errors a caller may test with errors.Is.
var (
	ErrClosed          = errors.New("mcp: pool closed")
	ErrTooLarge        = errors.New("result too large")
	ErrRejected        = errors.New("the server refused the credentials")
	ErrRedirectRefused = errors.New("redirect to another host refused for a request that carries credentials")
)

// RPCError is a JSON-RPC error the server answered; its message has been scrubbed of credentials.
type RPCError struct {
	Code    int
	Message string
}

// Error names the code, and what it means when it is a standard one.
func (e *RPCError) Error() string {
	if name, ok := rpcCodeNames[e.Code]; ok {
		return fmt.Sprintf("JSON-RPC error %d (%s): %s", e.Code, name, e.Message)
	}
	return fmt.Sprintf("JSON-RPC error %d (a code this client does not know): %s", e.Code, e.Message)
}

var rpcCodeNames = map[int]string{
	-32700: "parse error",
	-32600: "invalid request",
	-32601: "method not found",
	-32602: "invalid params",
	-32603: "internal error",
	-32002: "resource not found",
	-32042: "URL elicitation required",
}

// ToolError is a tools/call result the server marked isError; Text is its content, mapped as any result.
type ToolError struct{ Text string }

// Error returns the tool's own text.
func (e *ToolError) Error() string { return e.Text }

// ReportedByTool marks the error as the tool's own answer, not a failure to reach it.
func (e *ToolError) ReportedByTool() bool { return true }
