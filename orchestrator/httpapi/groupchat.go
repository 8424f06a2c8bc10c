package httpapi

import (
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// Chat page sizes.
const (
	defaultChatLimit = 50
	maxChatLimit     = 200
)

// listGroupChat is GET /api/guilds/{id}/chat: the newest messages (?limit, default 50, at most
// 200), oldest first; ?before=<id> pages back.
func (s *Server) listGroupChat(c *fiber.Ctx) error {
	st := s.Platform
	limit, before := defaultChatLimit, int64(0)
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxChatLimit {
			return orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to %d, got %q", maxChatLimit, clipID(v))
		}
		limit = n
	}
	if v := c.Query("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return orchestrator.Errorf(orchestrator.EINVALID, "before must be a message id (a positive integer), got %q", clipID(v))
		}
		before = n
	}
	chain, err := s.owner(c, orchestrator.LevelGuild)
	if err != nil {
		return err
	}
	msgs, err := st.ListGroupMessages(c.UserContext(), chain.GuildID, before, limit)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"messages": msgs})
}
