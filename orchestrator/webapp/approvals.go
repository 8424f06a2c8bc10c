package webapp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// approvalRoutes registers the Approvals inbox (every pending request the session reaches), the
// lists of an organisation, guild or agent (filtered by status), one request's page (where an
// approval is confirmed) and the decisions.
func (a *App) approvalRoutes(r fiber.Router) {
	r.Get("/approvals", a.page(a.inbox))
	r.Get("/approvals/:id", a.page(a.approvalPage))
	r.Post("/approvals/:id/approve", a.action(a.decide(true)))
	r.Post("/approvals/:id/deny", a.action(a.decide(false)))
	for _, s := range []struct{ coll, scope string }{{"orgs", orchestrator.ScopeOrg}, {"guilds", orchestrator.ScopeGuild}, {"agents", orchestrator.ScopeAgent}} {
		r.Get("/"+s.coll+"/:id/approvals", a.page(a.scopeApprovals(s.scope)))
	}
}

// waitingLocal is the request local holding the banner's count of requests waiting for the
// session's decision.
const waitingLocal = "guilds.approvals_waiting"

// pendingCounts is GET /api/approvals/pending's answer.
type pendingCounts struct {
	Pending int                             `json:"pending"`
	Agents  []orchestrator.PendingApprovals `json:"agents"`
}

// mayDecide reports whether the session may decide an approval anywhere: the instance admin, or an
// operator or owner of some organisation or guild.
func (s *session) mayDecide() bool {
	if s == nil {
		return false
	}
	if s.Admin {
		return true
	}
	for _, m := range s.Members {
		if orchestrator.RoleRank(m.Role) >= orchestrator.RoleRank(orchestrator.RoleOperator) {
			return true
		}
	}
	return false
}

// agentChain is the chain of a pending count's agent.
func agentChain(pc orchestrator.PendingApprovals) orchestrator.Chain {
	return orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: pc.OrgID, GuildID: pc.GuildID, AgentID: pc.AgentID}
}

// countWaiting reads, for a session that may decide somewhere, how many requests wait for its
// decision (one API read per page: the pending counts, kept for the inbox) and leaves the count
// for the layout's banner. A failed read shows no banner and fails no page.
func (v *view) countWaiting() {
	if !v.me.mayDecide() || v.htmx() {
		return
	}
	var pc pendingCounts
	if err := v.get("/api/approvals/pending", &pc); err != nil {
		v.a.log().Debug("the approvals banner's count could not be read", "err", err.Error())
		return
	}
	v.pending = &pc
	n := 0
	for _, ag := range pc.Agents {
		if v.me.can(agentChain(ag), orchestrator.RoleOperator) {
			n += ag.Pending
		}
	}
	v.c.Locals(waitingLocal, n)
}

// approvalsData is the inbox's, a scope's list's and one request's page's.
type approvalsData struct {
	Place   *place // the scope listed; nil for the inbox and one request
	Status  string // the list's filter ("" every status)
	Shows   []link // a scope's filters: each status, and All
	Rows    []approvalRow
	One     *approvalRow // one request's page
	Confirm bool         // One's page asks to confirm its approval
	Back    string       // the page a decision goes back to
	Older   string       // the next (older) page's link
}

// approvalRow is one request with the names the page shows, its arguments as the tool's form would
// show them, and whether the session may decide it.
type approvalRow struct {
	orchestrator.Approval
	Agent, Guild string     // names where known, else ids
	Decider      string     // who decided, for people: "you", "the admin token", else the account's id
	Args         []argShown // nil when withheld (a viewer)
	Can          bool       // pending, and the session may approve or deny it
}

// argShown is one argument of a request as the tool's Test form would show it, read-only.
type argShown struct {
	argField
	Absent bool // the call left it out
}

// Showing is the label of the filter a scope's list shows.
func (d approvalsData) Showing() string {
	if d.Status == "" {
		return "All"
	}
	return titleCase(d.Status)
}

// Pending reports whether the request waits for a decision.
func (r approvalRow) Pending() bool { return r.Status == orchestrator.ApprovalPending }

