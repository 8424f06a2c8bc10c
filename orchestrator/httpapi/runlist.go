package httpapi

import (
	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// runListRoutes registers the listings of an agent's and a guild's runs.
func (s *Server) runListRoutes(api fiber.Router) {
	rs := s.serving(api, s.Runs != nil, "the run service")
	rs.add(fiber.MethodGet, "/agents/:id/runs", "listAgentRuns", agentRuntime(orchestrator.RoleViewer), s.listRuns(orchestrator.LevelAgent))
	rs.add(fiber.MethodGet, "/guilds/:id/runs", "listGuildRuns", read(orchestrator.ObjectGuild), s.listRuns(orchestrator.LevelGuild))
}

// listRuns answers a page of the agent's or guild's runs, newest first: limit (default 50, at most
// 500) runs after the run after, filtered by state, kind and trigger; next_after is the after of
// the next page, null on the last. Never a run's token or its snapshot.
func (s *Server) listRuns(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		what := "agent"
		if level == orchestrator.LevelGuild {
			what = "guild"
		}
		if err := requireID(what, c.Params("id")); err != nil {
			return err
		}
		limit, err := intQuery(c, "limit")
		if err != nil {
			return err
		}
		if c.Query("limit") != "" && (limit < 1 || limit > runs.MaxRunPage) {
			return orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to %d, got %d", runs.MaxRunPage, limit)
		}
		q := orchestrator.RunQuery{Status: c.Query("state"), Kind: c.Query("kind"), Trigger: c.Query("trigger"), After: c.Query("after"), Limit: int(limit)}
		if q.After != "" && !orchestrator.ValidID(q.After) {
			return orchestrator.Errorf(orchestrator.EINVALID, "after must be a run id (the next_after of the previous page), got %q", clipID(q.After))
		}
		if level == orchestrator.LevelGuild {
			q.GuildID = c.Params("id")
		} else {
			q.AgentID = c.Params("id")
		}
		list, err := s.Runs.ListRuns(c.UserContext(), q)
		if err != nil {
			return err
		}
		body := fiber.Map{"runs": list, "next_after": nil}
		if n := len(list); n > 0 && (n == int(limit) || (limit == 0 && n == runs.DefaultRunPage)) {
			body["next_after"] = list[n-1].ID
		}
		return c.JSON(body)
	}
}
