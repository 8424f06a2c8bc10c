package wallet_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
)

// TestWalletSendAsks: through serve's HTTP API, wallet_send set to Ask (instead of On) at the
// owner waits for an operator: a send whose arguments fail the schema makes no request; while a
// request waits, nothing reaches the chain; a denial answers the operator's reason and moves
// nothing; an approval moves exactly the amount, once, and a retry under the call's id replays it
// without a second transaction.
func TestWalletSendAsks(t *testing.T) {
	w := newWalletSetup(t)
	wiretest.Must(t, 201, "POST", w.api+"/api/mcp/connections", map[string]any{"server": "wallet", "scope": "org", "scope_id": w.org, "credentials": w.creds})
	if b := wiretest.Must(t, 200, "PUT", w.api+"/api/bindings", map[string]any{"scope": "org", "scope_id": w.org, "catalog_kind": "mcp_tool", "catalog_id": "wallet_send", "enabled": true, "ask": true}); b["ask"] != true {
		t.Fatalf("binding %v", b)
	}
	run := wiretest.Must(t, 201, "POST", w.api+"/api/agents/"+w.agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	asks := false
	for _, x := range run["offered_tools"].([]any) {
		if m := x.(map[string]any); m["name"] == "wallet_send" {
			asks = m["ask"] == true
		}
	}
	if !asks {
		t.Fatalf("wallet_send is not offered asking: %v", run["offered_tools"])
	}
	to := "0x000000000000000000000000000000000000dEaD"
	nonce := w.node.Nonce(t, wallettest.DevAddr)
	unmoved := func(when string) {
		t.Helper()
		if w.node.Nonce(t, wallettest.DevAddr) != nonce || w.node.Balance(t, to).Sign() != 0 {
			t.Fatalf("%s: a transaction reached the chain", when)
		}
	}
	approvals := func(status string) []any {
		return wiretest.Must(t, 200, "GET", w.api+"/api/agents/"+w.agent+"/approvals?status="+status, nil)["approvals"].([]any)
	}
	// pending waits (a hang guard of 30 s) for the one pending request and answers it.
	pending := func() map[string]any {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if list := approvals("pending"); len(list) == 1 {
				return list[0].(map[string]any)
			}
			if time.Now().After(deadline) {
				t.Fatalf("no pending request after 30 s: %v", approvals(""))
			}
		}
	}
	type answer struct {
		status int
		body   map[string]any
	}
	send := func(args map[string]any, callID string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			st, out := wiretest.Request(t, "POST", w.api+"/api/runs/"+runID+"/calls", map[string]any{"name": "wallet_send", "arguments": args, "call_id": callID})
			ch <- answer{st, out}
		}()
		return ch
	}
	result := func(ch <-chan answer) string {
		t.Helper()
		select {
		case a := <-ch:
			if a.status != 200 {
				t.Fatalf("the send answered %d %v", a.status, a.body)
			}
			return a.body["result"].(string)
		case <-time.After(time.Minute):
			t.Fatal("the send did not answer within a minute of its decision")
		}
		return ""
	}

	// Arguments the tool's schema refuses make no request.
	res := wiretest.Must(t, 200, "POST", w.api+"/api/runs/"+runID+"/calls", map[string]any{"name": "wallet_send", "arguments": map[string]any{"chain": "ethereum", "to": to}})
	if r := res["result"].(string); !strings.HasPrefix(r, "ERROR:") || !strings.Contains(r, "amount") {
		t.Fatalf("a send without an amount %q", r)
	}
	if n := len(approvals("")); n != 0 {
		t.Fatalf("%d requests after a send the schema refused", n)
	}

	// Denied: nothing moves, and the model reads the reason.
	call := send(map[string]any{"chain": "ethereum", "to": to, "amount": "5"}, "send-1")
	req := pending()
	if req["tool"] != "wallet_send" || req["run_id"] != runID {
		t.Fatalf("request %v", req)
	}
	if args, _ := json.Marshal(req["arguments"]); string(args) != `{"amount":"5","chain":"ethereum","to":"`+to+`"}` {
		t.Fatalf("the request shows %s", args)
	}
	unmoved("while the request waits")
	wiretest.Must(t, 200, "POST", w.api+"/api/approvals/"+req["id"].(string)+"/deny", map[string]any{"reason": "5 ETH is too much; send 0.75"})
	if r := result(call); !strings.HasPrefix(r, "ERROR: an operator denied this call of wallet_send") || !strings.Contains(r, "Their reason: 5 ETH is too much; send 0.75") {
		t.Fatalf("the denied send %q", r)
	}
	unmoved("after a denial")

	// Approved: exactly the amount moves, once.
	sendArgs := map[string]any{"chain": "ethereum", "to": to, "amount": "0.75"}
	call = send(sendArgs, "send-2")
	req = pending()
	unmoved("while the second request waits")
	if d := wiretest.Must(t, 200, "POST", w.api+"/api/approvals/"+req["id"].(string)+"/approve", nil); d["status"] != "approved" || d["decided_by"] != "admin" {
		t.Fatalf("approve %v", d)
	}
	got := result(call)
	if !strings.Contains(got, "status\tsuccess") || !strings.Contains(got, "https://etherscan.io/tx/0x") {
		t.Fatalf("the approved send %q", got)
	}
	want, _ := wallet.ParseAmount("0.75", 18, false)
	if w.node.Balance(t, to).Cmp(want) != 0 || w.node.Nonce(t, wallettest.DevAddr) != nonce+1 {
		t.Fatalf("the recipient holds %s wei (want %s), nonce %d (want %d)", w.node.Balance(t, to), want, w.node.Nonce(t, wallettest.DevAddr), nonce+1)
	}
	if r := result(send(sendArgs, "send-2")); r != got {
		t.Fatalf("the retry answered %q, not the approved call's %q", r, got)
	}
	if w.node.Balance(t, to).Cmp(want) != 0 || w.node.Nonce(t, wallettest.DevAddr) != nonce+1 || len(approvals("")) != 2 {
		t.Fatal("a retry under the approved call's id sent again or asked again")
	}
	wiretest.Must(t, 409, "POST", w.api+"/api/approvals/"+req["id"].(string)+"/approve", nil)
}
