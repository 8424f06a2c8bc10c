package bindings

import (
	"context"
	"sort"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// Access is what every tool resolves to at one scope and which scope decided it.
type Access struct {
	Scope   string                    `json:"scope"`
	ScopeID string                    `json:"scope_id"`
	Native  []NativeAccess            `json:"native_tools"`
	Servers []ServerAccess            `json:"mcp_servers"`
	Config  *orchestrator.AgentConfig `json:"config,omitempty"` // agent views: the flags the rules read
}

// NativeAccess is one native tool at a scope.
type NativeAccess struct {
	Name      string `json:"name"`
	Family    string `json:"family"`
	Group     string `json:"group"`         // the Tools view's group, e.g. Secrets for secret_store and secret_request
	Binding   bool   `json:"binding"`       // decided by bindings (false: by the run's flags, or always offered)
	Enabled   bool   `json:"enabled"`       // what the walk resolves to (bindings only)
	Ask       bool   `json:"ask,omitempty"` // resolved Ask: each call waits for an operator's approval
	DecidedBy string `json:"decided_by"`    // the scope of the deciding row, "" when no row decides (disabled)
	Offered   bool   `json:"offered"`       // offered on a direct run here, after the rules
	Reason    string `json:"reason,omitempty"`
}

// ServerAccess is one catalog server at a scope.
type ServerAccess struct {
	Slug             string       `json:"slug"`
	Name             string       `json:"name"`
	Enabled          bool         `json:"enabled"`
	DecidedBy        string       `json:"decided_by"`
	ConnectionID     string       `json:"connection_id,omitempty"`
	ConnectionFrom   string       `json:"connection_from,omitempty"` // the scope whose row chose the login
	ConnectionStatus string       `json:"connection_status,omitempty"`
	Transport        string       `json:"transport,omitempty"`  // remote servers: the transport in use
	ListedAt         *time.Time   `json:"listed_at,omitempty"`  // when the login's list was last refreshed
	ListError        string       `json:"list_error,omitempty"` // what the last failed listing answered
	ToolCount        int          `json:"tool_count"`           // tools the login lists (before overlays)
	OAuthSetupState  string       `json:"oauth_setup_state"`    // not_applicable, dynamic, configured or unsupported
	Note             string       `json:"note,omitempty"`
	Tools            []ToolAccess `json:"tools"`
	// GitHubRepositories are the repositories the GitHub login in effect picked (absent without a selection).
	GitHubRepositories []orchestrator.GitHubRepo `json:"github_repositories,omitempty"`
}

// ToolAccess is one listed (or, without a login, published) tool of a server.
type ToolAccess struct {
	Name      string `json:"name"`
	Enabled   bool   `json:"enabled"`
	Ask       bool   `json:"ask,omitempty"` // resolved Ask: each call waits for an operator's approval
	Overlay   string `json:"overlay"`       // inherit, on, ask or off
	DecidedBy string `json:"decided_by"`
}

// Access resolves every native tool and catalog server at a scope (org, guild or agent). For an
// agent, a native tool's offered and reason also apply the run rules for a direct run with the
// agent's config; above an agent, only the integration rules apply.
func (s *Service) Access(ctx context.Context, scope, id string) (Access, error) {
	at, err := s.chain(ctx, scope, id)
	if err != nil {
		return Access{}, err
	}
	res, err := s.Store.Resolution(ctx, at)
	if err != nil {
		return Access{}, err
	}
	ix := newIndex(res.Rows)
	in := runs.OfferInput{Kind: orchestrator.KindDirect, Config: orchestrator.AgentConfig{Browser: true, Coding: true, Scripting: true, Memory: true}}
	out := Access{Scope: at.Scope, ScopeID: at.ID(), Native: []NativeAccess{}, Servers: []ServerAccess{}}
	if at.Scope == orchestrator.ScopeAgent {
		agent := orchestrator.Agent{ID: at.AgentID, GuildID: at.GuildID, OrgID: at.OrgID}
		if a, err := s.Store.GetAgent(ctx, at.AgentID); err == nil {
			agent = a
		}
		in.Agent, in.Config = agent, agent.Config
		out.Config = &agent.Config
	}
	var rules runs.DefaultOffer
	if s.Policy != nil {
		rules = s.Policy.Rules
	}
	seen := map[string]bool{}
	for _, t := range s.Registry.List() {
		seen[t.Name] = true
		out.Native = append(out.Native, nativeAccess(ix, rules, in, t, catalog.IsBindingFamily(t.Family)))
	}
	for _, name := range catalog.PlatformSeed {
		if !seen[name] { // a seed tool whose family is not wired on this box yet
			na := nativeAccess(ix, rules, in, registry.Tool{Name: name, Family: catalog.SeedFamily(name)}, true)
			na.Offered, na.Reason = false, "not available on this orchestrator (its tool family is not wired)"
			out.Native = append(out.Native, na)
		}
	}
	sort.Slice(out.Native, func(i, j int) bool { return out.Native[i].Name < out.Native[j].Name })
	servers, err := s.Store.ListServers(ctx, true)
	if err != nil {
		return Access{}, err
	}
	for _, srv := range servers {
		sa := serverAccess(ix, res, srv)
		sa.OAuthSetupState = s.SetupState(srv)
		if srv.Kind == orchestrator.ServerGitHub {
			if err := s.githubAccess(ctx, res, &sa); err != nil {
				return Access{}, err
			}
		}
		out.Servers = append(out.Servers, sa)
	}
	return out, nil
}

func nativeAccess(ix index, rules runs.DefaultOffer, in runs.OfferInput, t registry.Tool, binding bool) NativeAccess {
	na := NativeAccess{Name: t.Name, Family: t.Family, Group: catalog.Group(t.Family), Binding: binding}
	if na.Binding {
		st := ix.walk(orchestrator.CatalogNativeTool, t.Name)
		na.Enabled, na.Ask, na.DecidedBy = st.Enabled, st.Ask, st.DecidedBy
		if !st.Enabled {
			na.Reason = "no binding enables it at this scope or above"
			if st.DecidedBy != "" {
				na.Reason = "turned off by the " + st.DecidedBy + " binding"
			}
			return na
		}
	}
	if t.Family == orchestrator.FamilyAlways {
		na.Offered = true
		return na
	}
	if why := rules.Why(in, t); why != "" {
		na.Reason = "not offered: " + why
		return na
	}
	na.Offered = true
	return na
}

func serverAccess(ix index, res orchestrator.Resolution, srv orchestrator.MCPServer) ServerAccess {
	st := ix.walk(orchestrator.CatalogMCP, srv.Slug)
	sa := ServerAccess{Slug: srv.Slug, Name: srv.Name, Enabled: st.Enabled, DecidedBy: st.DecidedBy,
		ConnectionID: st.ConnectionID, ConnectionFrom: st.ConnectionFrom, Tools: []ToolAccess{}}
	if srv.Kind == orchestrator.ServerGitHub {
		sa.Note = "lists no tools; a coding run reaches GitHub through its guild's repositories"
		return sa
	}
	names := map[string]bool{}
	if conn, ok := res.Connections[st.ConnectionID]; ok && conn.Server == srv.Slug {
		sa.ConnectionStatus, sa.Transport, sa.ListedAt, sa.ListError, sa.ToolCount = conn.Status, conn.Transport, conn.ListedAt, conn.ListError, conn.ToolCount
		for _, t := range conn.Tools {
			names[t.Name] = true
		}
		switch conn.Status {
		case orchestrator.ConnPending:
			sa.Note = "the login is pending: runs start without its tools"
		case orchestrator.ConnDisconnected:
			if st.Enabled {
				sa.Note = "the login is disconnected: a generation of an agent here fails at start until it is connected again or turned off"
			}
		}
	} else {
		for _, t := range srv.Tools {
			if t.Published {
				names[orchestrator.NamespacedTool(srv.Slug, t.Name)] = true
			}
		}
		if st.Enabled {
			sa.Note = "enabled, but no login is bound in this chain: no tools are offered"
		}
	}
	for n := range names {
		ts := WalkTool(st, ix[key{orchestrator.CatalogMCPTool, n}])
		sa.Tools = append(sa.Tools, ToolAccess{Name: n, Enabled: ts.Enabled, Ask: ts.Ask, Overlay: ts.Overlay, DecidedBy: ts.DecidedBy})
	}
	sort.Slice(sa.Tools, func(i, j int) bool { return sa.Tools[i].Name < sa.Tools[j].Name })
	return sa
}

// githubAccess fills GitHub's access view: the login the walk chose, its status and, when it
// picked any, its repositories.
func (s *Service) githubAccess(ctx context.Context, res orchestrator.Resolution, sa *ServerAccess) error {
	conn, ok := res.Connections[sa.ConnectionID]
	if !ok || s.GitHub == nil {
		return nil
	}
	sa.ConnectionStatus = conn.Status
	repos, err := s.GitHubRepositories(ctx, conn.ID)
	if err != nil {
		return err
	}
	if len(repos) > 0 {
		sa.GitHubRepositories = repos
	}
	return nil
}
