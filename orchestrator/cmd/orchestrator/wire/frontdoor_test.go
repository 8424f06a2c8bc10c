package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcpClient opens an mcp-go client session at url with bearer; notes get the server's
// notifications. The session ends with the test.
func mcpClient(t testing.TB, url, bearer string, notes func(mcp.JSONRPCNotification)) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + bearer}),
		transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	if notes != nil {
		c.OnNotification(notes)
	}
	// The GET stream listens under Start's context: it must outlive this function.
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start the MCP client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo: mcp.Implementation{Name: "guilds-test", Version: "1"}}})
	if err != nil {
		t.Fatalf("initialize at %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, init
}

// textOf joins a tool result's text blocks.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// call makes one tools/call through c.
func call(t testing.TB, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// rawCall sends a tools/call with the request id of our choice through c's transport and returns
// the decoded result (or the JSON-RPC error).
func rawCall(ctx context.Context, c *client.Client, id string, name string, args map[string]any) (*mcp.CallToolResult, error) {
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
		Method: string(mcp.MethodToolsCall), Params: map[string]any{"name": name, "arguments": args}})
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("JSON-RPC error %d: %s", resp.Error.Code, resp.Error.Message)
	}
	return mcp.ParseCallToolResult(&resp.Result)
}

// TestFrontDoorMCPClient: mcp-go's client, against the real graph on real PostgreSQL with a local
// sandbox, opens /mcp with an agent key (the session is a run) and /api/runs/{id}/mcp with a run
// token: it lists the run's tools, calls a native tool and the sandbox's shell, reads an ERROR:
// result as isError and the budget trailer, replays a retried request id, cancels a sleep, and hears
// list_changed when a generation drops a tool.
func TestFrontDoorMCPClient(t *testing.T) {
	s := wiretest.ServeIn(t, "local")
	defer func() {
		if t.Failed() {
			t.Log(s.Log.String())
		}
	}()
	_, agent := wiretest.ScopesAt(t, s.API)
	wiretest.Must(t, 200, "PATCH", s.API+"/api/agents/"+agent, map[string]any{"config": map[string]any{"coding": true}})
	key := wiretest.Must(t, 201, "POST", s.API+"/api/agents/"+agent+"/keys", map[string]any{"name": "runtime"})["key"].(string)

	var mu sync.Mutex
	var heard []string
	var progress []map[string]any
	c, init := mcpClient(t, s.API+"/mcp?kind=direct&tool_call_budget=20", key, func(n mcp.JSONRPCNotification) {
		mu.Lock()
		heard = append(heard, n.Method)
		if n.Method == string(mcp.MethodNotificationProgress) {
			progress = append(progress, n.Params.AdditionalFields)
		}
		mu.Unlock()
	})
	runID, _ := init.Meta.AdditionalFields["guilds/run_id"].(string)
	if runID == "" {
		t.Fatalf("initialize's _meta names no run: %+v", init.Meta)
	}
	run := wiretest.Must(t, 200, "GET", s.API+"/api/runs/"+runID, nil)
	if run["agent_id"] != agent || run["tool_call_budget"] != float64(20) || run["status"] != "open" {
		t.Fatalf("the session's run %v", run)
	}

	// tools/list answers exactly the run's offer, with its shaped schemas and annotations.
	ctx := context.Background()
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]mcp.Tool{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
	}
	if want := wiretest.OfferedNames(run); !slices.Equal(names, want) {
		t.Fatalf("tools/list %v, the run offers %v", names, want)
	}
	for _, want := range []string{"shell", "note_write", "note_get", "file_read"} {
		if _, ok := byName[want]; !ok {
			t.Fatalf("tools/list lacks %s: %v", want, names)
		}
	}
	if ro := byName["note_get"].Annotations.ReadOnlyHint; ro == nil || !*ro {
		t.Fatalf("note_get is a read and has no readOnlyHint: %+v", byName["note_get"].Annotations)
	}
	if ro := byName["note_write"].Annotations.ReadOnlyHint; ro != nil && *ro {
		t.Fatalf("note_write is marked read-only: %+v", byName["note_write"].Annotations)
	}
	raw, _ := json.Marshal(list.Tools)
	if strings.Contains(string(raw), `"additionalProperties":false`) {
		t.Fatalf("a listed schema keeps additionalProperties false: %s", raw)
	}

	// A native tool and the sandbox's shell, each result ending with the budget trailer.
	res := call(t, c, "note_write", map[string]any{"level": "agent", "key": "plan.md", "content": "ship the front door"})
	if res.IsError || !strings.Contains(textOf(res), "remaining_tool_calls: 19") {
		t.Fatalf("note_write: %+v", res)
	}
	if res = call(t, c, "note_get", map[string]any{"path": "agent/plan.md"}); !strings.Contains(textOf(res), "ship the front door") {
		t.Fatalf("note_get: %q", textOf(res))
	}
	if res = call(t, c, "shell", map[string]any{"command": "echo from-the-sandbox; pwd"}); res.IsError || !strings.Contains(textOf(res), "from-the-sandbox") ||
		!strings.Contains(textOf(res), "remaining_tool_calls: 17") {
		t.Fatalf("shell: %q", textOf(res))
	}
	// A call with a progressToken that runs past a second hears progress: the seconds it has run,
	// rising, and the shell's latest line.
	ctxP, cancelP := context.WithTimeout(ctx, 60*time.Second)
	res, err = c.CallTool(ctxP, mcp.CallToolRequest{Request: mcp.Request{}, Params: mcp.CallToolParams{Name: "shell",
		Arguments: map[string]any{"command": "echo step-one; sleep 3; echo step-two"}, Meta: &mcp.Meta{ProgressToken: "p-1"}}})
	cancelP()
	if err != nil || res.IsError || !strings.Contains(textOf(res), "step-two") || !strings.Contains(textOf(res), "remaining_tool_calls: 16") {
		t.Fatalf("the long shell call: %v %q", err, textOf(res))
	}
	mu.Lock()
	got := slices.Clone(progress)
	mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("a 3 s call with a progressToken heard %d progress notifications: %v", len(got), got)
	}
	sawLine := false
	for i, p := range got {
		if p["progressToken"] != "p-1" {
			t.Fatalf("progress for another token: %v", p)
		}
		if i > 0 && p["progress"].(float64) <= got[i-1]["progress"].(float64) {
			t.Fatalf("progress does not rise: %v", got)
		}
		sawLine = sawLine || strings.Contains(fmt.Sprint(p["message"]), "step-one")
	}
	if !sawLine {
		t.Fatalf("no progress carried the shell's latest line: %v", got)
	}

	// An ERROR: result is isError with the same text; arguments that fail the schema say which.
	if res = call(t, c, "note_get", map[string]any{"path": "agent/missing.md"}); !res.IsError || !strings.HasPrefix(textOf(res), "ERROR:") {
		t.Fatalf("a missing note: %+v", res)
	}
	if res = call(t, c, "note_write", map[string]any{"level": "galaxy", "key": "x.md", "content": "x"}); !res.IsError || !strings.Contains(textOf(res), "level") {
		t.Fatalf("a bad argument: %q", textOf(res))
	}
	// A tool the run does not offer is a JSON-RPC error, and costs nothing.
	before := wiretest.Must(t, 200, "GET", s.API+"/api/runs/"+runID, nil)["tool_call_count"]
	if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}}); err == nil ||
		!strings.Contains(err.Error(), "no_such_tool") {
		t.Fatalf("an unknown tool: %v", err)
	}
	if after := wiretest.Must(t, 200, "GET", s.API+"/api/runs/"+runID, nil)["tool_call_count"]; after != before {
		t.Fatalf("an unknown tool changed the call count %v -> %v", before, after)
	}

	// A retried request id replays the stored result instead of running the tool again.
	first, err := rawCall(ctx, c, "retry-1", "shell", map[string]any{"command": "date +%s%N"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := rawCall(ctx, c, "retry-1", "shell", map[string]any{"command": "date +%s%N"})
	if err != nil {
		t.Fatal(err)
	}
	if textOf(first) != textOf(again) || again.Meta == nil || again.Meta.AdditionalFields["guilds/replayed"] != true {
		t.Fatalf("the retry ran again:\n%q\n%q (meta %+v)", textOf(first), textOf(again), again.Meta)
	}

	// notifications/cancelled stops a sleep in flight: its process group is killed, the call is
	// recorded cancelled (the sleep outlasts every guard here, so only the cancel can end it).
	cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
	defer ccancel()
	done := make(chan error, 1)
	var slept *mcp.CallToolResult
	go func() {
		var err error
		slept, err = rawCall(cctx, c, "sleeper", "shell", map[string]any{"command": "sleep 347.31; echo woke", "timeout_seconds": 60})
		done <- err
	}()
	waitFor(t, 20*time.Second, "the sleep to start", func() bool {
		return strings.Contains(psOutput(), "sleep 347.31")
	})
	if err := c.GetTransport().SendNotification(ctx, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": "sleeper", "reason": "the user pressed stop"}}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the cancelled call: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled sleep still runs after 30 s")
	}
	if strings.Contains(textOf(slept), "woke") {
		t.Fatalf("the sleep ran to its end: %q", textOf(slept))
	}
	waitFor(t, 10*time.Second, "the sleep's process to be gone:\n"+grepLines(psOutput(), "sleep 347.31"), func() bool { return !strings.Contains(psOutput(), "sleep 347.31") })
	calls := wiretest.Must(t, 200, "GET", s.API+"/api/runs/"+runID+"/calls", nil)["calls"].([]any)
	last := calls[len(calls)-1].(map[string]any)
	if last["name"] != "shell" || last["status"] != "cancelled" {
		t.Fatalf("the cancelled call's record: %v", last)
	}

	// A generation that drops a tool sends list_changed, and the next tools/list lacks it.
	wiretest.Must(t, 200, "PUT", s.API+"/api/bindings", map[string]any{"scope": "agent", "scope_id": agent, "catalog_kind": "native_tool",
		"catalog_id": "note_delete", "enabled": false})
	gen := wiretest.Must(t, 200, "POST", s.API+"/api/runs/"+runID+"/generations", nil)
	if d, _ := gen["dropped_tools"].([]any); !slices.Contains(d, any("note_delete")) {
		t.Fatalf("generation %v", gen)
	}
	waitFor(t, 10*time.Second, "list_changed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(heard, string(mcp.MethodNotificationToolsListChanged))
	})
	if list, err = c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "note_delete" {
			t.Fatal("tools/list still lists the dropped note_delete")
		}
	}

	// The same run, served at /api/runs/{id}/mcp with its agent's key: the same offer and budget.
	rc, rinit := mcpClient(t, s.API+"/api/runs/"+runID+"/mcp", key, nil)
	if rinit.Meta.AdditionalFields["guilds/run_id"] != runID {
		t.Fatalf("the run's session names %+v", rinit.Meta)
	}
	if res = call(t, rc, "note_get", map[string]any{"path": "agent/plan.md"}); !strings.Contains(textOf(res), "remaining_tool_calls: 11") {
		t.Fatalf("the run's endpoint shares the budget: %q", textOf(res))
	}

	// Ending the /mcp session (HTTP DELETE with its id) closes its run. mcp-go's Close sends its
	// DELETE without the client's headers, so without the key: the test sends it as a client should.
	req, _ := http.NewRequest("DELETE", s.API+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Mcp-Session-Id", c.GetSessionId())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ended map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&ended)
	resp.Body.Close()
	if resp.StatusCode != 200 || ended["run_id"] != runID || ended["run_closed"] != true {
		t.Fatalf("DELETE /mcp: %d %v", resp.StatusCode, ended)
	}
	waitFor(t, 10*time.Second, "the session's run to close", func() bool {
		return wiretest.Must(t, 200, "GET", s.API+"/api/runs/"+runID, nil)["status"] == "closed"
	})
	// The ended session is gone: a request on it is 404, and so is the run's own session now.
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err == nil {
		t.Fatal("tools/list on an ended session answered")
	}
}

