package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
)

// Client is the pool as the bindings' MCP client: logins become pooled connections whose
// credentials reach each request through the manifest's header and scheme.
type Client struct{ Pool *Pool }

var _ bindings.MCPClient = Client{}

// connection is the pool's view of a login.
func connection(l bindings.RemoteLogin) Connection {
	c := Connection{ID: l.ConnectionID, Slug: l.Server.Slug, URL: l.Server.URL, Transport: Transport(l.Transport)}
	if l.Server.Auth == orchestrator.AuthToken {
		key := l.Credentials["api_key"]
		if key == "" && len(l.Server.Config.Fields) > 0 {
			key = l.Credentials[l.Server.Config.Fields[0].Name]
		}
		c.Headers = TokenHeader(l.Server.Config.Header, l.Server.Config.Scheme, key)
	}
	return c
}

// ListTools lists the login's tools through its pooled session.
func (c Client) ListTools(ctx context.Context, l bindings.RemoteLogin) (bindings.RemoteListing, error) {
	listing, err := c.Pool.ListTools(ctx, connection(l))
	if err != nil {
		return bindings.RemoteListing{}, err
	}
	out := bindings.RemoteListing{Transport: string(listing.Transport), Tools: make([]orchestrator.ListedTool, len(listing.Tools))}
	for i, t := range listing.Tools {
		out.Tools[i] = orchestrator.ListedTool{RemoteName: t.RemoteName, Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out, nil
}

// CallTool calls one listed tool with the model's arguments (numbers kept as written).
func (c Client) CallTool(ctx context.Context, l bindings.RemoteLogin, t orchestrator.ListedTool, args json.RawMessage) (string, error) {
	var m map[string]any
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return "", fmt.Errorf("the arguments of %s must be a JSON object: %w", t.Name, err)
		}
	}
	return c.Pool.Call(ctx, connection(l), Tool{RemoteName: t.RemoteName, Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}, m)
}

// Changed reports whether the login's server sent tools/list_changed since its last listing.
func (c Client) Changed(connectionID string) bool { return c.Pool.Changed(connectionID) }

// Forget closes the login's session.
func (c Client) Forget(connectionID string) { c.Pool.Forget(connectionID) }
