package httpapi

import (
	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// instanceIntegration is one integration in GET /api/instance.
type instanceIntegration struct {
	Name       string             `json:"name"`
	State      integrations.State `json:"state"`
	Summary    string             `json:"switches_on_summary"`
	Variables  []instanceVariable `json:"variables"`
	Providers  []string           `json:"providers"`
	Tools      []string           `json:"tools"`
	Connectors []string           `json:"connectors"`
}

type instanceVariable struct {
	Name     string `json:"name"`
	Set      bool   `json:"set"`
	Required bool   `json:"required"`
}

// AuthMode is what GET /api/instance reports: operators sign in with accounts (sessions, API
// tokens, single sign-on when it is set), runtimes hold agent keys and run tokens, and the
// bootstrap GUILDS_ADMIN_TOKEN still works.
const AuthMode = "accounts"

// instance reports the auth mode (and whether single sign-on is on), each integration's state (never a variable's value), the
// isolation the agents' sandboxes have on this host, and where the secret key came from.
func (s *Server) instance(c *fiber.Ctx) error {
	out := []instanceIntegration{}
	for _, st := range integrations.Evaluate(s.Integrations) {
		ii := instanceIntegration{Name: st.Name, State: st.State, Summary: st.Summary,
			Providers: nonNil(st.Providers), Tools: nonNil(st.Tools), Connectors: nonNil(st.Connectors), Variables: []instanceVariable{}}
		for _, v := range st.Variables {
			ii.Variables = append(ii.Variables, instanceVariable{Name: v.Name, Set: v.Set, Required: v.Required})
		}
		out = append(out, ii)
	}
	box := sandbox.Status{Backend: "none", Missing: []string{"no sandbox: code and browser tools are not available"}}
	if s.Sandbox != nil {
		box = s.Sandbox.Status()
	}
	if box.Missing == nil {
		box.Missing = []string{}
	}
	key := s.SecretKeySource
	if key == "" {
		key = "none"
	}
	return c.JSON(fiber.Map{"auth_mode": AuthMode, "sso": s.SSO != nil, "integrations": out, "sandbox": box, "secret_key": fiber.Map{"source": key}})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
