package connections

import (
	"context"

	"github.com/guildsai/guilds/orchestrator"
)

// Verifier is the seam where a server's live credential check plugs in: before a token login is
// stored, it asks the provider whether the credentials work (CoinGecko's /ping, Cigale's
// tools/list, Qonto's /v2/organization, ...) and returns the tools the login lists. An error is a
// rejected login: Connect answers it and writes nothing.
type Verifier interface {
	Verify(ctx context.Context, server orchestrator.MCPServer, creds map[string]string) (Verification, error)
}

// Verification is what a Verifier learned about a login.
type Verification struct {
	Checked     bool                       // the provider accepted the credentials (recorded as verified_at)
	AccountHint string                     // what to show for the login, when the provider says ("" keeps the operator's)
	Tools       []orchestrator.CatalogTool // the tools the login lists (a local adapter's curated list)
	Listed      []orchestrator.ListedTool  // a remote server's listing, already namespaced
	Skipped     []orchestrator.SkippedTool // what a remote server listed that is not kept, with why
	Transport   string                     // remote servers: the transport the listing went over
}

// Unverified is the Verifier of every server until its connector lands: it does NOT check the
// credentials with the provider (the connection's verified_at stays null, so the API says so). A
// local adapter lists its curated manifest tools (a tool that requires an optional field, such as
// Wallet's uniswap_swap, only when that field is set); a remote MCP server lists nothing, since its
// tools come from a remote tools/list that needs the MCP client.
type Unverified struct{}

// Verify returns the curated tools without contacting the provider.
func (Unverified) Verify(_ context.Context, server orchestrator.MCPServer, creds map[string]string) (Verification, error) {
	if server.Kind != orchestrator.ServerLocal {
		return Verification{}, nil
	}
	var tools []orchestrator.CatalogTool
	for _, t := range server.Tools {
		if t.Requires != "" && creds[t.Requires] == "" {
			continue
		}
		tools = append(tools, t)
	}
	return Verification{Tools: tools}, nil
}
