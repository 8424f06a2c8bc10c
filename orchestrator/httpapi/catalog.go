package httpapi

import (
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
)

// catalogRoutes registers the catalog, connection, binding and access routes, and the run
// generation route whose offer refresh they drive.
func (s *Server) catalogRoutes(api fiber.Router) {
	api.Get("/mcp/servers", s.listServers(false))
	api.Get("/admin/mcp/servers", s.listServers(true))
	api.Post("/admin/mcp/servers", s.createServer)
	api.Patch("/admin/mcp/servers/:slug", s.patchServer)
	api.Patch("/admin/mcp/servers/:slug/tools/:name", s.patchTool)
	api.Post("/mcp/connections", s.connect)
	api.Get("/mcp/connections", s.listConnections)
	api.Get("/mcp/connections/:id", s.getConnection)
	api.Delete("/mcp/connections/:id", s.deleteConnection)
	api.Get("/mcp/connections/:id/tools", s.connectionTools)
	api.Post("/mcp/connections/:id/refresh", s.refreshConnection)
	api.Post("/mcp/connections/:id/call", s.testCall)
	api.Post("/mcp/pinned-prices/search", s.searchCoins)
	api.Get("/mcp/connections/:id/pinned-prices/search", s.searchConnectionCoins)
	api.Put("/mcp/connections/:id/pinned-prices", s.pinCoins)
	api.Put("/bindings", s.putBinding)
	api.Delete("/bindings", s.deleteBinding)
	api.Get("/bindings", s.listBindings)
	api.Get("/orgs/:id/tools", s.access(orchestrator.ScopeOrg))
	api.Get("/guilds/:id/tools", s.access(orchestrator.ScopeGuild))
	api.Get("/agents/:id/tools", s.access(orchestrator.ScopeAgent))
	api.Post("/runs/:id/generations", s.nextGeneration)
}

// CatalogService is what the catalog, connection, binding and access routes read and change
// (bindings.Service implements it, with the connections' lifecycle.Service it carries).
type CatalogService interface {
	ListServers(ctx context.Context, all bool) ([]orchestrator.MCPServer, error)
	PatchServer(ctx context.Context, slug string, p orchestrator.ServerPatch) (orchestrator.MCPServer, error)
	CreateServer(ctx context.Context, req catalog.CustomRequest) (orchestrator.MCPServer, error)
	RefreshConnection(ctx context.Context, id string) (orchestrator.ListingDiff, error)
	TestCall(ctx context.Context, id, name string, args json.RawMessage) (connections.TestResult, error)
	PatchTool(ctx context.Context, slug, name string, p orchestrator.ToolPatch) (orchestrator.MCPServer, error)
	ConnectLogin(ctx context.Context, req lifecycle.ConnectRequest) (lifecycle.Login, error)
	OAuthCallback(ctx context.Context, q lifecycle.OAuthCallbackQuery) (orchestrator.Connection, error)
	ListConnections(ctx context.Context, scope, id string) ([]orchestrator.Connection, error)
	GetConnection(ctx context.Context, id string) (orchestrator.Connection, error)
	ConnectionTools(ctx context.Context, id string) ([]orchestrator.ListedTool, error)
	DeleteConnection(ctx context.Context, id string) error
	PutBinding(ctx context.Context, req bindings.BindingRequest) (orchestrator.Binding, error)
	DeleteBinding(ctx context.Context, req bindings.BindingRequest) error
	ListBindings(ctx context.Context, scope, id string) ([]orchestrator.Binding, error)
	Access(ctx context.Context, scope, id string) (bindings.Access, error)
	SearchCoins(ctx context.Context, apiKey, q string) ([]orchestrator.Coin, error)
	SearchConnectionCoins(ctx context.Context, id, q string) ([]orchestrator.Coin, error)
	PinCoins(ctx context.Context, id string, coins []orchestrator.Coin) (orchestrator.Connection, error)
}

// catalog returns the bindings service, or an error when the server was built without one.
func (s *Server) catalog() (CatalogService, error) {
	if s.Bindings == nil {
		return nil, orchestrator.Errorf(orchestrator.EINTERNAL, "the catalog and bindings service is not configured on this server")
	}
	return s.Bindings, nil
}

// listServers lists the catalog's servers: the published ones, or every one for the admin view.
func (s *Server) listServers(all bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		b, err := s.catalog()
		if err != nil {
			return err
		}
		servers, err := b.ListServers(c.UserContext(), all)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"servers": servers})
	}
}

func (s *Server) patchServer(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var p orchestrator.ServerPatch
	if err := decode(c, &p); err != nil {
		return err
	}
	srv, err := b.PatchServer(c.UserContext(), c.Params("slug"), p)
	if err != nil {
		return err
	}
	return c.JSON(srv)
}

