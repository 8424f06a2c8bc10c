package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/httpapi"
)

// rpcAnswer is one exchange with the front door.
type rpcAnswer struct {
	status int
	header http.Header
	body   map[string]any // nil for an empty or event-stream answer
	raw    []byte
}

// rpc sends one MCP request (body a JSON-RPC message, or raw text) with bearer and the session id
// sid ("" for none), checked live against openapi.json like every exchange.
func (e *env) rpc(method, path, bearer, sid string, body any, accept ...string) rpcAnswer {
	e.t.Helper()
	var sent []byte
	switch b := body.(type) {
	case nil:
	case string:
		sent = []byte(b)
	default:
		sent, _ = json.Marshal(b)
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(sent))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if len(accept) > 0 {
		req.Header.Set("Accept", accept[0])
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := e.app.Test(req, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	checkLive(e.t, req, sent, resp.StatusCode, resp.Header, raw)
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header, raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			e.t.Fatalf("%s %s: not a JSON object: %q", method, path, raw)
		}
	}
	return a
}

// liveStream is a session's GET stream over a loopback listener, open once its first comment came.
type liveStream struct {
	req    *http.Request
	resp   *http.Response
	head   []byte
	cancel context.CancelFunc
}

// stream opens the session's event stream at base+path and returns once the server wrote its
// opening comment, so the stream is the session's.
func (e *env) stream(base, path, bearer, sid string) *liveStream {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	ls := &liveStream{req: req, resp: resp, cancel: cancel}
	if resp.StatusCode == 200 {
		head := make([]byte, len(": stream open\n\n"))
		if _, err := io.ReadFull(resp.Body, head); err != nil || string(head) != ": stream open\n\n" {
			e.t.Fatalf("the stream's opening: %q %v", head, err)
		}
		ls.head = head
	}
	return ls
}

// finish reads the stream to its end (the session ended) and checks it live against openapi.json.
func (ls *liveStream) finish(e *env) rpcAnswer {
	e.t.Helper()
	defer ls.cancel()
	rest, err := io.ReadAll(ls.resp.Body)
	ls.resp.Body.Close()
	if err != nil {
		e.t.Fatalf("the stream did not end with its session: %v", err)
	}
	raw := append(ls.head, rest...)
	checkLive(e.t, ls.req, nil, ls.resp.StatusCode, ls.resp.Header, raw)
	return rpcAnswer{status: ls.resp.StatusCode, header: ls.resp.Header, raw: raw}
}

// initialize is an initialize request.
func initialize(id int) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "httpapi-test", "version": "1"}}}
}

// request is a JSON-RPC request.
func rpcRequest(id any, method string, params any) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	return m
}

// open initializes a session at path with bearer and answers its id and initialize's result.
func (e *env) open(path, bearer string) (string, map[string]any) {
	e.t.Helper()
	a := e.rpc("POST", path, bearer, "", initialize(1))
	sid := a.header.Get("Mcp-Session-Id")
	res, _ := a.body["result"].(map[string]any)
	if a.status != 200 || sid == "" || res == nil {
		e.t.Fatalf("initialize at %s: %d %s", path, a.status, a.raw)
	}
	return sid, res
}

// rpcError is a JSON-RPC error answer's code and message.
func rpcError(a rpcAnswer) (float64, string) {
	er, _ := a.body["error"].(map[string]any)
	code, _ := er["code"].(float64)
	msg, _ := er["message"].(string)
	return code, msg
}

// resultText joins a tools/call result's text blocks, and says whether it is an error.
func resultText(t testing.TB, a rpcAnswer) (string, bool) {
	t.Helper()
	res, ok := a.body["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %d %s", a.status, a.raw)
	}
	var b strings.Builder
	for _, c := range res["content"].([]any) {
		if c := c.(map[string]any); c["type"] == "text" {
			b.WriteString(c["text"].(string))
		}
	}
	return b.String(), res["isError"] == true
}

