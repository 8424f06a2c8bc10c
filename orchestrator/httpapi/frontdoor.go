package httpapi

// The MCP front door (issue 32): every run served as an MCP server over the streamable HTTP
// transport, at /api/runs/{id}/mcp (with the run's token, its agent's key or an operator's
// credential), and /mcp (with an agent key: each session is a new run of the key's agent).
//
// The transport is written here over fiber instead of mounting mcp-go's StreamableHTTPServer:
// fiber's net/http adaptor buffers a whole answer, so a mounted server could stream neither a
// long call's progress nor list_changed, while fiber streams natively (SetBodyStreamWriter). The
// protocol surface a run needs is small (initialize, ping, tools/list, tools/call,
// notifications/cancelled and one method of ours), and every call goes through the run service's
// one call path (runs.Service.Call: the started record, the budget, the argument check, the
// pipeline, the completed record, the call_id replay). mcp-go gives the wire types and codes.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/mark3labs/mcp-go/mcp"
)

// The streamable HTTP transport's headers.
const (
	mcpSessionHeader = "Mcp-Session-Id"
	mcpVersionHeader = "Mcp-Protocol-Version"
)

// DefaultMCPSessionIdle is how long an MCP session lives without a request or an open stream when
// GUILDS_MCP_SESSION_IDLE is unset; a /mcp session's run is closed with it.
const DefaultMCPSessionIdle = 30 * time.Minute

// MCPSessionLimit is how many MCP sessions one credential may hold open at once (on one replica);
// one more is refused until one ends.
const MCPSessionLimit = 32

// mcpKeepAlive is how often an idle event stream gets a comment line, so a client that went away
// is noticed and its stream closed.
const mcpKeepAlive = 25 * time.Second

// mcpVersions are the protocol revisions served, newest first: those of the initialize handshake
// and the streamable HTTP transport. 2026-07-28's stateless core (server/discover) is not served,
// so its clients fall back to initialize.
var mcpVersions = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326}

// mcpMethods names what a session serves, for the unknown-method error.
const mcpMethods = "initialize, ping, tools/list, tools/call and guilds/next_generation (and the notifications initialized and cancelled)"

// frontDoor holds the MCP sessions of this replica.
type frontDoor struct {
	s     *Server
	idle  time.Duration
	limit int

	mu       sync.Mutex
	sessions map[string]*mcpSession
	owners   map[string]int // sessions open or being opened, per credential
	sweep    *time.Timer    // ends idle sessions while there are any
}

func newFrontDoor(s *Server) *frontDoor {
	idle := s.MCPSessionIdle
	if idle <= 0 {
		idle = DefaultMCPSessionIdle
	}
	return &frontDoor{s: s, idle: idle, limit: MCPSessionLimit, sessions: map[string]*mcpSession{}, owners: map[string]int{}}
}

// mcpSession is one MCP session: a run, the credential that opened it, and what is in flight.
type mcpSession struct {
	id      string
	runID   string
	owner   string // the credential that opened it; another is answered as if it did not exist
	direct  bool   // opened at /mcp: it started its run and closes it when it ends
	version string // the negotiated protocol revision

	mu      sync.Mutex
	active  int       // requests and streams in flight: an active session never idles out
	last    time.Time // when it was last active
	flights map[string]*flight
	stream  *mcpStream // the GET stream, nil when none is open
	offer   string     // the fingerprint of the offer the client last learned of
	changed bool       // the offer changed while no stream was open: say so when one opens
	ended   bool
}

// flight is a tools/call in flight; closing cancel cancels it.
type flight struct {
	cancel chan struct{}
	once   sync.Once
}

// mcpStream is an open GET stream: messages to send, and done once it must end.
type mcpStream struct {
	ch   chan []byte
	done chan struct{}
	once sync.Once
}

func (st *mcpStream) end() { st.once.Do(func() { close(st.done) }) }

// rpcMessage is one JSON-RPC message as a client sent it.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// The kinds of message a client sends.
const (
	rpcRequest = iota
	rpcNotification
	rpcReply // a response to a request of ours (none is sent): accepted and dropped
)

// rpcResponse is a JSON-RPC response; ID null answers a message whose id could not be read.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rpcFault is a message answered with a JSON-RPC error and an HTTP status.
type rpcFault struct {
	status int
	id     json.RawMessage
	err    rpcError
}