func (s *Server) patchTool(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var p orchestrator.ToolPatch
	if err := decode(c, &p); err != nil {
		return err
	}
	srv, err := b.PatchTool(c.UserContext(), c.Params("slug"), c.Params("name"), p)
	if err != nil {
		return err
	}
	return c.JSON(srv)
}

func (s *Server) connect(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var req lifecycle.ConnectRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	req.CallbackURL = s.callbackURL(c)
	l, err := b.ConnectLogin(c.UserContext(), req)
	if err != nil {
		return err
	}
	if l.AuthorizationURL != "" {
		return c.Status(fiber.StatusCreated).JSON(l) // a browser login: {connection, authorization_url}
	}
	return c.Status(fiber.StatusCreated).JSON(l.Connection)
}

func (s *Server) listConnections(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	conns, err := b.ListConnections(c.UserContext(), c.Query("scope"), c.Query("scope_id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"connections": conns})
}

func (s *Server) getConnection(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	conn, err := b.GetConnection(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(conn)
}

func (s *Server) deleteConnection(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	if err := b.DeleteConnection(c.UserContext(), c.Params("id")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"deleted": c.Params("id")})
}

func (s *Server) connectionTools(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	tools, err := b.ConnectionTools(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"tools": tools})
}

func (s *Server) putBinding(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var req bindings.BindingRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	row, err := b.PutBinding(c.UserContext(), req)
	if err != nil {
		return err
	}
	return c.JSON(row)
}

func (s *Server) deleteBinding(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var req bindings.BindingRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := b.DeleteBinding(c.UserContext(), req); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"deleted": true, "scope": req.Scope, "scope_id": req.ScopeID, "catalog_kind": req.CatalogKind, "catalog_id": req.CatalogID})
}

func (s *Server) listBindings(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	rows, err := b.ListBindings(c.UserContext(), c.Query("scope"), c.Query("scope_id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"bindings": rows})
}

// access answers GET /api/{orgs,guilds,agents}/{id}/tools.
func (s *Server) access(scope string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		b, err := s.catalog()
		if err != nil {
			return err
		}
		if err := requireID(scope, c.Params("id")); err != nil {
			return err
		}
		view, err := b.Access(c.UserContext(), scope, c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(view)
	}
}

func (s *Server) nextGeneration(c *fiber.Ctx) error {
	rs, err := s.runService()
	if err != nil {
		return err
	}
	gen, err := rs.NextGeneration(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"run": viewRun(gen.Run), "dropped_tools": gen.Dropped})
}

func (s *Server) createServer(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var req catalog.CustomRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	srv, err := b.CreateServer(c.UserContext(), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(srv)
}

// refreshConnection answers POST /api/mcp/connections/:id/refresh: the relist's diff.
func (s *Server) refreshConnection(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	diff, err := b.RefreshConnection(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(diff)
}

// testCallRequest is the body of POST /api/mcp/connections/:id/call.
type testCallRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (s *Server) testCall(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var req testCallRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return orchestrator.Errorf(orchestrator.EINVALID, "name is required: the tool as the model sees it, {slug}_{name}")
	}
	res, err := b.TestCall(c.UserContext(), c.Params("id"), req.Name, req.Arguments)
	if err != nil {
		return err
	}
	return c.JSON(res)
}

// searchCoinsRequest is the body of POST /api/mcp/pinned-prices/search: the coin picker before Connect.
type searchCoinsRequest struct {
	APIKey string `json:"api_key"`
	Q      string `json:"q"`
}

// coinsAnswer is the coin picker's answer.
type coinsAnswer struct {
	Coins []orchestrator.Coin `json:"coins"`
}

func (s *Server) searchCoins(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var req searchCoinsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	coins, err := b.SearchCoins(c.UserContext(), req.APIKey, req.Q)
	if err != nil {
		return err
	}
	return c.JSON(coinsAnswer{Coins: nonNilCoins(coins)})
}

func (s *Server) searchConnectionCoins(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	coins, err := b.SearchConnectionCoins(c.UserContext(), c.Params("id"), c.Query("q"))
	if err != nil {
		return err
	}
	return c.JSON(coinsAnswer{Coins: nonNilCoins(coins)})
}

// pinCoinsRequest is the body of PUT /api/mcp/connections/:id/pinned-prices.
type pinCoinsRequest struct {
	Coins []orchestrator.Coin `json:"coins"`
}

func (s *Server) pinCoins(c *fiber.Ctx) error {
	b, err := s.catalog()
	if err != nil {
		return err
	}
	var req pinCoinsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	conn, err := b.PinCoins(c.UserContext(), c.Params("id"), req.Coins)
	if err != nil {
		return err
	}
	return c.JSON(conn)
}

// nonNilCoins answers an empty list as [].
func nonNilCoins(c []orchestrator.Coin) []orchestrator.Coin {
	if c == nil {
		return []orchestrator.Coin{}
	}
	return c
}
