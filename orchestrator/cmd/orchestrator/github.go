package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// githubApp is the box's GitHub App from the environment (GITHUB_APP_*, GITHUB_API_URL,
// GITHUB_WEB_URL, GITHUB_CA_FILE), over the store and the agents' sandboxes; serve sets its Box
// once the catalog's is known. A partly set or unparsable App is a start-up warning naming what to fix.
func githubApp(cfg config.Config, store *postgres.Store, boxes sandbox.Provider, listenAddr string, log *slog.Logger) *github.Service {
	c := github.FromEnv(cfg.Getenv)
	if c.SetupState() != github.SetupConfigured && (len(c.Missing) < len(github.Required) || len(c.Problems) > 0) {
		log.Warn("the GitHub App is not usable (setup_state unsupported): " + c.Why())
	}
	public := strings.TrimRight(strings.TrimSpace(cfg.Getenv("PUBLIC_BASE_URL")), "/")
	if public == "" {
		public = "http://" + listenAddr
	}
	return &github.Service{Config: c, Client: &github.Client{Config: c}, Store: store, Sandboxes: boxes, PublicURL: public, Log: log}
}

// githubGate is the run service's offer policy and state source with the GitHub App's generation
// start: after the bindings decide, a coding agent's sandbox gets its tokens (a login that fails
// stops the start), and a run's first generation clones its repositories into the workspace.
type githubGate struct {
	*bindings.Policy
	app *github.Service

	mu     sync.Mutex
	starts map[string][]github.Repository // by agent: the repositories of a run being started
}

// OfferWithMCP decides as the bindings policy does, then gives a coding run's sandbox its GitHub tokens.
func (g *githubGate) OfferWithMCP(ctx context.Context, in runs.OfferInput, tools []registry.Tool) ([]registry.Tool, []orchestrator.OfferedTool, error) {
	native, mcp, err := g.Policy.OfferWithMCP(ctx, in, tools)
	if err != nil || !in.Config.Coding || g.app.Box == nil {
		return native, mcp, err
	}
	repos, err := g.app.Prepare(ctx, in.Agent)
	if err != nil {
		return nil, nil, err
	}
	if in.RunID != "" && len(repos) > 0 { // a run's start, not a later generation
		g.mu.Lock()
		if g.starts == nil {
			g.starts = map[string][]github.Repository{}
		}
		g.starts[in.Agent.ID] = repos
		g.mu.Unlock()
	}
	return native, mcp, nil
}

// RunState is the bindings' state (pinned prices) plus, at a coding run's start, what cloning or
// fetching each of its repositories did.
func (g *githubGate) RunState(ctx context.Context, agent orchestrator.Agent) *orchestrator.RunState {
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
	st.Repositories = g.app.Workspace(ctx, agent.ID, repos)
	return st
}

// gitEnv is shell's GitHub environment; a box without the App adds none.
func gitEnv(app *github.Service) func(context.Context, *registry.Call) ([]string, error) {
	return func(ctx context.Context, call *registry.Call) ([]string, error) {
		if app.Box == nil {
			return nil, nil
		}
		return app.ShellEnv(ctx, call)
	}
}
