package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/pipeline"
)

// Client is the pool as the connections' MCP client: logins become pooled connections whose
// credentials reach each request through the manifest's header and scheme.
type Client struct{ Pool *Pool }

var _ connections.MCPClient = Client{}

// connection is the pool's view of a login.
func connection(l connections.RemoteLogin) Connection {
	c := Connection{ID: l.ConnectionID, Slug: l.Server.Slug, URL: l.Server.URL, Transport: Transport(l.Transport)}
	if l.Server.Auth == orchestrator.AuthToken {
		key := l.Credentials["api_key"]
		if key == "" && len(l.Server.Config.Fields) > 0 {
			key = l.Credentials[l.Server.Config.Fields[0].Name]
		}
		c.Headers = TokenHeader(l.Server.Config.Header, l.Server.Config.Scheme, key)
	}
	if l.Bearer != nil {
		c.Headers = l.Bearer.Header
	}
	return c
}

// renewed reports whether a call refused for its credentials may be retried: an OAuth login whose
// server answered 401 renews its token once, and the call runs again with the new one (a 403 is a
// missing permission, which a new token of the same grant does not cure).
func renewed(ctx context.Context, l connections.RemoteLogin, err error) (bool, error) {
	// describe words a refusal "<what>: the server refused the credentials (HTTP <status>)".
	if l.Bearer == nil || !errors.Is(err, ErrRejected) || !strings.HasSuffix(err.Error(), "(HTTP 401)") {
		return false, err
	}
	if rerr := l.Bearer.Rejected(ctx); rerr != nil {
		return false, fmt.Errorf("%w; renewing the login's token: %w", err, rerr)
	}
	return true, nil
}

// ListTools lists the login's tools through its pooled session.
func (c Client) ListTools(ctx context.Context, l connections.RemoteLogin) (connections.RemoteListing, error) {
	listing, err := c.Pool.ListTools(ctx, connection(l))
	if retry, rerr := renewed(ctx, l, err); retry {
		listing, err = c.Pool.ListTools(ctx, connection(l))
	} else if err != nil {
		err = rerr
	}
	if err != nil {
		return connections.RemoteListing{}, err
	}
	out := connections.RemoteListing{Transport: string(listing.Transport), Tools: make([]orchestrator.ListedTool, len(listing.Tools))}
	for i, t := range listing.Tools {
		out.Tools[i] = orchestrator.ListedTool{RemoteName: t.RemoteName, Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	for _, sk := range listing.Skipped {
		out.Skipped = append(out.Skipped, orchestrator.SkippedTool{Name: sk.Name, Reason: sk.Reason})
	}
	return out, nil
}

// CallTool calls one listed tool with the model's arguments (numbers kept as written).
func (c Client) CallTool(ctx context.Context, l connections.RemoteLogin, t orchestrator.ListedTool, args json.RawMessage) (string, error) {
	var m map[string]any
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return "", fmt.Errorf("the arguments of %s must be a JSON object: %w", t.Name, err)
		}
	}
	tool := Tool{RemoteName: t.RemoteName, Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	out, err := c.Pool.Call(ctx, connection(l), tool, m)
	if retry, rerr := renewed(ctx, l, err); retry {
		out, err = c.Pool.Call(ctx, connection(l), tool, m)
	} else if err != nil {
		err = rerr
	}
	if l.Bearer != nil {
		if fresh := l.Bearer.Renewed(); len(fresh) > 0 { // renewed during the call: not in the run's redaction set yet
			red := pipeline.NewRedactor(fresh)
			out = red.Redact(out)
			if err != nil {
				err = redactedError{err: err, msg: red.Redact(err.Error())}
			}
		}
	}
	return out, err
}

// redactedError is an error whose text had tokens removed; errors.Is and As still see the cause.
type redactedError struct {
	err error
	msg string
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// Changed reports whether the login's server sent tools/list_changed since its last listing.
func (c Client) Changed(connectionID string) bool { return c.Pool.Changed(connectionID) }

// Forget closes the login's session.
func (c Client) Forget(connectionID string) { c.Pool.Forget(connectionID) }
