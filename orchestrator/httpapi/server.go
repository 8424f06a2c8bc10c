// Package httpapi is the orchestrator's operator REST API on gofiber v2: scopes, agents, runs and
// tool calls, the instance view, and the OpenAPI document. It is the one place error codes become
// HTTP statuses.
package httpapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

//go:embed openapi.json
var openapiDoc []byte

// Server holds what the handlers need; cmd sets the fields before New. A service left nil makes
// its routes answer 500 naming what is not configured.
type Server struct {
	Scopes    ScopeStore
	Runs      RunService     // runs and their tool calls
	Bindings  CatalogService // catalog, connections, bindings and access views
	Artifacts ArtifactStore  // collections, records, notes and memory
	Files     WorkspaceFiles // agents' workspace files, through their sandboxes
	Platform  PlatformStore  // issues inbox, secrets, schedules, group chat
	Secrets   SecretKeeper   // agent secrets (values never returned)
	GitHub    GitHubService  // the box's GitHub App; nil: its routes answer 500 and its callbacks go to the OAuth logins
	// Integrations is which integrations' variables the box has set, for the instance view.
	Integrations integrations.Set
	Sandbox      SandboxReporter   // the agents' sandboxes, for the instance view; nil: reported as none
	Health       Health            // whether the database and the sandbox backend can serve; nil: always
	Metrics      http.Handler      // GET /metrics (Prometheus text), behind the token; nil: no route
	OnError      func(code string) // told the code of every error answered (the metrics); nil: nothing
	// SecretKeySource says where GUILDS_SECRET_KEY came from, for the instance view (never the key):
	// environment, data_dir (kept by an earlier start) or generated (at this start); "": none.
	SecretKeySource string
	Log             *slog.Logger
	Now             func() time.Time

	Identity IdentityService     // resolves every request's principal; keeps accounts, sessions, tokens and keys
	Accounts AccountReader       // what the identity routes list
	Places   orchestrator.Placer // places the objects requests name, for the access decision
	Audit    Auditor             // the audit log's writer; nil writes none
	// OAuthLanding, when set, is where the OAuth callback sends the browser after a login that
	// completed (the operator app's page for it), instead of answering its own small page. The
	// path it returns must hold no code, token or verifier.
	OAuthLanding func(conn orchestrator.Connection) string
	// CallbackLanding, when set, is where a provider callback that connected nothing (a refused or
	// failed login, a GitHub install waiting for approval) sends the browser, given whether it
	// failed and the title and message its own small page would show (the operator app keeps them
	// and answers its page's path, which must hold neither).
	CallbackLanding func(failed bool, title, msg string) string
	// GitHubPickerLanding, when set, is where the GitHub callback sends the browser when the user
	// reaches several installations of the App: the operator app's picker for the Connect's state.
	GitHubPickerLanding func(state string) string
	// PublicBaseURL is PUBLIC_BASE_URL: the box's address in links it makes (invitations, the
	// single sign-on callback) and the base of the OAuth callback URL; "" the request's own.
	PublicBaseURL string
	SSO           SSOService // OpenID Connect single sign-on; nil: off (its routes answer 404)

	Events   EventStream    // the live stream's events; nil: GET /api/events answers 500
	Webhooks WebhookService // organisations' webhooks and their deliveries; nil: their routes answer 500
	// Approvals lists and decides the requests calls of Ask tools wait for; nil: its routes answer 500.
	Approvals ApprovalService
	// MCPSessionIdle is GUILDS_MCP_SESSION_IDLE: an MCP session without a request or an open
	// stream this long ends (a /mcp session closes its run); 0: DefaultMCPSessionIdle.
	MCPSessionIdle time.Duration

	door *frontDoor // the MCP sessions of this replica (frontdoor.go)
}

// RunService starts, reads and closes runs and carries their tool calls (runs.Service implements it).
type RunService interface {
	StartRun(ctx context.Context, agentID string, req runs.StartRequest) (orchestrator.Run, error)
	GetRun(ctx context.Context, id string) (orchestrator.Run, error)
	CloseRun(ctx context.Context, id, reason string) (orchestrator.Run, error)
	ListRuns(ctx context.Context, q orchestrator.RunQuery) ([]orchestrator.RunSummary, error)
	Call(ctx context.Context, runID string, req runs.CallRequest) (runs.CallResult, error)
	ListCalls(ctx context.Context, runID string, page orchestrator.CallPage) ([]orchestrator.ToolCall, error)
	NextGeneration(ctx context.Context, runID string) (runs.Generation, error)
	// Hints says what an offered tool is known to do (MCP's tool annotations).
	Hints(t orchestrator.OfferedTool) registry.Hints
}

