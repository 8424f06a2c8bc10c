package lifecycle

import (
	"context"

	"github.com/guildsai/guilds/orchestrator"
)

// GitHubApp is the box's GitHub App (connectors/github implements it); nil: Connect of GitHub is
// refused as not offered.
type GitHubApp interface {
	// SetupState is oauth_setup_state for GitHub: configured, or unsupported when a variable is
	// missing or does not parse.
	SetupState() string
	// BeginLogin creates (or retries) the pending login at owner and returns where the operator's
	// browser goes: the App's install page, or user authorization once the organisation has a login.
	BeginLogin(ctx context.Context, owner orchestrator.Chain) (orchestrator.Connection, string, error)
	// Selection returns a login's selected repositories (none: nil).
	Selection(ctx context.Context, connectionID string) ([]orchestrator.GitHubRepo, error)
}

// connectGitHub starts the GitHub App's Connect at an org, guild or agent.
func (s *Service) connectGitHub(ctx context.Context, srv orchestrator.MCPServer, req ConnectRequest) (Login, error) {
	if req.Scope == orchestrator.ScopePlatform {
		return Login{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "platform-scope Connect is reserved; connect %s at an org, guild or agent", srv.Name)
	}
	if len(req.Credentials) > 0 || len(req.PinnedPrices.Coins) > 0 {
		return Login{}, orchestrator.Errorf(orchestrator.EINVALID, "%s takes no credentials or settings: it connects by installing the box's GitHub App; send only server, scope and scope_id", srv.Name)
	}
	owner, err := s.chain(ctx, req.Scope, req.ScopeID)
	if err != nil {
		return Login{}, err
	}
	conn, u, err := s.GitHub.BeginLogin(ctx, owner)
	if err != nil {
		return Login{}, err
	}
	return Login{Connection: conn, AuthorizationURL: u}, nil
}

// GitHubRepositories returns the repositories a GitHub login picked (none, or no App: nil).
func (s *Service) GitHubRepositories(ctx context.Context, connectionID string) ([]orchestrator.GitHubRepo, error) {
	if s.GitHub == nil {
		return nil, nil
	}
	return s.GitHub.Selection(ctx, connectionID)
}
