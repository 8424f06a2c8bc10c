package webapp

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
)

// testRoutes registers the Test form of a connected login's listed tool and its Call.
func (a *App) testRoutes(r fiber.Router) {
	r.Get("/connections/:id/tools/:name/test", a.page(a.testPage))
	r.Post("/connections/:id/tools/:name/test", a.action(a.testCall))
}

// testData is the Test page's: the tool, its form built from its input schema, and the result.
type testData struct {
	Conn   orchestrator.Connection
	Tool   orchestrator.ListedTool
	Fields []argField
	Error  string
	Result *connections.TestResult
	Back   string
}

// argField is one argument of the tool's input schema as a form field.
type argField struct {
	Name, Type, Help, Value string
	Enum                    []string
	Required                bool
	Error                   string
}

// Input is the kind of control the field is: text, number, checkbox, select or json.
func (f argField) Input() string {
	switch {
	case len(f.Enum) > 0:
		return "select"
	case f.Type == "boolean":
		return "checkbox"
	case f.Type == "integer" || f.Type == "number":
		return "number"
	case f.Type == "object" || f.Type == "array":
		return "json"
	}
	return "text"
}

// schemaFields reads a tool's input schema's top-level properties, required first, then by name.
func schemaFields(raw json.RawMessage) []argField {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(raw, &s) // a schema that is not an object has no fields
	req := map[string]bool{}
	for _, n := range s.Required {
		req[n] = true
	}
	var out []argField
	for n, p := range s.Properties {
		f := argField{Name: n, Help: p.Description, Required: req[n]}
		switch t := p.Type.(type) {
		case string:
			f.Type = t
		case []any: // ["string", "null"]: the first that is not null
			for _, x := range t {
				if s, ok := x.(string); ok && s != "null" {
					f.Type = s
					break
				}
			}
		}
		for _, e := range p.Enum {
			if s, ok := e.(string); ok {
				f.Enum = append(f.Enum, s)
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// loadTest reads the connection and its listed tool.
func (v *view) loadTest() (testData, error) {
	var d testData
	id, name := v.c.Params("id"), v.c.Params("name")
	if err := v.get(apiPath("mcp", "connections", id), &d.Conn); err != nil {
		return d, err
	}
	var out struct {
		Tools []orchestrator.ListedTool `json:"tools"`
	}
	if err := v.get(apiPath("mcp", "connections", id, "tools"), &out); err != nil {
		return d, err
	}
	for _, t := range out.Tools {
		if t.Name == name {
			d.Tool, d.Fields = t, schemaFields(t.InputSchema)
			d.Back = v.c.Query("back")
			if !localPath(d.Back) {
				d.Back = ""
			}
			return d, nil
		}
	}
	return d, notFound("the login " + id + " lists no tool " + name)
}

func (a *App) testPage(v *view) error {
	d, err := v.loadTest()
	if err != nil {
		return err
	}
	return a.showTest(v, http.StatusOK, d)
}

func (a *App) showTest(v *view, status int, d testData) error {
	pd := pageData{Title: "Test " + d.Tool.Name, Heading: "Test " + d.Tool.Name, Me: v.me, Inst: v.inst, Nav: "Organisations", D: d}
	if d.Back != "" {
		pd.Crumbs = []link{{Label: "Back to the Tools view", Href: d.Back}}
	}
	return a.render(v.c, status, "test", pd)
}

// testCall reads the form into the tool's arguments (each field checked against its type before
// anything is sent), calls it (POST /api/mcp/connections/{id}/call) and shows the result as the
// model would see it: redacted and capped by the API.
func (a *App) testCall(v *view) error {
	d, err := v.loadTest()
	if err != nil {
		return err
	}
	d.Back = v.c.FormValue("back")
	if !localPath(d.Back) {
		d.Back = ""
	}
	args, bad := map[string]any{}, false
	for i := range d.Fields {
		f := &d.Fields[i]
		raw := v.c.FormValue("arg_" + f.Name)
		f.Value = raw
		if f.Input() == "checkbox" {
			if raw == "on" || f.Required {
				args[f.Name] = raw == "on"
			}
			continue
		}
		if strings.TrimSpace(raw) == "" {
			if f.Required {
				f.Error, bad = f.Name+" is required", true
			}
			continue
		}
		switch f.Input() {
		case "number":
			n, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
			if err != nil || f.Type == "integer" && n != float64(int64(n)) {
				f.Error, bad = f.Name+" must be "+map[bool]string{true: "a whole number", false: "a number"}[f.Type == "integer"]+", got "+quote(raw), true
				continue
			}
			args[f.Name] = n
		case "json":
			var x any
			if err := json.Unmarshal([]byte(raw), &x); err != nil {
				f.Error, bad = f.Name+" is not valid JSON: "+err.Error(), true
				continue
			}
			if _, isObj := x.(map[string]any); f.Type == "object" && !isObj {
				f.Error, bad = f.Name+" must be a JSON object, such as {\"key\": \"value\"}", true
				continue
			}
			if _, isArr := x.([]any); f.Type == "array" && !isArr {
				f.Error, bad = f.Name+" must be a JSON array, such as [1, 2]", true
				continue
			}
			args[f.Name] = x
		default:
			args[f.Name] = raw
		}
	}
	if bad {
		return a.showTest(v, http.StatusUnprocessableEntity, d)
	}
	var res connections.TestResult
	if err := v.send(fiber.MethodPost, apiPath("mcp", "connections", d.Conn.ID, "call"), map[string]any{"name": d.Tool.Name, "arguments": args}, &res); err != nil {
		switch statusOf(err) {
		case http.StatusUnprocessableEntity, http.StatusConflict, http.StatusBadGateway, http.StatusTooManyRequests, http.StatusBadRequest:
			d.Error = messageOf(err)
			return a.showTest(v, statusOf(err), d)
		}
		return err
	}
	d.Result = &res
	return a.showTest(v, http.StatusOK, d)
}
