package webapp

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

//go:embed templates
var templateFiles embed.FS

// pageData is what the layout shows around a view's own data.
type pageData struct {
	Title   string
	Me      *session
	Inst    instance
	Nav     string // the current item of the top navigation
	Crumbs  []link // where the page sits: organisation › guild › agent
	Tabs    []link // the sections of the scope the page is about
	Tab     string // the current tab's label
	Notice  string // what the last change did
	Error   string // why the last change was refused
	CSRF    string
	D       any // the view's own data
	Heading string
	Waiting int // approval requests waiting for the session's decision (the banner); 0 shows none
}

// link is a labelled path.
type link struct {
	Label, Href string
}

// instance is GET /api/instance's answer, as far as the app reads it.
type instance struct {
	SSO          bool          `json:"sso"`
	Integrations []integration `json:"integrations"`
}

// integration is one integration of the instance: its state and variables (never a value).
type integration struct {
	Name       string     `json:"name"`
	State      string     `json:"state"`
	Summary    string     `json:"switches_on_summary"`
	Variables  []variable `json:"variables"`
	Providers  []string   `json:"providers"`
	Tools      []string   `json:"tools"`
	Connectors []string   `json:"connectors"`
}

// variable is one variable of an integration: whether it is set.
type variable struct {
	Name     string `json:"name"`
	Set      bool   `json:"set"`
	Required bool   `json:"required"`
}

// NoModelKey lists the variables that would give the box a model key, when none of the model
// providers' integrations is on (organisations hold no keys of their own yet); nil when one is.
func (in instance) NoModelKey() []string {
	var vars []string
	for _, it := range in.Integrations {
		if len(it.Providers) == 0 {
			continue
		}
		if it.State == "on" {
			return nil
		}
		for _, v := range it.Variables {
			if v.Required {
				vars = append(vars, v.Name)
			}
		}
	}
	return vars
}

// toolNotSetUp is the integration that switches on a native tool, when it is not on.
func (in instance) toolNotSetUp(tool string) *integration {
	for i, it := range in.Integrations {
		for _, t := range it.Tools {
			if t == tool && it.State != "on" {
				return &in.Integrations[i]
			}
		}
	}
	return nil
}

// connectorIntegration is the integration a connector needs (the GitHub App, Google's client).
func (in instance) connectorIntegration(slug string) *integration {
	for i, it := range in.Integrations {
		for _, s := range it.Connectors {
			if s == slug {
				return &in.Integrations[i]
			}
		}
	}
	return nil
}

// missing lists the required variables an integration lacks.
func (it integration) missing() []string {
	var out []string
	for _, v := range it.Variables {
		if v.Required && !v.Set {
			out = append(out, v.Name)
		}
	}
	return out
}

// templates holds one template set per page: the layout, the shared parts, and the page's file.
var templates = parseTemplates()

var funcs = template.FuncMap{
	"navItems":    navItems,
	"configFlags": func() any { return configFlags },
	"asset":       assetURL,
	"join":        strings.Join,
	"when":        when,
	"ago":         ago,
	"scopeName":   scopeName,
	"query":       queryOf,
	"once":        randomToken,
	"add":         func(a, b int) int { return a + b },
	"dict":        dict,
	"lower":       strings.ToLower,
	"title":       titleCase,
	"toolrow":     toolRowHTML,
}

// parseTemplates parses every page file with the layout and the parts.
func parseTemplates() map[string]*template.Template {
	out := map[string]*template.Template{}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || base == "parts" {
			continue
		}
		out[base] = template.Must(template.New(base).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/parts.html", n))
	}
	out["layout"] = template.Must(template.New("layout").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/parts.html"))
	return out
}

// render answers a whole page: the layout around the page's "content".
func (a *App) render(c *fiber.Ctx, status int, name string, d pageData) error {
	if d.Me != nil && d.CSRF == "" {
		d.CSRF = d.Me.CSRF
	}
	if n, ok := c.Locals(waitingLocal).(int); ok && d.Me != nil {
		d.Waiting = n
	}
	if d.Heading == "" {
		d.Heading = d.Title
	}
	return a.execute(c, status, name, "layout", d)
}

// fragment answers one named template of a page's set (an htmx swap).
func (a *App) fragment(c *fiber.Ctx, status int, page, name string, d any) error {
	return a.execute(c, status, page, name, d)
}

func (a *App) execute(c *fiber.Ctx, status int, page, name string, d any) error {
	t, ok := templates[page]
	if !ok {
		return fmt.Errorf("no template %s", page)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, d); err != nil {
		return fmt.Errorf("render %s/%s: %w", page, name, err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(b.Bytes())
}

// when formats a time for people: the date and the minute, UTC.
func when(t any) string {
	switch x := t.(type) {
	case time.Time:
		if x.IsZero() {
			return ""
		}
		return x.UTC().Format("2006-01-02 15:04 UTC")
	case *time.Time:
		if x == nil {
			return ""
		}
		return when(*x)
	}
	return ""
}

// ago says how long ago a time was, roughly.
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// scopeName names a scope kind for people.
func scopeName(scope string) string {
	switch scope {
	case orchestrator.ScopeOrg:
		return "organisation"
	case orchestrator.ScopePlatform:
		return "platform"
	}
	return scope
}

// titleCase capitalises the first letter.
func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// dict builds a map from key, value pairs (a template's argument to a part).
func dict(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		m[k] = kv[i+1]
	}
	return m
}

// queryOf is one query parameter, escaped.
func queryOf(k, v string) string { return url.QueryEscape(k) + "=" + url.QueryEscape(v) }
