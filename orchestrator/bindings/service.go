package bindings

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Service carries the binding operations and the access views of the API, beside the catalog and
// connection operations of the connections' lifecycle service it carries (the API reaches all of them
// through one value). Set its fields once.
type Service struct {
	*lifecycle.Service // the catalog and the logins
	Store              Store
	Registry           *registry.Registry
	Policy             *Policy // the offer rules, for the access views
	Now                func() time.Time
	Log                *slog.Logger
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

// Seed writes the manifests into the catalog (admin edits survive) and the platform seed bindings.
func (s *Service) Seed(ctx context.Context) error {
	if err := s.Service.Seed(ctx); err != nil {
		return err
	}
	if err := s.Store.SeedPlatformBindings(ctx, catalog.PlatformSeed, s.now()); err != nil {
		return fmt.Errorf("seed platform bindings: %w", err)
	}
	return nil
}

// chain places a scope given by the API.
func (s *Service) chain(ctx context.Context, scope, id string) (orchestrator.Chain, error) {
	return orchestrator.PlaceScope(ctx, s.Store, scope, id)
}

// BindingRequest is the body of PUT and DELETE /api/bindings.
type BindingRequest struct {
	Scope        string `json:"scope"`
	ScopeID      string `json:"scope_id"`
	CatalogKind  string `json:"catalog_kind"`
	CatalogID    string `json:"catalog_id"`
	Enabled      *bool  `json:"enabled,omitempty"`
	Ask          *bool  `json:"ask,omitempty"` // with enabled true on a native_tool or mcp_tool row: each call waits for an operator's approval
	ConnectionID string `json:"connection_id,omitempty"`
}

// PutBinding checks a binding against the catalog and the visibility rules, then writes it.
// Nothing is written when any check fails.
func (s *Service) PutBinding(ctx context.Context, req BindingRequest) (orchestrator.Binding, error) {
	at, err := s.checkKey(ctx, req)
	if err != nil {
		return orchestrator.Binding{}, err
	}
	if req.Enabled == nil {
		return orchestrator.Binding{}, orchestrator.Errorf(orchestrator.EINVALID, "enabled is required: true turns %s on at this scope, false turns it off", req.CatalogID)
	}
	ask := req.Ask != nil && *req.Ask
	if ask && req.CatalogKind != orchestrator.CatalogNativeTool && req.CatalogKind != orchestrator.CatalogMCPTool {
		return orchestrator.Binding{}, orchestrator.Errorf(orchestrator.EINVALID, "ask is for a native_tool or mcp_tool binding, not %s: to have a server's tools ask, put an mcp_tool row with ask true for each tool", req.CatalogKind)
	}
	if ask && !*req.Enabled {
		return orchestrator.Binding{}, orchestrator.Errorf(orchestrator.EINVALID, "ask needs enabled true: Ask is On with an operator's approval of each call; to turn %s off, send enabled false without ask", req.CatalogID)
	}
	if req.ConnectionID != "" && req.CatalogKind != orchestrator.CatalogMCP {
		return orchestrator.Binding{}, orchestrator.Errorf(orchestrator.EINVALID, "only mcp bindings carry a connection_id; a %s binding never does", req.CatalogKind)
	}
	switch req.CatalogKind {
	case orchestrator.CatalogNativeTool:
		err = s.checkNative(req.CatalogID)
	case orchestrator.CatalogArtifactGrant:
		if !slices.Contains(orchestrator.ArtifactGrants, req.CatalogID) {
			err = orchestrator.Errorf(orchestrator.ENOTFOUND, "no artifact grant %q; the grants are %s", req.CatalogID, strings.Join(orchestrator.ArtifactGrants, ", "))
		}
	case orchestrator.CatalogMCP:
		err = s.checkMCP(ctx, at, req)
	case orchestrator.CatalogMCPTool:
		err = s.checkMCPTool(ctx, at, req.CatalogID)
	}
	if err != nil {
		return orchestrator.Binding{}, err
	}
	b, err := s.Store.PutBinding(ctx, at, orchestrator.Binding{Scope: at.Scope, ScopeID: at.ID(), CatalogKind: req.CatalogKind,
		CatalogID: req.CatalogID, Enabled: *req.Enabled, Ask: ask, ConnectionID: req.ConnectionID, UpdatedAt: s.now()})
	if err != nil {
		return b, err
	}
	s.log().Info("binding written", "scope", b.Scope, "scope_id", b.ScopeID, "kind", b.CatalogKind, "id", b.CatalogID, "enabled", b.Enabled, "ask", b.Ask, "connection_id", b.ConnectionID)
	return b, nil
}

// DeleteBinding removes one row; the scope then inherits.
func (s *Service) DeleteBinding(ctx context.Context, req BindingRequest) error {
	at, err := s.checkKey(ctx, req)
	if err != nil {
		return err
	}
	if req.Enabled != nil || req.Ask != nil || req.ConnectionID != "" {
		return orchestrator.Errorf(orchestrator.EINVALID, "DELETE /api/bindings takes only scope, scope_id, catalog_kind and catalog_id")
	}
	return s.Store.DeleteBinding(ctx, at, req.CatalogKind, req.CatalogID)
}

// ListBindings lists the rows written at one scope.
func (s *Service) ListBindings(ctx context.Context, scope, id string) ([]orchestrator.Binding, error) {
	at, err := s.chain(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return s.Store.ListBindings(ctx, at)
}

// checkKey checks the identifying fields of a binding and places its scope.
func (s *Service) checkKey(ctx context.Context, req BindingRequest) (orchestrator.Chain, error) {
	if !slices.Contains(orchestrator.CatalogKinds, req.CatalogKind) {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "catalog_kind must be one of %s, got %q", strings.Join(orchestrator.CatalogKinds, ", "), req.CatalogKind)
	}
	if req.CatalogID == "" || len(req.CatalogID) > 200 {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "catalog_id is required (at most 200 bytes): the tool name, server slug, namespaced tool or grant")
	}
	return s.chain(ctx, req.Scope, req.ScopeID)
}

