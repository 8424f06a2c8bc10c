package alchemy_test

import (
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters/alchemy"
)

// TestManifestEndpoints checks the seeded manifest names an endpoint for every chain but
// ethereum (the url) and solana (solana_das).
func TestManifestEndpoints(t *testing.T) {
	var m struct {
		Endpoints map[string]string `toml:"endpoints"`
	}
	if _, err := toml.DecodeFile("../../../catalog/manifests/alchemy.toml", &m); err != nil {
		t.Fatalf("read the manifest: %v", err)
	}
	for _, c := range alchemy.Chains {
		name := c
		switch c {
		case "ethereum":
			continue
		case "solana":
			name = alchemy.DASEndpoint
		}
		if m.Endpoints[name] == "" {
			t.Errorf("the manifest has no %q endpoint", name)
		}
	}
}
