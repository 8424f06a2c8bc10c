package bindings

import (
	"context"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Store is the persistence the bindings work needs; postgres.Store implements it.
type Store interface {
	// ScopeChain places a scope: its organisation, guild and agent. A missing one is ENOTFOUND.
	ScopeChain(ctx context.Context, scope, id string) (orchestrator.Chain, error)

	// SeedCatalog upserts the manifests' servers and published tools, leaving rows an admin
	// edited (copy_source=admin) as they are.
	SeedCatalog(ctx context.Context, servers []orchestrator.MCPServer, now time.Time) error
	// SeedPlatformBindings writes an enabled platform row for each native tool that has none.
	SeedPlatformBindings(ctx context.Context, tools []string, now time.Time) error
	ListServers(ctx context.Context, publishedOnly bool) ([]orchestrator.MCPServer, error)
	GetServer(ctx context.Context, slug string) (orchestrator.MCPServer, error)
	// PatchServer applies an admin edit and marks the server copy_source=admin.
	PatchServer(ctx context.Context, slug string, p orchestrator.ServerPatch, now time.Time) (orchestrator.MCPServer, error)
	// CreateServer adds an admin's custom server; a slug already in the catalog is ECONFLICT.
	CreateServer(ctx context.Context, srv orchestrator.MCPServer, now time.Time) (orchestrator.MCPServer, error)
	// PatchTool applies an admin edit to one catalog tool and marks it copy_source=admin.
	PatchTool(ctx context.Context, slug, name string, p orchestrator.ToolPatch, now time.Time) (orchestrator.MCPServer, error)

	// Connect stores a successful token Connect (see orchestrator.ConnectWrite). A connected
	// login of the same server at the same owner is ECONFLICT.
	Connect(ctx context.Context, w orchestrator.ConnectWrite) (orchestrator.Connection, error)
	// ListConnections lists connections owned at a scope, or every connection when scope is "".
	ListConnections(ctx context.Context, scope, scopeID string) ([]orchestrator.Connection, error)
	GetConnection(ctx context.Context, id string) (orchestrator.Connection, error)
	// SetConnectionStatus changes a connection's status (a refresh that fails marks it disconnected).
	SetConnectionStatus(ctx context.Context, id, status string, now time.Time) (orchestrator.Connection, error)
	// DeleteConnection deletes a connection, its listed tools and the bindings that point at it.
	DeleteConnection(ctx context.Context, id string) error
	ListedTools(ctx context.Context, connectionID string) ([]orchestrator.ListedTool, error)
	// ConnectionsListing returns the connections that list the namespaced tool name.
	ConnectionsListing(ctx context.Context, name string) ([]orchestrator.Connection, error)

	// PutBinding writes one row at the chain's own scope (insert or replace).
	PutBinding(ctx context.Context, at orchestrator.Chain, b orchestrator.Binding) (orchestrator.Binding, error)
	// DeleteBinding removes one row; none is ENOTFOUND.
	DeleteBinding(ctx context.Context, at orchestrator.Chain, kind, id string) error
	ListBindings(ctx context.Context, at orchestrator.Chain) ([]orchestrator.Binding, error)
	// Resolution reads the chain's binding rows and the connections they name, in one round trip.
	Resolution(ctx context.Context, chain orchestrator.Chain) (orchestrator.Resolution, error)
}
