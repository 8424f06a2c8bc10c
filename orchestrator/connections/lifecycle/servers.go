package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
)

// Seed writes the manifests into the catalog; rows an instance admin edited stay as they are.
func (s *Service) Seed(ctx context.Context) error {
	if err := s.Store.SeedCatalog(ctx, s.Manifests, s.now()); err != nil {
		return fmt.Errorf("seed catalog: %w", err)
	}
	return nil
}

// ListServers lists the catalog: published servers only, or every row for the admin.
func (s *Service) ListServers(ctx context.Context, all bool) ([]orchestrator.MCPServer, error) {
	servers, err := s.Store.ListServers(ctx, !all)
	for i := range servers {
		servers[i].OAuthSetupState = s.SetupState(servers[i])
	}
	return servers, err
}

// PatchServer applies an admin edit of a server's operator-facing copy, its url and its named
// endpoints (null restores the seeded value; an unknown endpoint name is EINVALID naming the known ones).
func (s *Service) PatchServer(ctx context.Context, slug string, p orchestrator.ServerPatch) (orchestrator.MCPServer, error) {
	srv, err := s.GetServer(ctx, slug)
	if err != nil {
		return orchestrator.MCPServer{}, err
	}
	if !p.CopyEdit() && len(p.URL) == 0 && len(p.Endpoints) == 0 {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "nothing to change: send description, limitations, setup_hint, published, url or endpoints")
	}
	if len(p.URL) > 0 && string(p.URL) != "null" {
		var u string
		if err := json.Unmarshal(p.URL, &u); err != nil {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "url must be a string, or null to restore the seeded URL")
		}
		if err := catalog.CheckURL(u); err != nil {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "url: %v", err)
		}
	}
	if len(p.Endpoints) > 0 {
		seeded := s.seededEndpoints(srv)
		known := make([]string, 0, len(seeded))
		for n := range seeded {
			known = append(known, n)
		}
		sort.Strings(known)
		for name, v := range p.Endpoints {
			if _, ok := seeded[name]; !ok {
				list := "none"
				if len(known) > 0 {
					list = strings.Join(known, ", ")
				}
				return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "%s has no endpoint %q; its endpoints are %s", srv.Name, name, list)
			}
			if v != nil {
				if err := catalog.CheckURL(*v); err != nil {
					return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "endpoints.%s: %v", name, err)
				}
			}
		}
	}
	for name, v := range map[string]*string{"description": p.Description, "limitations": p.Limitations, "setup_hint": p.SetupHint} {
		if v != nil && utf8.RuneCountInString(*v) > 4000 {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "%s is %d characters; at most 4000", name, utf8.RuneCountInString(*v))
		}
	}
	if p.Description != nil && strings.TrimSpace(*p.Description) == "" {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "description must not be blank")
	}
	return s.Store.PatchServer(ctx, slug, *p.Normalized(), s.now())
}

// PatchTool applies an admin edit of one published tool's copy (description, published).
func (s *Service) PatchTool(ctx context.Context, slug, name string, p orchestrator.ToolPatch) (orchestrator.MCPServer, error) {
	srv, err := s.GetServer(ctx, slug)
	if err != nil {
		return srv, err
	}
	found := false
	var names []string
	for _, t := range srv.Tools {
		found = found || t.Name == name
		names = append(names, t.Name)
	}
	if !found {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "%s publishes no tool %q; its tools are %s", srv.Name, name, strings.Join(names, ", "))
	}
	if p.Description == nil && p.Published == nil {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "nothing to change: send description or published")
	}
	if p.Description != nil {
		d := strings.TrimSpace(*p.Description)
		if d == "" || utf8.RuneCountInString(d) > 4000 {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "description must be 1 to 4000 characters")
		}
		p.Description = &d
	}
	return s.Store.PatchTool(ctx, slug, name, p, s.now())
}

// seededEndpoints returns the endpoints a server's manifest declares (a custom server has none).
func (s *Service) seededEndpoints(srv orchestrator.MCPServer) orchestrator.Endpoints {
	for _, m := range s.Manifests {
		if m.Slug == srv.Slug {
			return m.Endpoints
		}
	}
	return orchestrator.Endpoints{}
}

// CreateServer adds an instance admin's remote MCP server (see catalog.Custom); a slug of a
// manifest, or of a server already added, is ECONFLICT.
func (s *Service) CreateServer(ctx context.Context, req catalog.CustomRequest) (orchestrator.MCPServer, error) {
	srv, err := catalog.Custom(req)
	if err != nil {
		return srv, err
	}
	for _, m := range s.Manifests {
		if m.Slug == srv.Slug || orchestrator.NamespacedTool(m.Slug, "") == orchestrator.NamespacedTool(srv.Slug, "") {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.ECONFLICT, "%q is the slug of the catalog's %s; pick another", srv.Slug, m.Name)
		}
	}
	out, err := s.Store.CreateServer(ctx, srv, s.now())
	if err != nil {
		return out, err
	}
	s.log().Info("custom MCP server added", "server", out.Slug, "auth", out.Auth)
	return out, nil
}

// GetServer reads a catalog row, naming the known slugs when it does not exist.
func (s *Service) GetServer(ctx context.Context, slug string) (orchestrator.MCPServer, error) {
	srv, err := s.Store.GetServer(ctx, slug)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		var slugs []string
		for _, m := range s.Manifests {
			slugs = append(slugs, m.Slug)
		}
		return srv, orchestrator.Errorf(orchestrator.ENOTFOUND, "no catalog server %q; the servers are %s (GET /api/mcp/servers)", slug, strings.Join(slugs, ", "))
	}
	return srv, err
}
