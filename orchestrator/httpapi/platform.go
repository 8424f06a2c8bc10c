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
	ListIssues(ctx context.Context, level, owner, status string) ([]orchestrator.Issue, error)
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
	api.Get("/guilds/:id/issues", s.listIssues(orchestrator.LevelGuild))
	api.Get("/orgs/:id/issues", s.listIssues(orchestrator.LevelOrg))
	api.Post("/issues/:id/resolve", s.resolveIssue)
	api.Post("/guilds/:id/issues/resolve", s.resolveGuildIssues)
	api.Put("/agents/:id/secrets/:name", s.putSecret)
	api.Get("/agents/:id/secrets", s.listSecrets)
	api.Delete("/agents/:id/secrets/:name", s.deleteSecret)
	api.Get("/guilds/:id/chat", s.listGroupChat)
	api.Get("/agents/:id/schedules", s.listAgentSchedules)
	api.Get("/agents/:id/schedules/:schedule/firings", s.listScheduleFirings)
	api.Delete("/orgs/:id", s.deleteScope(orchestrator.LevelOrg))
	api.Delete("/guilds/:id", s.deleteScope(orchestrator.LevelGuild))
	api.Delete("/agents/:id", s.deleteScope(orchestrator.LevelAgent))
}

// ScopeStore is the scope store the API needs: orchestrator.ScopeStore and the deletes
// (postgres.Store implements it).
type ScopeStore interface {
	orchestrator.ScopeStore
	ScopeDeleter
}

// ScopeDeleter deletes an organisation, guild or agent with everything under it (the foreign keys
// cascade runs, artifacts, connections and bindings), refusing one with an open run (ECONFLICT).
type ScopeDeleter interface {
	DeleteOrg(ctx context.Context, id string) error
	DeleteGuild(ctx context.Context, id string) error
	DeleteAgent(ctx context.Context, id string) error
}

// deleteScope deletes the organisation, guild or agent :id and answers {deleted: id}.
func (s *Server) deleteScope(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		d := s.Scopes
		if d == nil {
			return orchestrator.Errorf(orchestrator.EINTERNAL, "this server's scope store cannot delete")
		}
		id, ctx := c.Params("id"), c.UserContext()
		var err error
		switch level {
		case orchestrator.LevelOrg:
			err = d.DeleteOrg(ctx, id)
		case orchestrator.LevelGuild:
			err = d.DeleteGuild(ctx, id)
		default:
			err = d.DeleteAgent(ctx, id)
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