// checkNative accepts a native tool that bindings decide: one registered in a binding family, or a
// platform-seed tool. report_issue, the browser tools and the code tools are never bindings.
func (s *Service) checkNative(name string) error {
	if t, ok := s.Registry.Get(name); ok {
		if !catalog.IsBindingFamily(t.Family) {
			return orchestrator.Errorf(orchestrator.EINVALID, "%s is not a binding: it is offered by the run's %s rules, never by a binding", name, familyWord(t.Family))
		}
		return nil
	}
	if slices.Contains(catalog.PlatformSeed, name) {
		return nil
	}
	return orchestrator.Errorf(orchestrator.ENOTFOUND, "no native tool %q that bindings decide; see GET /api/agents/{id}/tools for the tools", name)
}

func familyWord(f string) string {
	switch f {
	case orchestrator.FamilyAlways:
		return "always-offered"
	case orchestrator.FamilyBrowser:
		return "config.browser"
	case orchestrator.FamilyCode:
		return "config.coding"
	}
	return f
}

// checkMCP accepts a published server with published tools (a catalog copy or tools listed on the
// binding's connection) when enabling it; a connection_id must be a login of that server visible
// at the scope. Turning a server off, and Pinned prices (which offers State prices, not tools),
// need no tools.
func (s *Service) checkMCP(ctx context.Context, at orchestrator.Chain, req BindingRequest) error {
	srv, err := s.GetServer(ctx, req.CatalogID)
	if err != nil {
		return err
	}
	if srv.Kind == orchestrator.ServerGitHub {
		return orchestrator.Errorf(orchestrator.EINVALID, "%s lists no tools and is not bound: a coding run reaches it through its guild's repositories", srv.Name)
	}
	if !srv.Published {
		return orchestrator.Errorf(orchestrator.EINVALID, "%s is not published in the catalog; an instance admin publishes it with PATCH /api/admin/mcp/servers/%s", srv.Name, srv.Slug)
	}
	published := 0
	for _, t := range srv.Tools {
		if t.Published {
			published++
		}
	}
	// Turning a server off needs no tools; Pinned prices offers State prices, never tools.
	if !*req.Enabled || srv.Config.MaxCoins > 0 {
		published = max(published, 1)
	}
	if req.ConnectionID == "" {
		if published == 0 {
			return orchestrator.Errorf(orchestrator.EINVALID, "%s has no published tools to offer yet; they appear once a connected login lists them", srv.Name)
		}
		return nil
	}
	conn, err := s.GetConnection(ctx, req.ConnectionID)
	if err != nil {
		return err
	}
	if conn.Server != srv.Slug {
		return orchestrator.Errorf(orchestrator.EINVALID, "connection %s is a %s login, not %s", conn.ID, conn.Server, srv.Slug)
	}
	if !Visible(conn.Owner(), at) {
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "connection %s is owned by %s %s and cannot be bound at %s %s: a login is visible only at its owner and below it",
			conn.ID, conn.Scope, conn.ScopeID, at.Scope, at.ID())
	}
	if published == 0 && conn.ToolCount == 0 {
		return orchestrator.Errorf(orchestrator.EINVALID, "%s has no published tools and connection %s lists none yet", srv.Name, conn.ID)
	}
	return nil
}

// checkMCPTool accepts a namespaced tool listed on a connection visible at the scope.
func (s *Service) checkMCPTool(ctx context.Context, at orchestrator.Chain, name string) error {
	conns, err := s.Store.ConnectionsListing(ctx, name)
	if err != nil {
		return err
	}
	for _, c := range conns {
		if Visible(c.Owner(), at) {
			return nil
		}
	}
	if len(conns) > 0 {
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s is listed only on logins that %s %s cannot see", name, at.Scope, at.ID())
	}
	return orchestrator.Errorf(orchestrator.ENOTFOUND, "no connection lists a tool named %s; the name is {slug}_{name} as GET /api/mcp/connections/{id}/tools shows it", name)
}
