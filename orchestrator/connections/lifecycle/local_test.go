package lifecycle_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// fakeLocal is a LocalAdapters serving coingecko: "down" and "bad" keys fail Connect, a call
// echoes the key, and the query "revoked" is a 401 on the key itself.
type fakeLocal struct{ calls []connections.LocalCall }

type keyRevoked struct{}

func (keyRevoked) Error() string    { return "CoinGecko: the key was refused (HTTP 401)" }
func (keyRevoked) KeyInvalid() bool { return true }

func (*fakeLocal) Serves(slug string) bool { return slug == "coingecko" }

func (*fakeLocal) Verify(_ context.Context, _ orchestrator.MCPServer, creds map[string]string, _ []string) (connections.Verification, error) {
	switch creds["api_key"] {
	case "down":
		return connections.Verification{}, orchestrator.Errorf(orchestrator.EUPSTREAM, "CoinGecko: is down (HTTP 503); try again later")
	case "bad":
		return connections.Verification{}, orchestrator.Errorf(orchestrator.EINVALID, "CoinGecko: the key was refused (HTTP 401): API Key Missing")
	}
	return connections.Verification{AccountHint: "Analyst plan"}, nil
}

func (f *fakeLocal) Call(_ context.Context, c connections.LocalCall) (string, error) {
	f.calls = append(f.calls, c)
	if c.Args["query"] == "revoked" {
		return "", keyRevoked{}
	}
	return "id\tname\nbitcoin\tBitcoin " + c.Credentials["api_key"], nil
}

func (*fakeLocal) SearchCoins(context.Context, orchestrator.MCPServer, map[string]string, string) ([]orchestrator.Coin, error) {
	return nil, errors.New("not served")
}

func (*fakeLocal) CheckCoins(context.Context, orchestrator.MCPServer, map[string]string, []string) error {
	return errors.New("not served")
}

func (*fakeLocal) QuoteCoins(context.Context, orchestrator.MCPServer, map[string]string, []orchestrator.Coin) ([]orchestrator.PinnedPrice, error) {
	return nil, errors.New("not served")
}

// nopClient is an MCP client with no server behind it.
type nopClient struct{}

func (nopClient) ListTools(context.Context, connections.RemoteLogin) (connections.RemoteListing, error) {
	return connections.RemoteListing{}, errors.New("no MCP server here")
}
func (nopClient) CallTool(context.Context, connections.RemoteLogin, orchestrator.ListedTool, json.RawMessage) (string, error) {
	return "", errors.New("no MCP server here")
}
func (nopClient) Changed(string) bool { return false }
func (nopClient) Forget(string)       {}

// TestLocalAdaptersSeam: a local server's Connect asks its adapter (a provider that is down is
// EUPSTREAM, a refusal EINVALID, neither writes), lists the curated tools with verified_at; a call
// is checked against the listed schema before the adapter runs, a test call is redacted, and a
// 401 on the key itself disconnects the login.
func TestLocalAdaptersSeam(t *testing.T) {
	w := newWorld(t)
	local := &fakeLocal{}
	w.svc.Caller = &connections.Caller{Store: w.store, Box: w.box, Client: nopClient{}, Local: local}
	connect := func(key string) (orchestrator.Connection, error) {
		return w.svc.Connect(w.ctx, lifecycle.ConnectRequest{Server: "coingecko", Scope: "org", ScopeID: "o1", Credentials: map[string]string{"api_key": key}})
	}
	_, err := connect("down")
	wantErr(t, err, orchestrator.EUPSTREAM, "CoinGecko could not check the login")
	_, err = connect("bad")
	wantErr(t, err, orchestrator.EINVALID, "API Key Missing")
	if w.count("mcp_connections") != 0 {
		t.Fatal("a failed check wrote a connection")
	}
	c, err := connect("CG-seam-key-1234")
	if err != nil || c.VerifiedAt == nil || c.AccountHint != "Analyst plan" || c.ToolCount == 0 {
		t.Fatalf("connection %+v, %v", c, err)
	}

	run := orchestrator.Run{ID: "run_1", AgentID: "a1"}
	tool := orchestrator.OfferedTool{Name: "coingecko_search", Server: "coingecko", ConnectionID: c.ID, RemoteName: "search"}
	out, err := w.svc.Caller.CallMCP(w.ctx, run, tool, json.RawMessage(`{"query":"btc"}`))
	if err != nil || !strings.HasPrefix(out, "id\tname\n") || len(local.calls) != 1 || local.calls[0].Tool != "search" || local.calls[0].Run.ID != "run_1" {
		t.Fatalf("call: %q, %v, %+v", out, err, local.calls)
	}
	_, err = w.svc.Caller.CallMCP(w.ctx, run, tool, json.RawMessage(`{"limit":3}`))
	var argsErr *registry.ArgsError
	if !errors.As(err, &argsErr) || len(local.calls) != 1 {
		t.Fatalf("bad arguments: %v (%d calls)", err, len(local.calls))
	}
	res, err := w.svc.TestCall(w.ctx, c.ID, "coingecko_search", json.RawMessage(`{"query":"btc"}`))
	if err != nil || res.IsError || strings.Contains(res.Result, "CG-seam-key-1234") || !strings.Contains(res.Result, "Bitcoin [REDACTED]") || local.calls[1].Run != nil {
		t.Fatalf("test call %+v, %v", res, err)
	}
	_, err = w.svc.Caller.CallMCP(w.ctx, run, tool, json.RawMessage(`{"query":"revoked"}`))
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("revoked: %v", err)
	}
	if got, _ := w.svc.GetConnection(w.ctx, c.ID); got.Status != orchestrator.ConnDisconnected {
		t.Fatalf("after a 401 on the key: %s", got.Status)
	}
	if _, err := w.svc.Caller.CallMCP(w.ctx, run, tool, json.RawMessage(`{"query":"btc"}`)); err == nil || !strings.Contains(err.Error(), "disconnected") {
		t.Fatalf("a disconnected login's call: %v", err)
	}
}
