package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// progressLog keeps the progress notifications an MCP client heard, per progress token.
type progressLog struct {
	mu    sync.Mutex
	heard map[string][]map[string]any
}

func (l *progressLog) note(n mcpgo.JSONRPCNotification) {
	if n.Method != string(mcpgo.MethodNotificationProgress) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.heard == nil {
		l.heard = map[string][]map[string]any{}
	}
	tok := fmt.Sprint(n.Params.AdditionalFields["progressToken"])
	l.heard[tok] = append(l.heard[tok], n.Params.AdditionalFields)
}

// of answers the notifications heard under token so far.
func (l *progressLog) of(token string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]map[string]any(nil), l.heard[token]...)
}

// askMCPClient opens an mcp-go client session at url with bearer, its notifications to log; the
// session ends with the test.
func askMCPClient(t testing.TB, url, bearer string, log *progressLog) (*client.Client, *mcpgo.InitializeResult) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + bearer}))
	if err != nil {
		t.Fatal(err)
	}
	c.OnNotification(log.note)
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start the MCP client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ProtocolVersion: mcpgo.ProtocolVersion20251125,
		ClientInfo: mcpgo.Implementation{Name: "guilds-approvals-test", Version: "1"}}})
	if err != nil {
		t.Fatalf("initialize at %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, init
}

// mcpAnswer is what a tools/call sent on its own goroutine got back.
type mcpAnswer struct {
	res *mcpgo.CallToolResult
	err error
}

// mcpCall sends tools/call with the request id of our choice (a retry reuses it) and, when token is
// set, a progressToken, on a goroutine of its own: it may wait for an approval.
func mcpCall(c *client.Client, id, token, name string, args map[string]any) <-chan mcpAnswer {
	out := make(chan mcpAnswer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		params := map[string]any{"name": name, "arguments": args}
		if token != "" {
			params["_meta"] = map[string]any{"progressToken": token}
		}
		resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(id),
			Method: string(mcpgo.MethodToolsCall), Params: params})
		if err != nil {
			out <- mcpAnswer{err: err}
			return
		}
		if resp.Error != nil {
			out <- mcpAnswer{err: fmt.Errorf("JSON-RPC error %d: %s", resp.Error.Code, resp.Error.Message)}
			return
		}
		res, err := mcpgo.ParseCallToolResult(&resp.Result)
		out <- mcpAnswer{res: res, err: err}
	}()
	return out
}

// mcpGot waits for an answer (a hang guard of a minute) and answers its text, isError and _meta.
func mcpGot(t testing.TB, ch <-chan mcpAnswer) (string, bool, map[string]any) {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("tools/call: %v", a.err)
		}
		var b strings.Builder
		for _, c := range a.res.Content {
			if tc, ok := c.(mcpgo.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		var meta map[string]any
		if a.res.Meta != nil {
			meta = a.res.Meta.AdditionalFields
		}
		return b.String(), a.res.IsError, meta
	case <-time.After(time.Minute):
		t.Fatal("no tools/call answer within a minute")
	}
	return "", false, nil
}

