package httpapi

import (
	"bytes"
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
)

// ApprovalService lists and decides the approval requests that calls of tools resolved Ask wait
// for (approvals.Service implements it).
type ApprovalService interface {
	Get(ctx context.Context, id string) (orchestrator.Approval, error)
	List(ctx context.Context, at orchestrator.Chain, status, before string, limit int) ([]orchestrator.Approval, error)
	// Pending counts the requests that may still be decided, per agent, of one organisation ("" all).
	Pending(ctx context.Context, orgID string) ([]orchestrator.PendingApprovals, error)
	// Decide approves or denies a pending request; by is the deciding account's id or "admin".
	Decide(ctx context.Context, id string, approve bool, reason, by string) (orchestrator.Approval, error)
}

// approvalRoutes registers the approvals inbox: lists per scope (viewers read them, without the
// arguments), the pending count an app's banner shows, one request, and the decisions, which
// only an operator or owner whose membership reaches the agent makes; never an agent key or a
// run token, so a model cannot approve its own call.
func (s *Server) approvalRoutes(api fiber.Router) {
	g := s.serving(api, s.Approvals != nil, "the approvals service")
	g.add("GET", "/orgs/:id/approvals", "listOrgApprovals", read(orchestrator.ObjectOrg).within(), s.listApprovals)
	g.add("GET", "/guilds/:id/approvals", "listGuildApprovals", read(orchestrator.ObjectGuild), s.listApprovals)
	g.add("GET", "/agents/:id/approvals", "listAgentApprovals", read(orchestrator.ObjectAgent), s.listApprovals)
	g.add("GET", "/approvals/pending", "countPendingApprovals", anyone(), s.pendingApprovals)
	// The request's own routes place it in the handler, so an id outside the caller's reach answers
	// exactly as one that does not exist.
	g.add("GET", "/approvals/:id", "getApproval", anyone(), s.getApproval)
	g.add("POST", "/approvals/:id/approve", "approveApproval", anyone(), s.decideApproval(true))
	g.add("POST", "/approvals/:id/deny", "denyApproval", anyone(), s.decideApproval(false))
}

// approvalTarget places the request the path names and decides for it with role: outside the
// caller's reach, the answer is the unknown request's.
func (s *Server) approvalTarget(c *fiber.Ctx, role string) (identity.Target, error) {
	id := c.Params("id")
	if err := requireID("approval", id); err != nil {
		return identity.Target{}, err
	}
	t, err := s.authorize(c, orchestrator.ObjectApproval, id, identity.Need{Role: role})
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		return t, orchestrator.Errorf(orchestrator.ENOTFOUND, "approval %q not found", id)
	}
	return t, err
}

// shown is a request as the principal may see it: a viewer sees what waits and how it ended, never
// the arguments.
func shown(p identity.Principal, a orchestrator.Approval) orchestrator.Approval {
	if orchestrator.RoleRank(p.RoleAt(a.Chain())) < orchestrator.RoleRank(orchestrator.RoleOperator) {
		a.Arguments, a.Withheld = nil, true
	}
	return a
}

// listApprovals answers a scope's requests the caller reaches, newest first: status filters,
// limit (default 50, at most 500) and before (the next_before of the previous page) page; pending
// counts the requests of the scope the caller reaches that may still be decided.
func (s *Server) listApprovals(c *fiber.Ctx) error {
	at := targetOf(c).Chain
	limit := 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return orchestrator.Errorf(orchestrator.EINVALID, "limit must be a whole number, got %q", v)
		}
		if n < 1 {
			return orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to 500, got %d", n)
		}
		limit = n
	}
	list, err := s.Approvals.List(c.UserContext(), at, c.Query("status"), c.Query("before"), limit)
	if err != nil {
		return err
	}
	pending, err := s.Approvals.Pending(c.UserContext(), at.OrgID)
	if err != nil {
		return err
	}
	p := principalOf(c)
	var next any
	if len(list) > 0 && len(list) == effectiveApprovalLimit(limit) {
		next = list[len(list)-1].ID
	}
	out := make([]orchestrator.Approval, 0, len(list))
	for _, a := range list {
		if p.RoleAt(a.Chain()) != "" {
			out = append(out, shown(p, a))
		}
	}
	return c.JSON(fiber.Map{"approvals": out, "pending": countReached(p, pending, at), "next_before": next})
}

// effectiveApprovalLimit is the page size a listing used.
func effectiveApprovalLimit(limit int) int {
	if limit == 0 {
		return 50
	}
	return limit
}

// countReached adds up the pending counts of the agents within at that the principal reaches.
func countReached(p identity.Principal, counts []orchestrator.PendingApprovals, at orchestrator.Chain) int {
	n := 0
	for _, pc := range counts {
		within := (at.Scope == orchestrator.ScopeOrg && pc.OrgID == at.OrgID) || (at.Scope == orchestrator.ScopeGuild && pc.GuildID == at.GuildID) ||
			(at.Scope == orchestrator.ScopeAgent && pc.AgentID == at.AgentID)
		if within && p.RoleAt(orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: pc.OrgID, GuildID: pc.GuildID, AgentID: pc.AgentID}) != "" {
			n += pc.Pending
		}
	}
	return n
}

// pendingApprovals answers how many requests wait for a decision in everything the caller
// reaches, and per agent: what an app's banner shows.
func (s *Server) pendingApprovals(c *fiber.Ctx) error {
	counts, err := s.Approvals.Pending(c.UserContext(), "")
	if err != nil {
		return err
	}
	p := principalOf(c)
	agents := keep(counts, func(pc orchestrator.PendingApprovals) bool {
		return p.RoleAt(orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: pc.OrgID, GuildID: pc.GuildID, AgentID: pc.AgentID}) != ""
	})
	total := 0
	for _, pc := range agents {
		total += pc.Pending
	}
	return c.JSON(fiber.Map{"pending": total, "agents": agents})
}

// getApproval answers one request.
func (s *Server) getApproval(c *fiber.Ctx) error {
	if _, err := s.approvalTarget(c, orchestrator.RoleViewer); err != nil {
		return err
	}
	a, err := s.Approvals.Get(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(shown(principalOf(c), a))
}

// decisionBody is the body of POST /api/approvals/{id}/approve and /deny (both optional).
type decisionBody struct {
	Reason string `json:"reason"`
}

// decideApproval approves or denies a request: the caller needs the operator role where the agent
// is; the audit log records who decided.
func (s *Server) decideApproval(approve bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if _, err := s.approvalTarget(c, orchestrator.RoleOperator); err != nil {
			return err
		}
		var body decisionBody
		if len(bytes.TrimSpace(c.Body())) > 0 {
			if err := decode(c, &body); err != nil {
				return err
			}
		}
		by := principalOf(c).AccountID()
		if by == "" {
			by = orchestrator.DecidedByAdmin
		}
		a, err := s.Approvals.Decide(c.UserContext(), c.Params("id"), approve, body.Reason, by)
		if err != nil {
			return err
		}
		return c.JSON(a)
	}
}
