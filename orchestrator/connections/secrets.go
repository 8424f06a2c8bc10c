package connections

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// CredentialStore reads the sealed credentials of several connections in one round trip (those
// that exist and hold any); postgres.Store implements it.
type CredentialStore interface {
	SealedCredentialsOf(ctx context.Context, connectionIDs []string) (map[string][]byte, error)
}

// ConnectionSecrets is the run redaction source of logins: the credential values of every
// connection the run's snapshot offers tools through (API keys, Qonto's login and secret key,
// Wallet's keys) join the run's redaction set. A run without MCP tools costs nothing.
type ConnectionSecrets struct {
	Store CredentialStore
	Box   *sealed.Box
}

// RunSecretValues opens the credentials of the run's connections, in memory only, read in one
// round trip.
func (c ConnectionSecrets) RunSecretValues(ctx context.Context, run orchestrator.Run) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	for _, t := range run.OfferedTools {
		if t.ConnectionID == "" || seen[t.ConnectionID] {
			continue
		}
		seen[t.ConnectionID] = true
		ids = append(ids, t.ConnectionID)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if c.Box == nil {
		return nil, fmt.Errorf("run %s offers tools of connection %s but %s is not set, so its credentials cannot be opened for redaction", run.ID, ids[0], sealed.KeyVar)
	}
	sealedOf, err := c.Store.SealedCredentialsOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	var vals []string
	for _, id := range ids {
		b := sealedOf[id]
		if len(b) == 0 {
			continue // deleted since the run started (its calls fail on their own), or a pending login without credentials yet
		}
		plain, err := c.Box.Open(b, SealedFor(id))
		if err != nil {
			return nil, fmt.Errorf("open the credentials of connection %s: %w", id, err)
		}
		var creds map[string]string
		err = json.Unmarshal(plain, &creds)
		clear(plain)
		if err != nil {
			return nil, fmt.Errorf("credentials of connection %s: %w", id, err)
		}
		keys := make([]string, 0, len(creds))
		for k := range creds {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			vals = append(vals, creds[k])
		}
	}
	return vals, nil
}

// SealedFor is the additional data a connection's credentials are sealed with: they open only on
// that row.
func SealedFor(connectionID string) []byte {
	return []byte("mcp_connections.credentials:" + connectionID)
}
