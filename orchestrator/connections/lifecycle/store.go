package lifecycle

import (
	"context"
	"encoding/json"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Store is the persistence of the catalog and connection operations; postgres.Store implements it.
type Store interface {
	orchestrator.ChainReader

	// SeedCatalog upserts the manifests' servers and published tools, leaving rows an admin
	// edited (copy_source=admin) as they are.
	SeedCatalog(ctx context.Context, servers []orchestrator.MCPServer, now time.Time) error
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
	// DeleteConnection deletes a connection, its listed tools and the bindings that point at it.
	DeleteConnection(ctx context.Context, id string) error
	ListedTools(ctx context.Context, connectionID string) ([]orchestrator.ListedTool, error)
	// SetConnectionSettings replaces a connection's connector settings (Pinned prices' coins).
	SetConnectionSettings(ctx context.Context, id string, settings json.RawMessage, now time.Time) (orchestrator.Connection, error)
}
