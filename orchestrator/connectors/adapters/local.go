package adapters

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// Local is the connections' LocalAdapters over the registered adapters (the ones whose packages
// the binary links), with a run's workspace read through its agent's sandbox.
type Local struct {
	Sandboxes sandbox.Provider // nil: no call reads a workspace file
	Log       *slog.Logger
}

var _ connections.LocalAdapters = Local{}

// adapterError is a failed adapter call as the caller sees it: the frame's one line.
type adapterError struct {
	msg        string
	keyInvalid bool
	cause      error
}

func (e *adapterError) Error() string { return e.msg }

// Unwrap exposes the frame's error, so orchestrator.ErrorCode sees its code.
func (e *adapterError) Unwrap() error { return e.cause }

// KeyInvalid reports whether the provider said the key itself is invalid (a 401).
func (e *adapterError) KeyInvalid() bool { return e.keyInvalid }

// ReportedByTool marks a provider's answer as the tool's own error, not the orchestrator's fault.
func (e *adapterError) ReportedByTool() bool { _, ok := KindOf(e.cause); return ok }

// failed maps an adapter error to the caller's line, logging a fault of ours (never a credential:
// the frame scrubs them, and a non-frame error names no request).
func (a Local) failed(slug, op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := KindOf(err); !ok && a.Log != nil {
		a.Log.Error("adapter failed inside the orchestrator", "server", slug, "op", op, "err", err.Error())
	}
	return &adapterError{msg: Message(err), keyInvalid: Disconnects(err), cause: err}
}

// adapter returns the registered adapter of a slug.
func adapter(slug string) (Adapter, error) {
	a, ok := Lookup(slug)
	if !ok {
		return nil, fmt.Errorf("no local adapter is built in for %q", slug)
	}
	return a, nil
}

// coins returns the Pinned prices side of a slug's adapter.
func coins(slug string) (Coins, error) {
	a, err := adapter(slug)
	if err != nil {
		return nil, err
	}
	c, ok := a.(Coins)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "%s pins no coins", slug)
	}
	return c, nil
}

// Serves reports whether an adapter is registered for slug.
func (Local) Serves(slug string) bool { _, ok := Lookup(slug); return ok }

// Verify runs the adapter's Connect check.
func (a Local) Verify(ctx context.Context, srv orchestrator.MCPServer, creds map[string]string, pinned []string) (connections.Verification, error) {
	ad, err := adapter(srv.Slug)
	if err != nil {
		return connections.Verification{}, err
	}
	l := NewLogin(srv, creds, nil, nil)
	l.Coins = pinned
	v, err := ad.Verify(ctx, l)
	if err != nil {
		return connections.Verification{}, a.failed(srv.Slug, "verify", err)
	}
	return v, nil
}

// Call runs one curated tool with the login, the run's workspace as its files.
func (a Local) Call(ctx context.Context, c connections.LocalCall) (string, error) {
	ad, err := adapter(c.Server.Slug)
	if err != nil {
		return "", err
	}
	l := NewLogin(c.Server, c.Credentials, nil, nil)
	l.Bearer = c.Bearer
	if c.Run != nil && a.Sandboxes != nil {
		l.Files = a.Workspace(*c.Run)
	}
	out, err := ad.Call(ctx, l, c.Tool, c.Args)
	return out, a.failed(c.Server.Slug, c.Tool, err)
}

// SearchCoins searches the picker's coins.
func (a Local) SearchCoins(ctx context.Context, srv orchestrator.MCPServer, creds map[string]string, q string) ([]orchestrator.Coin, error) {
	c, err := coins(srv.Slug)
	if err != nil {
		return nil, err
	}
	found, err := c.Search(ctx, NewLogin(srv, creds, nil, nil), q)
	if err != nil {
		return nil, a.failed(srv.Slug, "search coins", err)
	}
	return found, nil
}

// CheckCoins checks that the provider quotes every id.
func (a Local) CheckCoins(ctx context.Context, srv orchestrator.MCPServer, creds map[string]string, ids []string) error {
	c, err := coins(srv.Slug)
	if err != nil {
		return err
	}
	return a.failed(srv.Slug, "check coins", c.Check(ctx, NewLogin(srv, creds, nil, nil), ids))
}

// QuoteCoins quotes the pinned coins in one request.
func (a Local) QuoteCoins(ctx context.Context, srv orchestrator.MCPServer, creds map[string]string, pinned []orchestrator.Coin) ([]orchestrator.PinnedPrice, error) {
	c, err := coins(srv.Slug)
	if err != nil {
		return nil, err
	}
	quoted, err := c.Quote(ctx, NewLogin(srv, creds, nil, nil), pinned)
	if err != nil {
		return nil, a.failed(srv.Slug, "quote coins", err)
	}
	return quoted, nil
}
