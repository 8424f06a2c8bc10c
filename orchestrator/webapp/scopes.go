package webapp

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// scopeRoutes registers the navigator: organisations, guilds and agents, each created, renamed and
// deleted here, and an agent's config flags.
func (a *App) scopeRoutes(r fiber.Router) {
	r.Get("/orgs", a.page(a.orgs))
	r.Post("/orgs", a.action(a.createOrg))
	r.Get("/orgs/:id", a.page(a.org))
	r.Post("/orgs/:id/guilds", a.action(a.createGuild))
	r.Get("/orgs/:id/settings", a.page(a.orgSettings))
	r.Post("/orgs/:id/rename", a.action(a.renameOrg))
	r.Get("/orgs/:id/delete", a.page(a.deletePage(orchestrator.ScopeOrg)))
	r.Post("/orgs/:id/delete", a.action(a.deleteScope(orchestrator.ScopeOrg)))
	r.Get("/guilds/:id", a.page(a.guild))
	r.Post("/guilds/:id/agents", a.action(a.createAgent))
	r.Get("/guilds/:id/settings", a.page(a.guildSettings))
	r.Post("/guilds/:id/rename", a.action(a.renameGuild))
	r.Get("/guilds/:id/delete", a.page(a.deletePage(orchestrator.ScopeGuild)))
	r.Post("/guilds/:id/delete", a.action(a.deleteScope(orchestrator.ScopeGuild)))
	r.Get("/agents/:id", a.page(a.agent))
	r.Post("/agents/:id/config", a.action(a.agentConfig))
	r.Post("/agents/:id/rename", a.action(a.renameAgent))
	r.Get("/agents/:id/delete", a.page(a.deletePage(orchestrator.ScopeAgent)))
	r.Post("/agents/:id/delete", a.action(a.deleteScope(orchestrator.ScopeAgent)))
}

// place is where a page sits: its organisation, and its guild and agent when it is below.
type place struct {
	Org   orchestrator.Org
	Guild *orchestrator.Guild
	Agent *orchestrator.Agent
}

// Scope is the place's own scope kind.
func (p place) Scope() string {
	switch {
	case p.Agent != nil:
		return orchestrator.ScopeAgent
	case p.Guild != nil:
		return orchestrator.ScopeGuild
	}
	return orchestrator.ScopeOrg
}

// ID is the place's own id.
func (p place) ID() string { return p.Chain().ID() }

// Name is the place's own name.
func (p place) Name() string {
	switch {
	case p.Agent != nil:
		return p.Agent.Name
	case p.Guild != nil:
		return p.Guild.Name
	}
	return p.Org.Name
}

// Chain is the place as the API's rules see it.
func (p place) Chain() orchestrator.Chain {
	c := orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: p.Org.ID}
	if p.Guild != nil {
		c.Scope, c.GuildID = orchestrator.ScopeGuild, p.Guild.ID
	}
	if p.Agent != nil {
		c.Scope, c.AgentID = orchestrator.ScopeAgent, p.Agent.ID
	}
	return c
}

// Href is the place's own page.
func (p place) Href() string {
	switch {
	case p.Agent != nil:
		return "/agents/" + p.Agent.ID
	case p.Guild != nil:
		return "/guilds/" + p.Guild.ID
	}
	return "/orgs/" + p.Org.ID
}

// Kind names the place's scope for people: organisation, guild or agent.
func (p place) Kind() string { return scopeName(p.Scope()) }

// Label names a scope of the place's chain for people: "guild Research", "the platform".
func (p place) Label(scope string) string {
	switch scope {
	case orchestrator.ScopePlatform:
		return "the platform"
	case orchestrator.ScopeOrg:
		return "organisation " + p.Org.Name
	case orchestrator.ScopeGuild:
		if p.Guild != nil {
			return "guild " + p.Guild.Name
		}
	case orchestrator.ScopeAgent:
		if p.Agent != nil {
			return "agent " + p.Agent.Name
		}
	}
	return scope
}

