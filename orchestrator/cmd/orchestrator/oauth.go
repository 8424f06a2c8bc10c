package main

import (
	"log/slog"

	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// oauthLogins wires browser OAuth logins (Notion, Sentry, custom auth: oauth servers): the OAuth
// client of connectors/oauth over the store's logins and the box that seals their tokens.
func oauthLogins(store *postgres.Store, box *sealed.Box, log *slog.Logger) *bindings.OAuth {
	return &bindings.OAuth{Store: store, Box: box, Protocol: &oauth.Client{}, Log: log}
}