func fault(status int, id json.RawMessage, code int, format string, args ...any) *rpcFault {
	return &rpcFault{status: status, id: id, err: rpcError{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// answer writes the fault.
func (f *rpcFault) answer(c *fiber.Ctx) error {
	return c.Status(f.status).JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: f.id, Error: &f.err})
}

// parseRPC reads one JSON-RPC message: a batch, broken JSON or a message that is no request,
// notification or response is a fault naming what is wrong.
func parseRPC(body []byte) (rpcMessage, int, *rpcFault) {
	var m rpcMessage
	body = bytes.TrimSpace(body)
	switch {
	case len(body) == 0:
		return m, 0, fault(http.StatusBadRequest, nil, mcp.PARSE_ERROR, "the body is empty: send one JSON-RPC message")
	case body[0] == '[':
		return m, 0, fault(http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "JSON-RPC batches are not served: send one message per POST")
	case body[0] != '{':
		return m, 0, fault(http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "the body must be one JSON-RPC message (a JSON object)")
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, 0, fault(http.StatusBadRequest, nil, mcp.PARSE_ERROR, "the body is not valid JSON: %v", err)
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	if hasID && m.ID[0] != '"' && m.ID[0] != '-' && (m.ID[0] < '0' || m.ID[0] > '9') {
		return m, 0, fault(http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "id must be a string or a number")
	}
	var id json.RawMessage
	if hasID {
		id = m.ID
	}
	if m.JSONRPC != mcp.JSONRPC_VERSION {
		return m, 0, fault(http.StatusBadRequest, id, mcp.INVALID_REQUEST, `jsonrpc must be "2.0"`)
	}
	switch {
	case m.Method != "" && hasID:
		return m, rpcRequest, nil
	case m.Method != "":
		return m, rpcNotification, nil
	case hasID && (len(m.Result) > 0 || len(m.Error) > 0):
		return m, rpcReply, nil
	}
	return m, 0, fault(http.StatusBadRequest, id, mcp.INVALID_REQUEST, "the message has no method: send a request (method and id) or a notification (method)")
}

// ownerOf names the credential behind a principal.
func ownerOf(p identity.Principal) string { return p.Kind + ":" + p.ID }

// agentKeyOnly refuses anything but an agent key at /mcp.
func agentKeyOnly(p identity.Principal) error {
	if p.Kind != orchestrator.CredentialAgentKey {
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "/mcp takes an agent key (Authorization: Bearer gld_agent_…): each of its sessions is a new run of the key's agent; %s cannot open one there; serve an existing run at /api/runs/{id}/mcp instead", p.Label())
	}
	return nil
}

// namedSession is the session a GET or DELETE names in its header (why says what the header is
// for); nil with the answer already given (or the error to return) when it names none the caller
// may reach.
func (s *Server) namedSession(c *fiber.Ctx, direct bool, why string) (*mcpSession, error) {
	p := principalOf(c)
	if direct {
		if err := agentKeyOnly(p); err != nil {
			return nil, err
		}
	}
	sid := c.Get(mcpSessionHeader)
	if sid == "" {
		return nil, fault(http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "the %s header is required: %s", mcpSessionHeader, why).answer(c)
	}
	sess, f := s.door.session(c, p, direct, sid, nil)
	if f != nil {
		return nil, f.answer(c)
	}
	return sess, nil
}

// mcpPost answers POST /mcp (direct) and POST /api/runs/{id}/mcp: one JSON-RPC message.
func (s *Server) mcpPost(direct bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p := principalOf(c)
		if direct {
			if err := agentKeyOnly(p); err != nil {
				return err
			}
		}
		m, kind, f := parseRPC(c.Body())
		if f != nil {
			return f.answer(c)
		}
		sid := c.Get(mcpSessionHeader)
		if kind == rpcRequest && m.Method == string(mcp.MethodInitialize) {
			if sid != "" {
				return fault(http.StatusBadRequest, m.ID, mcp.INVALID_REQUEST, "initialize opens a session: send it without the %s header", mcpSessionHeader).answer(c)
			}
			return s.mcpInitialize(c, p, direct, m)
		}
		if sid == "" {
			if m.Method == string(mcp.MethodServerDiscover) {
				return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: &rpcError{Code: mcp.METHOD_NOT_FOUND,
					Message: "server/discover is not served: this server speaks protocol " + strings.Join(mcpVersions, ", ") + "; send initialize"}})
			}
			return fault(http.StatusBadRequest, idOf(m, kind), mcp.INVALID_REQUEST, "the %s header is required: send initialize first, then its answer's %s with every request", mcpSessionHeader, mcpSessionHeader).answer(c)
		}
		sess, f := s.door.session(c, p, direct, sid, idOf(m, kind))
		if f != nil {
			return f.answer(c)
		}
		leave := sess.enter()
		defer leave()
		switch kind {
		case rpcNotification:
			s.door.notified(sess, m)
			c.Status(fiber.StatusAccepted) // no body: a notification has no answer
			return nil
		case rpcReply:
			c.Status(fiber.StatusAccepted)
			return nil
		}
		switch m.Method {
		case string(mcp.MethodPing):
			return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Result: struct{}{}})
		case string(mcp.MethodToolsList):
			return c.JSON(s.door.listTools(c.UserContext(), sess, m))
		case string(mcp.MethodToolsCall):
			return s.door.callTool(c, sess, m)
		case "guilds/next_generation":
			return c.JSON(s.door.nextGeneration(c.UserContext(), sess, m))
		}
		return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: &rpcError{Code: mcp.METHOD_NOT_FOUND,
			Message: fmt.Sprintf("method %q is not served; a session serves %s", clip(m.Method, 80), mcpMethods)}})
	}
}

