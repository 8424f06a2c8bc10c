package main

import (
	"context"
	"log/slog"
	"strings"

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

// githubGate is the run service's offer policy with the GitHub App's generation start: after the
// bindings decide, a coding agent's sandbox gets its tokens, and a login that fails stops the start.
type githubGate struct {
	*bindings.Policy
	app *github.Service
}

// OfferWithMCP decides as the bindings policy does, then gives a coding run's sandbox its GitHub tokens.
func (g githubGate) OfferWithMCP(ctx context.Context, in runs.OfferInput, tools []registry.Tool) ([]registry.Tool, []orchestrator.OfferedTool, error) {
	native, mcp, err := g.Policy.OfferWithMCP(ctx, in, tools)
	if err != nil || !in.Config.Coding || g.app.Box == nil {
		return native, mcp, err
	}
	if _, err := g.app.Prepare(ctx, in.Agent); err != nil {
		return nil, nil, err
	}
	return native, mcp, nil
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
