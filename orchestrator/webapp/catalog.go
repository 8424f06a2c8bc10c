package webapp

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// catalogRoutes registers Admin → Connector catalog: every catalog server, published or not, its
// copy, URL and named endpoints edited, each server and each of its tools published or
// unpublished, and a custom MCP server added.
func (a *App) catalogRoutes(r fiber.Router) {
	r.Get("/admin/catalog", a.page(a.admin(a.catalogPage)))
	r.Post("/admin/catalog", a.action(a.admin(a.createServer)))
	r.Get("/admin/catalog/:slug", a.page(a.admin(a.serverPage)))
	r.Post("/admin/catalog/:slug", a.action(a.admin(a.editServer)))
	r.Post("/admin/catalog/:slug/published", a.action(a.admin(a.publishServer)))
	r.Post("/admin/catalog/:slug/tools", a.action(a.admin(a.publishTool)))
}

// authKinds are the ways a custom server's logins connect (the API's auth values).
var authKinds = []struct{ Value, Label string }{
	{orchestrator.AuthNone, "none: no credentials"},
	{orchestrator.AuthToken, "token: one API key"},
	{orchestrator.AuthOAuth, "oauth: a browser login"},
}

// catalogData is the Connector catalog's page: every server and the form that adds one.
type catalogData struct {
	Servers []catalogRow
	Create  *form
	Auths   any
}

// catalogRow is one server of the catalog's list: the fields the list shows (the page decodes no
// tool's schema or description).
type catalogRow struct {
	Slug       string            `json:"slug"`
	Name       string            `json:"name"`
	URL        string            `json:"url"`
	Auth       string            `json:"auth"`
	Endpoints  map[string]string `json:"endpoints"`
	Custom     bool              `json:"custom"`
	Published  bool              `json:"published"`
	CopySource string            `json:"copy_source"`
	Tools      []struct {
		Published bool `json:"published"`
	} `json:"tools"`
}

// PublishedTools counts the server's published tools.
func (r catalogRow) PublishedTools() int {
	n := 0
	for _, t := range r.Tools {
		if t.Published {
			n++
		}
	}
	return n
}

// adminServers reads every catalog row (GET /api/admin/mcp/servers).
func (v *view) adminServers() ([]orchestrator.MCPServer, error) {
	var out struct {
		Servers []orchestrator.MCPServer `json:"servers"`
	}
	return out.Servers, v.get("/api/admin/mcp/servers", &out)
}

func (a *App) catalogPage(v *view) error { return a.showCatalog(v, http.StatusOK, nil, "") }

func (a *App) showCatalog(v *view, status int, create *form, fail string) error {
	var out struct {
		Servers []catalogRow `json:"servers"`
	}
	if err := v.get("/api/admin/mcp/servers", &out); err != nil {
		return err
	}
	if create == nil {
		create = &form{Values: map[string]string{"auth": orchestrator.AuthToken}, Errors: map[string]string{}}
	}
	pd := v.adminPage("Connector catalog", catalogData{Servers: out.Servers, Create: create, Auths: authKinds})
	pd.Error = fail
	if fail == "" {
		pd.Notice = map[string]string{"published": "The server is published: operators see it in their Tools view and may connect it.",
			"unpublished": "The server is unpublished: operators no longer see it, and runs are not offered its tools."}[v.c.Query("done")]
	}
	return a.render(v.c, status, "admin-catalog", pd)
}

// createServer adds a custom MCP server (POST /api/admin/mcp/servers) and opens its page.
func (a *App) createServer(v *view) error {
	f := newForm(v.c, "slug", "name", "url", "auth", "header", "scheme", "description")
	body := map[string]string{}
	for _, n := range f.fields {
		body[n] = strings.TrimSpace(f.Values[n])
	}
	var srv orchestrator.MCPServer
	if err := v.send(fiber.MethodPost, "/api/admin/mcp/servers", body, &srv); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showCatalog(v, status, f, "") })
	}
	return v.seeOther("/admin/catalog/" + escapeSegment(srv.Slug) + "?done=created")
}

// serverData is one catalog server's page: its facts, the form that edits its copy and URLs, and
// its tools.
type serverData struct {
	Server    orchestrator.MCPServer
	Endpoints []string // its named endpoints, sorted
	Edit      *form
}

// ModelName is the name the model sees for one of the server's tools.
func (d serverData) ModelName(tool string) string {
	return orchestrator.NamespacedTool(d.Server.Slug, tool)
}

// findServer reads one catalog row from the admin's list: the app's 404 when there is none.
func (v *view) findServer(slug string) (orchestrator.MCPServer, error) {
	servers, err := v.adminServers()
	if err != nil {
		return orchestrator.MCPServer{}, err
	}
	for _, s := range servers {
		if s.Slug == slug {
			return s, nil
		}
	}
	return orchestrator.MCPServer{}, notFound("the catalog has no server " + quote(slug))
}

func (a *App) serverPage(v *view) error { return a.showServer(v, http.StatusOK, nil, "") }

// serverNotices are what a change on a server's page did, by its done query.
var serverNotices = map[string]string{
	"created":     "The server is added and published: operators may connect it from their Tools view.",
	"saved":       "Saved.",
	"unchanged":   "Nothing to save: no field changed.",
	"moved":       "Saved. Its logins are disconnected: their credentials were verified against the old host only; each connects again.",
	"published":   "The server is published.",
	"unpublished": "The server is unpublished: operators no longer see it, and runs are not offered its tools.",
	"tool":        "The tool's state is saved; runs are offered the change from their next generation.",
}

