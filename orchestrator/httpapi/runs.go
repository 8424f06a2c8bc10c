package httpapi

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// runBody is the body of POST /api/agents/{id}/runs.
type runBody struct {
	Kind           string          `json:"kind"`
	Config         json.RawMessage `json:"config"`
	ToolCallBudget *int            `json:"tool_call_budget"`
	GroupMessageID int64           `json:"group_message_id"` // the group message the run answers (kinds group, group_chat)
}

// runView is a run as the API shows it.
type runView struct {
	orchestrator.Run
	RemainingToolCalls int `json:"remaining_tool_calls"`
}

func viewRun(r orchestrator.Run) runView { return runView{Run: r, RemainingToolCalls: r.Remaining()} }

func (s *Server) startRun(c *fiber.Ctx) error {
	rs := s.Runs
	if err := requireID("agent", c.Params("id")); err != nil {
		return err
	}
	var b runBody
	if err := decode(c, &b); err != nil {
		return err
	}
	patch, err := orchestrator.ParseConfigPatch(b.Config)
	if err != nil {
		return err
	}
	run, err := rs.StartRun(c.UserContext(), c.Params("id"), runs.StartRequest{Kind: b.Kind, Config: patch, Budget: b.ToolCallBudget, GroupMessageID: b.GroupMessageID})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(viewRun(run))
}

func (s *Server) getRun(c *fiber.Ctx) error {
	rs := s.Runs
	run, err := rs.GetRun(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(viewRun(run))
}

func (s *Server) closeRun(c *fiber.Ctx) error {
	reason := orchestrator.CloseOperator
	if principalOf(c).Runtime() {
		reason = orchestrator.CloseRuntime
	}
	run, err := s.Runs.CloseRun(c.UserContext(), c.Params("id"), reason)
	if err != nil {
		return err
	}
	return c.JSON(viewRun(run))
}

// callBody is the body of POST /api/runs/{id}/calls: the tool call as the model made it, with the
// client's id for retries.
type callBody struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
}

func (s *Server) call(c *fiber.Ctx) error {
	rs := s.Runs
	if err := requireID("run", c.Params("id")); err != nil {
		return err
	}
	var b callBody
	if err := decode(c, &b); err != nil {
		return err
	}
	// A call in flight finishes even when the client goes away or the server shuts down (the run
	// service detaches it): a retry under its call_id gets its result.
	res, err := rs.Call(c.UserContext(), c.Params("id"), runs.CallRequest{Name: b.Name, Arguments: b.Arguments, CallID: b.CallID})
	if err != nil {
		return err
	}
	return c.JSON(res)
}

// effectiveLimit is the page size ListCalls used for limit.
func effectiveLimit(limit int) int {
	if limit == 0 {
		return runs.DefaultCallPage
	}
	return limit
}

// listCalls answers a page of the run's calls: limit (default 50, at most 500) after seq after;
// next_after is the after of the next page, null on the last.
func (s *Server) listCalls(c *fiber.Ctx) error {
	rs := s.Runs
	var page orchestrator.CallPage
	for name, dst := range map[string]*int64{"limit": nil, "after": &page.After} {
		v := c.Query(name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return orchestrator.Errorf(orchestrator.EINVALID, "%s must be a whole number, got %q", name, v)
		}
		if dst != nil {
			*dst = n
		} else if n < 1 || n > runs.MaxCallPage {
			return orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to %d, got %d", runs.MaxCallPage, n)
		} else {
			page.Limit = int(n)
		}
	}
	calls, err := rs.ListCalls(c.UserContext(), c.Params("id"), page)
	if err != nil {
		return err
	}
	if p := principalOf(c); !p.Runtime() && orchestrator.RoleRank(p.RoleAt(targetOf(c).Chain)) < orchestrator.RoleRank(orchestrator.RoleOperator) {
		for i := range calls { // a viewer sees which tools ran and how, never what they were given or answered
			calls[i].Arguments, calls[i].Result, calls[i].Metadata = nil, "", nil
			calls[i].Withheld = true
		}
	}
	body := fiber.Map{"calls": calls, "next_after": nil}
	if len(calls) > 0 && len(calls) == effectiveLimit(page.Limit) {
		body["next_after"] = calls[len(calls)-1].Seq
	}
	return c.JSON(body)
}