// TestFrontDoorProtocol: a run served at /api/runs/{id}/mcp and at /mcp answers the protocol's
// methods, and every bad message with the JSON-RPC error the protocol defines or an isError result
// naming the wrong argument, storing nothing.
func TestFrontDoorProtocol(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	agent := e.agent(nil)
	run := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct", "tool_call_budget": 5})
	runID, rt := run["id"].(string), run["token"].(string)
	path := "/api/runs/" + runID + "/mcp"
	sid, res := e.open(path, rt)
	if meta, _ := res["_meta"].(map[string]any); meta["guilds/run_id"] != runID || res["protocolVersion"] != "2025-11-25" {
		t.Fatalf("initialize %v", res)
	}

	// tools/list is the run's offer, its shaped schemas without additionalProperties false.
	list := e.rpc("POST", path, rt, sid, rpcRequest(2, "tools/list", nil))
	tools := list.body["result"].(map[string]any)["tools"].([]any)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if want := offered(run); fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("tools/list %v, offered %v", names, want)
	}
	if strings.Contains(string(list.raw), `"additionalProperties":false`) {
		t.Fatalf("a listed schema keeps additionalProperties false: %s", list.raw)
	}
	// ping, an unknown method, a batch, broken JSON, a message without method.
	if a := e.rpc("POST", path, rt, sid, rpcRequest(3, "ping", nil)); a.status != 200 || a.body["result"] == nil {
		t.Fatalf("ping %d %s", a.status, a.raw)
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   float64
		says   string
	}{
		{"an unknown method", rpcRequest(4, "resources/list", nil), 200, -32601, "tools/list"},
		{"a batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, 400, -32600, "batches"},
		{"broken JSON", `{"jsonrpc":"2.0","id":6,`, 400, -32700, "not valid JSON"},
		{"no method", `{"jsonrpc":"2.0","id":7}`, 400, -32600, "no method"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":8,"method":"ping"}`, 400, -32600, `"2.0"`},
		{"tools/call without a name", rpcRequest(9, "tools/call", map[string]any{"arguments": map[string]any{}}), 200, -32602, "name"},
		{"arguments not an object", rpcRequest(10, "tools/call", map[string]any{"name": "echo", "arguments": []any{1}}), 200, -32602, "JSON object"},
		{"a tool the run does not offer", rpcRequest(11, "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}}), 200, -32602, "not offered"},
	} {
		a := e.rpc("POST", path, rt, sid, tc.body)
		code, msg := rpcError(a)
		if a.status != tc.status || code != tc.code || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: %d %s, want %d, code %v saying %q", tc.name, a.status, a.raw, tc.status, tc.code, tc.says)
		}
	}
	// Arguments that fail the schema: an isError result naming the argument; nothing ran.
	a := e.rpc("POST", path, rt, sid, rpcRequest(12, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x", "times": 9}}))
	if text, isErr := resultText(t, a); !isErr || !strings.Contains(text, "times") {
		t.Fatalf("a schema failure: %q", text)
	}
	// A tool's ERROR: result is isError with the same text, and the budget trailer ends it.
	a = e.rpc("POST", path, rt, sid, rpcRequest(13, "tools/call", map[string]any{"name": "fail", "arguments": map[string]any{}}))
	if text, isErr := resultText(t, a); !isErr || !strings.HasPrefix(text, "ERROR:") || !strings.Contains(text, "remaining_tool_calls:") {
		t.Fatalf("a failing tool: %q", text)
	}
	// A native call, then the same request id again: the stored result, not a second run.
	call := rpcRequest("echo-1", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
	first := e.rpc("POST", path, rt, sid, call)
	again := e.rpc("POST", path, rt, sid, call)
	t1, _ := resultText(t, first)
	t2, _ := resultText(t, again)
	meta := again.body["result"].(map[string]any)["_meta"].(map[string]any)
	if t1 != t2 || !strings.HasPrefix(t1, "hi") || meta["guilds/replayed"] != true {
		t.Fatalf("the retry: %q, %q, %v", t1, t2, meta)
	}
	e.order.mu.Lock()
	n := len(e.order.seqs[runID])
	e.order.mu.Unlock()
	if n != 1 {
		t.Fatalf("echo ran %d times for one request id", n)
	}
	calls := e.must(200, "GET", "/api/runs/"+runID+"/calls", nil)["calls"].([]any)
	for _, c := range calls {
		if c := c.(map[string]any); c["name"] == "no_such_tool" {
			t.Fatalf("a call of a tool not offered was stored: %v", c)
		}
	}

	// A notification is accepted with no body; an unknown session is 404; DELETE ends it.
	if a := e.rpc("POST", path, rt, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); a.status != 202 || len(a.raw) != 0 {
		t.Fatalf("a notification: %d %q", a.status, a.raw)
	}
	if a := e.rpc("POST", path, rt, "", rpcRequest(14, "ping", nil)); a.status != 400 {
		t.Fatalf("no session header: %d %s", a.status, a.raw)
	}
	if a := e.rpc("POST", path, rt, "0123456789abcdef0123456789abcdef", rpcRequest(15, "ping", nil)); a.status != 404 {
		t.Fatalf("an unknown session: %d %s", a.status, a.raw)
	}
	if a := e.rpc("GET", path, rt, sid, nil, "application/json"); a.status != 406 {
		t.Fatalf("a stream without Accept: text/event-stream: %d %s", a.status, a.raw)
	}
	// The session's stream stays open until DELETE ends the session, then ends too.
	ls := e.stream(e.serve(), path, rt, sid)
	if a := e.rpc("DELETE", path, rt, sid, nil); a.status != 200 || a.body["run_closed"] != false {
		t.Fatalf("DELETE: %d %s", a.status, a.raw)
	}
	if a := ls.finish(e); a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("the stream: %d %s", a.status, a.raw)
	}
	if a := e.rpc("DELETE", path, rt, sid, nil); a.status != 404 {
		t.Fatalf("DELETE again: %d %s", a.status, a.raw)
	}
	if st := e.must(200, "GET", "/api/runs/"+runID, nil)["status"]; st != "open" {
		t.Fatalf("ending a session of the run's endpoint closed the run: %v", st)
	}
}

// TestFrontDoorReach: the identity matrix at the front door. A run token opens its own run only;
// another run, another agent's key, no token are refused before any session exists; /mcp takes
// agent keys only; a session is its opener's alone.
func TestFrontDoorReach(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	agentA, agentB := e.agent(nil), e.agent(nil)
	keyA := e.must(201, "POST", "/api/agents/"+agentA+"/keys", map[string]any{"name": "a"})["key"].(string)
	keyB := e.must(201, "POST", "/api/agents/"+agentB+"/keys", map[string]any{"name": "b"})["key"].(string)
	run1 := e.must(201, "POST", "/api/agents/"+agentA+"/runs", map[string]any{"kind": "direct"})
	run2 := e.must(201, "POST", "/api/agents/"+agentA+"/runs", map[string]any{"kind": "direct"})
	id1, rt1, id2 := run1["id"].(string), run1["token"].(string), run2["id"].(string)

	for _, tc := range []struct {
		name, path, bearer string
		want               int
	}{
		{"no token", "/api/runs/" + id1 + "/mcp", "", 401},
		{"a run token on another run", "/api/runs/" + id2 + "/mcp", rt1, 404},
		{"another agent's key", "/api/runs/" + id1 + "/mcp", keyB, 404},
		{"a run that does not exist", "/api/runs/run_00000000000000000000/mcp", keyA, 404},
		{"a run token at /mcp", "/mcp", rt1, 403},
		{"the operator token at /mcp", "/mcp", token, 403},
		{"no token at /mcp", "/mcp", "", 401},
	} {
		if a := e.rpc("POST", tc.path, tc.bearer, "", initialize(1)); a.status != tc.want || a.header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: %d %s, want %d and no session", tc.name, a.status, a.raw, tc.want)
		}
	}
	// The run token and the agent's key open run 1; a session answers only its opener.
	sid, _ := e.open("/api/runs/"+id1+"/mcp", rt1)
	keySid, _ := e.open("/api/runs/"+id1+"/mcp", keyA)
	if a := e.rpc("POST", "/api/runs/"+id1+"/mcp", keyA, sid, rpcRequest(2, "ping", nil)); a.status != 404 {
		t.Fatalf("another credential's session: %d %s", a.status, a.raw)
	}
	if a := e.rpc("POST", "/api/runs/"+id2+"/mcp", keyA, keySid, rpcRequest(2, "ping", nil)); a.status != 404 {
		t.Fatalf("a session of run 1 at run 2: %d %s", a.status, a.raw)
	}
	// /mcp with the key starts a run of its agent, with the query's kind and budget.
	direct, res := e.open("/mcp?kind=direct&tool_call_budget=3", keyA)
	runID := res["_meta"].(map[string]any)["guilds/run_id"].(string)
	got := e.must(200, "GET", "/api/runs/"+runID, nil)
	if got["agent_id"] != agentA || got["tool_call_budget"] != float64(3) {
		t.Fatalf("the /mcp session's run %v", got)
	}
	if a := e.rpc("POST", "/mcp?tool_call_budget=many", keyA, "", initialize(1)); a.status != 400 || !strings.Contains(fmt.Sprint(a.body["error"]), "tool_call_budget") {
		t.Fatalf("a bad budget: %d %s", a.status, a.raw)
	}
	a := e.rpc("POST", "/mcp", keyA, direct, rpcRequest(2, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}))
	if text, _ := resultText(t, a); !strings.Contains(text, "remaining_tool_calls: 2") {
		t.Fatalf("a call in the /mcp session: %q", text)
	}
	if a := e.rpc("DELETE", "/mcp", keyA, direct, nil); a.status != 200 || a.body["run_closed"] != true {
		t.Fatalf("DELETE /mcp: %d %s", a.status, a.raw)
	}
	if st := e.must(200, "GET", "/api/runs/"+runID, nil)["status"]; st != "closed" {
		t.Fatalf("the ended /mcp session's run is %v", st)
	}
	if a := e.rpc("DELETE", "/mcp", keyA, direct, nil); a.status != 404 {
		t.Fatalf("DELETE /mcp again: %d %s", a.status, a.raw)
	}
	// A closed run takes no session: the agent's key hears why.
	e.must(200, "POST", "/api/runs/"+id2+"/close", nil)
	if a := e.rpc("POST", "/api/runs/"+id2+"/mcp", keyA, "", initialize(1)); !strings.Contains(fmt.Sprint(a.body["error"]), "closed") || a.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("a closed run: %d %s", a.status, a.raw)
	}
}

// TestFrontDoorSessionLimit: one credential holds at most MCPSessionLimit sessions; one more is
// refused with a clear error until one ends.
func TestFrontDoorSessionLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	agent := e.agent(nil)
	run := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	path, rt := "/api/runs/"+run["id"].(string)+"/mcp", run["token"].(string)
	var sids []string
	for range httpapi.MCPSessionLimit {
		sid, _ := e.open(path, rt)
		sids = append(sids, sid)
	}
	a := e.rpc("POST", path, rt, "", initialize(1))
	if _, msg := rpcError(a); a.status != 429 || !strings.Contains(msg, "DELETE") || a.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("one session too many: %d %s", a.status, a.raw)
	}
	e.rpc("DELETE", path, rt, sids[0], nil)
	e.open(path, rt)
}

