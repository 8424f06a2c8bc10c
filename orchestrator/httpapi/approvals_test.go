package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// count is how many times the run's handler ran.
func (l *seqLog) count(run string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seqs[run])
}

// answer is what a request sent on its own goroutine got back.
type answer struct {
	status int
	body   map[string]any
	err    error
}

// asyncAs sends one request as who on a goroutine of its own (it may wait minutes for an
// approval), checked live against openapi.json; the answer arrives on the channel.
func (e *env) asyncAs(who caller, method, path string, body any) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		var sent []byte
		if body != nil {
			sent, _ = json.Marshal(body)
		}
		req := httptest.NewRequest(method, path, bytes.NewReader(sent))
		req.Header.Set("Content-Type", "application/json")
		if who.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+who.bearer)
		}
		if who.cookie != "" {
			req.Header.Set("Cookie", "guilds_session="+who.cookie)
		}
		if who.csrf != "" {
			req.Header.Set("X-CSRF-Token", who.csrf)
		}
		resp, err := e.app.Test(req, -1)
		if err != nil {
			out <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		checkLive(e.t, req, sent, resp.StatusCode, resp.Header, raw)
		a := answer{status: resp.StatusCode}
		if err := json.Unmarshal(raw, &a.body); err != nil {
			a.err = fmt.Errorf("%s %s: answer is not a JSON object: %q", method, path, raw)
		}
		out <- a
	}()
	return out
}

// got waits for an asynchronous answer (a hang guard of a minute) and fails unless it is want.
func (e *env) got(ch <-chan answer, want int) map[string]any {
	e.t.Helper()
	select {
	case a := <-ch:
		if a.err != nil || a.status != want {
			e.t.Fatalf("answer %d, want %d: %v %v", a.status, want, a.body, a.err)
		}
		return a.body
	case <-time.After(time.Minute):
		e.t.Fatal("no answer within a minute")
	}
	return nil
}

