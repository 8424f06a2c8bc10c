// Package lifecycle is a connection's life as the operator drives it: Connect (a token form, a
// browser OAuth login, the GitHub App), the OAuth callback, Drive's folder and Pinned prices'
// coins, refresh, delete and the test call, and the catalog of servers logins connect to. Using a
// stored login (its calls, its token renewal) is the connections package's, below it.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// Service carries the catalog and connection operations of the API. Set its fields once.
type Service struct {
	Store        Store
	Manifests    []orchestrator.MCPServer        // catalog.Load(): the seed, and the curated tool lists
	Box          *sealed.Box                     // GUILDS_SECRET_KEY; nil: Connect is unavailable
	Verifiers    map[string]connections.Verifier // per server slug; a server without one uses its local adapter (Caller.Local), Caller (remote servers) or Unverified
	Caller       *connections.Caller             // the logins' calls and lists; nil: remote servers are not asked anything
	GitHub       GitHubApp                       // the box's GitHub App; nil: GitHub is not offered
	Integrations integrations.Set                // the integrations' variables the box has set, for oauth_setup_state
	Google       GoogleClient                    // the box's Google Cloud client (Gmail, Drive); empty: not set
	Now          func() time.Time
	Log          *slog.Logger
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// chain places a scope given by the API.
func (s *Service) chain(ctx context.Context, scope, id string) (orchestrator.Chain, error) {
	return orchestrator.PlaceScope(ctx, s.Store, scope, id)
}

// ListConnections lists the connections owned at a scope (every connection when scope is "").
func (s *Service) ListConnections(ctx context.Context, scope, id string) ([]orchestrator.Connection, error) {
	if scope == "" && id == "" {
		return s.Store.ListConnections(ctx, "", "")
	}
	c, err := s.chain(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return s.Store.ListConnections(ctx, c.Scope, c.ID())
}

// GetConnection returns a connection's metadata.
func (s *Service) GetConnection(ctx context.Context, id string) (orchestrator.Connection, error) {
	if !orchestrator.ValidID(id) {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "connection %q not found", id)
	}
	return s.Store.GetConnection(ctx, id)
}

// ConnectionTools lists the tools stored for a connection.
func (s *Service) ConnectionTools(ctx context.Context, id string) ([]orchestrator.ListedTool, error) {
	if _, err := s.GetConnection(ctx, id); err != nil {
		return nil, err
	}
	return s.Store.ListedTools(ctx, id)
}

// DeleteConnection deletes a connection and the bindings that point at it.
func (s *Service) DeleteConnection(ctx context.Context, id string) error {
	if _, err := s.GetConnection(ctx, id); err != nil {
		return err
	}
	if err := s.Store.DeleteConnection(ctx, id); err != nil {
		return err
	}
	if s.Caller != nil {
		s.Caller.Client.Forget(id)
	}
	s.log().Info("connection deleted", "connection_id", id)
	return nil
}

// RefreshConnection relists a connected login now and answers what changed; a relist that fails
// keeps the stored list and is EUPSTREAM naming what the server answered.
func (s *Service) RefreshConnection(ctx context.Context, id string) (orchestrator.ListingDiff, error) {
	conn, err := s.GetConnection(ctx, id)
	if err != nil {
		return orchestrator.ListingDiff{}, err
	}
	if conn.Status != orchestrator.ConnConnected {
		return orchestrator.ListingDiff{}, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is %s: connect it before refreshing its tools", id, conn.Status)
	}
	srv, err := s.GetServer(ctx, conn.Server)
	if err != nil {
		return orchestrator.ListingDiff{}, err
	}
	if ad := s.local(srv); ad != nil {
		return s.refreshLocal(ctx, ad, srv, id)
	}
	if srv.Kind != orchestrator.ServerRemote || s.Caller == nil {
		return orchestrator.ListingDiff{}, orchestrator.Errorf(orchestrator.EINVALID, "%s's tools are not listed by a remote MCP server this orchestrator can reach, so there is nothing to refresh", srv.Name)
	}
	diff, err := s.Caller.Refresh(ctx, id, true)
	if err != nil {
		return orchestrator.ListingDiff{}, errUpstream(id, err)
	}
	if diff == nil {
		return orchestrator.ListingDiff{}, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is no longer connected; nothing was relisted", id)
	}
	return *diff, nil
}

// TestCall calls one listed tool of a connected login for the operator (see Caller.TestCall).
func (s *Service) TestCall(ctx context.Context, id, name string, args json.RawMessage) (connections.TestResult, error) {
	if s.Caller == nil {
		if _, err := s.GetConnection(ctx, id); err != nil {
			return connections.TestResult{}, err
		}
		return connections.TestResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "this orchestrator runs without an MCP client, so a login's tools cannot be called")
	}
	return s.Caller.TestCall(ctx, id, name, args, 0)
}

// errUpstream marks a relist failure the refresh route answers 502.
func errUpstream(connectionID string, err error) error {
	var e *orchestrator.Error
	if errors.As(err, &e) {
		return err
	}
	return orchestrator.Errorf(orchestrator.EUPSTREAM, "relisting connection %s failed, so its stored list stays: %v", connectionID, err)
}
