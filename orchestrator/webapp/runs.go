package webapp

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// runRoutes registers a run's page: what it was offered and its calls, paged.
func (a *App) runRoutes(r fiber.Router) {
	r.Get("/agents/:id/runs", a.page(a.agentRuns))
	r.Get("/runs/:id", a.page(a.run))
}

// runsData is an agent's runs page.
type runsData struct {
	Place place
	Runs  []orchestrator.RunSummary
	Next  string // the next (older) page's link, "" on the last
}

// agentRuns lists an agent's runs, open and closed, newest first, a page at a time
// (GET /api/agents/{id}/runs).
func (a *App) agentRuns(v *view) error {
	p, err := v.placeAgent(v.c.Params("id"))
	if err != nil {
		return err
	}
	q := url.Values{"limit": {"20"}}
	if after := v.c.Query("after"); after != "" {
		q.Set("after", after)
	}
	var out struct {
		Runs      []orchestrator.RunSummary `json:"runs"`
		NextAfter *string                   `json:"next_after"`
	}
	if err := v.get(apiPath("agents", p.Agent.ID, "runs")+"?"+q.Encode(), &out); err != nil {
		return err
	}
	d := runsData{Place: p, Runs: out.Runs}
	if out.NextAfter != nil {
		d.Next = p.Href() + "/runs?" + queryOf("after", *out.NextAfter)
	}
	return a.render(v.c, http.StatusOK, "runs", v.at(p, "Runs", "Runs · "+p.Agent.Name, d))
}

// callsPerPage is how many calls a run's page shows at once.
const callsPerPage = 50

// runData is a run's page.
type runData struct {
	Place place
	Run   orchestrator.Run
	Calls []orchestrator.ToolCall
	Next  string // the next page's link, "" on the last
	First bool   // the first page (the open run's page refreshes it)
}

// run shows a run: its kind, state and budget, the tools it was offered (with their servers), its
// exploration figures, and its calls oldest first, callsPerPage at a time. An open run's first
// page reloads its calls as they happen (htmx polling).
func (a *App) run(v *view) error {
	var run orchestrator.Run
	if err := v.get(apiPath("runs", v.c.Params("id")), &run); err != nil {
		return err
	}
	p, err := v.placeAgent(run.AgentID)
	if err != nil {
		return err
	}
	q := url.Values{"limit": {strconv.Itoa(callsPerPage)}}
	after := v.c.Query("after")
	if after != "" {
		if _, err := strconv.ParseInt(after, 10, 64); err != nil {
			return &apiError{Status: http.StatusUnprocessableEntity, Code: orchestrator.EINVALID, Message: "after must be a call's seq, a whole number, got " + quote(after)}
		}
		q.Set("after", after)
	}
	var calls struct {
		Calls     []orchestrator.ToolCall `json:"calls"`
		NextAfter *int64                  `json:"next_after"`
	}
	if err := v.get(apiPath("runs", run.ID, "calls")+"?"+q.Encode(), &calls); err != nil {
		return err
	}
	d := runData{Place: p, Run: run, Calls: calls.Calls, First: after == ""}
	if calls.NextAfter != nil {
		d.Next = "/runs/" + run.ID + "?after=" + strconv.FormatInt(*calls.NextAfter, 10)
	}
	pd := v.at(p, "Runs", "Run "+run.ID, d)
	pd.Heading = "Run " + run.ID
	pd.Crumbs = append(pd.Crumbs, link{Label: p.Agent.Name, Href: p.Href()})
	return a.render(v.c, http.StatusOK, "run", pd)
}
