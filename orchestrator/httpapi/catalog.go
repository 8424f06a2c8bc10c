package httpapi

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/identity"
)

// catalogRoutes registers the catalog, connection, binding and access routes, and the run
// generation route whose offer refresh they drive.
func (s *Server) catalogRoutes(api fiber.Router) {
	conn := orchestrator.ObjectConnection
	g := s.serving(api, s.Bindings != nil, "the catalog and bindings service")
	g.add("GET", "/mcp/servers", "listMcpServers", anyone(), s.listServers(false))
	g.add("GET", "/admin/mcp/servers", "adminListMcpServers", admin(), s.listServers(true))
	g.add("POST", "/admin/mcp/servers", "createMcpServer", admin(), s.createServer)
	g.add("PATCH", "/admin/mcp/servers/:slug", "patchMcpServer", admin(), s.patchServer)
	g.add("PATCH", "/admin/mcp/servers/:slug/tools/:name", "patchMcpCatalogTool", admin(), s.patchTool)
	g.add("POST", "/mcp/connections", "connectMcp", anyone(), s.connect) // the body names the owner: decided in the handler
	g.add("GET", "/mcp/connections", "listMcpConnections", anyone(), s.listConnections)
	g.add("GET", "/mcp/connections/:id", "getMcpConnection", read(conn).within(), s.getConnection)
	g.add("DELETE", "/mcp/connections/:id", "deleteMcpConnection", write(conn), s.deleteConnection)
	g.add("GET", "/mcp/connections/:id/tools", "listMcpConnectionTools", read(conn).within(), s.connectionTools)
	g.add("POST", "/mcp/connections/:id/refresh", "refreshMcpConnection", write(conn), s.refreshConnection)
	g.add("POST", "/mcp/connections/:id/call", "testMcpCall", write(conn).within(), s.testCall)
	g.add("POST", "/mcp/pinned-prices/search", "searchPinnedCoins", operatorSomewhere(), s.searchCoins) // part of Connect's credential form
	g.add("GET", "/mcp/connections/:id/pinned-prices/search", "searchConnectionPinnedCoins", read(conn).within(), s.searchConnectionCoins)
	g.add("PUT", "/mcp/connections/:id/pinned-prices", "putPinnedCoins", write(conn), s.pinCoins)
	g.add("GET", "/mcp/connections/:id/drive/folders", "listDriveFolders", write(conn), s.driveFolders)
	g.add("PUT", "/mcp/connections/:id/drive/folder", "pickDriveFolder", write(conn), s.pickDriveFolder)
	g.add("PUT", "/bindings", "putBinding", anyone(), s.putBinding) // the body names the scope: decided in the handler
	g.add("DELETE", "/bindings", "deleteBinding", anyone(), s.deleteBinding)
	g.add("GET", "/bindings", "listBindings", anyone(), s.listBindings) // the query names the scope
	g.add("GET", "/orgs/:id/tools", "accessOrganisationTools", read(orchestrator.ObjectOrg), s.access(orchestrator.ScopeOrg))
	g.add("GET", "/guilds/:id/tools", "accessGuildTools", read(orchestrator.ObjectGuild), s.access(orchestrator.ScopeGuild))
	g.add("GET", "/agents/:id/tools", "accessAgentTools", read(orchestrator.ObjectAgent), s.access(orchestrator.ScopeAgent))
	s.serving(api, s.Runs != nil, "the run service").add("POST", "/runs/:id/generations", "nextGeneration", writeRun(), s.nextGeneration)
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
	DriveService
}

// listServers lists the catalog's servers: the published ones, or every one for the admin view.
func (s *Server) listServers(all bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		b := s.Bindings
		servers, err := b.ListServers(c.UserContext(), all)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"servers": servers})
	}
}

func (s *Server) patchServer(c *fiber.Ctx) error {
	b := s.Bindings
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
	b := s.Bindings
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
	b := s.Bindings
	var req lifecycle.ConnectRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if _, err := s.authorizeScope(c, req.Scope, req.ScopeID, orchestrator.RoleOperator); err != nil {
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
	b := s.Bindings
	if scope := c.Query("scope"); scope != "" { // the logins seen at that scope or under it, as unfiltered
		if !slices.Contains(orchestrator.Scopes, scope) {
			return orchestrator.Errorf(orchestrator.EINVALID, "scope must be platform, org, guild or agent, got %q", clipID(scope))
		}
		if _, err := s.authorize(c, scope, c.Query("scope_id"), identity.Need{Role: orchestrator.RoleViewer, Within: true}); err != nil {
			return err
		}
	}
	conns, err := b.ListConnections(c.UserContext(), c.Query("scope"), c.Query("scope_id"))
	if err != nil {
		return err
	}
	p := principalOf(c) // the logins the caller may see: those it could bind at a scope it reaches
	return c.JSON(fiber.Map{"connections": keep(conns, func(cn orchestrator.Connection) bool {
		return p.May(identity.Target{Chain: cn.Owner()}, identity.Need{Role: orchestrator.RoleViewer, Within: true}) == nil
	})})
}

func (s *Server) getConnection(c *fiber.Ctx) error {
	b := s.Bindings
	conn, err := b.GetConnection(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(conn)
}

func (s *Server) deleteConnection(c *fiber.Ctx) error {
	b := s.Bindings
	if err := b.DeleteConnection(c.UserContext(), c.Params("id")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"deleted": c.Params("id")})
}

func (s *Server) connectionTools(c *fiber.Ctx) error {
	b := s.Bindings
	tools, err := b.ConnectionTools(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"tools": tools})
}

func (s *Server) putBinding(c *fiber.Ctx) error {
	b := s.Bindings
	var req bindings.BindingRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if _, err := s.authorizeScope(c, req.Scope, req.ScopeID, orchestrator.RoleOperator); err != nil {
		return err
	}
	row, err := b.PutBinding(c.UserContext(), req)
	if err != nil {
		return err
	}
	return c.JSON(row)
}

func (s *Server) deleteBinding(c *fiber.Ctx) error {
	b := s.Bindings
	var req bindings.BindingRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if _, err := s.authorizeScope(c, req.Scope, req.ScopeID, orchestrator.RoleOperator); err != nil {
		return err
	}
	if err := b.DeleteBinding(c.UserContext(), req); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"deleted": true, "scope": req.Scope, "scope_id": req.ScopeID, "catalog_kind": req.CatalogKind, "catalog_id": req.CatalogID})
}

func (s *Server) listBindings(c *fiber.Ctx) error {
	b := s.Bindings
	if _, err := s.authorizeScope(c, c.Query("scope"), c.Query("scope_id"), orchestrator.RoleViewer); err != nil {
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
		b := s.Bindings
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
	rs := s.Runs
	gen, err := rs.NextGeneration(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	s.door.offerChanged(gen.Run) // this replica's MCP sessions of the run hear list_changed
	return c.JSON(fiber.Map{"run": viewRun(gen.Run), "dropped_tools": gen.Dropped})
}

func (s *Server) createServer(c *fiber.Ctx) error {
	b := s.Bindings
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
	b := s.Bindings
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
	b := s.Bindings
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
	b := s.Bindings
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
	b := s.Bindings
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
	b := s.Bindings
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
