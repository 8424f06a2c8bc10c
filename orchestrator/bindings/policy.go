package bindings

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// Policy is the run offer: the resolution walk over the agent's chain, then the rules that hold
// whatever the bindings say (config flags, run kinds, integrations). It implements
// runs.MCPOfferPolicy, reading everything it needs in one database round trip.
type Policy struct {
	Store  Store
	Rules  runs.DefaultOffer   // the config-flag, run-kind and integration rules
	Caller *connections.Caller // relists stale listings of connected remote logins at run start, quotes pinned prices; nil does neither
	Log    *slog.Logger

	mu       sync.Mutex
	resolved map[string]resolved // the resolution a run start's offer read, by agent, for its RunState
}

// resolved is an agent's resolution as an offer read it.
type resolved struct {
	res orchestrator.Resolution
	at  time.Time
}

// resolvedFresh is how long an offer's resolution serves the RunState of the same start;
// maxResolved bounds how many are kept (a generation's offer has no RunState to take its own).
const (
	resolvedFresh = 2 * time.Second
	maxResolved   = 1024
)

// keep remembers the resolution an offer read for the agent's RunState.
func (p *Policy) keep(agentID string, res orchestrator.Resolution) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.resolved == nil || len(p.resolved) >= maxResolved {
		for id, r := range p.resolved {
			if now.Sub(r.at) > resolvedFresh {
				delete(p.resolved, id)
			}
		}
		if p.resolved == nil || len(p.resolved) >= maxResolved {
			p.resolved = map[string]resolved{}
		}
	}
	p.resolved[agentID] = resolved{res: res, at: now}
}

// resolution is the agent's resolution: the one its run start's offer just read, else a new read.
func (p *Policy) resolution(ctx context.Context, agent orchestrator.Agent) (orchestrator.Resolution, error) {
	p.mu.Lock()
	r, ok := p.resolved[agent.ID]
	delete(p.resolved, agent.ID)
	p.mu.Unlock()
	if ok && time.Since(r.at) <= resolvedFresh {
		return r.res, nil
	}
	return p.Store.Resolution(ctx, AgentChain(agent))
}

var _ runs.MCPOfferPolicy = (*Policy)(nil)

func (p *Policy) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}

// AgentChain is the chain an agent's runs resolve over.
func AgentChain(a orchestrator.Agent) orchestrator.Chain {
	return orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: a.OrgID, GuildID: a.GuildID, AgentID: a.ID}
}

// Offer returns the native tools the run offers.
func (p *Policy) Offer(ctx context.Context, in runs.OfferInput, tools []registry.Tool) ([]registry.Tool, error) {
	o, err := p.OfferWithMCP(ctx, in, tools)
	return o.Native, err
}

// OfferWithMCP returns the native tools and the MCP tools the run offers, and which of them ask.
func (p *Policy) OfferWithMCP(ctx context.Context, in runs.OfferInput, tools []registry.Tool) (runs.Offer, error) {
	res, err := p.Store.Resolution(ctx, AgentChain(in.Agent))
	if err != nil {
		return runs.Offer{}, fmt.Errorf("resolve bindings of agent %s: %w", in.Agent.ID, err)
	}
	ix := newIndex(res.Rows)
	if p.relist(ctx, ix, res) {
		if res, err = p.Store.Resolution(ctx, AgentChain(in.Agent)); err != nil {
			return runs.Offer{}, fmt.Errorf("resolve bindings of agent %s: %w", in.Agent.ID, err)
		}
		ix = newIndex(res.Rows)
	}
	p.keep(in.Agent.ID, res)
	var out runs.Offer
	for _, t := range tools {
		if t.Family == orchestrator.FamilyAlways {
			continue // offered by runs whatever the policy says
		}
		ask := false
		if catalog.IsBindingFamily(t.Family) {
			st := ix.walk(orchestrator.CatalogNativeTool, t.Name)
			if !st.Enabled {
				continue
			}
			ask = st.Ask
		}
		if p.Rules.Why(in, t) != "" {
			continue
		}
		out.Native = append(out.Native, t)
		if ask {
			if out.Ask == nil {
				out.Ask = map[string]bool{}
			}
			out.Ask[t.Name] = true
		}
	}
	if out.MCP, err = p.mcpOffer(ix, res, in.Agent); err != nil {
		return runs.Offer{}, err
	}
	return out, nil
}

