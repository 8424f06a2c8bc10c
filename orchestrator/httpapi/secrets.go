package httpapi

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// SecretKeeper stores, lists and deletes an agent's secrets (secrets.Service implements it). No
// method returns a value.
type SecretKeeper interface {
	Put(ctx context.Context, agentID, name, value string) (orchestrator.SecretInfo, error)
	List(ctx context.Context, agentID string) ([]orchestrator.SecretInfo, []orchestrator.SecretRequest, error)
	Delete(ctx context.Context, agentID, name string) error
}

// secretBody is PUT /api/agents/{id}/secrets/{name}.
type secretBody struct {
	Value string `json:"value"`
}

// putSecret stores a secret granted to the agent (answering its pending requests for that name).
func (s *Server) putSecret(c *fiber.Ctx) error {
	sk := s.Secrets
	var b secretBody
	if err := decode(c, &b); err != nil {
		return err
	}
	chain, err := s.owner(c, orchestrator.LevelAgent)
	if err != nil {
		return err
	}
	info, err := sk.Put(c.UserContext(), chain.AgentID, c.Params("name"), b.Value)
	if err != nil {
		return err
	}
	return c.JSON(info)
}

// listSecrets lists the agent's secret names and its pending secret requests, never a value.
func (s *Server) listSecrets(c *fiber.Ctx) error {
	sk := s.Secrets
	chain, err := s.owner(c, orchestrator.LevelAgent)
	if err != nil {
		return err
	}
	names, reqs, err := sk.List(c.UserContext(), chain.AgentID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"secrets": names, "requests": reqs})
}

// deleteSecret removes one of the agent's secrets.
func (s *Server) deleteSecret(c *fiber.Ctx) error {
	sk := s.Secrets
	chain, err := s.owner(c, orchestrator.LevelAgent)
	if err != nil {
		return err
	}
	name := c.Params("name")
	if err := sk.Delete(c.UserContext(), chain.AgentID, name); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"deleted": name})
}
