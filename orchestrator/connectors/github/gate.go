package github

import (
	"context"
	"log/slog"
	"sync"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// New is the box's GitHub App from its variables, over the store and the agents' sandboxes;
// publicURL is this orchestrator's public address, the callback's base. The caller sets Box once
// the key is known. A partly set or unparsable App is a warning in log naming what to fix, never
// a value.
func New(env orchestrator.GitHubAppEnv, store Store, boxes sandbox.Provider, publicURL string, log *slog.Logger) *Service {
	c := FromEnv(env)
	if c.SetupState() != SetupConfigured && (len(c.Missing) < len(Required) || len(c.Problems) > 0) {
		log.Warn("the GitHub App is not usable (setup_state unsupported): " + c.Why())
	}
	return &Service{Config: c, Client: &Client{Config: c}, Store: store, Sandboxes: boxes, PublicURL: publicURL, Log: log}
}

// Policy is the run offer and run state a Gate adds GitHub's generation start to (the bindings'
// policy).
type Policy interface {
	runs.MCPOfferPolicy
	runs.StateSource
}

// Gate is the run service's offer policy and state source with the GitHub App's generation start:
// after the bindings decide, a coding agent's sandbox gets its tokens (a login that fails stops
// the start), and a run's first generation clones its repositories into the workspace.
type Gate struct {
	Policy
	App *Service

	mu     sync.Mutex
	starts map[string][]Repository // by agent: the repositories of a run being started
}

// OfferWithMCP decides as the policy does, then gives a coding run's sandbox its GitHub tokens.
func (g *Gate) OfferWithMCP(ctx context.Context, in runs.OfferInput, tools []registry.Tool) (runs.Offer, error) {
	offer, err := g.Policy.OfferWithMCP(ctx, in, tools)
	if err != nil || !in.Config.Coding || g.App.Box == nil {
		return offer, err
	}
	repos, err := g.App.Prepare(ctx, in.Agent)
	if err != nil {
		return runs.Offer{}, err
	}
	if in.RunID != "" && len(repos) > 0 { // a run's start, not a later generation
		g.mu.Lock()
		if g.starts == nil {
			g.starts = map[string][]Repository{}
		}
		g.starts[in.Agent.ID] = repos
		g.mu.Unlock()
	}
	return offer, nil
}

// RunState is the policy's state (pinned prices) plus, at a coding run's start, what cloning or
// fetching each of its repositories did.
func (g *Gate) RunState(ctx context.Context, agent orchestrator.Agent) *orchestrator.RunState {
	st := g.Policy.RunState(ctx, agent)
	g.mu.Lock()
	repos := g.starts[agent.ID]
	delete(g.starts, agent.ID)
	g.mu.Unlock()
	if len(repos) == 0 {
		return st
	}
	if st == nil {
		st = &orchestrator.RunState{}
	}
	st.Repositories = g.App.Workspace(ctx, agent.ID, repos)
	return st
}
