package bindings

import (
	"context"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Store is the persistence the bindings work needs; postgres.Store implements it.
type Store interface {
	orchestrator.ChainReader

	// SeedPlatformBindings writes an enabled platform row for each native tool that has none.
	SeedPlatformBindings(ctx context.Context, tools []string, now time.Time) error
	ListServers(ctx context.Context, publishedOnly bool) ([]orchestrator.MCPServer, error)
	// GetAgent reads an agent, for the access views' config.
	GetAgent(ctx context.Context, id string) (orchestrator.Agent, error)
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
