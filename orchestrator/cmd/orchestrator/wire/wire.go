// Package wire builds the orchestrator's concrete graph from its configuration: the store, the
// tool families, the sandboxes, the connections and bindings, the run service and the API. It is
// the one place that knows every part; `orchestrator serve` runs what it builds, and end-to-end
// tests build the same graph (wiretest).
package wire

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/approvals"
	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/alchemy"      // registers alchemy
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/coingecko"    // registers coingecko
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/dexpaprika"   // registers dexpaprika
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/drive"          // Google Drive's folder confinement
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/gmail"        // registers gmail
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/pinnedprices" // registers pinned_prices
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/qonto"        // registers qonto
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/twitterapi"   // registers twitterapi
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet"         // registers wallet
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/x"            // registers x
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/connectors/mcp"
	"github.com/guildsai/guilds/orchestrator/events"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/guildsai/guilds/orchestrator/tools/scripts"
	"github.com/guildsai/guilds/orchestrator/tools/search"
	"github.com/guildsai/guilds/orchestrator/tools/secrets"
	"github.com/guildsai/guilds/orchestrator/webapp"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options are what Build takes besides the configuration.
type Options struct {
	Pool      *pgxpool.Pool                  // the migrated database
	Monitor   *postgres.Monitor              // the database's health, for /readyz and the API's 503s
	KeySource string                         // where GUILDS_SECRET_KEY came from, for GET /api/instance
	Addr      string                         // the API's address: the GitHub App's public URL without PUBLIC_BASE_URL
	Tools     func(*registry.Registry) error // a test's extra tools; nil: none
	Log       *slog.Logger
}

// Graph is the built orchestrator: its API, its run service and what they stand on.
type Graph struct {
	App      *fiber.App
	API      *httpapi.Server // what App serves: its MCP sessions end with CloseMCPSessions once App stopped
	Runs     *runs.Service
	Store    *postgres.Store
	Registry *registry.Registry
	Metrics  *Metrics
	Audit    *identity.Auditor // the audit log's writer, drained by Close
	Events   *events.Service   // the outbox's delivery and the webhooks; serve runs it
	// Approvals holds the requests calls of Ask tools wait for; serve stops its waits before it
	// finishes the calls in flight.
	Approvals *approvals.Service

	close []func()
}

// Close stops what the graph started, last first: the MCP sessions (each one's DELETE sent), then
// the agents' browsers and sandboxes.
func (g *Graph) Close() {
	for i := len(g.close) - 1; i >= 0; i-- {
		g.close[i]()
	}
	g.close = nil
}

// Build builds the graph over a migrated database. Until Close, it holds the sandboxes it started
// and the MCP sessions it opened; a failed Build has closed them.
func Build(ctx context.Context, cfg config.Config, o Options) (_ *Graph, err error) {
	log := o.Log
	reg := registry.New()
	store := postgres.NewStore(o.Pool)
	g := &Graph{Store: store, Registry: reg}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	wallet.UseNonces(&postgres.WalletNonces{Pool: o.Pool}) // the Wallet's nonces, one at a time across replicas
	if err := registerTools(reg, store); err != nil {
		return nil, err
	}
	boxes := sandboxProvider(cfg, log)
	public := cfg.PublicBaseURL
	if public == "" {
		public = "http://" + o.Addr
	}
	gh := github.New(cfg.GitHub, store, boxes, public, log) // its Box once the catalog has opened the key, below
	sec := &secrets.Service{Store: store}                   // likewise
	stopBrowsers, err := registerSandboxTools(reg, boxes, cfg, log, gh.ShellEnv, sec.SandboxEnv)
	if err != nil {
		return nil, err
	}
	g.close = append(g.close, stopBrowsers)
	scr := &scripts.Tools{Store: store, Sandboxes: boxes, SecretEnv: sec.SandboxEnv}
	if err := scr.Register(reg); err != nil {
		return nil, fmt.Errorf("register script tools: %w", err)
	}
	if o.Tools != nil {
		if err := o.Tools(reg); err != nil {
			return nil, err
		}
	}
	// One MCP client session pool for the process; closed (each session's DELETE sent) once the
	// API has finished its calls in flight.
	local := adapters.Local{Sandboxes: boxes, Log: log}
	caller := &connections.Caller{Store: store, Local: local, Drive: drive.Drive{Files: local.Workspace}, TTL: cfg.MCPListTTL, Log: log}
	pool := mcp.New(mcp.Config{Logger: log, IdleTimeout: cfg.MCPIdle, CallTimeout: cfg.MCPCallTimeout, CallMax: cfg.MCPCallMax,
		OnOpen: func(id string, t mcp.Transport) { caller.SessionOpened(id, string(t)) }})
	g.close = append(g.close, func() { _ = pool.Close() })
	caller.Client = mcp.Client{Pool: pool}
	cat, policy, err := catalogService(ctx, cfg, store, reg, log, caller)
	if err != nil {
		return nil, err
	}
	gh.Box, cat.GitHub = cat.Box, gh
	sec.Box = cat.Box
	if err := sec.Register(reg); err != nil {
		return nil, fmt.Errorf("register secret tools: %w", err)
	}
	web := &search.Tavily{Key: cfg.TavilyKey, BaseURL: cfg.TavilyBaseURL}
	if err := web.Register(reg); err != nil {
		return nil, err
	}
	ids := g.identity(ctx, cfg, o, store, cat.Box)
	g.approvals(ctx, cfg, o, store)
	gate := &github.Gate{Policy: policy, App: gh} // the bindings' offer and state, with GitHub's generation start
	g.Runs = &runs.Service{
		Scopes: store, Runs: store, Registry: reg,
		Offer:     gate,
		Dynamic:   scr,
		MCP:       caller,
		State:     gate,
		Secrets:   orchestrator.JoinSecrets(sec, web, connections.ConnectionSecrets{Store: store, Box: cat.Box}, gh, ids),
		Tokens:    ids,
		Approvals: g.Approvals,
		Log:       log,
		// Runs end: idle ones, and schedule-fired ones nobody picked up.
		Idle: cfg.RunIdle, Pickup: cfg.RunPickup, Messages: store,
	}
	g.Events = &events.Service{Store: store, Box: cat.Box, AllowPrivate: cfg.WebhookAllowPrivate, Log: log}
	g.Metrics = newMetrics(o.Pool, boxes)
	g.Runs.Observe = g.Metrics.observeCall
	files := sandbox.Workspace{Provider: boxes, UploadMax: cfg.UploadMax, ImportMax: cfg.ImportMax}
	app := &webapp.App{Log: log} // the operator app, mounted below: the provider callbacks land on its pages
	g.API = &httpapi.Server{Scopes: store, Runs: g.Runs, Bindings: cat, Artifacts: store, Files: files, Platform: store, Secrets: sec, GitHub: gh,
		SecretKeySource: o.KeySource, Integrations: cfg.Integrations, PublicBaseURL: cfg.PublicBaseURL,
		Sandbox: reporter(boxes), Health: health{db: o.Monitor, box: boxes}, Metrics: g.Metrics.handler(), OnError: g.Metrics.observeError, Log: log,
		Identity: ids, Accounts: store, Places: &identity.Places{Store: store}, Audit: g.Audit, SSO: singleSignOn(cfg, store, ids, log),
		Events: g.Events, Webhooks: g.Events, Approvals: g.Approvals, MCPSessionIdle: cfg.MCPSessionIdle, OAuthLanding: webapp.LoginPage,
		CallbackLanding: app.CallbackPage, GitHubPickerLanding: webapp.GitHubPickerPage}
	g.App = httpapi.New(g.API)
	g.watchRuns(ctx, o)
	// The operator app, on the API's listener at /: it calls the API in process, through the same
	// handler (and so the same guard) as any other client.
	app.Mount(g.App)
	app.API = webapp.API(g.App.Handler())
	return g, nil
}