// TestFrontDoorStream: a session's event stream carries list_changed when a generation changes the
// offer (sent as the stream opens when it changed meanwhile); the stream ends with its session.
func TestFrontDoorStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	agent := e.agent(nil)
	key := e.must(201, "POST", "/api/agents/"+agent+"/keys", map[string]any{"name": "k"})["key"].(string)
	sid, res := e.open("/mcp", key)
	runID := res["_meta"].(map[string]any)["guilds/run_id"].(string)
	guild := e.must(200, "GET", "/api/agents/"+agent, nil)["guild_id"].(string)
	e.must(200, "PUT", "/api/bindings", map[string]any{"scope": "guild", "scope_id": guild, "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": false})
	if gen := e.must(200, "POST", "/api/runs/"+runID+"/generations", nil); fmt.Sprint(gen["dropped_tools"]) != "[echo]" {
		t.Fatalf("generation %v", gen)
	}
	// The change came while no stream was open: the stream says so as it opens; DELETE ends both.
	ls := e.stream(e.serve(), "/mcp", key, sid)
	if a := e.rpc("DELETE", "/mcp", key, sid, nil); a.status != 200 {
		t.Fatalf("DELETE %d %s", a.status, a.raw)
	}
	got := ls.finish(e)
	if got.status != 200 || !strings.Contains(string(got.raw), "notifications/tools/list_changed") {
		t.Fatalf("the stream: %d %q", got.status, got.raw)
	}
	list := e.rpc("POST", "/mcp", key, sid, rpcRequest(2, "tools/list", nil))
	if list.status != 404 {
		t.Fatalf("tools/list on the ended session: %d %s", list.status, list.raw)
	}
}

