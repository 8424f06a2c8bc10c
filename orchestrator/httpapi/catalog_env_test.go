package httpapi_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/connectors/mcp"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// catalogFor wires the bindings service and offer policy the way serve does, over a generated
// GUILDS_SECRET_KEY: it seeds the catalog and the platform bindings, and also enables the test
// tools of binding families at the platform, so they are offered as a seed tool would be.
func catalogFor(t testing.TB, store *postgres.Store, reg *registry.Registry, set integrations.Set, log *slog.Logger) (*bindings.Service, *bindings.Policy) {
	t.Helper()
	manifests, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	pool := mcp.New(mcp.Config{Logger: log})
	t.Cleanup(func() { pool.Close() })
	caller := &connections.Caller{Store: store, Box: box, Client: mcp.Client{Pool: pool}, Log: log}
	policy := &bindings.Policy{Store: store, Rules: runs.DefaultOffer{Integrations: set}, Caller: caller, Log: log}
	svc := &bindings.Service{Service: &lifecycle.Service{Store: store, Manifests: manifests, Box: box, Caller: caller, Integrations: set, Log: log},
		Store: store, Registry: reg, Policy: policy, Log: log}
	ctx := context.Background()
	if err := svc.Seed(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range reg.List() {
		if catalog.IsBindingFamily(tool.Family) {
			names = append(names, tool.Name)
		}
	}
	if err := store.SeedPlatformBindings(ctx, names, time.Now()); err != nil {
		t.Fatal(err)
	}
	return svc, policy
}