// TestFrontDoorRunToken: a run's token opens its own run's MCP endpoint; another run, /mcp, or its
// run once closed are 404 (or 401 once the token is dead), before any session exists.
func TestFrontDoorRunToken(t *testing.T) {
	s := wiretest.ServeIn(t, "local")
	_, agent := wiretest.ScopesAt(t, s.API)
	_, other := wiretest.ScopesAt(t, s.API)
	key := wiretest.Must(t, 201, "POST", s.API+"/api/agents/"+agent+"/keys", map[string]any{"name": "runtime"})["key"].(string)
	otherKey := wiretest.Must(t, 201, "POST", s.API+"/api/agents/"+other+"/keys", map[string]any{"name": "runtime"})["key"].(string)
	run := wiretest.Must(t, 201, "POST", s.API+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	runID, rt := run["id"].(string), run["token"].(string)
	second := wiretest.Must(t, 201, "POST", s.API+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)

	c, init := mcpClient(t, s.API+"/api/runs/"+runID+"/mcp", rt, nil)
	if init.Meta.AdditionalFields["guilds/run_id"] != runID {
		t.Fatalf("initialize _meta %+v", init.Meta)
	}
	if res := call(t, c, "note_write", map[string]any{"level": "agent", "key": "a.md", "content": "a"}); res.IsError {
		t.Fatalf("the run token's call: %q", textOf(res))
	}

	initialize := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": mcp.ProtocolVersion20251125, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}}
	for _, tc := range []struct {
		name, bearer, path string
		want               int
	}{
		{"the run token on another run", rt, "/api/runs/" + second + "/mcp", 404},
		{"the run token at /mcp", rt, "/mcp", 403},
		{"another agent's key on the run", otherKey, "/api/runs/" + runID + "/mcp", 404},
		{"no token", "", "/api/runs/" + runID + "/mcp", 401},
	} {
		if st, out := wiretest.RequestAs(t, tc.bearer, "POST", s.API+tc.path, initialize); st != tc.want {
			t.Errorf("%s: %d %v, want %d", tc.name, st, out, tc.want)
		}
	}
	// The agent's own key opens the run too; its key's session is not the run token's.
	if _, kinit := mcpClient(t, s.API+"/api/runs/"+runID+"/mcp", key, nil); kinit.Meta.AdditionalFields["guilds/run_id"] != runID {
		t.Fatalf("the key's session %+v", kinit.Meta)
	}
	// A closed run's token is dead: 401.
	wiretest.Must(t, 200, "POST", s.API+"/api/runs/"+runID+"/close", nil)
	// The close reaches the credential cache as a database notice.
	waitFor(t, 10*time.Second, "the closed run's token to be refused", func() bool {
		st, _ := wiretest.RequestAs(t, rt, "POST", s.API+"/api/runs/"+runID+"/mcp", initialize)
		return st == 401
	})
}

// psOutput is every process's command line, one a line.
func psOutput() string {
	out, _ := exec.Command("ps", "-eo", "args").Output()
	return string(out)
}

// grepLines keeps the lines of s that hold sub.
func grepLines(s, sub string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// waitFor polls cond until it holds, failing after limit.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sdkDir is the folder of the official TypeScript MCP SDK and its client script (make setup
// installs it).
const sdkDir = "../../../../tools/mcpsdk"

// tsClient runs the TypeScript SDK's client script against url with bearer: it lists the tools,
// calls tool with args and ends the session; its printed answer is decoded.
func tsClient(t *testing.T, url, bearer, tool string, args map[string]any) map[string]any {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sdkDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed in tools/mcpsdk (run make setup): %v", err)
	}
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", url, bearer, tool, string(raw))
	cmd.Dir = sdkDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript SDK client at %s: %v\n%s", url, err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the TypeScript SDK client printed %q: %v", out, err)
	}
	return got
}

