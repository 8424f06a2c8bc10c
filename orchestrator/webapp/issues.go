package webapp

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// issueRoutes registers the issues inboxes (a guild's, an organisation's) and their resolve
// buttons.
func (a *App) issueRoutes(r fiber.Router) {
	r.Get("/guilds/:id/issues", a.page(a.issues(orchestrator.ScopeGuild)))
	r.Get("/orgs/:id/issues", a.page(a.issues(orchestrator.ScopeOrg)))
	r.Post("/issues/:id/resolve", a.action(a.resolveIssue))
	r.Post("/guilds/:id/issues/resolve", a.action(a.resolveAll))
}

// issuesData is an inbox's.
type issuesData struct {
	Place  place
	Issues []issueRow
	Open   int
	CanAll bool // may resolve every open issue of the guild at once
	Back   string
}

// issueRow is one report_issue row with the names the inbox shows and whether it may be resolved.
type issueRow struct {
	orchestrator.Issue
	Guild, Agent string // names where known, else ids
	Can          bool
}

// issues lists a guild's or an organisation's report_issue rows, open first, newest first within.
func (a *App) issues(scope string) func(v *view) error {
	return func(v *view) error {
		p, err := v.placeOf(scope, v.c.Params("id"))
		if err != nil {
			return err
		}
		coll := "guilds"
		if scope == orchestrator.ScopeOrg {
			coll = "orgs"
		}
		var out struct {
			Issues []orchestrator.Issue `json:"issues"`
		}
		if err := v.get(apiPath(coll, p.ID(), "issues"), &out); err != nil {
			return err
		}
		guilds, agents := map[string]string{}, map[string]string{}
		named := map[string]bool{} // the guilds whose agents are named
		for _, is := range out.Issues {
			if named[is.GuildID] {
				continue
			}
			named[is.GuildID] = true
			var ags struct {
				Agents []orchestrator.Agent `json:"agents"`
			}
			if err := v.get(apiPath("guilds", is.GuildID, "agents"), &ags); err != nil {
				return err
			}
			for _, ag := range ags.Agents {
				agents[ag.ID] = ag.Name
			}
		}
		if p.Guild != nil {
			guilds[p.Guild.ID] = p.Guild.Name
		} else {
			var gs struct {
				Guilds []orchestrator.Guild `json:"guilds"`
			}
			if err := v.get(apiPath("orgs", p.Org.ID, "guilds"), &gs); err != nil {
				return err
			}
			for _, g := range gs.Guilds {
				guilds[g.ID] = g.Name
			}
		}
		d := issuesData{Place: p, Back: p.Href() + "/issues"}
		for _, is := range out.Issues {
			r := issueRow{Issue: is, Guild: or(guilds[is.GuildID], is.GuildID), Agent: or(agents[is.AgentID], is.AgentID),
				Can: v.me.can(orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: is.OrgID, GuildID: is.GuildID}, orchestrator.RoleOperator)}
			if is.Status == orchestrator.IssueOpen {
				d.Open++
			}
			d.Issues = append(d.Issues, r)
		}
		sort.SliceStable(d.Issues, func(i, j int) bool { // the API answers newest first
			return d.Issues[i].Status == orchestrator.IssueOpen && d.Issues[j].Status != orchestrator.IssueOpen
		})
		d.CanAll = p.Guild != nil && d.Open > 0 && v.me.can(p.Chain(), orchestrator.RoleOperator)
		pd := v.at(p, "Issues", "Issues · "+p.Name(), d)
		switch v.c.Query("resolved") {
		case "":
		case "1":
			pd.Notice = "The issue is resolved."
		default:
			pd.Notice = "Resolved " + v.c.Query("resolved") + " issues."
		}
		return a.render(v.c, http.StatusOK, "issues", pd)
	}
}

// or is s, or else when s is empty.
func or(s, orElse string) string {
	if s == "" {
		return orElse
	}
	return s
}

// resolveIssue resolves one issue (POST /api/issues/{id}/resolve) and goes back to its inbox.
func (a *App) resolveIssue(v *view) error {
	if err := v.send(fiber.MethodPost, apiPath("issues", v.c.Params("id"), "resolve"), nil, nil); err != nil {
		return err
	}
	return v.seeOther(inboxPath(v.c.FormValue("back")) + "?resolved=1")
}

// resolveAll resolves every open issue of a guild (POST /api/guilds/{id}/issues/resolve).
func (a *App) resolveAll(v *view) error {
	var out struct {
		Resolved int `json:"resolved"`
	}
	id := v.c.Params("id")
	if err := v.send(fiber.MethodPost, apiPath("guilds", id, "issues", "resolve"), nil, &out); err != nil {
		return err
	}
	n := out.Resolved
	s := "0"
	if n > 0 {
		s = strconv.Itoa(n)
	}
	return v.seeOther("/guilds/" + id + "/issues?resolved=" + s)
}

// inboxPath is the inbox a resolve form came from, when it is one; else the organisations.
func inboxPath(p string) string {
	if localPath(p) && len(p) > len("/issues") && p[len(p)-len("/issues"):] == "/issues" {
		return p
	}
	return "/orgs"
}
