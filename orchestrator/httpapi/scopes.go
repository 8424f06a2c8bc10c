package httpapi

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// nameBody is the body of the create routes.
type nameBody struct {
	Name string `json:"name"`
}

func (s *Server) createOrg(c *fiber.Ctx) error {
	var b nameBody
	if err := decode(c, &b); err != nil {
		return err
	}
	if err := orchestrator.ValidName("organisation", b.Name); err != nil {
		return err
	}
	o := orchestrator.Org{ID: orchestrator.NewID(orchestrator.PrefixOrg), Name: b.Name, CreatedAt: s.now()}
	if err := s.Scopes.CreateOrg(c.UserContext(), o); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(o)
}

func (s *Server) listOrgs(c *fiber.Ctx) error {
	orgs, err := s.Scopes.ListOrgs(c.UserContext())
	if err != nil {
		return err
	}
	p := principalOf(c)
	return c.JSON(fiber.Map{"orgs": keep(orgs, func(o orchestrator.Org) bool { return p.ReachesOrg(o.ID) })})
}

func (s *Server) getOrg(c *fiber.Ctx) error {
	if err := requireID("organisation", c.Params("id")); err != nil {
		return err
	}
	o, err := s.Scopes.GetOrg(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(o)
}

// renameOrg answers PATCH /api/orgs/{id} {name}: the organisation, renamed.
func (s *Server) renameOrg(c *fiber.Ctx) error {
	var b nameBody
	if err := decode(c, &b); err != nil {
		return err
	}
	if err := orchestrator.ValidName("organisation", b.Name); err != nil {
		return err
	}
	o, err := s.Scopes.RenameOrg(c.UserContext(), c.Params("id"), b.Name)
	if err != nil {
		return err
	}
	return c.JSON(o)
}

// renameGuild answers PATCH /api/guilds/{id} {name}: the guild, renamed.
func (s *Server) renameGuild(c *fiber.Ctx) error {
	var b nameBody
	if err := decode(c, &b); err != nil {
		return err
	}
	if err := orchestrator.ValidName("guild", b.Name); err != nil {
		return err
	}
	g, err := s.Scopes.RenameGuild(c.UserContext(), c.Params("id"), b.Name)
	if err != nil {
		return err
	}
	return c.JSON(g)
}

func (s *Server) createGuild(c *fiber.Ctx) error {
	if err := requireID("organisation", c.Params("id")); err != nil {
		return err
	}
	var b nameBody
	if err := decode(c, &b); err != nil {
		return err
	}
	if err := orchestrator.ValidName("guild", b.Name); err != nil {
		return err
	}
	g := orchestrator.Guild{ID: orchestrator.NewID(orchestrator.PrefixGuild), OrgID: c.Params("id"), Name: b.Name, CreatedAt: s.now()}
	if err := s.Scopes.CreateGuild(c.UserContext(), g); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(g)
}

func (s *Server) listGuilds(c *fiber.Ctx) error {
	if err := requireID("organisation", c.Params("id")); err != nil {
		return err
	}
	gs, err := s.Scopes.ListGuilds(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	p := principalOf(c)
	return c.JSON(fiber.Map{"guilds": keep(gs, func(g orchestrator.Guild) bool {
		return p.RoleAt(orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: g.OrgID, GuildID: g.ID}) != ""
	})})
}

func (s *Server) getGuild(c *fiber.Ctx) error {
	if err := requireID("guild", c.Params("id")); err != nil {
		return err
	}
	g, err := s.Scopes.GetGuild(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(g)
}

// agentBody is the body of POST /api/guilds/{id}/agents and PATCH /api/agents/{id}.
type agentBody struct {
	Name   *string         `json:"name"`
	Config json.RawMessage `json:"config"`
}

func (s *Server) createAgent(c *fiber.Ctx) error {
	if err := requireID("guild", c.Params("id")); err != nil {
		return err
	}
	var b agentBody
	if err := decode(c, &b); err != nil {
		return err
	}
	if b.Name == nil {
		return orchestrator.Errorf(orchestrator.EINVALID, "name is required")
	}
	if err := orchestrator.ValidName("agent", *b.Name); err != nil {
		return err
	}
	patch, err := orchestrator.ParseConfigPatch(b.Config)
	if err != nil {
		return err
	}
	now := s.now()
	a := orchestrator.Agent{ID: orchestrator.NewID(orchestrator.PrefixAgent), GuildID: c.Params("id"), Name: *b.Name,
		Config: patch.Apply(orchestrator.DefaultAgentConfig()), CreatedAt: now, UpdatedAt: now}
	if err := s.Scopes.CreateAgent(c.UserContext(), a); err != nil {
		return err
	}
	a, err = s.Scopes.GetAgent(c.UserContext(), a.ID)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(a)
}

func (s *Server) listAgents(c *fiber.Ctx) error {
	if err := requireID("guild", c.Params("id")); err != nil {
		return err
	}
	as, err := s.Scopes.ListAgents(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"agents": as})
}

func (s *Server) getAgent(c *fiber.Ctx) error {
	if err := requireID("agent", c.Params("id")); err != nil {
		return err
	}
	a, err := s.Scopes.GetAgent(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(a)
}

// patchAgent changes only the keys sent: name and/or some config flags.
func (s *Server) patchAgent(c *fiber.Ctx) error {
	if err := requireID("agent", c.Params("id")); err != nil {
		return err
	}
	var b agentBody
	if err := decode(c, &b); err != nil {
		return err
	}
	if b.Name != nil {
		if err := orchestrator.ValidName("agent", *b.Name); err != nil {
			return err
		}
	}
	patch, err := orchestrator.ParseConfigPatch(b.Config)
	if err != nil {
		return err
	}
	a, err := s.Scopes.UpdateAgent(c.UserContext(), c.Params("id"), orchestrator.AgentPatch{Name: b.Name, Config: patch})
	if err != nil {
		return err
	}
	return c.JSON(a)
}