// runInInstructions reads the run id out of initialize's instructions.
var runInInstructions = regexp.MustCompile(`run (run_[0-9a-z]+)`)

// TestFrontDoorTypeScriptSDK: the official TypeScript SDK, a client nobody here wrote, connects to
// /mcp with an agent key (its session is a new run, closed when the session ends) and to
// /api/runs/{id}/mcp with a run token, lists the tools and calls one.
func TestFrontDoorTypeScriptSDK(t *testing.T) {
	s := wiretest.ServeIn(t, "local")
	_, agent := wiretest.ScopesAt(t, s.API)
	key := wiretest.Must(t, 201, "POST", s.API+"/api/agents/"+agent+"/keys", map[string]any{"name": "runtime"})["key"].(string)

	// /mcp with the agent key.
	got := tsClient(t, s.API+"/mcp?tool_call_budget=7", key, "note_write", map[string]any{"level": "agent", "key": "ts.md", "content": "from TypeScript"})
	m := runInInstructions.FindStringSubmatch(fmt.Sprint(got["instructions"]))
	if m == nil {
		t.Fatalf("the instructions name no run: %v", got)
	}
	runID := m[1]
	res := got["result"].(map[string]any)
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	if res["isError"] == true || !strings.Contains(text, "remaining_tool_calls: 6") {
		t.Fatalf("the SDK's call: %v", res)
	}
	var names []string
	for _, tool := range got["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	run := wiretest.Must(t, 200, "GET", s.API+"/api/runs/"+runID, nil)
	if want := wiretest.OfferedNames(run); !slices.Equal(names, want) {
		t.Fatalf("the SDK listed %v, the run offers %v", names, want)
	}
	waitFor(t, 10*time.Second, "the SDK's ended session to close its run", func() bool {
		return wiretest.Must(t, 200, "GET", s.API+"/api/runs/"+runID, nil)["status"] == "closed"
	})

	// /api/runs/{id}/mcp with the run's token: the same note, read back.
	started := wiretest.Must(t, 201, "POST", s.API+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	got = tsClient(t, s.API+"/api/runs/"+started["id"].(string)+"/mcp", started["token"].(string), "note_get", map[string]any{"path": "agent/ts.md"})
	res = got["result"].(map[string]any)
	if text := res["content"].([]any)[0].(map[string]any)["text"].(string); res["isError"] == true || !strings.Contains(text, "from TypeScript") {
		t.Fatalf("the SDK's call with a run token: %v", res)
	}
	if !strings.Contains(fmt.Sprint(got["instructions"]), started["id"].(string)) {
		t.Fatalf("the run's session serves another run: %v", got["instructions"])
	}
	if st := wiretest.Must(t, 200, "GET", s.API+"/api/runs/"+started["id"].(string), nil)["status"]; st != "open" {
		t.Fatalf("ending a session of /api/runs/{id}/mcp closed the run: %v", st)
	}
}