// TestFrontDoorIdle: a /mcp session unused past GUILDS_MCP_SESSION_IDLE ends, and its run closes.
func TestFrontDoorIdle(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, nil, envOptions{mcpIdle: 300 * time.Millisecond})
	agent := e.agent(nil)
	key := e.must(201, "POST", "/api/agents/"+agent+"/keys", map[string]any{"name": "k"})["key"].(string)
	sid, res := e.open("/mcp", key)
	runID := res["_meta"].(map[string]any)["guilds/run_id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for e.must(200, "GET", "/api/runs/"+runID, nil)["status"] != "closed" {
		if time.Now().After(deadline) {
			t.Fatal("the idle session's run is still open after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a := e.rpc("POST", "/mcp", key, sid, rpcRequest(2, "ping", nil)); a.status != 404 {
		t.Fatalf("the idle session answered: %d %s", a.status, a.raw)
	}
}

// TestRunToolFormats: GET /api/runs/{id}/tools answers the offer as each API's tools array.
func TestRunToolFormats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	run := e.must(201, "POST", "/api/agents/"+e.agent(nil)+"/runs", map[string]any{"kind": "direct"})
	id := run["id"].(string)
	n := len(run["offered_tools"].([]any))
	for format, check := range map[string]func(map[string]any) bool{
		"openai": func(t map[string]any) bool {
			f, _ := t["function"].(map[string]any)
			return t["type"] == "function" && f["name"] != nil && f["parameters"] != nil
		},
		"openai_responses": func(t map[string]any) bool {
			return t["type"] == "function" && t["name"] != nil && t["parameters"] != nil && t["strict"] == false
		},
		"anthropic": func(t map[string]any) bool { return t["name"] != nil && t["input_schema"] != nil && t["type"] == nil },
		"mcp":       func(t map[string]any) bool { return t["name"] != nil && t["inputSchema"] != nil },
	} {
		out := e.must(200, "GET", "/api/runs/"+id+"/tools?format="+format, nil)
		tools := out["tools"].([]any)
		if len(tools) != n || out["format"] != format {
			t.Fatalf("%s: %d tools, want %d: %v", format, len(tools), n, out)
		}
		for _, tool := range tools {
			if !check(tool.(map[string]any)) {
				t.Fatalf("%s: %v", format, tool)
			}
		}
	}
	st, out := e.do("GET", "/api/runs/"+id+"/tools?format=gemini", nil)
	if st != 422 || !strings.Contains(errMessage(out), "anthropic") {
		t.Fatalf("an unknown format: %d %v", st, out)
	}
}
