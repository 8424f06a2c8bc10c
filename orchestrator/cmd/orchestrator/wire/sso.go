package wire

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
)

// ssoTimeout bounds each request to the OpenID provider (discovery, keys, token, userinfo).
const ssoTimeout = 30 * time.Second

// singleSignOn builds OpenID Connect single sign-on when GUILDS_OIDC_ISSUER, GUILDS_OIDC_CLIENT_ID
// and GUILDS_OIDC_CLIENT_SECRET are set (config.Load checked them); nil, off, otherwise. The
// provider is discovered at the first sign-in, so a provider that is down does not stop a start.
func singleSignOn(cfg config.Config, store *postgres.Store, ids *identity.Service, log *slog.Logger) httpapi.SSOService {
	if !cfg.OIDC.Enabled() {
		return nil
	}
	log.Info("single sign-on is on: register PUBLIC_BASE_URL + /api/sessions/oidc/callback as the client's redirect URI at the provider",
		"issuer", cfg.OIDC.Issuer, "client_id", cfg.OIDC.ClientID)
	return &identity.SSO{Identity: ids, States: store, Config: cfg.OIDC, HTTP: &http.Client{Timeout: ssoTimeout}}
}
