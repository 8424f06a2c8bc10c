package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// catalogService wires the catalog, connections and bindings: it loads the manifests, reseeds the
// catalog and the platform bindings, and returns the service and the run offer policy, both
// reaching remote MCP servers through client (relisting stored lists older than listTTL) and the
// local API adapters through local.
func catalogService(ctx context.Context, cfg config.Config, store *postgres.Store, reg *registry.Registry, log *slog.Logger,
	client bindings.MCPClient, local bindings.LocalAdapters, listTTL time.Duration) (*bindings.Service, *bindings.Policy, error) {
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
	remote := &bindings.Remote{Store: store, Box: box, Client: client, Local: local, TTL: listTTL, Log: log, OAuth: oauthLogins(store, box, log), Drive: driveAPI(local)}
	policy := &bindings.Policy{Store: store, Rules: runs.DefaultOffer{Getenv: cfg.Getenv}, Remote: remote, Log: log}
	svc := &bindings.Service{Store: store, Registry: reg, Manifests: manifests, Box: box, Policy: policy, Remote: remote, Getenv: cfg.Getenv, Log: log}
	if err := svc.Seed(ctx); err != nil {
		return nil, nil, fmt.Errorf("seed: %w", err)
	}
	return svc, policy, nil
}
