package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/alchemy"      // registers alchemy
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/coingecko"    // registers coingecko
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/dexpaprika"   // registers dexpaprika
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/gmail"        // registers gmail
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/pinnedprices" // registers pinned_prices
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/qonto"        // registers qonto
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/twitterapi"   // registers twitterapi
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet"       // registers wallet
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/x"            // registers x
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// localAdapters is bindings' LocalAdapters over the registered adapters (adapters.Lookup), with
// a run's workspace read through its agent's sandbox.
type localAdapters struct {
	Sandboxes sandbox.Provider
	Log       *slog.Logger
}

var _ bindings.LocalAdapters = localAdapters{}

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
func (e *adapterError) ReportedByTool() bool { _, ok := adapters.KindOf(e.cause); return ok }

// failed maps an adapter error to the caller's line, logging a fault of ours (never a credential:
// the frame scrubs them, and a non-frame error names no request).
func (a localAdapters) failed(slug, op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := adapters.KindOf(err); !ok && a.Log != nil {
		a.Log.Error("adapter failed inside the orchestrator", "server", slug, "op", op, "err", err.Error())
	}
	return &adapterError{msg: adapters.Message(err), keyInvalid: adapters.Disconnects(err), cause: err}
}

// adapter returns the registered adapter of a slug.
func adapter(slug string) (adapters.Adapter, error) {
	a, ok := adapters.Lookup(slug)
	if !ok {
		return nil, fmt.Errorf("no local adapter is built in for %q", slug)
	}
	return a, nil
}

// coins returns the Pinned prices side of a slug's adapter.
func coins(slug string) (adapters.Coins, error) {
	a, err := adapter(slug)
	if err != nil {
		return nil, err
	}
	c, ok := a.(adapters.Coins)
	if !ok {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "%s pins no coins", slug)
	}
	return c, nil
}

// Serves reports whether an adapter is registered for slug.
func (localAdapters) Serves(slug string) bool { _, ok := adapters.Lookup(slug); return ok }

// Verify runs the adapter's Connect check.
func (a localAdapters) Verify(ctx context.Context, srv orchestrator.MCPServer, creds map[string]string, pinned []string) (bindings.Verification, error) {
	ad, err := adapter(srv.Slug)
	if err != nil {
		return bindings.Verification{}, err
	}
	l := adapters.NewLogin(srv, creds, nil, nil)
	l.Coins = pinned
	v, err := ad.Verify(ctx, l)
	if err != nil {
		return bindings.Verification{}, a.failed(srv.Slug, "verify", err)
	}
	return bindings.Verification{AccountHint: v.AccountHint}, nil
}

// Call runs one curated tool with the login, the run's workspace as its files.
func (a localAdapters) Call(ctx context.Context, c bindings.LocalCall) (string, error) {
	ad, err := adapter(c.Server.Slug)
	if err != nil {
		return "", err
	}
	l := adapters.NewLogin(c.Server, c.Credentials, nil, nil)
	l.Bearer = c.Bearer
	if c.Run != nil && a.Sandboxes != nil {
		l.Files = workspaceFiles{boxes: a.Sandboxes, agentID: c.Run.AgentID, runID: c.Run.ID}
	}
	out, err := ad.Call(ctx, l, c.Tool, c.Args)
	return out, a.failed(c.Server.Slug, c.Tool, err)
}

// SearchCoins searches the picker's coins.
func (a localAdapters) SearchCoins(ctx context.Context, srv orchestrator.MCPServer, creds map[string]string, q string) ([]bindings.Coin, error) {
	c, err := coins(srv.Slug)
	if err != nil {
		return nil, err
	}
	found, err := c.Search(ctx, adapters.NewLogin(srv, creds, nil, nil), q)
	if err != nil {
		return nil, a.failed(srv.Slug, "search coins", err)
	}
	out := make([]bindings.Coin, 0, len(found))
	for _, f := range found {
		out = append(out, bindings.Coin(f))
	}
	return out, nil
}