// SandboxReporter says what isolation the agents' sandboxes have on this host (the sandbox
// providers implement it).
type SandboxReporter interface {
	Status() sandbox.Status
}

// Health says whether what the API stands on can serve (cmd's database monitor implements it).
type Health interface {
	// DatabaseErr returns nil while the database answers, else an EUNAVAILABLE error saying it is
	// down; a cause (a handler's internal error) makes it ask the database now and judge the cause.
	DatabaseErr(ctx context.Context, cause error) error
	// SandboxErr returns nil while the sandbox backend can run calls, else why not.
	SandboxErr() error
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

// BodyLimit is the largest request body the API reads; a larger one is a 413 naming it.
const BodyLimit = 8 << 20

// fiberConfig is the fiber app's configuration.
func (s *Server) fiberConfig() fiber.Config {
	return fiber.Config{
		AppName:               "guilds-orchestrator",
		DisableStartupMessage: true,
		Immutable:             true, // strings from a request outlive it (run ids key the call locks)
		ErrorHandler:          s.errorHandler,
		BodyLimit:             BodyLimit,
		// Bodies past BodyLimit reach the handlers as streams: the uploads read them as they come,
		// bodyCap holds every other route to BodyLimit. No multipart form is ever read ahead.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		JSONEncoder:                  marshalJSON,
		ReadTimeout:                  60 * time.Second,
		IdleTimeout:                  120 * time.Second,
	}
}

// New returns the fiber app with every route registered, each behind the guard that resolves the
// caller and decides with its roles (auth.go).
func New(s *Server) *fiber.App {
	app := fiber.New(s.fiberConfig())
	app.Server().HeaderReceived = refuseEarly
	s.door = newFrontDoor(s)
	app.Use(s.recoverAndLog, requestID, s.audit, s.bodyCap, refuseNUL)
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	app.Get("/readyz", s.readyz)
	s.route(app, "GET", "/metrics", "metrics", admin(), s.metrics())
	// The OAuth callbacks: the operator's browser carries no credential (the state is the key).
	s.route(app, "GET", oauthCallbackPath, "oauthCallback", public(), s.githubCallback) // the GitHub App's; any other goes on
	s.route(app, "GET", oauthCallbackPath, "oauthCallback", public(), s.oauthCallback)
	// The API's document holds no data.
	s.route(app, "GET", "/api/openapi.json", "openapi", public(), func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(openapiDoc)
	})

	api := app.Group("/api", s.available)
	org, guild, agent := orchestrator.ObjectOrg, orchestrator.ObjectGuild, orchestrator.ObjectAgent
	s.route(api, "GET", "/instance", "getInstance", instanceView(), s.instance)
	sc := s.serving(api, s.Scopes != nil, "the scope store")
	sc.add("POST", "/orgs", "createOrg", admin(), s.createOrg)
	sc.add("GET", "/orgs", "listOrgs", anyone(), s.listOrgs)
	sc.add("GET", "/orgs/:id", "getOrg", read(org).within(), s.getOrg)
	sc.add("PATCH", "/orgs/:id", "patchOrg", write(org), s.renameOrg)
	sc.add("POST", "/orgs/:id/guilds", "createGuild", write(org), s.createGuild)
	sc.add("GET", "/orgs/:id/guilds", "listGuilds", read(org).within(), s.listGuilds)
	sc.add("GET", "/guilds/:id", "getGuild", read(guild), s.getGuild)
	sc.add("PATCH", "/guilds/:id", "patchGuild", write(guild), s.renameGuild)
	sc.add("POST", "/guilds/:id/agents", "createAgent", write(guild), s.createAgent)
	sc.add("GET", "/guilds/:id/agents", "listAgents", read(guild), s.listAgents)
	sc.add("GET", "/agents/:id", "getAgent", agentRuntime(orchestrator.RoleViewer), s.getAgent)
	sc.add("PATCH", "/agents/:id", "patchAgent", write(agent), s.patchAgent)
	rs := s.serving(api, s.Runs != nil, "the run service")
	rs.add("POST", "/agents/:id/runs", "startRun", agentRuntime(orchestrator.RoleOperator), s.startRun)
	rs.add("GET", "/runs/:id", "getRun", readRun(), s.getRun)
	rs.add("POST", "/runs/:id/close", "closeRun", writeRun(), s.closeRun)
	rs.add("POST", "/runs/:id/calls", "callTool", writeRun(), s.call)
	rs.add("GET", "/runs/:id/calls", "listCalls", readRun(), s.listCalls)
	rs.add("GET", "/runs/:id/tools", "listRunTools", readRun(), s.runTools)
	// The MCP front door (frontdoor.go): the run as an MCP server, and /mcp, where an agent key's
	// session is a run of its agent.
	rs.add("POST", "/runs/:id/mcp", "mcpRunMessage", writeRun(), s.mcpPost(false))
	rs.add("GET", "/runs/:id/mcp", "mcpRunStream", writeRun(), s.mcpStream(false))
	rs.add("DELETE", "/runs/:id/mcp", "mcpRunEnd", writeRun(), s.mcpDelete(false))
	direct := s.serving(app.Group("/mcp", s.available), s.Runs != nil, "the run service")
	direct.add("POST", "", "mcpMessage", anyCaller(), s.mcpPost(true))
	direct.add("GET", "", "mcpStream", anyCaller(), s.mcpStream(true))
	direct.add("DELETE", "", "mcpEnd", anyCaller(), s.mcpDelete(true))
	s.runListRoutes(api)
	s.eventRoutes(api)
	s.catalogRoutes(api)
	s.githubRoutes(api)
	s.artifactRoutes(api)
	s.fileRoutes(api)
	s.platformRoutes(api)
	s.identityRoutes(api)
	s.ssoRoutes(api)
	s.approvalRoutes(api)
	// An unknown /api route answers 404 only to a caller with a credential: nobody maps the API
	// without one.
	api.Use(func(c *fiber.Ctx) error {
		if _, err := s.authenticate(c); err != nil {
			return err
		}
		return c.Next()
	})
	return app
}