// shownArgs lays out a call's arguments in the shape of the tool's form, built from its input
// schema (required first, then by name): each field with the value the call gave it. Arguments
// the schema does not name follow as JSON; without a schema each argument is shown by its JSON type.
func shownArgs(schema, args json.RawMessage) []argShown {
	var given map[string]json.RawMessage
	_ = json.Unmarshal(args, &given) // arguments that are not an object show as none
	fields := schemaFields(schema)
	out := make([]argShown, 0, len(fields)+len(given))
	named := map[string]bool{}
	for _, f := range fields {
		named[f.Name] = true
		raw, ok := given[f.Name]
		out = append(out, argShown{argField: withValue(f, raw), Absent: !ok})
	}
	var extra []string
	for n := range given {
		if !named[n] {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	for _, n := range extra {
		out = append(out, argShown{argField: withValue(argField{Name: n, Type: jsonType(given[n])}, given[n])})
	}
	return out
}

// jsonType names the JSON type of a value as a schema would.
func jsonType(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "string"
	}
	switch t[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// withValue sets a field's Value as its control shows it: a string unquoted, a checkbox "on" when
// true, an object or array indented, anything else its JSON.
func withValue(f argField, raw json.RawMessage) argField {
	if len(raw) == 0 {
		return f
	}
	var s string
	switch {
	case f.Input() == "checkbox":
		if string(bytes.TrimSpace(raw)) == "true" {
			f.Value = "on"
		}
	case json.Unmarshal(raw, &s) == nil:
		f.Value = s
		if f.Input() == "json" || f.Input() == "number" { // a string where the schema wants other: shown as sent
			f.Value = string(raw)
		}
	default:
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") == nil {
			f.Value = b.String()
		} else {
			f.Value = string(raw)
		}
	}
	return f
}

// approvalRows gives requests their agents' and guilds' names and their arguments in the shape of
// their tools' forms (the schema the run offered the tool with; one read per run and per guild).
func (v *view) approvalRows(list []orchestrator.Approval) []approvalRow {
	agents, guilds := map[string]string{}, map[string]string{}
	readGuilds, readAgents := map[string]bool{}, map[string]bool{}
	schemas := map[string]map[string]json.RawMessage{} // run → tool → input schema
	out := make([]approvalRow, 0, len(list))
	for _, ap := range list {
		if !readGuilds[ap.OrgID] {
			readGuilds[ap.OrgID] = true
			var gs struct {
				Guilds []orchestrator.Guild `json:"guilds"`
			}
			if v.get(apiPath("orgs", ap.OrgID, "guilds"), &gs) == nil { // names only: an id is shown without
				for _, g := range gs.Guilds {
					guilds[g.ID] = g.Name
				}
			}
		}
		if !readAgents[ap.GuildID] {
			readAgents[ap.GuildID] = true
			var ags struct {
				Agents []orchestrator.Agent `json:"agents"`
			}
			if v.get(apiPath("guilds", ap.GuildID, "agents"), &ags) == nil {
				for _, ag := range ags.Agents {
					agents[ag.ID] = ag.Name
				}
			}
		}
		r := approvalRow{Approval: ap, Agent: or(agents[ap.AgentID], ap.AgentID), Guild: or(guilds[ap.GuildID], ap.GuildID),
			Can: ap.Status == orchestrator.ApprovalPending && v.me.can(ap.Chain(), orchestrator.RoleOperator), Decider: ap.DecidedBy}
		switch ap.DecidedBy {
		case v.me.AccountID():
			r.Decider = "you"
		case orchestrator.DecidedByAdmin:
			r.Decider = "the admin token"
		}
		if !ap.Withheld {
			tools, ok := schemas[ap.RunID]
			if !ok {
				tools = map[string]json.RawMessage{}
				var run orchestrator.Run
				if v.get(apiPath("runs", ap.RunID), &run) == nil {
					for _, t := range run.OfferedTools {
						tools[t.Name] = t.InputSchema
					}
				}
				schemas[ap.RunID] = tools
			}
			r.Args = shownArgs(tools[ap.Tool], ap.Arguments)
		}
		out = append(out, r)
	}
	return out
}

// inbox lists every pending request the session reaches, newest first: those it may decide with
// Approve and Deny, the others (a viewer's) to read.
func (a *App) inbox(v *view) error {
	pc := v.pending
	if pc == nil {
		pc = &pendingCounts{}
		if err := v.get("/api/approvals/pending", pc); err != nil {
			return err
		}
	}
	var orgs []string
	for _, ag := range pc.Agents {
		if !slices.Contains(orgs, ag.OrgID) {
			orgs = append(orgs, ag.OrgID)
		}
	}
	var all []orchestrator.Approval
	for _, org := range orgs {
		var out struct {
			Approvals []orchestrator.Approval `json:"approvals"`
		}
		if err := v.get(apiPath("orgs", org, "approvals")+"?status=pending&limit=500", &out); err != nil {
			return err
		}
		all = append(all, out.Approvals...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAt.After(all[j].CreatedAt) })
	d := approvalsData{Status: orchestrator.ApprovalPending, Rows: v.approvalRows(all), Back: "/approvals"}
	pd := pageData{Title: "Approvals", Me: v.me, Inst: v.inst, Nav: "Approvals", D: d, Notice: decidedNotice(v.c.Query("decided"))}
	return a.render(v.c, http.StatusOK, "approvals", pd)
}

// decidedNotice says what a decision just did.
func decidedNotice(status string) string {
	switch status {
	case orchestrator.ApprovalApproved:
		return "Approved: the call runs now, with exactly the arguments shown."
	case orchestrator.ApprovalDenied:
		return "Denied: the call did not run, and the model reads your reason."
	}
	return ""
}

// scopeApprovals lists an organisation's, guild's or agent's requests, newest first, of one status
// (?status=, every status when empty), a page at a time.
func (a *App) scopeApprovals(scope string) func(v *view) error {
	return func(v *view) error {
		p, err := v.placeOf(scope, v.c.Params("id"))
		if err != nil {
			return err
		}
		status := v.c.Query("status")
		if status != "" && !slices.Contains(orchestrator.ApprovalStatuses, status) {
			status = ""
		}
		q := url.Values{"limit": {"50"}}
		if status != "" {
			q.Set("status", status)
		}
		if b := v.c.Query("before"); b != "" {
			q.Set("before", b)
		}
		coll := map[string]string{orchestrator.ScopeOrg: "orgs", orchestrator.ScopeGuild: "guilds", orchestrator.ScopeAgent: "agents"}[scope]
		var out struct {
			Approvals  []orchestrator.Approval `json:"approvals"`
			NextBefore *string                 `json:"next_before"`
		}
		if err := v.get(apiPath(coll, p.ID(), "approvals")+"?"+q.Encode(), &out); err != nil {
			return err
		}
		here := p.Href() + "/approvals"
		if status != "" {
			here += "?" + queryOf("status", status)
		}
		d := approvalsData{Place: &p, Status: status, Rows: v.approvalRows(out.Approvals), Back: here}
		for _, st := range append(append([]string(nil), orchestrator.ApprovalStatuses...), "") {
			l := link{Label: "All", Href: p.Href() + "/approvals"}
			if st != "" {
				l = link{Label: titleCase(st), Href: p.Href() + "/approvals?" + queryOf("status", st)}
			}
			d.Shows = append(d.Shows, l)
		}
		if out.NextBefore != nil {
			older := url.Values{"before": {*out.NextBefore}}
			if status != "" {
				older.Set("status", status)
			}
			d.Older = p.Href() + "/approvals?" + older.Encode()
		}
		pd := v.at(p, "Approvals", "Approvals · "+p.Name(), d)
		pd.Notice = decidedNotice(v.c.Query("decided"))
		return a.render(v.c, http.StatusOK, "approvals", pd)
	}
}

// approvalPage shows one request; with ?decide=approve it asks to confirm the approval (the
// second of the two clicks).
func (a *App) approvalPage(v *view) error {
	var ap orchestrator.Approval
	if err := v.get(apiPath("approvals", v.c.Params("id")), &ap); err != nil {
		return err
	}
	rows := v.approvalRows([]orchestrator.Approval{ap})
	d := approvalsData{One: &rows[0], Back: v.c.Query("back")}
	if !localPath(d.Back) {
		d.Back = "/approvals"
	}
	d.Confirm = v.c.Query("decide") == "approve" && d.One.Can
	title := "Approval of " + ap.Tool
	pd := pageData{Title: title, Me: v.me, Inst: v.inst, Nav: "Approvals", D: d, Crumbs: []link{{Label: "Approvals", Href: "/approvals"}}}
	return a.render(v.c, http.StatusOK, "approvals", pd)
}

// decide approves or denies a request (POST /api/approvals/{id}/approve or /deny, a denial with the
// form's reason) and goes back to the list it came from, saying what it did.
func (a *App) decide(approve bool) func(v *view) error {
	return func(v *view) error {
		verb, body := "approve", map[string]any{}
		if !approve {
			verb, body["reason"] = "deny", strings.TrimSpace(v.c.FormValue("reason"))
		}
		var got orchestrator.Approval
		if err := v.send(fiber.MethodPost, apiPath("approvals", v.c.Params("id"), verb), body, &got); err != nil {
			return err
		}
		back := v.c.FormValue("back")
		if !localPath(back) || !strings.Contains(back, "approvals") {
			back = "/approvals"
		}
		sep := "?"
		if strings.Contains(back, "?") {
			sep = "&"
		}
		return v.seeOther(back + sep + queryOf("decided", got.Status))
	}
}
