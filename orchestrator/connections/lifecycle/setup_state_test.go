package lifecycle_test

import (
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/integrations"
)

// TestSetupState: oauth_setup_state by server kind, auth and the box's variables.
func TestSetupState(t *testing.T) {
	google := map[string]string{"GMAIL_OAUTH_CLIENT_ID": "id", "GMAIL_OAUTH_CLIENT_SECRET": "secret"}
	cases := []struct {
		srv  orchestrator.MCPServer
		env  map[string]string
		want string
	}{
		{orchestrator.MCPServer{Slug: "cigale", Kind: orchestrator.ServerRemote, Auth: orchestrator.AuthToken}, nil, lifecycle.SetupNotApplicable},
		{orchestrator.MCPServer{Slug: "open", Kind: orchestrator.ServerRemote, Auth: orchestrator.AuthNone}, nil, lifecycle.SetupNotApplicable},
		{orchestrator.MCPServer{Slug: "notion", Kind: orchestrator.ServerRemote, Auth: orchestrator.AuthOAuth}, nil, lifecycle.SetupDynamic},
		{orchestrator.MCPServer{Slug: "acme-docs", Kind: orchestrator.ServerRemote, Auth: orchestrator.AuthOAuth, Custom: true}, nil, lifecycle.SetupDynamic},
		{orchestrator.MCPServer{Slug: "drive", Kind: orchestrator.ServerRemote, Auth: orchestrator.AuthOAuth}, nil, lifecycle.SetupUnsupported},
		{orchestrator.MCPServer{Slug: "gmail", Kind: orchestrator.ServerLocal, Auth: orchestrator.AuthOAuth}, map[string]string{"GMAIL_OAUTH_CLIENT_ID": "id"}, lifecycle.SetupUnsupported},
		{orchestrator.MCPServer{Slug: "gmail", Kind: orchestrator.ServerLocal, Auth: orchestrator.AuthOAuth}, google, lifecycle.SetupConfigured},
		{orchestrator.MCPServer{Slug: "drive", Kind: orchestrator.ServerRemote, Auth: orchestrator.AuthOAuth}, google, lifecycle.SetupConfigured},
	}
	for _, tc := range cases {
		s := &lifecycle.Service{Integrations: integrations.SetOf(tc.env)}
		if got := s.SetupState(tc.srv); got != tc.want {
			t.Errorf("%s with %d variables: %s, want %s", tc.srv.Slug, len(tc.env), got, tc.want)
		}
	}
}