// idOf is the id a fault answers: the request's, none for the rest.
func idOf(m rpcMessage, kind int) json.RawMessage {
	if kind == rpcRequest {
		return m.ID
	}
	return nil
}

// clip cuts s to n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// initializeResult is initialize's answer; _meta carries the session's run.
type initializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    serverCapabilities `json:"capabilities"`
	ServerInfo      mcp.Implementation `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
	Meta            map[string]any     `json:"_meta"`
}

type serverCapabilities struct {
	Tools struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
	Experimental map[string]any `json:"experimental,omitempty"`
}

// mcpInitialize opens a session: at /mcp it starts a run of the key's agent (kind and
// tool_call_budget from the query, else the REST defaults), at /api/runs/{id}/mcp it serves the
// open run the path names.
func (s *Server) mcpInitialize(c *fiber.Ctx, p identity.Principal, direct bool, m rpcMessage) error {
	var params struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &params) != nil {
		return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: &rpcError{Code: mcp.INVALID_PARAMS, Message: "initialize's params must be an object with protocolVersion, capabilities and clientInfo"}})
	}
	version := mcpVersions[0]
	if slices.Contains(mcpVersions, params.ProtocolVersion) {
		version = params.ProtocolVersion
	}
	d := s.door
	owner := ownerOf(p)
	release, f := d.reserve(owner, m.ID, p)
	if f != nil {
		return f.answer(c)
	}
	defer release()
	ctx := c.UserContext()
	var run orchestrator.Run
	if direct {
		if _, err := s.authorize(c, orchestrator.ObjectAgent, p.Chain.AgentID, identity.Need{Role: orchestrator.RoleOperator, Runtime: identity.RuntimeAgent}); err != nil {
			return err
		}
		req := runs.StartRequest{Kind: c.Query("kind", orchestrator.KindDirect)}
		if v := c.Query("tool_call_budget"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil { // the URL is wrong, not the message: refused like any bad query
				return fault(http.StatusBadRequest, m.ID, mcp.INVALID_PARAMS, "the query's tool_call_budget must be a whole number, got %q", clip(v, 40)).answer(c)
			}
			req.Budget = &n
		}
		started, err := s.Runs.StartRun(ctx, p.Chain.AgentID, req)
		if err != nil {
			return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: callError(err, "start the session's run")})
		}
		run = started
	} else {
		got, err := s.Runs.GetRun(ctx, c.Params("id"))
		if err != nil {
			return err
		}
		if got.Status != orchestrator.RunOpen {
			return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: &rpcError{Code: mcp.INVALID_REQUEST,
				Message: fmt.Sprintf("run %s is closed and takes no more tool calls; start a new run", got.ID)}})
		}
		run = got
	}
	sess := d.open(owner, run, direct, version)
	c.Set(mcpSessionHeader, sess.id)
	s.log().Info("mcp session opened", "session", sess.id[:8], "run_id", run.ID, "direct", direct, "protocol", version, "credential", p.Kind)
	res := initializeResult{ProtocolVersion: version, ServerInfo: mcp.Implementation{Name: "guilds", Version: "1"},
		Instructions: fmt.Sprintf("The tools of run %s of agent %s. Each call counts against the run's tool_call_budget (%d); every result ends with remaining_tool_calls.", run.ID, run.AgentID, run.ToolCallBudget),
		Meta:         map[string]any{"guilds/run_id": run.ID}}
	res.Capabilities.Tools.ListChanged = true
	res.Capabilities.Experimental = map[string]any{"guilds/next_generation": map[string]any{}}
	return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Result: res})
}

// reserve counts one more session for the owner, refused past the limit; release gives the place
// back unless open took it.
func (d *frontDoor) reserve(owner string, id json.RawMessage, p identity.Principal) (func(), *rpcFault) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.owners[owner] >= d.limit {
		return nil, fault(http.StatusTooManyRequests, id, mcp.INVALID_REQUEST,
			"%s holds %d open MCP sessions, the most one credential may: end one (HTTP DELETE with its %s) or let one idle out (GUILDS_MCP_SESSION_IDLE, %s), then initialize again",
			p.Label(), d.limit, mcpSessionHeader, d.idle)
	}
	d.owners[owner]++
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.owners[owner]--; d.owners[owner] <= 0 {
			delete(d.owners, owner)
		}
	}, nil
}

// open registers a session (its owner's place, reserved, is counted again for it).
func (d *frontDoor) open(owner string, run orchestrator.Run, direct bool, version string) *mcpSession {
	var b [16]byte
	_, _ = rand.Read(b[:])
	sess := &mcpSession{id: hex.EncodeToString(b[:]), runID: run.ID, owner: owner, direct: direct, version: version,
		last: time.Now(), flights: map[string]*flight{}, offer: fingerprint(run.OfferedTools)}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sessions[sess.id] = sess
	d.owners[owner]++
	if d.sweep == nil {
		d.sweep = time.AfterFunc(d.sweepEvery(), d.sweepIdle)
	}
	return sess
}

// sweepEvery is how often idle sessions are looked for.
func (d *frontDoor) sweepEvery() time.Duration {
	return min(max(d.idle/10, 100*time.Millisecond), time.Minute)
}

// sweepIdle ends the sessions idle past d.idle, and runs again while any session is open.
func (d *frontDoor) sweepIdle() {
	now := time.Now()
	var idle []*mcpSession
	d.mu.Lock()
	for _, sess := range d.sessions {
		sess.mu.Lock()
		if sess.active == 0 && now.Sub(sess.last) > d.idle {
			idle = append(idle, sess)
		}
		sess.mu.Unlock()
	}
	d.mu.Unlock()
	for _, sess := range idle {
		d.end(context.Background(), sess, "idle past GUILDS_MCP_SESSION_IDLE")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.sessions) == 0 {
		d.sweep = nil
		return
	}
	d.sweep = time.AfterFunc(d.sweepEvery(), d.sweepIdle)
}

// session finds the session a request names: one of this replica, of this endpoint (the path's run,
// or /mcp), opened by this credential; else 404, so the client initializes again.
func (d *frontDoor) session(c *fiber.Ctx, p identity.Principal, direct bool, sid string, id json.RawMessage) (*mcpSession, *rpcFault) {
	d.mu.Lock()
	sess := d.sessions[sid]
	d.mu.Unlock()
	if sess == nil || sess.owner != ownerOf(p) || sess.direct != direct || (!direct && sess.runID != c.Params("id")) {
		return nil, fault(http.StatusNotFound, id, mcp.INVALID_REQUEST,
			"MCP session %q is not open here: it ended (deleted, its run closed, idle past GUILDS_MCP_SESSION_IDLE) or another replica or an earlier process holds it; send initialize again (the run keeps its calls)", clip(sid, 40))
	}
	if v := c.Get(mcpVersionHeader); v != "" && !slices.Contains(mcpVersions, v) {
		return nil, fault(http.StatusBadRequest, id, mcp.INVALID_REQUEST, "%s %q is not served: this server speaks %s", mcpVersionHeader, clip(v, 40), strings.Join(mcpVersions, ", "))
	}
	return sess, nil
}

// enter counts a request or stream in flight on the session; the returned func ends it.
func (sess *mcpSession) enter() func() {
	sess.mu.Lock()
	sess.active++
	sess.last = time.Now()
	sess.mu.Unlock()
	return func() {
		sess.mu.Lock()
		sess.active--
		sess.last = time.Now()
		sess.mu.Unlock()
	}
}

// end ends a session: its stream closes, later requests get 404, and a /mcp session closes its run
// (once its calls in flight have finished).
func (d *frontDoor) end(ctx context.Context, sess *mcpSession, why string) bool {
	d.mu.Lock()
	if d.sessions[sess.id] != sess {
		d.mu.Unlock()
		return false
	}
	delete(d.sessions, sess.id)
	if d.owners[sess.owner]--; d.owners[sess.owner] <= 0 {
		delete(d.owners, sess.owner)
	}
	d.mu.Unlock()
	sess.mu.Lock()
	sess.ended = true
	st := sess.stream
	sess.stream = nil
	sess.mu.Unlock()
	if st != nil {
		st.end()
	}
	d.s.log().Info("mcp session ended", "session", sess.id[:8], "run_id", sess.runID, "why", why)
	if sess.direct {
		if _, err := d.s.Runs.CloseRun(ctx, sess.runID, orchestrator.CloseMCPSession); err != nil {
			d.s.log().Warn("the run of an ended /mcp session could not be closed", "run_id", sess.runID, "err", err.Error())
		}
	}
	return true
}

// notified handles a client's notification: cancelled stops the call it names; initialized and
// the rest need nothing.
func (d *frontDoor) notified(sess *mcpSession, m rpcMessage) {
	if m.Method != string(mcp.MethodNotificationCancelled) {
		return
	}
	var params struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &params) != nil || len(params.RequestID) == 0 {
		return
	}
	sess.mu.Lock()
	f := sess.flights[idKey(params.RequestID)]
	sess.mu.Unlock()
	if f != nil {
		f.once.Do(func() { close(f.cancel) })
	}
}

// idKey is a JSON-RPC id as text for a call id: n<number> or s<string>, a long or unusual string
// by its digest.
func idKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil && len(s) <= 100 && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
			return "s" + s
		}
		sum := sha256.Sum256(id)
		return "h" + hex.EncodeToString(sum[:16])
	}
	return "n" + clip(string(id), 40)
}

// track registers a call in flight under its request id; done forgets it.
func (sess *mcpSession) track(key string) (*flight, func()) {
	f := &flight{cancel: make(chan struct{})}
	sess.mu.Lock()
	if prev := sess.flights[key]; prev != nil {
		f = prev // the same id again: the run service answers it from the first
	} else {
		sess.flights[key] = f
	}
	sess.mu.Unlock()
	return f, func() {
		sess.mu.Lock()
		if sess.flights[key] == f {
			delete(sess.flights, key)
		}
		sess.mu.Unlock()
	}
}

// listTools answers tools/list: the run's offered tools as it stands, with their shaped schemas
// and what is known of them as annotations.
func (d *frontDoor) listTools(ctx context.Context, sess *mcpSession, m rpcMessage) rpcResponse {
	var params struct {
		Cursor string `json:"cursor"`
	}
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &params) != nil {
		return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: &rpcError{Code: mcp.INVALID_PARAMS, Message: "tools/list's params must be an object"}}
	}
	if params.Cursor != "" {
		return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: &rpcError{Code: mcp.INVALID_PARAMS, Message: "unknown cursor: tools/list answers every tool at once and hands out no cursor"}}
	}
	run, err := d.s.Runs.GetRun(ctx, sess.runID)
	if err != nil {
		return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: callError(err, "read the run")}
	}
	sess.mu.Lock()
	sess.offer, sess.changed = fingerprint(run.OfferedTools), false
	sess.mu.Unlock()
	return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Result: map[string]any{"tools": mcpTools(run, d.s.Runs.Hints)}}
}

// callParams are tools/call's params.
type callParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
}

// callTool answers tools/call through the run service's call path, the call id made of the session
// and the request id (a retry replays the stored result). A call that carries a progressToken from
// a client that takes event streams is answered on one: progress notifications while it runs past
// a second, then the result.
func (d *frontDoor) callTool(c *fiber.Ctx, sess *mcpSession, m rpcMessage) error {
	var p callParams
	if len(m.Params) == 0 || json.Unmarshal(m.Params, &p) != nil || p.Name == nil {
		return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: &rpcError{Code: mcp.INVALID_PARAMS,
			Message: "tools/call's params must be an object with name (the tool to call) and arguments (an object)"}})
	}
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && a[0] != '{' && string(a) != "null" {
		return c.JSON(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: &rpcError{Code: mcp.INVALID_PARAMS,
			Message: fmt.Sprintf("arguments of %s must be a JSON object of the tool's parameters", clip(*p.Name, 80))}})
	}
	req := runs.CallRequest{Name: *p.Name, Arguments: p.Arguments, CallID: "mcp-" + sess.id + "-" + idKey(m.ID), OfferedOnly: true}
	token := p.Meta.ProgressToken
	if len(token) == 0 || string(token) == "null" || !acceptsEvents(c) {
		return c.JSON(d.call(sess, m.ID, req))
	}
	// Answered on an event stream: notifications while the call runs, then its result. The call
	// runs to its end whatever the stream does (a retry replays it); a notification the client is
	// too slow for is dropped, never waited for.
	events := make(chan []byte, 64)
	result := make(chan []byte, 1)
	req.Progress = func(pr runs.Progress) {
		n := progressNotification(token, pr)
		select {
		case events <- n:
		default:
		}
	}
	go func() {
		b, _ := marshalJSON(d.call(sess, m.ID, req))
		result <- b
	}()
	streamHeaders(c)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		for {
			select {
			case e := <-events:
				if writeEvent(w, e) != nil {
					return
				}
			case r := <-result:
				for drained := false; !drained; {
					select {
					case e := <-events:
						_ = writeEvent(w, e)
					default:
						drained = true
					}
				}
				_ = writeEvent(w, r)
				return
			}
		}
	})
	return nil
}

// call carries one tools/call and makes its response; the session counts it in flight meanwhile.
func (d *frontDoor) call(sess *mcpSession, id json.RawMessage, req runs.CallRequest) rpcResponse {
	leave := sess.enter()
	defer leave()
	f, done := sess.track(idKey(id))
	defer done()
	req.Cancel = f.cancel
	res, err := d.s.Runs.Call(context.Background(), sess.runID, req)
	out := rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id}
	switch orchestrator.ErrorCode(err) {
	case "":
		out.Result = toolResult(res)
	case orchestrator.ECONFLICT: // the run closed or spent, a call cancelled before it ran: the model reads it
		out.Result = map[string]any{"content": []any{mcp.NewTextContent("ERROR: " + orchestrator.ErrorMessage(err))}, "isError": true}
	default:
		if orchestrator.ErrorCode(err) == orchestrator.EINTERNAL {
			d.s.log().Error("mcp tools/call failed", "run_id", sess.runID, "tool", req.Name, "err", err.Error())
		}
		out.Error = callError(err, "call "+clip(req.Name, 80))
	}
	return out
}

// callError is the JSON-RPC error of a failed run service call: the caller's mistake is invalid
// params, an outage or a fault an internal error, each with the API's message.
func callError(err error, what string) *rpcError {
	switch orchestrator.ErrorCode(err) {
	case orchestrator.ENOTFOUND, orchestrator.EINVALID, orchestrator.EMALFORMED, orchestrator.ECONFLICT, orchestrator.EFORBIDDEN:
		return &rpcError{Code: mcp.INVALID_PARAMS, Message: orchestrator.ErrorMessage(err)}
	}
	return &rpcError{Code: mcp.INTERNAL_ERROR, Message: what + ": " + orchestrator.ErrorMessage(err)}
}

// toolResult is a call's MCP result: its stamped text (isError when it starts with ERROR:), its
// image when it made one, and the call's seq and id in _meta.
func toolResult(res runs.CallResult) map[string]any {
	content := []any{mcp.NewTextContent(res.Result)}
	if res.Image != nil {
		content = append(content, mcp.NewImageContent(base64.StdEncoding.EncodeToString(res.Image.Data), res.Image.MIMEType))
	}
	meta := map[string]any{"guilds/seq": res.Seq, "guilds/call_id": res.CallID, "guilds/status": res.Status}
	if res.Replayed {
		meta["guilds/replayed"] = true
	}
	return map[string]any{"content": content, "isError": strings.HasPrefix(res.Result, "ERROR:"), "_meta": meta}
}

// progressNotification is a notifications/progress message: the seconds the call has run (rising)
// and its latest line.
func progressNotification(token json.RawMessage, pr runs.Progress) []byte {
	params := map[string]any{"progressToken": token, "progress": math.Round(pr.Elapsed.Seconds()*10) / 10}
	if pr.Message != "" {
		params["message"] = pr.Message
	}
	b, _ := marshalJSON(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": string(mcp.MethodNotificationProgress), "params": params})
	return b
}

// nextGeneration answers guilds/next_generation: the run's next generation opens (as POST
// /api/runs/{id}/generations does), and every session of the run hears list_changed when its
// offer changed.
func (d *frontDoor) nextGeneration(ctx context.Context, sess *mcpSession, m rpcMessage) rpcResponse {
	gen, err := d.s.Runs.NextGeneration(ctx, sess.runID)
	if err != nil {
		return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Error: callError(err, "open the next generation")}
	}
	d.offerChanged(gen.Run)
	return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: m.ID, Result: map[string]any{"run_id": gen.Run.ID, "dropped_tools": gen.Dropped,
		"remaining_tool_calls": gen.Run.Remaining()}}
}

// acceptsEvents reports whether the request takes an event stream.
func acceptsEvents(c *fiber.Ctx) bool {
	return strings.Contains(c.Get(fiber.HeaderAccept), "text/event-stream")
}

// streamHeaders starts an event stream's answer.
func streamHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	c.Status(fiber.StatusOK)
}

// writeEvent writes one message event and flushes it.
func writeEvent(w *bufio.Writer, data []byte) error {
	if _, err := w.WriteString("event: message\ndata: "); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if _, err := w.WriteString("\n\n"); err != nil {
		return err
	}
	return w.Flush()
}

// mcpStream answers GET /mcp and GET /api/runs/{id}/mcp: the session's event stream, which carries
// notifications/tools/list_changed whenever the run's offer changes. A newer stream replaces it.
func (s *Server) mcpStream(direct bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		sess, err := s.namedSession(c, direct, "a stream belongs to a session (initialize opens one)")
		if sess == nil {
			return err
		}
		if !acceptsEvents(c) {
			return fault(http.StatusNotAcceptable, nil, mcp.INVALID_REQUEST, "a session's stream is an event stream: send Accept: text/event-stream").answer(c)
		}
		st := sess.openStream()
		if st == nil {
			return fault(http.StatusNotFound, nil, mcp.INVALID_REQUEST, "MCP session %q has ended; send initialize again", clip(sess.id, 40)).answer(c)
		}
		leave := sess.enter()
		shutdown := c.Context().Done() // the server stopping; read here, never from the writer
		streamHeaders(c)
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			defer leave()
			defer sess.closeStream(st)
			if _, err := w.WriteString(": stream open\n\n"); err != nil || w.Flush() != nil {
				return
			}
			alive := time.NewTicker(mcpKeepAlive)
			defer alive.Stop()
			for {
				select {
				case msg := <-st.ch:
					if writeEvent(w, msg) != nil {
						return
					}
				case <-alive.C:
					if _, err := w.WriteString(": keep-alive\n\n"); err != nil || w.Flush() != nil {
						return
					}
				case <-st.done:
					return
				case <-shutdown:
					return
				}
			}
		})
		return nil
	}
}

// listChanged is the notification a stream carries when the run's offer changes.
var listChanged = []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)

// openStream opens the session's stream, ending the one before; nil once the session ended. A
// change the client has not heard of is sent at once.
func (sess *mcpSession) openStream() *mcpStream {
	st := &mcpStream{ch: make(chan []byte, 8), done: make(chan struct{})}
	sess.mu.Lock()
	if sess.ended {
		sess.mu.Unlock()
		return nil
	}
	prev := sess.stream
	sess.stream = st
	if sess.changed {
		sess.changed = false
		st.ch <- listChanged
	}
	sess.mu.Unlock()
	if prev != nil {
		prev.end()
	}
	return st
}

// closeStream forgets st once it ended.
func (sess *mcpSession) closeStream(st *mcpStream) {
	sess.mu.Lock()
	if sess.stream == st {
		sess.stream = nil
	}
	sess.mu.Unlock()
	st.end()
}

// tell sends list_changed when the offer's fingerprint differs from the one the client knows: on
// the open stream, else when one opens.
func (sess *mcpSession) tell(offer string) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended || sess.offer == offer {
		return
	}
	sess.offer = offer
	if sess.stream == nil {
		sess.changed = true
		return
	}
	select {
	case sess.stream.ch <- listChanged:
	default: // one is queued already
	}
}

// mcpDelete answers DELETE /mcp and DELETE /api/runs/{id}/mcp: the session ends (at /mcp, its run
// is closed once its calls in flight have finished).
func (s *Server) mcpDelete(direct bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		sess, err := s.namedSession(c, direct, "it names the session to end")
		if sess == nil {
			return err
		}
		if !s.door.end(c.UserContext(), sess, "deleted by its client") {
			return fault(http.StatusNotFound, nil, mcp.INVALID_REQUEST, "MCP session %q has ended already", clip(sess.id, 40)).answer(c)
		}
		return c.JSON(fiber.Map{"ended": true, "run_id": sess.runID, "run_closed": sess.direct})
	}
}

// offerChanged tells every session of the run that its offer is now run's, or ends them when the
// run is closed.
func (d *frontDoor) offerChanged(run orchestrator.Run) {
	var of []*mcpSession
	d.mu.Lock()
	for _, sess := range d.sessions {
		if sess.runID == run.ID {
			of = append(of, sess)
		}
	}
	d.mu.Unlock()
	if len(of) == 0 {
		return
	}
	offer := fingerprint(run.OfferedTools)
	for _, sess := range of {
		if run.Status != orchestrator.RunOpen {
			d.end(context.Background(), sess, "its run closed")
			continue
		}
		sess.tell(offer)
	}
}

// RunChanged reads a run whose offer or status changed (a generation or a close, on any replica:
// the database's notices on postgres.RunsChannel) and tells this replica's MCP sessions of it:
// list_changed on their streams, or their end when the run closed or is gone.
func (s *Server) RunChanged(runID string) {
	d := s.door
	d.mu.Lock()
	held := false
	for _, sess := range d.sessions {
		held = held || sess.runID == runID
	}
	d.mu.Unlock()
	if !held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := s.Runs.GetRun(ctx, runID)
	switch orchestrator.ErrorCode(err) {
	case "":
		d.offerChanged(run)
	case orchestrator.ENOTFOUND:
		d.offerChanged(orchestrator.Run{ID: runID, Status: orchestrator.RunClosed})
	default:
		s.log().Warn("a changed run could not be read for its MCP sessions", "run_id", runID, "err", err.Error())
	}
}

// CloseMCPSessions ends every MCP session of this replica (the orchestrator is stopping): their
// streams end, and the runs of /mcp sessions, which cannot outlive the process, are closed.
func (s *Server) CloseMCPSessions(ctx context.Context) {
	d := s.door
	d.mu.Lock()
	all := make([]*mcpSession, 0, len(d.sessions))
	for _, sess := range d.sessions {
		all = append(all, sess)
	}
	d.mu.Unlock()
	for _, sess := range all {
		d.end(ctx, sess, "the orchestrator is stopping")
	}
}

// fingerprint identifies an offer: the tools' names, descriptions and schemas.
func fingerprint(tools []orchestrator.OfferedTool) string {
	h := fnv.New64a()
	for _, t := range tools {
		h.Write([]byte(t.Name))
		h.Write([]byte{0})
		h.Write([]byte(t.Description))
		h.Write([]byte{0})
		h.Write(t.InputSchema)
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// mcpTool is one tool as tools/list answers it.
type mcpTool struct {
	Name        string              `json:"name"`
	Description string              `json:"description,omitempty"`
	InputSchema json.RawMessage     `json:"inputSchema"`
	Annotations *mcp.ToolAnnotation `json:"annotations,omitempty"`
}

// emptySchema stands for a tool offered without a schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// schemaOf is a tool's input schema, never empty.
func schemaOf(t orchestrator.OfferedTool) json.RawMessage {
	if len(bytes.TrimSpace(t.InputSchema)) == 0 {
		return emptySchema
	}
	return t.InputSchema
}

// mcpTools lists the run's offered tools as MCP tools.
func mcpTools(run orchestrator.Run, hints func(orchestrator.OfferedTool) registry.Hints) []mcpTool {
	out := make([]mcpTool, len(run.OfferedTools))
	for i, t := range run.OfferedTools {
		out[i] = mcpTool{Name: t.Name, Description: t.Description, InputSchema: schemaOf(t), Annotations: annotations(hints(t))}
	}
	return out
}

// annotations are the hints that hold, nil when none does.
func annotations(h registry.Hints) *mcp.ToolAnnotation {
	if !h.ReadOnly && !h.Destructive && !h.OpenWorld {
		return nil
	}
	yes := true
	a := &mcp.ToolAnnotation{}
	if h.ReadOnly {
		a.ReadOnlyHint = &yes
	}
	if h.Destructive {
		a.DestructiveHint = &yes
	}
	if h.OpenWorld {
		a.OpenWorldHint = &yes
	}
	return a
}
