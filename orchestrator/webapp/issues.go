package webapp

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

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

// issuesData is an inbox's: one page of the issues its filter shows.
type issuesData struct {
	Place  place
	Show   string // open, resolved or all
	Shows  []link // the filters, the current one marked by Show
	Issues []issueRow
	Open   int    // open issues on this page
	More   bool   // a page follows
	Older  string // the next page's link, "" on the last
	Newest string // the first page's link, "" on it
	CanAll bool   // may resolve every open issue of the guild at once
	Can    bool   // some row has a Resolve button
	Back   string // where a resolve comes back to
}

// issueRow is one report_issue row as the inbox shows it (plain fields: a table of them renders
// without the template's reflection over embedded structs).
type issueRow struct {
	ID, Kind, Message, Status     string
	GuildID, Guild                string // the guild's name where known, else its id
	AgentID, Agent                string
	RunID, Filed, Resolved, State string
	Open, Can                     bool
}

// issuePage is how many issues an inbox page holds.
const issuePage = 50

// issues lists a page of a guild's or an organisation's report_issue rows, newest first: the open
// ones by default, ?show=resolved or all for the others, ?after= for older pages (all shows the
// page's open rows first).
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
		base := p.Href() + "/issues"
		d := issuesData{Place: p, Show: v.c.Query("show", "open")}
		q := url.Values{"limit": {strconv.Itoa(issuePage)}}
		switch d.Show {
		case "open", "resolved":
			q.Set("status", d.Show)
		case "all":
		default:
			return badRequest("show must be open, resolved or all, not " + strconv.Quote(d.Show))
		}
		for _, f := range []string{"open", "resolved", "all"} {
			d.Shows = append(d.Shows, link{Label: titleCase(f), Href: base + "?show=" + f})
		}
		after := v.c.Query("after")
		if after != "" {
			q.Set("after", after)
			d.Newest = base + "?show=" + d.Show
		}
		var out struct {
			Issues    []orchestrator.Issue `json:"issues"`
			NextAfter *string              `json:"next_after"`
		}
		if err := v.get(apiPath(coll, p.ID())+"/issues?"+q.Encode(), &out); err != nil {
			return err
		}
		if out.NextAfter != nil {
			d.More, d.Older = true, base+"?"+url.Values{"show": {d.Show}, "after": {*out.NextAfter}}.Encode()
		}
		can := map[string]bool{} // per guild: may resolve its issues
		for _, is := range out.Issues {
			c, ok := can[is.GuildID]
			if !ok {
				c = v.me.can(orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: is.OrgID, GuildID: is.GuildID}, orchestrator.RoleOperator)
				can[is.GuildID] = c
			}
			r := issueRow{ID: is.ID, Kind: is.Kind, Message: is.Message, Status: is.Status, State: titleCase(is.Status),
				GuildID: is.GuildID, Guild: or(is.GuildName, is.GuildID), AgentID: is.AgentID, Agent: or(is.AgentName, is.AgentID),
				RunID: is.RunID, Filed: when(is.CreatedAt), Resolved: when(is.ResolvedAt), Open: is.Status == orchestrator.IssueOpen}
			r.Can = c && r.Open
			d.Can = d.Can || r.Can
			if r.Open {
				d.Open++
			}
			d.Issues = append(d.Issues, r)
		}
		sort.SliceStable(d.Issues, func(i, j int) bool { return d.Issues[i].Open && !d.Issues[j].Open }) // the API answers newest first
		d.CanAll = p.Guild != nil && d.Open > 0 && v.me.can(p.Chain(), orchestrator.RoleOperator)
		d.Back = base + "?show=" + d.Show
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
// Resolving is idempotent: a form sent twice does one thing without a once token.
func (a *App) resolveIssue(v *view) error {
	if err := v.send(fiber.MethodPost, apiPath("issues", v.c.Params("id"), "resolve"), nil, nil); err != nil {
		return err
	}
	return v.seeOther(inboxPath(v.c.FormValue("back"), "1"))
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
	return v.seeOther(inboxPath("/guilds/"+id+"/issues", strconv.Itoa(out.Resolved)))
}

// inboxPath is the inbox a resolve form came from (with its filter), when it is one, else the
// organisations, noting how many issues were resolved.
func inboxPath(back, resolved string) string {
	u, err := url.Parse(back)
	if err != nil || !localPath(u.Path) || !strings.HasSuffix(u.Path, "/issues") || len(u.Path) == len("/issues") {
		return "/orgs"
	}
	q := url.Values{"resolved": {resolved}}
	if show := u.Query().Get("show"); show != "" {
		q.Set("show", show)
	}
	return u.Path + "?" + q.Encode()
}
