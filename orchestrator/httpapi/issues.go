package httpapi

import (
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// listIssues is GET /api/{guilds,orgs}/{id}/issues: a page of issues, newest first; ?status=open
// or resolved filters, limit (1 to 500, default 100) and after (the previous page's next_after)
// page. An organisation's inbox holds only the guilds the caller reaches.
func (s *Server) listIssues(level string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := s.Platform
		q := orchestrator.IssueQuery{Level: level, Status: c.Query("status"), Limit: orchestrator.DefaultIssuePage, After: c.Query("after")}
		if q.Status != "" && q.Status != orchestrator.IssueOpen && q.Status != orchestrator.IssueResolved {
			return orchestrator.Errorf(orchestrator.EINVALID, "status must be open or resolved (or left out for every issue), got %q", clipID(q.Status))
		}
		if v := c.Query("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > orchestrator.MaxIssuePage {
				return orchestrator.Errorf(orchestrator.EINVALID, "limit must be a whole number from 1 to %d, got %q", orchestrator.MaxIssuePage, clipID(v))
			}
			q.Limit = n
		}
		if q.After != "" && !orchestrator.ValidID(q.After) {
			return orchestrator.Errorf(orchestrator.EINVALID, "after must be an issue id (the previous page's next_after), got %q", clipID(q.After))
		}
		chain, err := s.owner(c, level)
		if err != nil {
			return err
		}
		q.Owner = chain.GuildID
		p := principalOf(c)
		if level == orchestrator.LevelOrg {
			q.Owner = chain.OrgID
			if p.RoleAt(chain) == "" { // reached through some of its guilds only
				q.Guilds = []string{}
				for _, m := range p.Members {
					if m.Scope == orchestrator.ScopeGuild && m.OrgID == chain.OrgID {
						q.Guilds = append(q.Guilds, m.ScopeID)
					}
				}
			}
		}
		list, err := st.ListIssues(c.UserContext(), q)
		if err != nil {
			return err
		}
		body := fiber.Map{"issues": list, "next_after": nil}
		if len(list) == q.Limit {
			body["next_after"] = list[len(list)-1].ID
		}
		return c.JSON(body)
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