func (a *App) showServer(v *view, status int, edit *form, fail string) error {
	srv, err := v.findServer(v.c.Params("slug"))
	if err != nil {
		return err
	}
	d := serverData{Server: srv}
	for n := range srv.Endpoints {
		d.Endpoints = append(d.Endpoints, n)
	}
	sort.Strings(d.Endpoints)
	if edit == nil {
		edit = &form{Values: map[string]string{"description": srv.Description, "limitations": srv.Limitations, "setup_hint": srv.SetupHint, "url": srv.URL}, Errors: map[string]string{}}
		for n, u := range srv.Endpoints {
			edit.Values["endpoints."+n] = u
		}
	}
	d.Edit = edit
	pd := v.adminPage("Connector catalog", d)
	pd.Title = srv.Name + " · Connector catalog · Admin"
	pd.Error = fail
	if fail == "" {
		pd.Notice = serverNotices[v.c.Query("done")]
	}
	return a.render(v.c, status, "admin-server", pd)
}

// editServer saves the fields of the edit form that changed (PATCH /api/admin/mcp/servers/{slug}):
// an unchanged URL is not sent (a changed one disconnects the server's logins), and an emptied URL
// or endpoint restores the seeded one (null).
func (a *App) editServer(v *view) error {
	srv, err := v.findServer(v.c.Params("slug"))
	if err != nil {
		return err
	}
	fields := []string{"description", "limitations", "setup_hint", "url"}
	for n := range srv.Endpoints {
		fields = append(fields, "endpoints."+n)
	}
	f := newForm(v.c, fields...)
	body := map[string]any{}
	for n, old := range map[string]string{"description": srv.Description, "limitations": srv.Limitations, "setup_hint": srv.SetupHint} {
		if val := strings.ReplaceAll(f.Values[n], "\r\n", "\n"); val != old { // a browser sends a text area's lines with CRLF
			body[n] = val
		}
	}
	moved := false
	if u := strings.TrimSpace(f.Values["url"]); u != srv.URL {
		body["url"], moved = nullable(u), true
	}
	eps := map[string]any{}
	for n, old := range srv.Endpoints {
		if u := strings.TrimSpace(f.Values["endpoints."+n]); u != old {
			eps[n], moved = nullable(u), true
		}
	}
	if len(eps) > 0 {
		body["endpoints"] = eps
	}
	if len(body) == 0 { // the API would refuse an empty patch as "nothing to change"
		return v.seeOther("/admin/catalog/" + escapeSegment(srv.Slug) + "?done=unchanged")
	}
	if err := v.send(fiber.MethodPatch, apiPath("admin", "mcp", "servers", srv.Slug), body, nil); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showServer(v, status, f, "") })
	}
	done := "saved"
	if moved {
		done = "moved"
	}
	return v.seeOther("/admin/catalog/" + escapeSegment(srv.Slug) + "?done=" + done)
}

// nullable is a URL field's value for the API: empty restores the seeded URL (null).
func nullable(u string) any {
	if u == "" {
		return json.RawMessage("null")
	}
	return u
}

// publishServer publishes or unpublishes a server (PATCH .../servers/{slug} {"published"}), back to
// the page the button was on.
func (a *App) publishServer(v *view) error {
	slug := v.c.Params("slug")
	pub, err := publishedValue(v.c.FormValue("published"))
	if err != nil {
		return err
	}
	if err := v.send(fiber.MethodPatch, apiPath("admin", "mcp", "servers", slug), map[string]bool{"published": pub}, nil); err != nil {
		if s := statusOf(err); s == http.StatusUnprocessableEntity || s == http.StatusConflict {
			return a.showCatalog(v, s, nil, messageOf(err))
		}
		return err
	}
	done := map[bool]string{true: "published", false: "unpublished"}[pub]
	if v.c.FormValue("from") == "server" {
		return v.seeOther("/admin/catalog/" + escapeSegment(slug) + "?done=" + done)
	}
	return v.seeOther("/admin/catalog?done=" + done)
}

// publishTool publishes or unpublishes one of a server's tools
// (PATCH .../servers/{slug}/tools/{name} {"published"}).
func (a *App) publishTool(v *view) error {
	slug, name := v.c.Params("slug"), v.c.FormValue("name")
	pub, err := publishedValue(v.c.FormValue("published"))
	if err != nil {
		return err
	}
	if err := v.send(fiber.MethodPatch, apiPath("admin", "mcp", "servers", slug, "tools", name), map[string]bool{"published": pub}, nil); err != nil {
		if s := statusOf(err); s == http.StatusUnprocessableEntity || s == http.StatusNotFound {
			return a.showServer(v, s, nil, messageOf(err))
		}
		return err
	}
	return v.seeOther("/admin/catalog/" + escapeSegment(slug) + "?done=tool#tools")
}

// publishedValue reads a publish button's value.
func publishedValue(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &apiError{Status: http.StatusUnprocessableEntity, Code: orchestrator.EINVALID, Message: "published must be true or false, got " + quote(s)}
}