// marshalJSON encodes answers without HTML escaping, so "<" and "&" in results stay readable.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// recoverAndLog turns a handler panic into a 500 JSON error and logs every request.
func (s *Server) recoverAndLog(c *fiber.Ctx) (err error) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			s.log().Error("handler panicked", "method", c.Method(), "path", c.Path(), "panic", p)
			err = s.errorHandler(c, orchestrator.Errorf(orchestrator.EINTERNAL, "internal error; the details are in the orchestrator log"))
		}
		status := c.Response().StatusCode()
		lvl := slog.LevelDebug
		if status >= 500 && status != http.StatusServiceUnavailable { // an outage is logged once, by the monitor
			lvl = slog.LevelWarn
		}
		s.log().Log(c.UserContext(), lvl, "request", "method", c.Method(), "route", c.Route().Path, "status", status, "ms", float64(time.Since(start).Microseconds())/1000)
	}()
	if err := c.Next(); err != nil {
		return s.errorHandler(c, err)
	}
	return nil
}

// metrics serves the Prometheus handler, or 404 when the server has none.
func (s *Server) metrics() fiber.Handler {
	if s.Metrics == nil {
		return func(*fiber.Ctx) error {
			return orchestrator.Errorf(orchestrator.ENOTFOUND, "metrics are not served by this server")
		}
	}
	return adaptor.HTTPHandler(s.Metrics)
}

// readyz answers 200 while the database and the sandbox backend can serve, 503 naming what cannot.
func (s *Server) readyz(c *fiber.Ctx) error {
	body := fiber.Map{"status": "ready", "database": "ok", "sandbox": "ok"}
	ready := true
	if s.Health != nil {
		if err := s.Health.DatabaseErr(c.UserContext(), errReadiness); err != nil {
			body["database"], ready = orchestrator.ErrorMessage(err), false
		}
		if err := s.Health.SandboxErr(); err != nil {
			body["sandbox"], ready = err.Error(), false
		}
	}
	if !ready {
		body["status"] = "unavailable"
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retryAfter))
		return c.Status(http.StatusServiceUnavailable).JSON(body)
	}
	return c.JSON(body)
}

// errReadiness is the cause /readyz gives: it asks the database now.
var errReadiness = errors.New("readiness probe")

// retryAfter is the Retry-After of a 503, in seconds.
const retryAfter = 2

// available answers 503 EUNAVAILABLE, doing nothing, while the database is known to be down (the
// API document excepted: it needs no database).
func (s *Server) available(c *fiber.Ctx) error {
	if s.Health != nil && c.Path() != "/api/openapi.json" {
		if err := s.Health.DatabaseErr(c.UserContext(), nil); err != nil {
			return err
		}
	}
	return c.Next()
}
