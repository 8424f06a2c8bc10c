package connections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// LocalAdapters is the seam of the local API adapters (connectors/adapters.Local implements it):
// the Connect check, a curated tool's call, and Pinned prices' coin picker, list check and quote.
// Error texts are one line naming the provider, never a credential; an error whose
// orchestrator.ErrorCode is EUPSTREAM says the provider is down rather than that it refused.
type LocalAdapters interface {
	// Serves reports whether an adapter is built in for the catalog slug.
	Serves(slug string) bool
	// Verify asks the provider whether the login works (coins: the pinned ids it must quote).
	Verify(ctx context.Context, server orchestrator.MCPServer, creds map[string]string, coins []string) (Verification, error)
	// Call runs one curated tool; an error that implements KeyInvalid() bool reporting true
	// means the provider says the key itself is invalid.
	Call(ctx context.Context, c LocalCall) (string, error)
	// SearchCoins finds coins by name or symbol for the picker.
	SearchCoins(ctx context.Context, server orchestrator.MCPServer, creds map[string]string, q string) ([]orchestrator.Coin, error)
	// CheckCoins refuses a pinned list with an id the provider does not quote.
	CheckCoins(ctx context.Context, server orchestrator.MCPServer, creds map[string]string, ids []string) error
	// QuoteCoins quotes the pinned coins in one request, in their order.
	QuoteCoins(ctx context.Context, server orchestrator.MCPServer, creds map[string]string, coins []orchestrator.Coin) ([]orchestrator.PinnedPrice, error)
}

// LocalCall is one call of a local adapter's tool.
type LocalCall struct {
	Server       orchestrator.MCPServer // the catalog row as in effect (the admin's url and endpoints)
	ConnectionID string
	Credentials  map[string]string // opened, in memory only
	Tool         string            // the bare curated name, e.g. search
	Args         map[string]any    // checked against the listed schema
	Run          *orchestrator.Run // the calling run; nil for the operator's test call
	Bearer       Bearer            // an OAuth login's token source (Gmail); nil for a token login
}

// keyInvalid is a local call error after which the login is marked disconnected.
type keyInvalid interface{ KeyInvalid() bool }

// Serves reports whether r carries the calls of a local server's adapter.
func (r *Caller) Serves(srv orchestrator.MCPServer) bool {
	return srv.Kind == orchestrator.ServerLocal && r.Local != nil && r.Local.Serves(srv.Slug)
}

// callLocal checks args against the listed schema and calls the adapter; a 401 on the key itself
// marks the connection disconnected.
func (r *Caller) callLocal(ctx context.Context, row orchestrator.MCPLogin, login RemoteLogin, tool orchestrator.ListedTool, args json.RawMessage, run *orchestrator.Run) (string, error) {
	m, err := checkedArgs(tool, args)
	if err != nil {
		return "", err
	}
	out, err := r.Local.Call(ctx, LocalCall{Server: row.Server, ConnectionID: login.ConnectionID, Credentials: login.Credentials,
		Tool: tool.RemoteName, Args: m, Run: run, Bearer: login.Bearer})
	var ki keyInvalid
	if err != nil && errors.As(err, &ki) && ki.KeyInvalid() {
		if _, serr := r.Store.SetConnectionStatus(context.WithoutCancel(ctx), login.ConnectionID, orchestrator.ConnDisconnected, r.now()); serr != nil {
			r.log().Error("adapter: marking a refused login disconnected failed", "connection_id", login.ConnectionID, "err", serr.Error())
		} else {
			r.log().Warn("adapter: the provider refused the key; the login is disconnected", "connection_id", login.ConnectionID, "server", row.Server.Slug)
		}
	}
	return out, err
}

// checkedArgs decodes a call's arguments and checks them against the listed schema.
func checkedArgs(tool orchestrator.ListedTool, args json.RawMessage) (map[string]any, error) {
	m := map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, &registry.ArgsError{Problems: []string{"arguments: not a JSON object; send one JSON object"}}
		}
	}
	if len(tool.InputSchema) > 0 {
		m = registry.DropOptionalEmptyStrings(tool.InputSchema, m)
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encode the arguments of %s: %w", tool.Name, err)
		}
		if err := registry.ValidateArgs(tool.InputSchema, raw); err != nil {
			return nil, err
		}
	}
	return m, nil
}