// CheckCoins checks that the provider quotes every id.
func (a localAdapters) CheckCoins(ctx context.Context, srv orchestrator.MCPServer, creds map[string]string, ids []string) error {
	c, err := coins(srv.Slug)
	if err != nil {
		return err
	}
	return a.failed(srv.Slug, "check coins", c.Check(ctx, adapters.NewLogin(srv, creds, nil, nil), ids))
}

// QuoteCoins quotes the pinned coins in one request.
func (a localAdapters) QuoteCoins(ctx context.Context, srv orchestrator.MCPServer, creds map[string]string, pinned []bindings.Coin) ([]orchestrator.PinnedPrice, error) {
	c, err := coins(srv.Slug)
	if err != nil {
		return nil, err
	}
	in := make([]adapters.Coin, 0, len(pinned))
	for _, p := range pinned {
		in = append(in, adapters.Coin(p))
	}
	quoted, err := c.Quote(ctx, adapters.NewLogin(srv, creds, nil, nil), in)
	if err != nil {
		return nil, a.failed(srv.Slug, "quote coins", err)
	}
	out := make([]orchestrator.PinnedPrice, 0, len(quoted))
	for _, q := range quoted {
		out = append(out, orchestrator.PinnedPrice(q))
	}
	return out, nil
}

// workspaceFiles reads a run's workspace files through its agent's sandbox file API: a relative
// path starts at the run's working directory (the one the file tools keep in
// /home/agent/.runs/<run>/cwd), and a path outside /home/agent is refused.
type workspaceFiles struct {
	boxes          sandbox.Provider
	agentID, runID string
}

// ReadFile reads one workspace file.
func (w workspaceFiles) ReadFile(ctx context.Context, name string) ([]byte, error) {
	box, err := w.boxes.Open(ctx, w.agentID)
	if err != nil {
		return nil, fmt.Errorf("open the agent's sandbox: %w", err)
	}
	name, err = w.resolve(ctx, box, name)
	if err != nil {
		return nil, err
	}
	// The size as the sandbox sees it (links followed there) before anything is read.
	res, err := box.Exec(ctx, sandbox.ExecRequest{Argv: []string{"stat", "-L", "-c", "%s", "--", name}, Timeout: 10 * time.Second})
	if err == nil && res.ExitCode == 0 {
		if n, perr := strconv.ParseInt(strings.TrimSpace(string(res.Stdout)), 10, 64); perr == nil && n > maxWorkspaceRead {
			return nil, fmt.Errorf("%s is %d bytes; at most %d MiB is read from the workspace", name, n, maxWorkspaceRead>>20)
		}
	}
	b, err := box.ReadFile(ctx, name)
	if err == nil && len(b) > maxWorkspaceRead {
		clear(b)
		return nil, fmt.Errorf("%s is %d bytes; at most %d MiB is read from the workspace", name, len(b), maxWorkspaceRead>>20)
	}
	return b, err
}

// resolve places a workspace path in the sandbox: ~ and /home/agent are its home, a relative path
// starts at the run's working directory, and nothing outside the home is allowed.
func (w workspaceFiles) resolve(ctx context.Context, box sandbox.Sandbox, name string) (string, error) {
	home := box.Places().Home
	if name == "~" || strings.HasPrefix(name, "~/") {
		name = home + name[1:]
	} else if within(agentHome, name) && home != agentHome {
		name = home + strings.TrimPrefix(name, agentHome) // a local sandbox's home is a host folder
	}
	if !path.IsAbs(name) {
		cwd := home
		if b, err := box.ReadFile(ctx, path.Join(home, ".runs", w.runID, "cwd")); err == nil {
			if d := path.Clean(strings.TrimSpace(string(b))); within(home, d) {
				cwd = d
			}
		}
		name = path.Join(cwd, name)
	}
	name = path.Clean(name)
	if !within(home, name) {
		return "", errors.New("the path is outside " + agentHome)
	}
	return name, nil
}

// maxWorkspaceRead is the largest workspace file an adapter reads (Qonto's own limit is lower).
const maxWorkspaceRead = 16 << 20

// agentHome is the workspace as the agent and the adapters name it.
const agentHome = "/home/agent"

// within reports whether p is root or under it.
func within(root, p string) bool { return p == root || strings.HasPrefix(p, root+"/") }
