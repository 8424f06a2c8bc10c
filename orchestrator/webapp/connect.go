package webapp

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
)

// connectRoutes registers Connect at an organisation, a guild and an agent (a token form built
// from the server's fields, or a redirect to the provider for an OAuth login), and a login's own
// page: its state and listed tools, Refresh, and Disconnect or Delete.
func (a *App) connectRoutes(r fiber.Router) {
	for _, s := range []struct{ coll, scope string }{{"orgs", orchestrator.ScopeOrg}, {"guilds", orchestrator.ScopeGuild}, {"agents", orchestrator.ScopeAgent}} {
		r.Get("/"+s.coll+"/:id/connect/:slug", a.page(a.connectPage(s.scope)))
		r.Post("/"+s.coll+"/:id/connect/:slug", a.action(a.connect(s.scope)))
	}
	r.Get("/connections/:id", a.page(a.connection))
	r.Post("/connections/:id/refresh", a.action(a.refreshConnection))
	r.Post("/connections/:id/delete", a.action(a.deleteConnection))
	a.pickerRoutes(r)
}

// connectData is the Connect page's: the server, its form, and how it connects.
type connectData struct {
	Place  place
	Server orchestrator.MCPServer
	Fields []credField
	Form   *form
	Action string
	OAuth  bool        // connects by a redirect to the provider (an OAuth login, the GitHub App's install)
	Coins  *coinPicker // Pinned prices: its coins, picked here
	Cannot string      // why this page cannot connect it (not set up, not offered here); "" when it can
}

// credField is one field of a server's token form.
type credField struct {
	orchestrator.CredentialField
	Secret bool   // a key: a password input, never echoed or prefilled
	Value  string // what was typed (never a secret's)
	Error  string
}