// crumbs are the links above the place: Organisations › org › guild › agent.
func (p place) crumbs() []link {
	out := []link{{Label: "Organisations", Href: "/orgs"}, {Label: p.Org.Name, Href: "/orgs/" + p.Org.ID}}
	if p.Guild != nil {
		out = append(out, link{Label: p.Guild.Name, Href: "/guilds/" + p.Guild.ID})
	}
	if p.Agent != nil {
		out = append(out, link{Label: p.Agent.Name, Href: "/agents/" + p.Agent.ID})
	}
	return out[:len(out)-1]
}

// tabs are the sections of the place the session may open: a section whose every route it would
// be refused is not shown.
func (p place) tabs(me *session) []link {
	base := p.Href()
	out := []link{{Label: "Overview", Href: base}, {Label: "Tools", Href: base + "/tools"}}
	switch p.Scope() {
	case orchestrator.ScopeOrg:
		out[0].Label = "Guilds"
	case orchestrator.ScopeGuild:
		out[0].Label = "Agents"
	}
	if p.Scope() != orchestrator.ScopeAgent {
		out = append(out, link{Label: "Issues", Href: base + "/issues"}, link{Label: "Collections", Href: base + "/collections"})
	}
	operator := me.can(p.Chain(), orchestrator.RoleOperator)
	if p.Scope() != orchestrator.ScopeAgent && operator {
		out = append(out, link{Label: "Settings", Href: base + "/settings"})
	}
	if p.Scope() == orchestrator.ScopeAgent {
		out = append(out, link{Label: "Runs", Href: base + "/runs"})
	}
	out = append(out, link{Label: "Approvals", Href: base + "/approvals"})
	if p.Scope() == orchestrator.ScopeAgent && operator { // a viewer never sees a secret's name
		out = append(out, link{Label: "Secrets", Href: base + "/secrets"})
	}
	return out
}

// placeOrg reads an organisation.
func (v *view) placeOrg(id string) (place, error) {
	var p place
	return p, v.get(apiPath("orgs", id), &p.Org)
}

// placeGuild reads a guild and its organisation.
func (v *view) placeGuild(id string) (place, error) {
	var g orchestrator.Guild
	if err := v.get(apiPath("guilds", id), &g); err != nil {
		return place{}, err
	}
	p, err := v.placeOrg(g.OrgID)
	p.Guild = &g
	return p, err
}

// placeAgent reads an agent, its guild and its organisation.
func (v *view) placeAgent(id string) (place, error) {
	var ag orchestrator.Agent
	if err := v.get(apiPath("agents", id), &ag); err != nil {
		return place{}, err
	}
	p, err := v.placeGuild(ag.GuildID)
	p.Agent = &ag
	return p, err
}

// placeOf reads the place a scope kind and id name.
func (v *view) placeOf(scope, id string) (place, error) {
	switch scope {
	case orchestrator.ScopeOrg:
		return v.placeOrg(id)
	case orchestrator.ScopeGuild:
		return v.placeGuild(id)
	case orchestrator.ScopeAgent:
		return v.placeAgent(id)
	}
	return place{}, notFound("no " + scope + " " + id)
}

// at is the page data of a page about a place: its crumbs, its tabs, the current tab.
func (v *view) at(p place, tab, title string, d any) pageData {
	return pageData{Title: title, Heading: p.Name(), Me: v.me, Inst: v.inst, Nav: "Organisations", Crumbs: p.crumbs(), Tabs: p.tabs(v.me), Tab: tab, D: d}
}

func (a *App) home(v *view) error { return v.c.Redirect("/orgs", http.StatusSeeOther) }

// orgsData is the organisations page's.
type orgsData struct {
	Orgs []orchestrator.Org
	Form *form
}

// orgs lists the organisations the session reaches, with the form that creates one for the
// instance admin.
func (a *App) orgs(v *view) error {
	return a.showOrgs(v, http.StatusOK, nil)
}

func (a *App) showOrgs(v *view, status int, f *form) error {
	var out struct {
		Orgs []orchestrator.Org `json:"orgs"`
	}
	if err := v.get("/api/orgs", &out); err != nil {
		return err
	}
	if f == nil {
		f = &form{}
	}
	pd := pageData{Title: "Organisations", Me: v.me, Inst: v.inst, Nav: "Organisations", D: orgsData{Orgs: out.Orgs, Form: f}}
	if v.c.Query("deleted") != "" {
		pd.Notice = "The organisation is deleted, with everything under it."
	}
	return a.render(v.c, status, "orgs", pd)
}