// relist relists, before the offer is decided, every connected remote login of an enabled server
// whose stored list is stale (older than the TTL, or the server said it changed), and reports
// whether any list was rewritten. A relist that fails keeps the stored list and logs.
func (p *Policy) relist(ctx context.Context, ix index, res orchestrator.Resolution) bool {
	if p.Caller == nil {
		return false
	}
	rewritten := false
	for k := range ix {
		if k.kind != orchestrator.CatalogMCP {
			continue
		}
		st := ix.walk(orchestrator.CatalogMCP, k.id)
		conn, ok := res.Connections[st.ConnectionID]
		if !st.Enabled || !ok || conn.Server != k.id || conn.Status != orchestrator.ConnConnected ||
			conn.ServerKind != orchestrator.ServerRemote || conn.ServerAuth == orchestrator.AuthOAuth {
			continue
		}
		stale, changed := p.Caller.Stale(conn.Connection)
		if !stale {
			continue
		}
		diff, err := p.Caller.Refresh(ctx, conn.ID, changed)
		if err != nil {
			p.log().Warn("MCP relist at run start failed; offering the stored list", "connection_id", conn.ID, "server", conn.Server, "err", err.Error())
			continue
		}
		rewritten = rewritten || diff != nil
	}
	return rewritten
}

// mcpOffer walks every server with a binding row in the chain: an enabled server through a pending
// login offers nothing yet; through a disconnected login it stops the generation (the error names
// each such server); through a connected login it offers the stored listed tools its overlays leave on.
func (p *Policy) mcpOffer(ix index, res orchestrator.Resolution, agent orchestrator.Agent) ([]orchestrator.OfferedTool, error) {
	var slugs []string
	for k := range ix {
		if k.kind == orchestrator.CatalogMCP {
			slugs = append(slugs, k.id)
		}
	}
	sort.Strings(slugs)
	var out []orchestrator.OfferedTool
	var disconnected []string
	for _, slug := range slugs {
		st := ix.walk(orchestrator.CatalogMCP, slug)
		if !st.Enabled {
			continue
		}
		if st.ConnectionID == "" {
			p.log().Warn("MCP server enabled without a login in the chain; offering none of its tools", "agent_id", agent.ID, "server", slug, "decided_by", st.DecidedBy)
			continue
		}
		conn, ok := res.Connections[st.ConnectionID]
		if !ok || conn.Server != slug || conn.ServerKind == orchestrator.ServerGitHub || !conn.ServerPublished {
			continue // GitHub is left out of the resolution; an unpublished server offers nothing
		}
		switch conn.Status {
		case orchestrator.ConnPending:
			continue // start the run without its tools
		case orchestrator.ConnDisconnected:
			disconnected = append(disconnected, fmt.Sprintf("%s (login %s, owned by %s %s)", conn.ServerName, conn.ID, conn.Scope, conn.ScopeID))
			continue
		}
		for _, t := range conn.Tools {
			ts := WalkTool(st, ix[key{orchestrator.CatalogMCPTool, t.Name}])
			if !ts.Enabled {
				continue
			}
			out = append(out, orchestrator.OfferedTool{Name: t.Name, Description: t.Description, InputSchema: t.OfferedSchema,
				Server: slug, ConnectionID: conn.ID, RemoteName: t.RemoteName, Ask: ts.Ask})
		}
	}
	if len(disconnected) > 0 {
		return nil, orchestrator.Errorf(orchestrator.ECONFLICT, "cannot start the generation: MCP server %s is enabled for agent %s but its login is disconnected; connect it again (POST /api/mcp/connections) or turn the server off for this agent (PUT /api/bindings with enabled false)",
			strings.Join(disconnected, ", "), agent.ID)
	}
	return out, nil
}