// watchRuns follows the runs whose offer or status another replica (or this one) changed, until
// Close: the run service drops its cached snapshot, and the API tells its MCP sessions of the run.
func (g *Graph) watchRuns(ctx context.Context, o Options) {
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		postgres.Listener{Pool: o.Pool, Channel: postgres.RunsChannel, Log: o.Log}.Listen(bg, func(runID string) {
			g.Runs.RunChanged(runID)
			g.API.RunChanged(runID)
		}, func(bool) {})
	}()
	g.close = append(g.close, func() { stop(); <-done })
}

// identity builds who-is-calling: the identity service, kept in step with every replica's changes
// by the database's notices, and the audit log's writer. Both run until Close.
func (g *Graph) identity(ctx context.Context, cfg config.Config, o Options, store *postgres.Store, box *sealed.Box) *identity.Service {
	ids := &identity.Service{Store: store, Box: box, Bootstrap: cfg.AdminToken, SessionIdle: cfg.SessionIdle, SessionMax: cfg.SessionMax, Log: o.Log}
	g.Audit = &identity.Auditor{Store: store, Log: o.Log}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		ids.Watch(bg, postgres.Listener{Pool: o.Pool, Channel: postgres.IdentityChannel, Log: o.Log})
	}()
	go func() { defer wg.Done(); g.Audit.Run(bg, auditDrain) }()
	g.close = append(g.close, func() { stop(); wg.Wait() })
	return ids
}

// approvals builds the approvals that calls of Ask tools wait for, hearing the decisions every
// replica announces until Close.
func (g *Graph) approvals(ctx context.Context, cfg config.Config, o Options, store *postgres.Store) {
	g.Approvals = &approvals.Service{Store: store, Wait: cfg.ApprovalWait, Log: o.Log}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Approvals.Listen(bg, postgres.Listener{Pool: o.Pool, Channel: postgres.ApprovalsChannel, Log: o.Log})
	}()
	g.close = append(g.close, func() { g.Approvals.Stop(); stop(); <-done })
}

// auditDrain bounds how long a stop waits to write the audit rows still queued.
const auditDrain = 10 * time.Second

// health is what /readyz and the API's 503s ask: the database monitor and the sandbox backend.
type health struct {
	db  *postgres.Monitor
	box sandbox.Provider
}

// DatabaseErr returns the monitor's verdict.
func (h health) DatabaseErr(ctx context.Context, cause error) error { return h.db.Err(ctx, cause) }

// SandboxErr returns why the sandbox backend cannot run calls, nil when it can.
func (h health) SandboxErr() error {
	if u, ok := h.box.(sandbox.Unavailable); ok {
		return u.Err
	}
	return nil
}