// createOrg creates an organisation (POST /api/orgs) and opens it.
func (a *App) createOrg(v *view) error {
	f := newForm(v.c, "name")
	var o orchestrator.Org
	if err := v.send(fiber.MethodPost, "/api/orgs", map[string]string{"name": f.Values["name"]}, &o); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showOrgs(v, status, f) })
	}
	return v.seeOther("/orgs/" + o.ID)
}

// refused shows a form again with the API's message beside its field when the API refused it as
// input (422, 409, 400, 403), and lets any other error (a 404, a lost session) take its course.
func (a *App) refused(v *view, err error, f *form, show func(status int) error) error {
	switch s := statusOf(err); s {
	case http.StatusUnprocessableEntity, http.StatusConflict, http.StatusBadRequest, http.StatusForbidden, http.StatusBadGateway, http.StatusTooManyRequests:
		f.fail(err)
		return show(s)
	}
	return err
}

// orgData is an organisation's page: its guilds and the form that creates one.
type orgData struct {
	Place  place
	Guilds []orchestrator.Guild
	Form   *form
	Can    bool // may create a guild
}

func (a *App) org(v *view) error { return a.showOrg(v, http.StatusOK, nil) }

func (a *App) showOrg(v *view, status int, f *form) error {
	p, err := v.placeOrg(v.c.Params("id"))
	if err != nil {
		return err
	}
	var out struct {
		Guilds []orchestrator.Guild `json:"guilds"`
	}
	if err := v.get(apiPath("orgs", p.Org.ID, "guilds"), &out); err != nil {
		return err
	}
	if f == nil {
		f = &form{}
	}
	d := orgData{Place: p, Guilds: out.Guilds, Form: f, Can: v.me.can(p.Chain(), orchestrator.RoleOperator)}
	return a.render(v.c, status, "org", v.at(p, "Guilds", p.Org.Name, d))
}

// createGuild creates a guild in the organisation and opens it.
func (a *App) createGuild(v *view) error {
	f := newForm(v.c, "name")
	var g orchestrator.Guild
	if err := v.send(fiber.MethodPost, apiPath("orgs", v.c.Params("id"), "guilds"), map[string]string{"name": f.Values["name"]}, &g); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showOrg(v, status, f) })
	}
	return v.seeOther("/guilds/" + g.ID)
}

// guildData is a guild's page: its agents and the form that creates one.
type guildData struct {
	Place  place
	Agents []orchestrator.Agent
	Form   *form
	Can    bool
}

func (a *App) guild(v *view) error { return a.showGuild(v, http.StatusOK, nil) }

func (a *App) showGuild(v *view, status int, f *form) error {
	p, err := v.placeGuild(v.c.Params("id"))
	if err != nil {
		return err
	}
	var out struct {
		Agents []orchestrator.Agent `json:"agents"`
	}
	if err := v.get(apiPath("guilds", p.Guild.ID, "agents"), &out); err != nil {
		return err
	}
	if f == nil {
		f = &form{Values: map[string]string{"coding": "on", "browser": "on", "scripting": "on", "memory": "on"}}
	}
	d := guildData{Place: p, Agents: out.Agents, Form: f, Can: v.me.can(p.Chain(), orchestrator.RoleOperator)}
	return a.render(v.c, status, "guild", v.at(p, "Agents", p.Guild.Name, d))
}

// configFlags are the agent config flags the forms show, in order, with what each switches on.
var configFlags = []struct{ Key, Label, Help string }{
	{"coding", "Coding", "the code tools: shell, files, search and the code graph"},
	{"browser", "Browser", "the eight browser tools over the agent's own Chromium"},
	{"scripting", "Scripting", "the five script tools, and saved scripts as tools"},
	{"memory", "Memory", "memory_write, the agent's memory that every run starts with"},
}

// configBody reads a config form: every flag (an unchecked box is false) and max_scripts.
func configBody(f *form) (map[string]any, error) {
	cfg := map[string]any{}
	for _, fl := range configFlags {
		cfg[fl.Key] = f.Values[fl.Key] == "on"
	}
	if ms := f.Values["max_scripts"]; ms != "" {
		n, err := strconv.Atoi(ms)
		if err != nil {
			return nil, &apiError{Status: http.StatusUnprocessableEntity, Code: orchestrator.EINVALID,
				Message: "max_scripts must be a whole number from 1 to " + strconv.Itoa(orchestrator.MaxMaxScripts) + ", got " + strconv.Quote(ms)}
		}
		cfg["max_scripts"] = n
	}
	return cfg, nil
}