// secretField reports whether a credential field holds a key (anything but a login name or
// similar): its input is a password input whose value is never sent back.
func secretField(f orchestrator.CredentialField) bool {
	n := strings.ToLower(f.Name + " " + f.Label)
	for _, w := range []string{"key", "token", "secret", "password"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// connectCannot says why this app cannot connect a server ("" when it can): its OAuth client or
// GitHub App not configured, or a server that takes no login.
func connectCannot(srv orchestrator.MCPServer) string {
	switch {
	case srv.OAuthSetupState == "unsupported" && srv.Kind == orchestrator.ServerGitHub:
		return srv.Name + " is not set up on this box: the box's GitHub App is not configured."
	case srv.OAuthSetupState == "unsupported":
		return srv.Name + " is not set up on this box: its OAuth client is not configured."
	case srv.Auth == orchestrator.AuthOAuth, srv.Auth == orchestrator.AuthToken:
		return ""
	case srv.Auth == orchestrator.AuthNone && srv.Kind == orchestrator.ServerRemote:
		return ""
	}
	return srv.Name + " takes no login: its tools need no Connect."
}

// server reads one published catalog server by slug.
func (v *view) server(slug string) (orchestrator.MCPServer, error) {
	var out struct {
		Servers []orchestrator.MCPServer `json:"servers"`
	}
	if err := v.get("/api/mcp/servers", &out); err != nil {
		return orchestrator.MCPServer{}, err
	}
	for _, s := range out.Servers {
		if s.Slug == slug {
			return s, nil
		}
	}
	return orchestrator.MCPServer{}, notFound("no server " + slug + " in the catalog")
}

func (a *App) connectPage(scope string) func(v *view) error {
	return func(v *view) error { return a.showConnect(v, scope, http.StatusOK, nil, nil) }
}

// showConnect shows the Connect page, with a refused form's values and messages (and Pinned
// prices' coins as chosen) when f is not nil.
func (a *App) showConnect(v *view, scope string, status int, f *form, coins []orchestrator.Coin) error {
	p, err := v.placeOf(scope, v.c.Params("id"))
	if err != nil {
		return err
	}
	if !v.me.can(p.Chain(), orchestrator.RoleOperator) {
		return &apiError{Status: http.StatusForbidden, Code: orchestrator.EFORBIDDEN, Message: "connecting a login at " + p.Label(scope) + " needs the operator role there"}
	}
	srv, err := v.server(v.c.Params("slug"))
	if err != nil {
		return err
	}
	if f == nil {
		f = &form{Values: map[string]string{}, Errors: map[string]string{}}
	}
	d := connectData{Place: p, Server: srv, Form: f, Action: p.Href() + "/connect/" + srv.Slug}
	d.Cannot = connectCannot(srv)
	if srv.OAuthSetupState == "unsupported" {
		if it := v.inst.connectorIntegration(srv.Slug); it != nil && len(it.missing()) > 0 {
			d.Cannot = srv.Name + " is not set up on this box: set " + strings.Join(it.missing(), " and ") + " in the orchestrator's environment and restart it."
		}
	}
	d.OAuth = d.Cannot == "" && srv.Auth == orchestrator.AuthOAuth
	if srv.Config.MaxCoins > 0 && d.Cannot == "" {
		d.Coins = &coinPicker{Chosen: coins, Error: f.Errors["coins"], Max: srv.Config.MaxCoins, Search: d.Action + "/coins", Before: true}
		if d.Coins.Chosen == nil {
			d.Coins.Chosen = []orchestrator.Coin{}
		}
	}
	for _, cf := range srv.Config.Fields {
		fd := credField{CredentialField: cf, Secret: secretField(cf), Error: f.Errors[cf.Name]}
		if !fd.Secret {
			fd.Value = f.Values[cf.Name]
		}
		d.Fields = append(d.Fields, fd)
	}
	pd := v.at(p, "Tools", "Connect "+srv.Name+" · "+p.Name(), d)
	pd.Heading = "Connect " + srv.Name
	pd.Crumbs = append(pd.Crumbs, link{Label: p.Name(), Href: p.Href()})
	return a.render(v.c, status, "connect", pd)
}

// connect posts the Connect (POST /api/mcp/connections) at the view's scope: a token login is
// verified and stored, and the Tools view opens with its tools; an OAuth login sends the browser
// to the provider's authorization URL. A refused form is shown again with the API's message
// beside the field it names, keeping what was typed except the keys.
func (a *App) connect(scope string) func(v *view) error {
	return func(v *view) error {
		p, err := v.placeOf(scope, v.c.Params("id"))
		if err != nil {
			return err
		}
		srv, err := v.server(v.c.Params("slug"))
		if err != nil {
			return err
		}
		names := []string{"account_hint"}
		for _, cf := range srv.Config.Fields {
			names = append(names, cf.Name)
		}
		if srv.Config.MaxCoins > 0 {
			names = append(names, "coins")
		}
		f := newForm(v.c, names...)
		creds := map[string]string{}
		for _, cf := range srv.Config.Fields {
			creds[cf.Name] = f.Values[cf.Name]
			if secretField(cf) {
				f.forget(cf.Name)
			}
		}
		var coins []orchestrator.Coin
		body := map[string]any{"server": srv.Slug, "scope": scope, "scope_id": p.ID(), "credentials": creds, "account_hint": f.Values["account_hint"]}
		if srv.Config.MaxCoins > 0 { // Pinned prices: the coins picked, beside the key
			var err error
			if coins, err = formCoins(v.c); err != nil {
				return err
			}
			body["coins"] = coins
		}
		var out struct {
			orchestrator.Connection
			Conn             *orchestrator.Connection `json:"connection"`
			AuthorizationURL string                   `json:"authorization_url"`
		}
		if err := v.send(fiber.MethodPost, "/api/mcp/connections", body, &out); err != nil {
			return a.refused(v, err, f, func(status int) error {
				if f.Error != "" && len(srv.Config.Fields) == 1 && f.Errors["coins"] == "" { // a refused key: beside the one field
					f.Errors[srv.Config.Fields[0].Name], f.Error = f.Error, ""
				}
				return a.showConnect(v, scope, status, f, coins)
			})
		}
		if out.AuthorizationURL != "" { // the provider's page; its callback lands on the login's page
			return v.c.Redirect(out.AuthorizationURL, http.StatusSeeOther)
		}
		return v.seeOther(p.Href() + "/tools?" + queryOf("connected", srv.Name) + "&" + queryOf("tools", strconv.Itoa(out.ToolCount)))
	}
}

// LoginPage is the app's page for a login, where the OAuth callback lands the browser once the
// provider has answered: the login's state is all its query says.
func LoginPage(conn orchestrator.Connection) string {
	return "/connections/" + url.PathEscape(conn.ID) + "?" + queryOf("login", conn.Status)
}

// connectionData is a login's page.
type connectionData struct {
	Place   place
	Conn    orchestrator.Connection
	Tools   []orchestrator.ListedTool
	Diff    *orchestrator.ListingDiff // the last Refresh's
	Can     bool
	Pinned  []orchestrator.Coin // a Pinned prices login's coins, as stored
	Coins   *coinPicker         // a Pinned prices login: its coins, changed here (an operator's)
	Folders *folderPicker       // a pending Drive login: its folder, picked here
	Repos   *repoPicker         // a connected GitHub login: its repositories, picked here
}

func (a *App) connection(v *view) error {
	notice := ""
	q := v.c.Queries()
	switch {
	case q["login"] == orchestrator.ConnConnected:
		notice = "Signed in: the login is connected, and its tools are listed below."
	case q["login"] == orchestrator.ConnPending:
		notice = "Signed in: the login still needs its settings before it connects; pick them below."
	case count(q["pinned"]) != "":
		notice = "The coins are saved: " + count(q["pinned"]) + " pinned, quoted at the start of every run."
	case q["folder"] != "":
		notice = "The login is confined to the folder you picked and connected; its tools are listed below."
		if name := plainName(q["folder"]); name != "" {
			notice = "The login is confined to the folder " + name + " and connected; its tools are listed below."
		}
	case count(q["repositories"]) != "":
		notice = "The repositories are saved: " + count(q["repositories"]) + " picked."
	}
	return a.showConnection(v, http.StatusOK, nil, notice, "", nil)
}

// showConnection shows a login's page: its state, its pickers (with a refused picker's choice and
// the API's message when f is not nil) and its listed tools.
func (a *App) showConnection(v *view, status int, diff *orchestrator.ListingDiff, notice, fail string, f *connectionForm) error {
	var conn orchestrator.Connection
	if err := v.get(apiPath("mcp", "connections", v.c.Params("id")), &conn); err != nil {
		return err
	}
	p, err := v.placeOf(conn.Scope, conn.ScopeID)
	if err != nil {
		return err
	}
	var out struct {
		Tools []orchestrator.ListedTool `json:"tools"`
	}
	if err := v.get(apiPath("mcp", "connections", conn.ID, "tools"), &out); err != nil {
		return err
	}
	d := connectionData{Place: p, Conn: conn, Tools: out.Tools, Diff: diff, Can: v.me.can(p.Chain(), orchestrator.RoleOperator)}
	if f == nil {
		f = &connectionForm{}
	}
	if conn.Server == connections.PinnedPricesSlug {
		d.Pinned = pinnedCoins(conn)
	}
	if d.Can {
		if err := v.pickers(&d, f); err != nil {
			return err
		}
	}
	pd := v.at(p, "Tools", conn.Server+" login · "+p.Name(), d)
	pd.Heading = conn.Server + " login"
	pd.Crumbs = append(pd.Crumbs, link{Label: p.Name(), Href: p.Href()})
	pd.Notice, pd.Error = notice, fail
	return a.render(v.c, status, "connection", pd)
}

// pickers fills a login's pickers: Pinned prices' coins, a pending Drive login's folders (under
// the folder the page opened), a connected GitHub login's repositories with its selection.
func (v *view) pickers(d *connectionData, f *connectionForm) error {
	conn := d.Conn
	switch {
	case conn.Server == connections.PinnedPricesSlug:
		srv, err := v.server(conn.Server)
		if err != nil {
			return err
		}
		chosen := d.Pinned
		if f.Coins != nil {
			chosen = f.Coins
		}
		d.Coins = &coinPicker{Chosen: chosen, Error: f.CoinsError, Max: srv.Config.MaxCoins, Search: "/connections/" + conn.ID + "/coins"}
	case conn.Server == connections.DriveSlug && conn.Status == orchestrator.ConnPending:
		fp := &folderPicker{Parent: v.c.Query("parent"), ParentName: v.c.Query("in"), Chosen: f.Folder, Error: f.FolderError}
		if fp.Parent == "" {
			fp.Parent = v.c.FormValue("parent")
			fp.ParentName = v.c.FormValue("in")
		}
		var out struct {
			Folders []connections.DriveFolder `json:"folders"`
		}
		path := apiPath("mcp", "connections", conn.ID, "drive", "folders")
		if fp.Parent != "" {
			path += "?" + queryOf("parent", fp.Parent)
		}
		if err := v.get(path, &out); err != nil {
			if statusOf(err) >= 500 || statusOf(err) == http.StatusNotFound {
				return err
			}
			fp.Error = messageOf(err)
		}
		fp.Folders = out.Folders
		d.Folders = fp
	case conn.Server == "github" && conn.Status == orchestrator.ConnConnected:
		rp := &repoPicker{Selected: map[string]bool{}, Error: f.ReposError}
		var out struct {
			Repos []orchestrator.GitHubRepository `json:"repositories"`
		}
		if err := v.get(apiPath("mcp", "connections", conn.ID, "github", "repositories"), &out); err != nil {
			if statusOf(err) >= 500 && statusOf(err) != http.StatusBadGateway || statusOf(err) == http.StatusNotFound {
				return err
			}
			rp.Error = messageOf(err)
		}
		rp.Repos = out.Repos
		if f.Repos != nil {
			for _, u := range f.Repos {
				rp.Selected[u] = true
			}
		} else {
			sel, err := v.selection(conn)
			if err != nil {
				return err
			}
			for _, r := range sel {
				rp.Selected[r.URL] = true
			}
		}
		d.Repos = rp
	}
	return nil
}

// selection is a GitHub login's selected repositories, as its owner's Tools view reads them.
func (v *view) selection(conn orchestrator.Connection) ([]orchestrator.GitHubRepo, error) {
	coll := map[string]string{orchestrator.ScopeOrg: "orgs", orchestrator.ScopeGuild: "guilds", orchestrator.ScopeAgent: "agents"}[conn.Scope]
	var acc struct {
		Servers []struct {
			ConnectionID string                    `json:"connection_id"`
			Repos        []orchestrator.GitHubRepo `json:"github_repositories"`
		} `json:"mcp_servers"`
	}
	if err := v.get(apiPath(coll, conn.ScopeID, "tools"), &acc); err != nil {
		return nil, err
	}
	for _, s := range acc.Servers {
		if s.ConnectionID == conn.ID {
			return s.Repos, nil
		}
	}
	return nil, nil
}

// refreshConnection relists the login's tools now (POST /api/mcp/connections/{id}/refresh) and
// shows what changed: added, removed, changed.
func (a *App) refreshConnection(v *view) error {
	var diff orchestrator.ListingDiff
	if err := v.send(fiber.MethodPost, apiPath("mcp", "connections", v.c.Params("id"), "refresh"), nil, &diff); err != nil {
		switch statusOf(err) {
		case http.StatusConflict, http.StatusBadGateway, http.StatusUnprocessableEntity:
			return a.showConnection(v, statusOf(err), nil, "", messageOf(err), nil)
		}
		return err
	}
	notice := "The tool list is refreshed: nothing changed."
	if n := len(diff.Added) + len(diff.Removed) + len(diff.Changed); n > 0 {
		notice = "The tool list is refreshed: " + strconv.Itoa(len(diff.Added)) + " added, " + strconv.Itoa(len(diff.Removed)) + " removed, " + strconv.Itoa(len(diff.Changed)) + " changed."
	}
	return a.showConnection(v, http.StatusOK, &diff, notice, "", nil)
}

// deleteConnection disconnects and deletes the login (DELETE /api/mcp/connections/{id}): its
// sealed credentials and listed tools go, and its server's tools are offered no more through it.
func (a *App) deleteConnection(v *view) error {
	var conn orchestrator.Connection
	if err := v.get(apiPath("mcp", "connections", v.c.Params("id")), &conn); err != nil {
		return err
	}
	p, err := v.placeOf(conn.Scope, conn.ScopeID)
	if err != nil {
		return err
	}
	if err := v.send(fiber.MethodDelete, apiPath("mcp", "connections", conn.ID), nil, nil); err != nil {
		return err
	}
	return v.seeOther(p.Href() + "/tools?" + queryOf("deleted", conn.Server))
}
