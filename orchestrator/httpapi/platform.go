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
}

// platform returns the platform store, or an error when the server was built without one.
func (s *Server) platform() (PlatformStore, error) {
	if s.Platform == nil {
		return nil, orchestrator.Errorf(orchestrator.EINTERNAL, "the platform store is not configured on this server")
	}
	return s.Platform, nil
}
