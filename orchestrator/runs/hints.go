package runs

import (
	"sync"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Hints says what an offered tool is known to do (MCP's tool annotations): a native tool's from
// its registry family and name (registry.NativeHints); a connector tool's from its remote name and
// whether the seeded catalog lists it Off until enabled (registry.ConnectorHints); nothing for an
// agent's own script tools, which run whatever code the agent wrote.
func (s *Service) Hints(t orchestrator.OfferedTool) registry.Hints {
	if t.ConnectionID != "" {
		return registry.ConnectorHints(t.RemoteName, seededOff(t.Server, t.RemoteName))
	}
	if tool, ok := s.Registry.Get(t.Name); ok {
		return registry.NativeHints(tool)
	}
	return registry.Hints{}
}

// seeded is the catalog's manifests by slug, read once.
var seeded = sync.OnceValue(func() map[string]orchestrator.MCPServer {
	out := map[string]orchestrator.MCPServer{}
	servers, err := catalog.Load()
	if err != nil { // the manifests are embedded and checked by their own tests; none is then known
		return out
	}
	for _, srv := range servers {
		out[srv.Slug] = srv
	}
	return out
})

// seededOff reports whether the seeded catalog lists the server's tool Off on first appearance.
func seededOff(slug, remote string) bool {
	srv, ok := seeded()[slug]
	if !ok {
		return false
	}
	if srv.Config.IsDefaultOff(remote) {
		return true
	}
	for _, t := range srv.Tools {
		if t.Name == remote {
			return t.DefaultOff
		}
	}
	return false
}