// createAgent creates an agent in the guild with the flags checked, and opens it.
func (a *App) createAgent(v *view) error {
	f := newForm(v.c, "name", "coding", "browser", "scripting", "memory", "max_scripts")
	show := func(status int) error { return a.showGuild(v, status, f) }
	cfg, err := configBody(f)
	if err != nil {
		return a.refused(v, err, f, show)
	}
	var ag orchestrator.Agent
	if err := v.send(fiber.MethodPost, apiPath("guilds", v.c.Params("id"), "agents"), map[string]any{"name": f.Values["name"], "config": cfg}, &ag); err != nil {
		return a.refused(v, err, f, show)
	}
	return v.seeOther("/agents/" + ag.ID)
}

// agentData is an agent's overview: its config flags (a form for its operators) and its names.
type agentData struct {
	Place  place
	Flags  any
	Form   *form
	Rename *form
	Can    bool
}

func (a *App) agent(v *view) error {
	notice := map[string]string{"config": "The config flags are saved; they apply from the agent's next run.", "name": "Renamed."}[v.c.Query("saved")]
	return a.showAgent(v, http.StatusOK, nil, nil, notice)
}

func (a *App) showAgent(v *view, status int, f, rename *form, notice string) error {
	p, err := v.placeAgent(v.c.Params("id"))
	if err != nil {
		return err
	}
	cfg := p.Agent.Config
	if f == nil {
		f = &form{Values: map[string]string{"max_scripts": strconv.Itoa(maxScripts(cfg))}, Errors: map[string]string{}}
		for k, on := range map[string]bool{"coding": cfg.Coding, "browser": cfg.Browser, "scripting": cfg.Scripting, "memory": cfg.Memory} {
			if on {
				f.Values[k] = "on"
			}
		}
	}
	if rename == nil {
		rename = &form{Values: map[string]string{"name": p.Agent.Name}}
	}
	d := agentData{Place: p, Flags: configFlags, Form: f, Rename: rename, Can: v.me.can(p.Chain(), orchestrator.RoleOperator)}
	pd := v.at(p, "Overview", p.Agent.Name, d)
	pd.Notice = notice
	return a.render(v.c, status, "agent", pd)
}

// maxScripts is the agent's limit as the API applies it (0 is the default).
func maxScripts(c orchestrator.AgentConfig) int {
	if c.MaxScripts == 0 {
		return orchestrator.DefaultMaxScripts
	}
	return c.MaxScripts
}

// agentConfig saves the agent's config flags (PATCH /api/agents/{id}).
func (a *App) agentConfig(v *view) error {
	f := newForm(v.c, "coding", "browser", "scripting", "memory", "max_scripts")
	show := func(status int) error { return a.showAgent(v, status, f, nil, "") }
	cfg, err := configBody(f)
	if err != nil {
		return a.refused(v, err, f, show)
	}
	if err := v.send(fiber.MethodPatch, apiPath("agents", v.c.Params("id")), map[string]any{"config": cfg}, nil); err != nil {
		return a.refused(v, err, f, show)
	}
	return v.seeOther("/agents/" + v.c.Params("id") + "?saved=config")
}

// renameAgent renames the agent (PATCH /api/agents/{id}).
func (a *App) renameAgent(v *view) error {
	f := newForm(v.c, "name")
	if err := v.send(fiber.MethodPatch, apiPath("agents", v.c.Params("id")), map[string]any{"name": f.Values["name"]}, nil); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showAgent(v, status, nil, f, "") })
	}
	return v.seeOther("/agents/" + v.c.Params("id") + "?saved=name")
}

// settingsData is an organisation's or a guild's settings: the rename form and the way to delete.
type settingsData struct {
	Place  place
	Rename *form
	Delete bool // may delete it
}

func (a *App) orgSettings(v *view) error {
	return a.showSettings(v, orchestrator.ScopeOrg, http.StatusOK, nil)
}

