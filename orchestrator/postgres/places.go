package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// placeQueries read where an object sits: its scope, organisation, guild and agent (NULL above
// its scope), and its run.
var placeQueries = map[string]string{
	orchestrator.ObjectRun:        "SELECT 'agent', org_id, guild_id, agent_id, id FROM runs WHERE id = $1",
	orchestrator.ObjectConnection: "SELECT scope, org_id, guild_id, agent_id, '' FROM mcp_connections WHERE id = $1",
	orchestrator.ObjectArtifact:   "SELECT level, org_id, CASE WHEN level = 'org' THEN NULL ELSE guild_id END, agent_id, '' FROM artifacts WHERE id = $1",
	orchestrator.ObjectIssue:      "SELECT 'guild', org_id, guild_id, NULL, '' FROM issues WHERE id = $1",
	orchestrator.ObjectApproval:   "SELECT 'agent', org_id, guild_id, agent_id, '' FROM approvals WHERE id = $1",
}

// Place places an organisation, guild, agent, run, connection, artifact, issue or approval request.
func (s *Store) Place(ctx context.Context, kind, id string) (orchestrator.Chain, string, error) {
	switch kind {
	case orchestrator.ObjectOrg, orchestrator.ObjectGuild, orchestrator.ObjectAgent:
		c, err := s.ScopeChain(ctx, kind, id)
		return c, "", err
	}
	q, ok := placeQueries[kind]
	if !ok {
		return orchestrator.Chain{}, "", fmt.Errorf("place: unknown object kind %q", kind)
	}
	var c orchestrator.Chain
	var org, guild, agent *string
	var run string
	err := s.pool.QueryRow(ctx, q, id).Scan(&c.Scope, &org, &guild, &agent, &run)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, "", notFound(kind, id)
	}
	if err != nil {
		return c, "", fmt.Errorf("place %s %s: %w", kind, id, err)
	}
	c.OrgID, c.GuildID, c.AgentID = deref(org), deref(guild), deref(agent)
	return c, run, nil
}