// TestApprovalsThroughMCP: the same Ask as TestApprovalsEndToEnd, through the MCP endpoints with
// mcp-go's client: echo is Ask at the guild; the agent whose own binding turns it On calls it over
// its run's /api/runs/{id}/mcp with no wait and no request; the asking agent's /mcp session (a run
// of its own) waits on each call, hearing progress notifications while it waits when it gave a
// progressToken (and none when it gave none), then answers as the REST call does: approved (the
// tool runs once with those arguments), denied (isError, with the operator's reason, nothing
// runs), nobody in time (isError, the request expires, nothing runs); a retry of the approved
// request id replays its result without running or asking again.
func TestApprovalsThroughMCP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := newAskSetup(e)
	base := e.serve()
	var notes progressLog

	// On for one agent: its run's endpoint answers at once, no request.
	on, _ := askMCPClient(t, base+"/api/runs/"+s.onRun["id"].(string)+"/mcp", s.onRun["token"].(string), &notes)
	if text, isErr, _ := mcpGot(t, mcpCall(on, "on-1", "p-on", "echo", map[string]any{"text": "hi"})); isErr || text != "hi\n\nremaining_tool_calls: 99" {
		t.Fatalf("the On agent's call: %q (isError %v)", text, isErr)
	}
	if out := e.must(200, "GET", "/api/guilds/"+s.guild+"/approvals", nil); len(out["approvals"].([]any)) != 0 {
		t.Fatalf("the On agent's call made requests: %v", out)
	}
	if n := len(notes.of("p-on")); n != 0 {
		t.Fatalf("the On agent's quick call heard %d progress notifications", n)
	}

	// Ask for the other: its /mcp session is a run of its own, offering echo resolved Ask.
	key := e.must(201, "POST", "/api/agents/"+s.asking+"/keys", map[string]any{"name": "runtime"})["key"].(string)
	c, init := askMCPClient(t, base+"/mcp?kind=direct", key, &notes)
	runID, _ := init.Meta.AdditionalFields["guilds/run_id"].(string)
	if o, a := offeredAsk(e.must(200, "GET", "/api/runs/"+runID, nil), "echo"); !o || !a {
		t.Fatalf("the /mcp session's run offers echo %v, asking %v", o, a)
	}
	waitProgress := func(token string, n int) []map[string]any {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if got := notes.of(token); len(got) >= n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d progress notifications under %s after 30 s, want %d", len(notes.of(token)), token, n)
			}
		}
	}

	// Approved: progress while it waits, then the tool's result; it ran once.
	args := map[string]any{"text": "pay the supplier", "times": 2}
	call := mcpCall(c, "approve-me", "p-approve", "echo", args)
	req := e.pendingOf(s.asking, 1)[0]
	if req["run_id"] != runID || req["tool"] != "echo" || req["arguments_sha256"] != canonicalSHA256(t, args) {
		t.Fatalf("the MCP call's request %v", req)
	}
	heard := waitProgress("p-approve", 2) // at once, then a second later
	for i, p := range heard {
		if p["message"] != runs.WaitingMessage || (i > 0 && p["progress"].(float64) <= heard[i-1]["progress"].(float64)) {
			t.Fatalf("progress while waiting: %v", heard)
		}
	}
	select {
	case a := <-call:
		t.Fatalf("the MCP call answered before anyone decided: %+v", a)
	default:
	}
	e.must(200, "POST", "/api/approvals/"+req["id"].(string)+"/approve", nil)
	text, isErr, meta := mcpGot(t, call)
	if isErr || text != "pay the supplierpay the supplier\n\nremaining_tool_calls: 99" || e.order.count(runID) != 1 {
		t.Fatalf("the approved MCP call: %q (isError %v), ran %d times", text, isErr, e.order.count(runID))
	}
	approvedNotes := len(notes.of("p-approve"))
	t.Logf("the approved call heard %d progress notifications while it waited", approvedNotes)

	// A retry of that request id replays it: no request, no run, the same result.
	again, againErr, againMeta := mcpGot(t, mcpCall(c, "approve-me", "p-replay", "echo", args))
	if againErr || again != text || againMeta["guilds/replayed"] != true || againMeta["guilds/call_id"] != meta["guilds/call_id"] || e.order.count(runID) != 1 {
		t.Fatalf("the replay %q %v (first %v), ran %d times", again, againMeta, meta, e.order.count(runID))
	}
	if n := len(e.must(200, "GET", "/api/agents/"+s.asking+"/approvals", nil)["approvals"].([]any)); n != 1 {
		t.Fatalf("%d requests after a replay", n)
	}

	// Denied with a reason: isError, the reason, nothing ran. Without a progressToken it hears none.
	call = mcpCall(c, "deny-me", "", "echo", map[string]any{"text": "wire everything"})
	id := e.pendingOf(s.asking, 1)[0]["id"].(string)
	time.Sleep(1200 * time.Millisecond) // past the first beat a progressToken would have heard
	e.must(200, "POST", "/api/approvals/"+id+"/deny", map[string]any{"reason": "use the staging account"})
	text, isErr, _ = mcpGot(t, call)
	if !isErr || !strings.HasPrefix(text, "ERROR: an operator denied this call of echo") || !strings.Contains(text, "Their reason: use the staging account") || e.order.count(runID) != 1 {
		t.Fatalf("the denied MCP call: %q (isError %v), ran %d times", text, isErr, e.order.count(runID))
	}

	// Nobody in time: isError saying so once the wait has passed, the request expired. (Every
	// earlier wait has answered, so the service's Wait is changed with nothing reading it.)
	const wait = 1500 * time.Millisecond
	e.approvals.Wait = wait
	start := time.Now()
	text, isErr, _ = mcpGot(t, mcpCall(c, "nobody", "p-timeout", "echo", map[string]any{"text": "anyone?"}))
	if took := time.Since(start); took < wait {
		t.Fatalf("the call answered after %s, before the %s wait", took, wait)
	}
	if !isErr || !strings.Contains(text, "nobody approved it within 1.5s") || e.order.count(runID) != 1 {
		t.Fatalf("the timed-out MCP call: %q (isError %v), ran %d times", text, isErr, e.order.count(runID))
	}
	if n := len(notes.of("p-timeout")); n < 2 {
		t.Fatalf("a 1.5 s wait with a progressToken heard %d progress notifications", n)
	}
	expired := e.must(200, "GET", "/api/agents/"+s.asking+"/approvals?status=expired", nil)["approvals"].([]any)
	if len(expired) != 1 || expired[0].(map[string]any)["reason"] != "nobody approved it within 1.5s" {
		t.Fatalf("expired requests %v", expired)
	}

	// Progress went only to the calls that asked for it, each under its own token.
	notes.mu.Lock()
	defer notes.mu.Unlock()
	for tok := range notes.heard {
		if tok != "p-approve" && tok != "p-timeout" {
			t.Fatalf("progress under %s: %v", tok, notes.heard[tok])
		}
	}
	t.Logf("progress notifications: %d while approved, %d while timing out", approvedNotes, len(notes.heard["p-timeout"]))
}
