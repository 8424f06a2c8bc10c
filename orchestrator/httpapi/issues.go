package httpapi

import (
	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// listIssues is GET /api/{guilds,orgs}/{id}/issues, newest first; ?status=open or resolved filters.
func (s *Server) listIssues(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := s.Platform
		status := c.Query("status")
		if status != "" && status != orchestrator.IssueOpen && status != orchestrator.IssueResolved {
			return orchestrator.Errorf(orchestrator.EINVALID, "status must be open or resolved (or left out for every issue), got %q", clipID(status))
		}
		chain, err := s.owner(c, level)
		if err != nil {
			return err
		}
		owner := chain.GuildID
		if level == orchestrator.LevelOrg {
			owner = chain.OrgID
		}
		list, err := st.ListIssues(c.UserContext(), level, owner, status)
		if err != nil {
			return err
		}
		p := principalOf(c) // an organisation's inbox shows the guilds the caller reaches
		return c.JSON(fiber.Map{"issues": keep(list, func(i orchestrator.Issue) bool {
			return p.RoleAt(orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: i.OrgID, GuildID: i.GuildID}) != ""
		})})
	}
}

// resolveIssue is POST /api/issues/{id}/resolve; resolving a resolved issue answers it unchanged.
func (s *Server) resolveIssue(c *fiber.Ctx) error {
	st := s.Platform
	id := c.Params("id")
	if err := requireID("issue", id); err != nil {
		return err
	}
	is, err := st.ResolveIssue(c.UserContext(), id, s.now())
	if err != nil {
		return err
	}
	return c.JSON(is)
}

// resolveGuildIssues is POST /api/guilds/{id}/issues/resolve: every open issue of the guild at once.
func (s *Server) resolveGuildIssues(c *fiber.Ctx) error {
	st := s.Platform
	chain, err := s.owner(c, orchestrator.LevelGuild)
	if err != nil {
		return err
	}
	n, err := st.ResolveGuildIssues(c.UserContext(), chain.GuildID, s.now())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"resolved": n})
}
