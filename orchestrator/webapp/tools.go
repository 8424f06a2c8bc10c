package webapp

import (
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
)

// toolRoutes registers the Tools view at an organisation, a guild and an agent, and the control
// that sets a tool's or server's binding there.
func (a *App) toolRoutes(r fiber.Router) {
	for _, s := range []struct{ coll, scope string }{{"orgs", orchestrator.ScopeOrg}, {"guilds", orchestrator.ScopeGuild}, {"agents", orchestrator.ScopeAgent}} {
		r.Get("/"+s.coll+"/:id/tools", a.page(a.tools(s.scope)))
		r.Post("/"+s.coll+"/:id/tools", a.action(a.setBinding(s.scope)))
	}
}

// Control values of the Inherit / On / Off control, and Ask (on, with an operator's approval of
// each call) for a tool.
const (
	controlInherit = "inherit"
	controlOn      = "on"
	controlOff     = "off"
	controlAsk     = "ask"
)

// toolsData is the Tools view's.
type toolsData struct {
	Place   place
	Groups  []toolGroup
	Servers []serverRow
	Can     bool   // may set bindings here
	Action  string // where a control posts
	Agent   bool   // the view is an agent's: "offered" is what a direct run of it is offered
}

// toolGroup is one group of native tools, as the specification groups them.
type toolGroup struct {
	Name  string
	Tools []toolRow
}

// toolRow is one native tool or server tool: its control here and what it resolves to.
type toolRow struct {
	Kind, ID, Name string // the binding's catalog kind and id, and the name shown (the model's name)
	Field          string // a safe id for the row's elements
	Binding        bool   // decided by bindings (false: by the agent's flags, or always offered)
	Control        string // inherit, on or off: the row at this scope
	On             bool   // what it resolves to
	Ask            bool   // it resolves to Ask: each call waits for an operator's approval
	From           string // the scope that decided it, for people ("guild Research"); "" when none did
	Offered        bool   // an agent's view: offered on a direct run
	Why            string // why it is not offered
	Rule           string // a tool no binding decides: what does (the agent's flags, or always offered)
	Test           string // a connected login's listed tool: its Test page
}

// serverRow is one catalog server: its control, connection and tools.
type serverRow struct {
	toolRow
	Status   string   // the login's state: connected, pending, disconnected; "" without one
	ConnFrom string   // the scope whose binding chose the login, for people
	NotSetUp []string // the variables to set before it can be connected (its OAuth client or App)
	Unset    bool     // not set up
	Note     string
	Tools    []toolRow
	Connect  string // the Connect page, for an operator, when no connected login is in effect
	Login    string // the login's page, when one is in effect
}

// tools shows every native tool grouped, and every catalog server with its tools, each with its
// control and resolved state.
func (a *App) tools(scope string) func(v *view) error {
	return func(v *view) error {
		notice := ""
		switch q := v.c.Queries(); {
		case plainName(q["connected"]) != "" && count(q["tools"]) != "":
			notice = plainName(q["connected"]) + " is connected here: " + count(q["tools"]) + " tools listed, each with its control below."
		case plainName(q["deleted"]) != "":
			notice = "The " + plainName(q["deleted"]) + " login is disconnected and deleted."
		}
		return a.showTools(v, scope, http.StatusOK, notice)
	}
}

