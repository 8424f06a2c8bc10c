package httpapi

import (
	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// listAgentSchedules is GET /api/agents/{id}/schedules: the agent's schedules with their state,
// next wake-up and last run.
func (s *Server) listAgentSchedules(c *fiber.Ctx) error {
	st := s.Platform
	chain, err := s.owner(c, orchestrator.LevelAgent)
	if err != nil {
		return err
	}
	list, err := st.ListSchedules(c.UserContext(), chain.AgentID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"schedules": list})
}

// listScheduleFirings is GET /api/agents/{id}/schedules/{schedule}/firings: the runs a schedule
// started, newest first, each with the instruction it carried.
func (s *Server) listScheduleFirings(c *fiber.Ctx) error {
	st := s.Platform
	chain, err := s.owner(c, orchestrator.LevelAgent)
	if err != nil {
		return err
	}
	id := c.Params("schedule")
	if err := requireID("schedule", id); err != nil {
		return err
	}
	if _, err := st.GetSchedule(c.UserContext(), chain.AgentID, id); err != nil {
		return err
	}
	list, err := st.ListFirings(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"firings": list})
}