func (a *App) guildSettings(v *view) error {
	return a.showSettings(v, orchestrator.ScopeGuild, http.StatusOK, nil)
}

func (a *App) showSettings(v *view, scope string, status int, f *form) error {
	p, err := v.placeOf(scope, v.c.Params("id"))
	if err != nil {
		return err
	}
	if !v.me.can(p.Chain(), orchestrator.RoleOperator) {
		return &apiError{Status: http.StatusForbidden, Code: orchestrator.EFORBIDDEN, Message: "the settings of " + p.Label(scope) + " need the operator role there"}
	}
	if f == nil {
		f = &form{Values: map[string]string{"name": p.Name()}}
	}
	del := orchestrator.RoleOperator
	if scope == orchestrator.ScopeOrg {
		del = orchestrator.RoleOwner
	}
	pd := v.at(p, "Settings", "Settings · "+p.Name(), settingsData{Place: p, Rename: f, Delete: v.me.can(p.Chain(), del)})
	if v.c.Query("saved") == "name" {
		pd.Notice = "Renamed."
	}
	return a.render(v.c, status, "settings", pd)
}

// renameOrg renames an organisation (PATCH /api/orgs/{id}).
func (a *App) renameOrg(v *view) error { return a.rename(v, orchestrator.ScopeOrg, "orgs") }

// renameGuild renames a guild (PATCH /api/guilds/{id}).
func (a *App) renameGuild(v *view) error { return a.rename(v, orchestrator.ScopeGuild, "guilds") }

func (a *App) rename(v *view, scope, coll string) error {
	f := newForm(v.c, "name")
	id := v.c.Params("id")
	if err := v.send(fiber.MethodPatch, apiPath(coll, id), map[string]string{"name": f.Values["name"]}, nil); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showSettings(v, scope, status, f) })
	}
	return v.seeOther("/" + coll + "/" + id + "/settings?saved=name")
}

// deleteData is the page that confirms a deletion, and says why one was refused.
type deleteData struct {
	Place    place
	OpenRuns []string // the runs that refused it (the API's 409)
}

// deletePage asks to confirm the deletion of an organisation, guild or agent, naming what goes
// with it.
func (a *App) deletePage(scope string) func(v *view) error {
	return func(v *view) error { return a.showDelete(v, scope, http.StatusOK, nil, "") }
}

func (a *App) showDelete(v *view, scope string, status int, open []string, msg string) error {
	p, err := v.placeOf(scope, v.c.Params("id"))
	if err != nil {
		return err
	}
	tab := "Settings"
	if scope == orchestrator.ScopeAgent {
		tab = "Overview"
	}
	pd := v.at(p, tab, "Delete "+p.Name(), deleteData{Place: p, OpenRuns: open})
	pd.Heading = "Delete " + p.Kind() + " " + p.Name()
	pd.Error = msg
	return a.render(v.c, status, "delete", pd)
}

// deleteScope deletes an organisation, guild or agent; a 409 (open runs) is shown with the runs
// to close.
func (a *App) deleteScope(scope string) func(v *view) error {
	coll := map[string]string{orchestrator.ScopeOrg: "orgs", orchestrator.ScopeGuild: "guilds", orchestrator.ScopeAgent: "agents"}[scope]
	return func(v *view) error {
		id := v.c.Params("id")
		p, err := v.placeOf(scope, id)
		if err != nil {
			return err
		}
		if err := v.send(fiber.MethodDelete, apiPath(coll, id), nil, nil); err != nil {
			if s := statusOf(err); s == http.StatusConflict || s == http.StatusForbidden {
				var open []string
				var ae *apiError
				if errors.As(err, &ae) {
					if l, ok := ae.Fields["open_runs"].([]any); ok {
						for _, r := range l {
							if s, ok := r.(string); ok {
								open = append(open, s)
							}
						}
					}
				}
				return a.showDelete(v, scope, s, open, messageOf(err))
			}
			return err
		}
		to := "/orgs?deleted=" + p.Org.ID
		switch scope {
		case orchestrator.ScopeGuild:
			to = "/orgs/" + p.Org.ID
		case orchestrator.ScopeAgent:
			to = "/guilds/" + p.Guild.ID
		}
		return v.seeOther(to)
	}
}