func (a *App) showTools(v *view, scope string, status int, notice string) error {
	p, err := v.placeOf(scope, v.c.Params("id"))
	if err != nil {
		return err
	}
	coll := map[string]string{orchestrator.ScopeOrg: "orgs", orchestrator.ScopeGuild: "guilds", orchestrator.ScopeAgent: "agents"}[scope]
	var acc bindings.Access
	if err := v.get(apiPath(coll, p.ID(), "tools"), &acc); err != nil {
		return err
	}
	var rows struct {
		Bindings []orchestrator.Binding `json:"bindings"`
	}
	if err := v.get("/api/bindings?"+url.Values{"scope": {scope}, "scope_id": {p.ID()}}.Encode(), &rows); err != nil {
		return err
	}
	here := map[string]string{}
	for _, b := range rows.Bindings {
		c := controlOff
		switch {
		case b.Enabled && b.Ask:
			c = controlAsk
		case b.Enabled:
			c = controlOn
		}
		here[b.CatalogKind+"/"+b.CatalogID] = c
	}
	control := func(kind, id string) string {
		if c, ok := here[kind+"/"+id]; ok {
			return c
		}
		return controlInherit
	}
	d := toolsData{Place: p, Can: v.me.can(p.Chain(), orchestrator.RoleOperator), Action: p.Href() + "/tools", Agent: scope == orchestrator.ScopeAgent}
	groups := map[string]*toolGroup{}
	for _, t := range acc.Native {
		r := toolRow{Kind: orchestrator.CatalogNativeTool, ID: t.Name, Name: t.Name, Field: fieldID("n", t.Name), Binding: t.Binding,
			Control: control(orchestrator.CatalogNativeTool, t.Name), On: t.Enabled, Ask: t.Ask, From: fromLabel(p, t.DecidedBy), Offered: t.Offered, Why: t.Reason}
		r.Why = strings.TrimPrefix(r.Why, "not offered: ") // the state beside it says Not offered
		if !t.Binding {
			r.On = t.Offered
			r.Rule = "by the agent's flags"
			if t.Family == orchestrator.FamilyAlways {
				r.Rule = "always offered"
			}
		}
		if it := v.inst.toolNotSetUp(t.Name); it != nil && r.Why == "" {
			r.Offered, r.Why = false, "set "+strings.Join(it.missing(), " and ")+" (integration "+it.Name+")"
		}
		g, ok := groups[t.Group]
		if !ok {
			g = &toolGroup{Name: t.Group}
			groups[t.Group] = g
		}
		g.Tools = append(g.Tools, r)
	}
	for _, g := range groups {
		d.Groups = append(d.Groups, *g)
	}
	sort.Slice(d.Groups, func(i, j int) bool { // the groups bindings decide first: the ones with controls
		bi, bj := d.Groups[i].Tools[0].Binding, d.Groups[j].Tools[0].Binding
		if bi != bj {
			return bi
		}
		return d.Groups[i].Name < d.Groups[j].Name
	})
	var catalog struct { // the fields Connect is decided by (not each server's tools and schemas)
		Servers []struct {
			Slug, Name, Kind, Auth string
			OAuthSetupState        string `json:"oauth_setup_state"`
			Config                 struct {
				MaxCoins int `json:"max_coins"`
			} `json:"config"`
		} `json:"servers"`
	}
	if d.Can && len(acc.Servers) > 0 { // which servers this app can connect (an operator's Connect)
		if err := v.get("/api/mcp/servers", &catalog); err != nil {
			return err
		}
	}
	connectable := map[string]bool{}
	for _, s := range catalog.Servers {
		connectable[s.Slug] = connectCannot(orchestrator.MCPServer{Slug: s.Slug, Name: s.Name, Kind: s.Kind, Auth: s.Auth,
			OAuthSetupState: s.OAuthSetupState, Config: orchestrator.ServerConfig{MaxCoins: s.Config.MaxCoins}}) == ""
	}
	for _, s := range acc.Servers {
		sr := serverRow{toolRow: toolRow{Kind: orchestrator.CatalogMCP, ID: s.Slug, Name: s.Name, Field: fieldID("s", s.Slug), Binding: true,
			Control: control(orchestrator.CatalogMCP, s.Slug), On: s.Enabled, From: fromLabel(p, s.DecidedBy)},
			Status: s.ConnectionStatus, ConnFrom: fromLabel(p, s.ConnectionFrom), Note: s.Note}
		if s.ListError != "" {
			sr.Note = strings.TrimSpace(sr.Note + " The last listing failed: " + s.ListError)
		}
		if s.OAuthSetupState == "unsupported" && s.ConnectionID == "" {
			sr.Unset = true
			if it := v.inst.connectorIntegration(s.Slug); it != nil {
				sr.NotSetUp = it.missing()
			}
		}
		if s.ConnectionID != "" {
			sr.Login = "/connections/" + s.ConnectionID
		}
		if d.Can && !sr.Unset && connectable[s.Slug] && s.ConnectionStatus != orchestrator.ConnConnected {
			sr.Connect = p.Href() + "/connect/" + s.Slug
		}
		for _, t := range s.Tools {
			tr := toolRow{Kind: orchestrator.CatalogMCPTool, ID: t.Name, Name: t.Name, Field: fieldID("t", t.Name), Binding: true,
				Control: control(orchestrator.CatalogMCPTool, t.Name), On: t.Enabled, Ask: t.Ask, From: fromLabel(p, t.DecidedBy)}
			tr.Offered = t.Enabled && s.Enabled && s.ConnectionStatus == orchestrator.ConnConnected
			if s.ConnectionID != "" && s.ConnectionStatus == orchestrator.ConnConnected && d.Can {
				tr.Test = "/connections/" + s.ConnectionID + "/tools/" + t.Name + "/test?" + queryOf("back", d.Action)
			}
			if !s.Enabled {
				tr.Why = "its server is Off"
			} else if s.ConnectionID == "" {
				tr.Why = "no login is bound"
			}
			sr.Tools = append(sr.Tools, tr)
		}
		d.Servers = append(d.Servers, sr)
	}
	pd := v.at(p, "Tools", "Tools · "+p.Name(), d)
	pd.Notice = notice
	return a.render(v.c, status, "tools", pd)
}

