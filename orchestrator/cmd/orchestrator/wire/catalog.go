package wire

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// catalogService wires the catalog, connections and bindings: it loads the manifests, reseeds the
// catalog and the platform bindings, and returns the service and the run offer policy. Both reach
// a connection's tools through caller, whose Box and OAuth logins it sets (the key opened here).
func catalogService(ctx context.Context, cfg config.Config, store *postgres.Store, reg *registry.Registry, log *slog.Logger,
	caller *connections.Caller) (*bindings.Service, *bindings.Policy, error) {
	manifests, err := catalog.Load()
	if err != nil {
		return nil, nil, err
	}
	var box *sealed.Box
	if cfg.SecretKey != "" {
		if box, err = sealed.FromString(cfg.SecretKey); err != nil {
			return nil, nil, err
		}
	} else {
		log.Warn(sealed.KeyVar + " is not set: connections cannot store credentials, so Connect answers an error; set it (openssl rand -base64 32)")
	}
	// Browser OAuth logins (Notion, Sentry, custom auth: oauth servers): the OAuth client of
	// connectors/oauth over the store's logins and the box that seals their tokens.
	caller.Box, caller.OAuth = box, &connections.OAuth{Store: store, Box: box, Protocol: &oauth.Client{}, Log: log}
	policy := &bindings.Policy{Store: store, Rules: runs.DefaultOffer{Integrations: cfg.Integrations}, Caller: caller, Log: log}
	conns := &lifecycle.Service{Store: store, Manifests: manifests, Box: box, Caller: caller, Integrations: cfg.Integrations,
		Google: lifecycle.GoogleClient{ID: cfg.GoogleClientID, Secret: cfg.GoogleClientSecret}, Log: log}
	svc := &bindings.Service{Service: conns, Store: store, Registry: reg, Policy: policy, Log: log}
	if err := svc.Seed(ctx); err != nil {
		return nil, nil, fmt.Errorf("seed: %w", err)
	}
	return svc, policy, nil
}
