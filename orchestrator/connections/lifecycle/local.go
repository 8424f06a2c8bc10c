package lifecycle

import (
	"context"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
)

// local returns the adapters seam when an adapter serves srv, else nil.
func (s *Service) local(srv orchestrator.MCPServer) connections.LocalAdapters {
	if s.Caller == nil || !s.Caller.Serves(srv) {
		return nil
	}
	return s.Caller.Local
}

// localVerifier is the Verifier of a local adapter's Connect: the provider's check, then the
// curated tool list (a tool that requires an optional field only when it is set).
type localVerifier struct {
	adapters connections.LocalAdapters
	coins    []string
}

// Verify asks the adapter, then lists the manifest's curated tools.
func (v localVerifier) Verify(ctx context.Context, server orchestrator.MCPServer, creds map[string]string) (connections.Verification, error) {
	ver, err := v.adapters.Verify(ctx, server, creds, v.coins)
	if err != nil {
		return connections.Verification{}, err
	}
	curated, err := connections.Unverified{}.Verify(ctx, server, creds)
	if err != nil {
		return connections.Verification{}, err
	}
	ver.Checked, ver.Tools = true, curated.Tools
	return ver, nil
}

// refreshLocal checks a local adapter's login again with its stored credentials and rewrites its
// tool list as Connect would (which tools a login has may depend on its keys: the Wallet's
// uniswap_swap); the operator's overlays stay, and a tool new to the list arrives default-off when
// its server says so. A refusal writes nothing.
func (s *Service) refreshLocal(ctx context.Context, ad connections.LocalAdapters, srv orchestrator.MCPServer, id string) (orchestrator.ListingDiff, error) {
	row, login, err := s.Caller.Login(ctx, id, "")
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
	tools = append(tools, connections.ListedRemote(s.log(), srv, ver.Listed)...)
	diff, err := s.Caller.Store.SaveListing(ctx, orchestrator.ListingWrite{Server: row.Server, ConnectionID: id, Tools: tools, Now: s.now()})
	if err != nil {
		return orchestrator.ListingDiff{}, err
	}
	s.log().Info("local adapter tools relisted", "connection_id", id, "server", srv.Slug, "tools", len(tools),
		"added", len(diff.Added), "removed", len(diff.Removed), "changed", len(diff.Changed))
	return diff, nil
}

// ids lists the pinned coin ids.
func coinIDs(p connections.PinnedPrices) []string {
	out := make([]string, 0, len(p.Coins))
	for _, c := range p.Coins {
		out = append(out, c.ID)
	}
	return out
}