// pendingOf waits until the agent has n pending approval requests (a hang guard of 30 s) and
// answers them, newest first.
func (e *env) pendingOf(agentID string, n int) []map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := e.must(200, "GET", "/api/agents/"+agentID+"/approvals?status=pending", nil)
		list := out["approvals"].([]any)
		if len(list) == n {
			if int(out["pending"].(float64)) != n {
				e.t.Fatalf("pending %v with %d listed", out["pending"], n)
			}
			rows := make([]map[string]any, n)
			for i, a := range list {
				rows[i] = a.(map[string]any)
			}
			return rows
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("agent %s: %d pending requests after 30 s, want %d: %v", agentID, len(list), n, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// canonicalSHA256 is the digest an approval holds, computed here apart from the code under test:
// the arguments with their keys sorted and no space.
func canonicalSHA256(t testing.TB, args map[string]any) string {
	b, err := json.Marshal(args) // encoding/json sorts a map's keys
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// askSetup is an organisation with a guild where echo is Ask, an agent there that inherits it and
// one whose own binding turns it plainly On, and an open run of each.
type askSetup struct {
	org, guild, asking, onAgent string
	askRun, onRun               map[string]any
}

func newAskSetup(e *env) askSetup {
	e.t.Helper()
	var s askSetup
	s.org = e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	s.guild = e.must(201, "POST", "/api/orgs/"+s.org+"/guilds", map[string]any{"name": "Treasury"})["id"].(string)
	s.asking = e.must(201, "POST", "/api/guilds/"+s.guild+"/agents", map[string]any{"name": "Payer"})["id"].(string)
	s.onAgent = e.must(201, "POST", "/api/guilds/"+s.guild+"/agents", map[string]any{"name": "Trusted"})["id"].(string)
	if b := e.must(200, "PUT", "/api/bindings", map[string]any{"scope": "guild", "scope_id": s.guild, "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": true, "ask": true}); b["ask"] != true {
		e.t.Fatalf("binding %v", b)
	}
	if b := e.must(200, "PUT", "/api/bindings", map[string]any{"scope": "agent", "scope_id": s.onAgent, "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": true}); b["ask"] != nil {
		e.t.Fatalf("binding without ask %v", b)
	}
	s.askRun = e.must(201, "POST", "/api/agents/"+s.asking+"/runs", map[string]any{"kind": "direct"})
	s.onRun = e.must(201, "POST", "/api/agents/"+s.onAgent+"/runs", map[string]any{"kind": "direct"})
	return s
}

// offeredAsk says how a run answer offers a tool: absent, or whether it asks.
func offeredAsk(run map[string]any, name string) (offered, ask bool) {
	for _, t := range run["offered_tools"].([]any) {
		if m := t.(map[string]any); m["name"] == name {
			return true, m["ask"] == true
		}
	}
	return false, false
}

// nativeAccess finds a native tool in a tools view.
func nativeAccess(t testing.TB, view map[string]any, name string) map[string]any {
	for _, x := range view["native_tools"].([]any) {
		if m := x.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("%s is not in the tools view %v", name, view)
	return nil
}

// TestAskBindings: Ask is a binding row with ask on an enabled native_tool or mcp_tool; the walk
// treats a row below it without ask as On and Off above or below as Off; the tools views say ask
// and which scope decided; a run's snapshot records it and a generation resolves it again.
func TestAskBindings(t *testing.T) {
	e := newEnv(t, nil)
	s := newAskSetup(e)
	put := func(want int, body map[string]any) map[string]any {
		t.Helper()
		return e.must(want, "PUT", "/api/bindings", body)
	}
	for _, bad := range []struct {
		body map[string]any
		says string
	}{
		{map[string]any{"scope": "guild", "scope_id": s.guild, "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": false, "ask": true}, "ask needs enabled true"},
		{map[string]any{"scope": "org", "scope_id": s.org, "catalog_kind": "artifact_grant", "catalog_id": "read_org", "enabled": true, "ask": true}, "ask is for a native_tool or mcp_tool binding"},
		{map[string]any{"scope": "org", "scope_id": s.org, "catalog_kind": "mcp", "catalog_id": "cigale", "enabled": true, "ask": true}, "put an mcp_tool row with ask true for each tool"},
	} {
		if out := put(422, bad.body); !strings.Contains(errMessage(out), bad.says) {
			t.Fatalf("%v: %v", bad.body, out)
		}
	}
	st, out := e.do("DELETE", "/api/bindings", map[string]any{"scope": "guild", "scope_id": s.guild, "catalog_kind": "native_tool", "catalog_id": "echo", "ask": true})
	if st != 422 {
		t.Fatalf("DELETE with ask: %d %v", st, out)
	}

	// The views: the asking agent inherits Ask from the guild; the other's own row makes it On.
	if na := nativeAccess(t, e.must(200, "GET", "/api/agents/"+s.asking+"/tools", nil), "echo"); na["ask"] != true || na["decided_by"] != "guild" || na["enabled"] != true || na["offered"] != true {
		t.Fatalf("asking agent's echo %v", na)
	}
	if na := nativeAccess(t, e.must(200, "GET", "/api/agents/"+s.onAgent+"/tools", nil), "echo"); na["ask"] != nil || na["decided_by"] != "agent" || na["enabled"] != true {
		t.Fatalf("the On agent's echo %v", na)
	}
	if na := nativeAccess(t, e.must(200, "GET", "/api/guilds/"+s.guild+"/tools", nil), "echo"); na["ask"] != true || na["decided_by"] != "guild" {
		t.Fatalf("the guild's echo %v", na)
	}
	if na := nativeAccess(t, e.must(200, "GET", "/api/orgs/"+s.org+"/tools", nil), "echo"); na["ask"] != nil || na["decided_by"] != "platform" {
		t.Fatalf("the organisation's echo %v", na)
	}
	if o, a := offeredAsk(s.askRun, "echo"); !o || !a {
		t.Fatalf("the asking run offers echo %v asking %v", o, a)
	}
	if o, a := offeredAsk(s.onRun, "echo"); !o || a {
		t.Fatalf("the On run offers echo %v asking %v", o, a)
	}
	if o, a := offeredAsk(s.askRun, "schedule_list"); !o || a {
		t.Fatalf("schedule_list offered %v asking %v", o, a)
	}
	// Off at the organisation above the guild's Ask: the walk's last row decides, so the guild's
	// Ask still turns it on for the guild; Off at the agent below turns it off.
	put(200, map[string]any{"scope": "agent", "scope_id": s.asking, "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": false})
	if na := nativeAccess(t, e.must(200, "GET", "/api/agents/"+s.asking+"/tools", nil), "echo"); na["ask"] != nil || na["enabled"] != false || na["decided_by"] != "agent" {
		t.Fatalf("echo Off at the agent %v", na)
	}
	// A generation resolves Ask again: the asking run's echo is now Off (dropped); the On run's
	// echo, set to Ask at its agent, asks from its next generation.
	gen := e.must(200, "POST", "/api/runs/"+s.askRun["id"].(string)+"/generations", nil)
	if o, _ := offeredAsk(gen["run"].(map[string]any), "echo"); o {
		t.Fatalf("echo Off stays offered: %v", gen)
	}
	put(200, map[string]any{"scope": "agent", "scope_id": s.onAgent, "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": true, "ask": true})
	gen = e.must(200, "POST", "/api/runs/"+s.onRun["id"].(string)+"/generations", nil)
	if o, a := offeredAsk(gen["run"].(map[string]any), "echo"); !o || !a {
		t.Fatalf("after Ask at the agent, the next generation offers echo %v asking %v: %v", o, a, gen)
	}
	if o, a := offeredAsk(e.must(200, "GET", "/api/runs/"+s.onRun["id"].(string), nil), "echo"); !o || !a {
		t.Fatalf("the stored snapshot: echo offered %v asking %v", o, a)
	}
	rows := e.must(200, "GET", "/api/bindings?scope=agent&scope_id="+s.onAgent, nil)["bindings"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["ask"] != true {
		t.Fatalf("the agent's rows %v", rows)
	}
}

// TestApprovalsEndToEnd: a call of a tool resolved Ask is recorded as started and waits for an
// operator, while the run's other calls and the On agent's calls go on; the request shows the
// redacted arguments and their canonical digest; a viewer reads it without the arguments and
// cannot decide, nor can the agent's key or the run's token, nor an operator elsewhere; of two
// deciders at once one wins; the approved call runs once with those arguments, and its retry
// replays; a denial answers the reason and runs nothing; arguments that fail the schema make no
// request; closing the run ends a wait; every decision is audited with who decided.
func TestApprovalsEndToEnd(t *testing.T) {
	e := newEnv(t, nil)
	s := newAskSetup(e)
	admin := asBearer(token)
	askRun, onRun := s.askRun["id"].(string), s.onRun["id"].(string)

	// People: an operator of the guild, a viewer of the organisation, an operator of another one.
	people := map[string]caller{}
	other := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Elsewhere"})["id"].(string)
	for _, p := range []struct{ email, scope, id, role string }{
		{"op@example.com", "guilds", s.guild, "operator"}, {"view@example.com", "orgs", s.org, "viewer"}, {"far@example.com", "orgs", other, "operator"},
	} {
		acct := e.expect(201, admin, "POST", "/api/accounts", map[string]any{"email": p.email, "name": p.email, "password": password})
		e.expect(200, admin, "PUT", "/api/"+p.scope+"/"+p.id+"/members/"+acct["id"].(string), map[string]any{"role": p.role})
		people[p.email] = e.signIn(p.email, password)
	}
	op, viewer, far := people["op@example.com"], people["view@example.com"], people["far@example.com"]
	opID := e.expect(200, op, "GET", "/api/sessions/current", nil)["account"].(map[string]any)["id"].(string)
	agentKey := e.must(201, "POST", "/api/agents/"+s.asking+"/keys", map[string]any{"name": "runtime"})["key"].(string)
	runToken := s.askRun["token"].(string)

	// The On agent's call runs at once and makes no request.
	if res := e.must(200, "POST", "/api/runs/"+onRun+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}); res["result"] != "hi\n\nremaining_tool_calls: 99" {
		t.Fatalf("On call %v", res)
	}
	if out := e.must(200, "GET", "/api/agents/"+s.onAgent+"/approvals", nil); len(out["approvals"].([]any)) != 0 || out["pending"] != 0.0 {
		t.Fatalf("the On agent's requests %v", out)
	}

	// The asking agent's call waits; it is recorded as started meanwhile.
	args := map[string]any{"times": 2, "text": "pay 0.75 ETH; my token is " + runToken}
	call := e.asyncAs(admin, "POST", "/api/runs/"+askRun+"/calls", map[string]any{"name": "echo", "arguments": args, "call_id": "tc-1"})
	req := e.pendingOf(s.asking, 1)[0]
	id := req["id"].(string)
	if req["status"] != "pending" || req["tool"] != "echo" || req["run_id"] != askRun || req["agent_id"] != s.asking || req["seq"] != 1.0 ||
		req["arguments_sha256"] != canonicalSHA256(t, args) || req["decided_by"] != "" || req["decided_at"] != nil {
		t.Fatalf("request %v", req)
	}
	if got, _ := json.Marshal(req["arguments"]); string(got) != `{"text":"pay 0.75 ETH; my token is [REDACTED]","times":2}` {
		t.Fatalf("the request's arguments %s", got)
	}
	created, _ := time.Parse(time.RFC3339Nano, req["created_at"].(string))
	expires, _ := time.Parse(time.RFC3339Nano, req["expires_at"].(string))
	if expires.Sub(created) != 5*time.Minute {
		t.Fatalf("the request waits %s, want the default 5m", expires.Sub(created))
	}
	calls := e.must(200, "GET", "/api/runs/"+askRun+"/calls", nil)["calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["status"] != "started" {
		t.Fatalf("the waiting call's record %v", calls)
	}
	// The run's other calls are not held up by the wait.
	if res := e.must(200, "POST", "/api/runs/"+askRun+"/calls", map[string]any{"name": "schedule_list", "arguments": map[string]any{}}); res["result"] != "none\n\nremaining_tool_calls: 98" {
		t.Fatalf("another call of the run while one waits: %v", res)
	}
	for _, path := range []string{"/api/orgs/" + s.org + "/approvals", "/api/guilds/" + s.guild + "/approvals?status=pending", "/api/agents/" + s.asking + "/approvals?status=pending&limit=1"} {
		if out := e.must(200, "GET", path, nil); len(out["approvals"].([]any)) != 1 || out["pending"] != 1.0 {
			t.Fatalf("%s: %v", path, out)
		}
	}
	if out := e.must(200, "GET", "/api/agents/"+s.asking+"/approvals?status=approved", nil); len(out["approvals"].([]any)) != 0 || out["pending"] != 1.0 {
		t.Fatalf("approved ones while it waits: %v", out)
	}
	if out := e.expect(200, op, "GET", "/api/approvals/pending", nil); out["pending"] != 1.0 || len(out["agents"].([]any)) != 1 {
		t.Fatalf("the operator's banner count %v", out)
	}
	if out := e.expect(200, far, "GET", "/api/approvals/pending", nil); out["pending"] != 0.0 {
		t.Fatalf("another organisation's operator counts %v", out)
	}

	// A viewer reads it without the arguments, and cannot decide.
	vlist := e.expect(200, viewer, "GET", "/api/orgs/"+s.org+"/approvals", nil)["approvals"].([]any)
	if len(vlist) != 1 || vlist[0].(map[string]any)["arguments"] != nil || vlist[0].(map[string]any)["withheld"] != true {
		t.Fatalf("the viewer's listing %v", vlist)
	}
	if one := e.expect(200, viewer, "GET", "/api/approvals/"+id, nil); one["withheld"] != true || one["arguments_sha256"] != req["arguments_sha256"] {
		t.Fatalf("the viewer's read %v", one)
	}
	if out := e.expect(403, viewer, "POST", "/api/approvals/"+id+"/approve", nil); !strings.Contains(errMessage(out), "operator") {
		t.Fatalf("a viewer approving: %v", out)
	}
	// Nor the model's own credentials; an operator elsewhere does not see it at all.
	e.expect(403, asBearer(agentKey), "POST", "/api/approvals/"+id+"/approve", nil)
	e.expect(403, asBearer(runToken), "POST", "/api/approvals/"+id+"/approve", nil)
	e.expect(403, asBearer(runToken), "GET", "/api/approvals/"+id, nil)
	e.expect(403, asBearer(agentKey), "GET", "/api/approvals/pending", nil)
	unknown := e.expect(404, far, "POST", "/api/approvals/apv_unknown0000000000000/approve", nil)
	outside := e.expect(404, far, "POST", "/api/approvals/"+id+"/approve", nil)
	if errMessage(outside) != fmt.Sprintf("approval %q not found", id) || !strings.Contains(errMessage(unknown), "not found") {
		t.Fatalf("outside reach %v, unknown %v", outside, unknown)
	}
	for _, scope := range []string{"orgs/" + s.org, "guilds/" + s.guild, "agents/" + s.asking} {
		e.expect(404, far, "GET", "/api/"+scope+"/approvals", nil)
	}
	e.expect(404, admin, "GET", "/api/approvals/apv_unknown0000000000000", nil)
	e.expect(422, admin, "GET", "/api/agents/"+s.asking+"/approvals?status=maybe", nil)
	e.expect(422, op, "POST", "/api/approvals/"+id+"/deny", map[string]any{"reason": strings.Repeat("x", 2001)})
	select {
	case a := <-call:
		t.Fatalf("the call answered before anyone decided: %v", a)
	default:
	}

	// Two operators decide at once: exactly one wins.
	first, second := e.asyncAs(op, "POST", "/api/approvals/"+id+"/approve", nil), e.asyncAs(admin, "POST", "/api/approvals/"+id+"/deny", map[string]any{"reason": "too late"})
	a, b := <-first, <-second
	if a.err != nil || b.err != nil || a.status+b.status != 200+409 {
		t.Fatalf("two deciders: %d %v / %d %v", a.status, a.body, b.status, b.body)
	}
	won, lost := a, b
	if b.status == 200 {
		won, lost = b, a
	}
	if e, _ := lost.body["error"].(map[string]any); e["status"] != won.body["status"] || !strings.Contains(e["message"].(string), "already "+won.body["status"].(string)) {
		t.Fatalf("the loser's 409 %v for the winner %v", lost.body, won.body)
	}
	res := e.got(call, 200)
	switch won.body["status"] {
	case "approved":
		if won.body["decided_by"] != opID || res["result"] != "pay 0.75 ETH; my token is [REDACTED]pay 0.75 ETH; my token is [REDACTED]\n\nremaining_tool_calls: 99" {
			t.Fatalf("approved by %v: %v", won.body["decided_by"], res)
		}
	case "denied":
		if won.body["decided_by"] != "admin" || !strings.Contains(res["result"].(string), "Their reason: too late") {
			t.Fatalf("denied by %v: %v", won.body["decided_by"], res)
		}
	default:
		t.Fatalf("the winner %v", won.body)
	}
	ran := e.order.count(askRun)
	if (won.body["status"] == "approved") != (ran == 1) {
		t.Fatalf("decided %v, and the handler ran %d times", won.body["status"], ran)
	}
	// A retry under the call's id replays the outcome: nothing runs, no new request.
	replay := e.must(200, "POST", "/api/runs/"+askRun+"/calls", map[string]any{"name": "echo", "arguments": args, "call_id": "tc-1"})
	if replay["replayed"] != true || replay["result"] != res["result"] || e.order.count(askRun) != ran {
		t.Fatalf("replay %v of %v", replay, res)
	}
	if n := len(e.must(200, "GET", "/api/agents/"+s.asking+"/approvals", nil)["approvals"].([]any)); n != 1 {
		t.Fatalf("%d requests after a replay", n)
	}
	e.expect(409, op, "POST", "/api/approvals/"+id+"/approve", nil)

	// An approval by the operator: the call runs once with exactly its arguments.
	args2 := map[string]any{"text": "ship it"}
	call = e.asyncAs(admin, "POST", "/api/runs/"+askRun+"/calls", map[string]any{"name": "echo", "arguments": args2, "call_id": "tc-2"})
	id2 := e.pendingOf(s.asking, 1)[0]["id"].(string)
	if d := e.expect(200, op, "POST", "/api/approvals/"+id2+"/approve", map[string]any{}); d["status"] != "approved" || d["decided_by"] != opID || d["decided_at"] == nil {
		t.Fatalf("approve %v", d)
	}
	res = e.got(call, 200)
	meta := res["metadata"].(map[string]any)["approval"].(map[string]any)
	if res["result"] != "ship it\n\nremaining_tool_calls: 97" || meta["id"] != id2 || meta["status"] != "approved" || meta["decided_by"] != opID {
		t.Fatalf("the approved call %v", res)
	}
	if n := e.order.count(askRun); n != ran+1 {
		t.Fatalf("the handler ran %d times, want %d", n, ran+1)
	}
	if out := e.expect(409, admin, "POST", "/api/approvals/"+id2+"/deny", nil); !strings.Contains(errMessage(out), "already approved by "+opID) {
		t.Fatalf("denying an approved request: %v", out)
	}

	// A denial answers the reason and runs nothing.
	call = e.asyncAs(admin, "POST", "/api/runs/"+askRun+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": "wire everything"}})
	id3 := e.pendingOf(s.asking, 1)[0]["id"].(string)
	e.expect(200, op, "POST", "/api/approvals/"+id3+"/deny", map[string]any{"reason": "use the staging account"})
	res = e.got(call, 200)
	if r := res["result"].(string); !strings.HasPrefix(r, "ERROR: an operator denied this call of echo") || !strings.Contains(r, "Their reason: use the staging account") {
		t.Fatalf("denied call %v", res)
	}
	if n := e.order.count(askRun); n != ran+1 {
		t.Fatalf("a denied call ran: %d", n)
	}

	// Arguments that fail the schema make no request.
	res = e.must(200, "POST", "/api/runs/"+askRun+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": 5}})
	if r := res["result"].(string); !strings.HasPrefix(r, "ERROR: invalid arguments") {
		t.Fatalf("bad arguments %v", res)
	}
	if n := len(e.must(200, "GET", "/api/agents/"+s.asking+"/approvals", nil)["approvals"].([]any)); n != 3 {
		t.Fatalf("%d requests after a call with bad arguments, want 3", n)
	}

	// Closing the run ends a wait: the request expires and the call answers without running.
	call = e.asyncAs(admin, "POST", "/api/runs/"+askRun+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": "later"}})
	id4 := e.pendingOf(s.asking, 1)[0]["id"].(string)
	e.must(200, "POST", "/api/runs/"+askRun+"/close", nil)
	res = e.got(call, 200)
	if r := res["result"].(string); !strings.HasPrefix(r, "ERROR:") || !strings.Contains(r, "the run was closed before anyone decided") {
		t.Fatalf("the call of a closed run %v", res)
	}
	if got := e.must(200, "GET", "/api/approvals/"+id4, nil); got["status"] != "expired" || got["decided_by"] != "" {
		t.Fatalf("request of a closed run %v", got)
	}
	if out := e.expect(409, op, "POST", "/api/approvals/"+id4+"/approve", nil); !strings.Contains(errMessage(out), "has expired") {
		t.Fatalf("approving an expired request: %v", out)
	}
	if n := e.order.count(askRun); n != ran+1 {
		t.Fatalf("a closed run's waiting call ran: %d", n)
	}

	// The outbox: each request and its end, in the transactions that made them, with the agent and
	// run, the request's status and who decided.
	var reported []string
	rows, err := e.pool.Query(context.Background(), `SELECT type, agent_id, run_id, data->'approval'->>'id', data->'approval'->>'status', data->'approval'->>'decided_by',
		data->'approval'->'arguments' FROM events WHERE type LIKE 'approval.%' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var typ, agent, run, apv, status, by string
		var argsJSON []byte
		if err := rows.Scan(&typ, &agent, &run, &apv, &status, &by, &argsJSON); err != nil {
			t.Fatal(err)
		}
		if agent != s.asking || run != askRun || strings.Contains(string(argsJSON), runToken) {
			t.Fatalf("event %s of %s: agent %s, run %s, arguments %s", typ, apv, agent, run, argsJSON)
		}
		reported = append(reported, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", typ, apv, status, by)))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"approval.requested " + id + " pending", fmt.Sprintf("approval.decided %s %s %s", id, won.body["status"], won.body["decided_by"]),
		"approval.requested " + id2 + " pending", "approval.decided " + id2 + " approved " + opID,
		"approval.requested " + id3 + " pending", "approval.decided " + id3 + " denied " + opID,
		"approval.requested " + id4 + " pending", "approval.decided " + id4 + " expired"}
	if !slices.Equal(reported, want) {
		t.Fatalf("approval events\n%s\nwant\n%s", strings.Join(reported, "\n"), strings.Join(want, "\n"))
	}

	// The audit log: every decision and refusal, with who made it.
	entries := e.expect(200, admin, "GET", "/api/admin/audit?limit=500", nil)["entries"].([]any)
	decided := map[string]int{}
	for _, x := range entries {
		m := x.(map[string]any)
		if op := m["operation"].(string); op == "approveApproval" || op == "denyApproval" {
			decided[fmt.Sprintf("%s %v %v", op, m["status"], m["actor_kind"])]++
			if m["status"] == 200.0 && m["actor_kind"] == "session" && m["account_id"] != opID {
				t.Fatalf("a decision's audit row %v", m)
			}
		}
	}
	if decided["approveApproval 200 session"]+decided["denyApproval 200 session"] < 2 || decided["approveApproval 403 session"] != 1 ||
		decided["approveApproval 403 agent_key"] != 1 || decided["approveApproval 403 run_token"] != 1 {
		t.Fatalf("audited decisions %v", decided)
	}
}

// TestApprovalTimesOut: a call nobody approves answers, once GUILDS_APPROVAL_WAIT has passed and
// not before, that nobody approved in time; its request expires and can no longer be approved.
func TestApprovalTimesOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const wait = 1500 * time.Millisecond
	e.approvals.Wait = wait
	s := newAskSetup(e)
	start := time.Now()
	res := e.must(200, "POST", "/api/runs/"+s.askRun["id"].(string)+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": "anyone?"}})
	if took := time.Since(start); took < wait {
		t.Fatalf("the call answered after %s, before the %s wait", took, wait)
	}
	if r := res["result"].(string); !strings.HasPrefix(r, "ERROR: echo needs an operator's approval") || !strings.Contains(r, "nobody approved it within 1.5s") {
		t.Fatalf("timed-out call %v", res)
	}
	list := e.must(200, "GET", "/api/agents/"+s.asking+"/approvals?status=expired", nil)["approvals"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["reason"] != "nobody approved it within 1.5s" {
		t.Fatalf("expired requests %v", list)
	}
	id := list[0].(map[string]any)["id"].(string)
	if out := e.must(409, "POST", "/api/approvals/"+id+"/approve", nil); errCode(out) != "ECONFLICT" || out["error"].(map[string]any)["status"] != "expired" {
		t.Fatalf("approving an expired request %v", out)
	}
	if e.order.count(s.askRun["id"].(string)) != 0 {
		t.Fatal("a call nobody approved ran")
	}
}

// TestApprovalProgress: a waiting call reports its wait through the call's progress hook (what the
// MCP endpoint sends on as progress notifications) at once and then every beat, until decided.
func TestApprovalProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.approvals.Beat = 50 * time.Millisecond
	s := newAskSetup(e)
	var mu sync.Mutex
	var reports []string
	done := make(chan error, 1)
	go func() {
		_, err := e.runs.Call(context.Background(), s.askRun["id"].(string), runs.CallRequest{Name: "echo", Arguments: json.RawMessage(`{"text":"progress"}`),
			Progress: func(p runs.Progress) {
				mu.Lock()
				reports = append(reports, fmt.Sprintf("%s after %s", p.Message, p.Elapsed.Truncate(time.Second)))
				mu.Unlock()
			}})
		done <- err
	}()
	id := e.pendingOf(s.asking, 1)[0]["id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(reports)
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d progress reports after 30 s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.must(200, "POST", "/api/approvals/"+id+"/approve", nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if reports[0] != "waiting for an operator's approval after 0s" || !strings.HasPrefix(reports[2], "waiting for an operator's approval after ") {
		t.Fatalf("progress %v", reports)
	}
}

// TestAskOnRemoteMCPTool: Ask on one tool of a remote MCP server (a real mcp-go server on
// loopback), set at the guild: the tools views say ask and which scope decided, and the server's
// Off above it still wins; arguments that fail the tool's listed schema make no request and never
// reach the server; the server is called only after the approval, exactly once, with exactly the
// approved arguments; a denial never calls it.
func TestAskOnRemoteMCPTool(t *testing.T) {
	t.Parallel()
	e := newMCPEnv(t, nil, nil, newBox(t))
	f := newMCPFake(t, "X-Test-Key", goodKey, "echo", "whoami")
	org, guild, agent := e.scopes()
	e.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": "my-srv", "name": "My server", "url": f.URL, "auth": "token", "header": "X-Test-Key"})
	e.must(201, "POST", "/api/mcp/connections", connectBody("my-srv", org, goodKey))
	e.must(200, "PUT", "/api/bindings", map[string]any{"scope": "guild", "scope_id": guild, "catalog_kind": "mcp_tool", "catalog_id": "my_srv_echo", "enabled": true, "ask": true})
	toolView := func(path string) map[string]any {
		t.Helper()
		for _, s := range e.must(200, "GET", path, nil)["mcp_servers"].([]any) {
			if s := s.(map[string]any); s["slug"] == "my-srv" {
				for _, x := range s["tools"].([]any) {
					if x := x.(map[string]any); x["name"] == "my_srv_echo" {
						return x
					}
				}
			}
		}
		t.Fatalf("%s: no my_srv_echo", path)
		return nil
	}
	if v := toolView("/api/agents/" + agent + "/tools"); v["ask"] != true || v["overlay"] != "ask" || v["decided_by"] != "guild" || v["enabled"] != true {
		t.Fatalf("the agent's view of my_srv_echo %v", v)
	}
	if v := toolView("/api/orgs/" + org + "/tools"); v["ask"] != nil {
		t.Fatalf("the organisation's view of my_srv_echo %v", v)
	}
	// The server Off at the agent: its tool's Ask does not punch through.
	e.must(200, "PUT", "/api/bindings", map[string]any{"scope": "agent", "scope_id": agent, "catalog_kind": "mcp", "catalog_id": "my-srv", "enabled": false})
	if v := toolView("/api/agents/" + agent + "/tools"); v["ask"] != nil || v["enabled"] != false {
		t.Fatalf("my_srv_echo under its server Off %v", v)
	}
	e.must(200, "DELETE", "/api/bindings", map[string]any{"scope": "agent", "scope_id": agent, "catalog_kind": "mcp", "catalog_id": "my-srv"})

	runID := e.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	calls := func() int { return f.count("tools/call") }
	before := calls()
	// Arguments the listed schema refuses: no request, no call.
	res := e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "my_srv_echo", "arguments": map[string]any{"mode": "x"}})
	if r := res["result"].(string); !strings.HasPrefix(r, "ERROR:") || !strings.Contains(r, "text") {
		t.Fatalf("a call without text %q", r)
	}
	if n := len(e.must(200, "GET", "/api/agents/"+agent+"/approvals", nil)["approvals"].([]any)); n != 0 || calls() != before {
		t.Fatalf("a call the schema refused made %d requests and %d server calls", n, calls()-before)
	}
	// The whoami tool is On (inherits the server): no wait.
	if r := e.must(200, "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "my_srv_whoami", "arguments": map[string]any{"text": "x"}})["result"].(string); !strings.HasPrefix(r, "you sent ") {
		t.Fatalf("whoami %q", r)
	}
	before = calls()

	// Denied: the server is never called.
	call := e.asyncAs(asBearer(token), "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "my_srv_echo", "arguments": map[string]any{"text": "drop table"}})
	id := e.pendingOf(agent, 1)[0]["id"].(string)
	e.must(200, "POST", "/api/approvals/"+id+"/deny", map[string]any{"reason": "not on production"})
	if r := e.got(call, 200)["result"].(string); !strings.Contains(r, "Their reason: not on production") || calls() != before {
		t.Fatalf("denied %q, server calls %d", r, calls()-before)
	}
	// Approved: called once, with the approved arguments, only after the decision.
	args := map[string]any{"text": "hello", "mode": "loud"}
	call = e.asyncAs(asBearer(token), "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "my_srv_echo", "arguments": args})
	req := e.pendingOf(agent, 1)[0]
	if req["arguments_sha256"] != canonicalSHA256(t, args) || calls() != before {
		t.Fatalf("request %v; server calls before the decision %d", req, calls()-before)
	}
	e.must(200, "POST", "/api/approvals/"+req["id"].(string)+"/approve", nil)
	if r := e.got(call, 200)["result"].(string); !strings.HasPrefix(r, "echo: hello mode=loud") || calls() != before+1 {
		t.Fatalf("approved %q, server calls %d", r, calls()-before)
	}
}

// TestApprovalAcrossReplicas: two orchestrators over one database. A call waits on the first; the
// second lists the request, a retry of the call under its id on the second waits for the first's
// call instead of asking again, and an approval taken on the second reaches the first through the
// database's announcement: the call runs once, on the first, and the retry replays it. Stopping the
// first ends its waits at once: the request expires saying so, and the call does not run.
func TestApprovalAcrossReplicas(t *testing.T) {
	t.Parallel()
	db, box := pgtest.NewDB(t), newBox(t)
	a, b := newMCPEnv(t, db, nil, box), newMCPEnv(t, db, nil, box)
	_, guild, agent := a.scopes()
	a.must(200, "PUT", "/api/bindings", map[string]any{"scope": "guild", "scope_id": guild, "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": true, "ask": true})
	runID := a.must(201, "POST", "/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	ran := func() int { return a.order.count(runID) + b.order.count(runID) }

	body := map[string]any{"name": "echo", "arguments": map[string]any{"text": "across"}, "call_id": "tc-across"}
	first := a.asyncAs(asBearer(token), "POST", "/api/runs/"+runID+"/calls", body)
	id := b.pendingOf(agent, 1)[0]["id"].(string)
	retry := b.asyncAs(asBearer(token), "POST", "/api/runs/"+runID+"/calls", body)
	time.Sleep(200 * time.Millisecond) // let the retry find the started call (it must not ask again)
	if n := len(b.must(200, "GET", "/api/agents/"+agent+"/approvals", nil)["approvals"].([]any)); n != 1 || ran() != 0 {
		t.Fatalf("%d requests and %d runs while one call waits", n, ran())
	}
	decided := time.Now()
	b.must(200, "POST", "/api/approvals/"+id+"/approve", nil)
	res := a.got(first, 200)
	t.Logf("the first replica's call answered %s after the second's approval", time.Since(decided))
	if res["result"] != "across\n\nremaining_tool_calls: 99" || a.order.count(runID) != 1 || b.order.count(runID) != 0 {
		t.Fatalf("the call %v; ran %d times on the first, %d on the second", res, a.order.count(runID), b.order.count(runID))
	}
	if again := b.got(retry, 200); again["replayed"] != true || again["result"] != res["result"] || ran() != 1 {
		t.Fatalf("the retry on the second %v; ran %d times", again, ran())
	}

	// Stop on the first: its waiting call answers at once without running.
	waiting := a.asyncAs(asBearer(token), "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": "stopping"}})
	id = b.pendingOf(agent, 1)[0]["id"].(string)
	a.approvals.Stop()
	if r := a.got(waiting, 200)["result"].(string); !strings.Contains(r, "the orchestrator stopped before anyone decided") || ran() != 1 {
		t.Fatalf("the call waiting on a stopped orchestrator %q; ran %d times", r, ran())
	}
	if got := b.must(200, "GET", "/api/approvals/"+id, nil); got["status"] != "expired" {
		t.Fatalf("its request %v", got)
	}
	if out := b.must(409, "POST", "/api/approvals/"+id+"/approve", nil); !strings.Contains(errMessage(out), "has expired") {
		t.Fatalf("approving it %v", out)
	}
}

// TestSweptRunEndsItsWaits: a run the idle sweep closes while one of its calls waits for an
// approval ends that wait as a close does: the request expires and the call does not run.
func TestSweptRunEndsItsWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.runs.Idle = 300 * time.Millisecond
	s := newAskSetup(e)
	runID := s.askRun["id"].(string)
	call := e.asyncAs(asBearer(token), "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": "idle"}})
	id := e.pendingOf(s.asking, 1)[0]["id"].(string)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := e.runs.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		if run := e.must(200, "GET", "/api/runs/"+runID, nil); run["status"] == "closed" {
			if run["close_reason"] != "idle" {
				t.Fatalf("closed %v", run)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweep did not close the run in 30 s")
		}
	}
	if r := e.got(call, 200)["result"].(string); !strings.Contains(r, "the run was closed before anyone decided") {
		t.Fatalf("the swept run's waiting call %q", r)
	}
	if got := e.must(200, "GET", "/api/approvals/"+id, nil); got["status"] != "expired" || e.order.count(runID) != 0 {
		t.Fatalf("its request %v; the handler ran %d times", got, e.order.count(runID))
	}
}

// TestDeletingAScopeEndsItsWaits: deleting the agent, guild or organisation under which a call
// waits for an approval (with ?close_runs=true; without it the deletion is refused and the call
// waits on) ends the wait as a decision: in the deleting transaction its request expires, saying
// why, with an approval.decided event, and its announcement ends the call's wait. The service reads
// a waiting request itself only once an hour here, so the call answering at all is the
// announcement's doing; the handler never runs.
func TestDeletingAScopeEndsItsWaits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ coll, what string }{{"agents", "agent"}, {"guilds", "guild"}, {"orgs", "organisation"}} {
		t.Run(tc.what, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			e.approvals.Recheck = time.Hour
			s := newAskSetup(e)
			for deadline := time.Now().Add(30 * time.Second); !e.approvals.Heard(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the approvals service did not hear the database's announcements in 30 s")
				}
			}
			runID := s.askRun["id"].(string)
			call := e.asyncAs(asBearer(token), "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": "doomed"}})
			id := e.pendingOf(s.asking, 1)[0]["id"].(string)
			scope := map[string]string{"agents": s.asking, "guilds": s.guild, "orgs": s.org}[tc.coll]
			if st, out := e.do("DELETE", "/api/"+tc.coll+"/"+scope, nil); st != 409 {
				t.Fatalf("DELETE with an open run: %d %v", st, out)
			}
			if got := e.must(200, "GET", "/api/approvals/"+id, nil); got["status"] != "pending" {
				t.Fatalf("after a refused deletion the request is %v", got)
			}
			deleted := time.Now()
			e.must(200, "DELETE", "/api/"+tc.coll+"/"+scope+"?close_runs=true", nil)
			a := <-call
			t.Logf("the waiting call answered %s after the deletion: %d %v", time.Since(deleted), a.status, a.body)
			if a.err != nil {
				t.Fatal(a.err)
			}
			if r, _ := a.body["result"].(string); a.status == 200 && (!strings.HasPrefix(r, "ERROR:") || strings.Contains(r, "doomed")) {
				t.Fatalf("the call of a deleted %s answered %v", tc.what, a.body)
			}
			if e.order.count(runID) != 0 {
				t.Fatalf("the handler ran %d times", e.order.count(runID))
			}
			e.expect(404, asBearer(token), "GET", "/api/approvals/"+id, nil)
			var status, reason string
			if err := e.pool.QueryRow(context.Background(), `SELECT data->'approval'->>'status', data->'approval'->>'reason' FROM events
				WHERE type = 'approval.decided' AND data->'approval'->>'id' = $1`, id).Scan(&status, &reason); err != nil {
				t.Fatalf("the request's approval.decided event: %v", err)
			}
			if want := "the " + tc.what + " was deleted before anyone decided"; status != "expired" || reason != want {
				t.Fatalf("approval.decided says %s (%q), want expired (%q)", status, reason, want)
			}
		})
	}
}
