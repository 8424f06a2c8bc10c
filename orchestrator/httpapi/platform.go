package httpapi

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// PlatformStore is what the platform tools' operator endpoints read and write: the issues inbox
// the group chat and schedules (postgres.Store implements it).
type PlatformStore interface {
	ListIssues(ctx context.Context, q orchestrator.IssueQuery) ([]orchestrator.Issue, error)
	ResolveIssue(ctx context.Context, id string, at time.Time) (orchestrator.Issue, error)
	ResolveGuildIssues(ctx context.Context, guildID string, at time.Time) (int, error)
	ListGroupMessages(ctx context.Context, guildID string, before int64, limit int) ([]orchestrator.ChatMessage, error)
	ListSchedules(ctx context.Context, agentID string) ([]orchestrator.Schedule, error)
	GetSchedule(ctx context.Context, agentID, id string) (orchestrator.Schedule, error)
	ListFirings(ctx context.Context, scheduleID string) ([]orchestrator.ScheduleFiring, error)
}

// platformRoutes registers the routes of the platform tools: the issues inbox, agent secrets, the
// group chat and schedules.
func (s *Server) platformRoutes(api fiber.Router) {
	org, guild, agent := orchestrator.ObjectOrg, orchestrator.ObjectGuild, orchestrator.ObjectAgent
	g := s.serving(api, s.Platform != nil, "the platform store")
	g.add("GET", "/guilds/:id/issues", "listGuildIssues", read(guild), s.listIssues(orchestrator.LevelGuild))
	g.add("GET", "/orgs/:id/issues", "listOrgIssues", read(org).within(), s.listIssues(orchestrator.LevelOrg))
	g.add("POST", "/issues/:id/resolve", "resolveIssue", write(orchestrator.ObjectIssue), s.resolveIssue)
	g.add("POST", "/guilds/:id/issues/resolve", "resolveGuildIssues", write(guild), s.resolveGuildIssues)
	g.add("GET", "/guilds/:id/chat", "listGroupChat", read(guild), s.listGroupChat)
	g.add("GET", "/agents/:id/schedules", "listAgentSchedules", read(agent), s.listAgentSchedules)
	g.add("GET", "/agents/:id/schedules/:schedule/firings", "listScheduleFirings", read(agent), s.listScheduleFirings)
	sec := s.serving(api, s.Secrets != nil, "the secrets service")
	sec.add("PUT", "/agents/:id/secrets/:name", "putAgentSecret", write(agent), s.putSecret)
	sec.add("GET", "/agents/:id/secrets", "listAgentSecrets", write(agent), s.listSecrets) // a viewer never sees a secret's name
	sec.add("DELETE", "/agents/:id/secrets/:name", "deleteAgentSecret", write(agent), s.deleteSecret)
	del := s.serving(api, s.Scopes != nil, "the scope store")
	del.add("DELETE", "/orgs/:id", "deleteOrg", own(org), s.deleteScope(orchestrator.LevelOrg))
	del.add("DELETE", "/guilds/:id", "deleteGuild", write(guild), s.deleteScope(orchestrator.LevelGuild))
	del.add("DELETE", "/agents/:id", "deleteAgent", write(agent), s.deleteScope(orchestrator.LevelAgent))
}

// ScopeStore is the scope store the API needs: orchestrator.ScopeStore, the renames and the
// deletes (postgres.Store implements it).
type ScopeStore interface {
	orchestrator.ScopeStore
	ScopeRenamer
	ScopeDeleter
}

// ScopeRenamer renames an organisation or a guild (an agent's name is patched with its config).
type ScopeRenamer interface {
	RenameOrg(ctx context.Context, id, name string) (orchestrator.Org, error)
	RenameGuild(ctx context.Context, id, name string) (orchestrator.Guild, error)
}

// ScopeDeleter deletes an organisation, guild or agent with everything under it (the foreign keys
// cascade runs, artifacts, connections and bindings), refusing one with an open run (ECONFLICT)
// unless closeRuns (?close_runs=true), which closes the scope's open runs first.
type ScopeDeleter interface {
	DeleteOrg(ctx context.Context, id string, closeRuns bool) error
	DeleteGuild(ctx context.Context, id string, closeRuns bool) error
	DeleteAgent(ctx context.Context, id string, closeRuns bool) error
}

// deleteScope deletes the organisation, guild or agent :id and answers {deleted: id};
// ?close_runs=true closes its open runs first.
func (s *Server) deleteScope(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		d := s.Scopes
		if d == nil {
			return orchestrator.Errorf(orchestrator.EINTERNAL, "this server's scope store cannot delete")
		}
		closeRuns, err := boolQuery(c, "close_runs")
		if err != nil {
			return err
		}
		id, ctx := c.Params("id"), c.UserContext()
		switch level {
		case orchestrator.LevelOrg:
			err = d.DeleteOrg(ctx, id, closeRuns)
		case orchestrator.LevelGuild:
			err = d.DeleteGuild(ctx, id, closeRuns)
		default:
			err = d.DeleteAgent(ctx, id, closeRuns)
		}
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"deleted": id})
	}
}

// platform returns the platform store, or an error when the server was built without one.
func (s *Server) platform() (PlatformStore, error) {
	if s.Platform == nil {
		return nil, orchestrator.Errorf(orchestrator.EINTERNAL, "the platform store is not configured on this server")
	}
	return s.Platform, nil
}
