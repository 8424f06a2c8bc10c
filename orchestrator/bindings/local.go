package bindings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// LocalAdapters is the seam of the local API adapters (cmd fills it from connectors/adapters):
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
	SearchCoins(ctx context.Context, server orchestrator.MCPServer, creds map[string]string, q string) ([]Coin, error)
	// CheckCoins refuses a pinned list with an id the provider does not quote.
	CheckCoins(ctx context.Context, server orchestrator.MCPServer, creds map[string]string, ids []string) error
	// QuoteCoins quotes the pinned coins in one request, in their order.
	QuoteCoins(ctx context.Context, server orchestrator.MCPServer, creds map[string]string, coins []Coin) ([]orchestrator.PinnedPrice, error)
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

// serves reports whether r carries the calls of a local server's adapter.
func (r *Remote) serves(srv orchestrator.MCPServer) bool {
	return srv.Kind == orchestrator.ServerLocal && r.Local != nil && r.Local.Serves(srv.Slug)
}

// callLocal checks args against the listed schema and calls the adapter; a 401 on the key itself
// marks the connection disconnected.
func (r *Remote) callLocal(ctx context.Context, row orchestrator.MCPLogin, login RemoteLogin, tool orchestrator.ListedTool, args json.RawMessage, run *orchestrator.Run) (string, error) {
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

// local returns the adapters seam when an adapter serves srv, else nil.
func (s *Service) local(srv orchestrator.MCPServer) LocalAdapters {
	if s.Remote == nil || !s.Remote.serves(srv) {
		return nil
	}
	return s.Remote.Local
}

// localVerifier is the Verifier of a local adapter's Connect: the provider's check, then the
// curated tool list (a tool that requires an optional field only when it is set).
type localVerifier struct {
	adapters LocalAdapters
	coins    []string
}

// Verify asks the adapter, then lists the manifest's curated tools.
func (v localVerifier) Verify(ctx context.Context, server orchestrator.MCPServer, creds map[string]string) (Verification, error) {
	ver, err := v.adapters.Verify(ctx, server, creds, v.coins)
	if err != nil {
		return Verification{}, err
	}
	curated, err := Unverified{}.Verify(ctx, server, creds)
	if err != nil {
		return Verification{}, err
	}
	ver.Checked, ver.Tools = true, curated.Tools
	return ver, nil
}

// refreshLocal checks a local adapter's login again with its stored credentials and rewrites its
// tool list as Connect would (which tools a login has may depend on its keys: the Wallet's
// uniswap_swap); the operator's overlays stay, and a tool new to the list arrives default-off when
// its server says so. A refusal writes nothing.
func (s *Service) refreshLocal(ctx context.Context, ad LocalAdapters, srv orchestrator.MCPServer, id string) (orchestrator.ListingDiff, error) {
	row, login, err := s.Remote.login(ctx, id, "")
	if err != nil {
		return orchestrator.ListingDiff{}, err
	}
	ver, err := localVerifier{adapters: ad}.Verify(ctx, s.checkedAgainst(row.Server), login.Credentials)
	clear(login.Credentials)
	if orchestrator.ErrorCode(err) == orchestrator.EUPSTREAM {
		return orchestrator.ListingDiff{}, orchestrator.Errorf(orchestrator.EUPSTREAM, "%s could not check the login, as the provider did not answer: %v; the tool list is unchanged", srv.Name, err)
	}
	if err != nil {
		return orchestrator.ListingDiff{}, orchestrator.Errorf(orchestrator.EINVALID, "%s refused the stored login: %v; the tool list is unchanged (connect again with a working key)", srv.Name, err)
	}
	tools, err := listed(srv, ver.Tools)
	if err != nil {
		return orchestrator.ListingDiff{}, err
	}
	tools = append(tools, listedRemote(s.log(), srv, ver.Listed)...)
	diff, err := s.Remote.Store.SaveListing(ctx, orchestrator.ListingWrite{Server: row.Server, ConnectionID: id, Tools: tools, Now: s.now()})
	if err != nil {
		return orchestrator.ListingDiff{}, err
	}
	s.log().Info("local adapter tools relisted", "connection_id", id, "server", srv.Slug, "tools", len(tools),
		"added", len(diff.Added), "removed", len(diff.Removed), "changed", len(diff.Changed))
	return diff, nil
}

// ids lists the pinned coin ids.
func (p PinnedPrices) ids() []string {
	out := make([]string, 0, len(p.Coins))
	for _, c := range p.Coins {
		out = append(out, c.ID)
	}
	return out
}
