package identity

import (
	"context"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
)

// RunSecretValues is the redaction source of credentials: every credential value that can reach the
// run (the bootstrap token, the run's own token, its agent's keys, and the API tokens of accounts
// whose roles reach its agent) joins the run's redaction set, like any other credential. The values
// are opened in memory only, and kept per run until a credential changes.
func (s *Service) RunSecretValues(ctx context.Context, run orchestrator.Run) ([]string, error) {
	now := s.now()
	if vals, _, ok := s.cache.runGet(run.ID, now); ok {
		return vals, nil
	}
	_, gen, _ := s.cache.runGet(run.ID, now)
	chain := orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: run.OrgID, GuildID: run.GuildID, AgentID: run.AgentID}
	sealedVals, err := s.Store.CredentialsReaching(ctx, chain, run.ID)
	if err != nil {
		return nil, fmt.Errorf("read the credentials reaching run %s: %w", run.ID, err)
	}
	var vals []string
	if s.Bootstrap != "" {
		vals = append(vals, s.Bootstrap)
	}
	if len(sealedVals) > 0 && s.Box == nil {
		return nil, fmt.Errorf("run %s is reached by %d credentials but GUILDS_SECRET_KEY is not set, so they cannot be opened for redaction", run.ID, len(sealedVals))
	}
	for _, c := range sealedVals {
		plain, err := s.Box.Open(c.Sealed, sealedFor(c.Kind, c.ID))
		if err != nil {
			return nil, fmt.Errorf("open the %s %s for redaction: %w", kindName(c.Kind), c.ID, err)
		}
		vals = append(vals, string(plain))
		clear(plain)
	}
	s.cache.runPut(run.ID, vals, gen, now)
	return vals, nil
}