// fromLabel names the scope that decided a state for people, from the place the view is at.
func fromLabel(p place, scope string) string {
	if scope == "" {
		return ""
	}
	return p.Label(scope)
}

// fieldID makes an element id from a tool's or server's name (letters, digits, - and _ only).
func fieldID(prefix, name string) string {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteByte('-')
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// setBinding writes the control's choice at the view's scope: On or Off is a binding row there
// (PUT /api/bindings), Inherit deletes it (DELETE /api/bindings), and the view is shown again.
func (a *App) setBinding(scope string) func(v *view) error {
	return func(v *view) error {
		p, err := v.placeOf(scope, v.c.Params("id"))
		if err != nil {
			return err
		}
		kind, id, state := v.c.FormValue("kind"), v.c.FormValue("catalog_id"), v.c.FormValue("state")
		switch kind {
		case orchestrator.CatalogNativeTool, orchestrator.CatalogMCP, orchestrator.CatalogMCPTool:
		default:
			return &apiError{Status: http.StatusUnprocessableEntity, Code: orchestrator.EINVALID, Message: "kind must be native_tool, mcp or mcp_tool, got " + quote(kind)}
		}
		body := map[string]any{"scope": scope, "scope_id": p.ID(), "catalog_kind": kind, "catalog_id": id}
		var what string
		switch state {
		case controlInherit:
			err, what = v.send(fiber.MethodDelete, "/api/bindings", body, nil), "inherits"
		case controlOn, controlOff:
			body["enabled"] = state == controlOn
			err, what = v.send(fiber.MethodPut, "/api/bindings", body, nil), "is "+titleCase(state)
		case controlAsk: // the API refuses it on a server, saying why
			body["enabled"], body["ask"] = true, true
			err, what = v.send(fiber.MethodPut, "/api/bindings", body, nil), "asks before each call"
		default:
			return &apiError{Status: http.StatusUnprocessableEntity, Code: orchestrator.EINVALID, Message: "state must be inherit, on, off or ask, got " + quote(state)}
		}
		if err != nil { // the API's reason, in the page's notice (a.fail)
			return err
		}
		notice := id + " " + what + " at " + p.Label(scope) + "."
		if !v.htmx() {
			return v.seeOther(p.Href() + "/tools")
		}
		return a.showTools(v, scope, http.StatusOK, notice)
	}
}

// quote is a value quoted for a message.
func quote(s string) string { return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\"" }

// Row is the server's own row (its control and state).
func (s serverRow) Row() toolRow { return s.toolRow }

// choice is one option of the Inherit / On / Off control.
type choice struct {
	Value, Label string
	Checked      bool
}

// Choices are the control's options, the row's own checked: Inherit, On and Off, and Ask for a
// tool (a server is never Ask).
func (r toolRow) Choices() []choice {
	out := []choice{{controlInherit, "Inherit", r.Control == controlInherit}, {controlOn, "On", r.Control == controlOn}, {controlOff, "Off", r.Control == controlOff}}
	if r.Kind != orchestrator.CatalogMCP {
		out = append(out, choice{controlAsk, "Ask", r.Control == controlAsk})
	}
	return out
}
