package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// nulValue is a string holding a NUL character, as a JSON body carries it.
const nulValue = "before\x00after"

// TestNULRefusedInEveryTextField: for every operation of openapi.json that takes a JSON body, and
// every string its request schema holds (however deep, keys of free-form maps included), a body
// whose string holds a NUL character is a 422 EINVALID naming the field by its JSON path, never a
// 500, and nothing is stored; so are tool arguments and names of a run's calls, and query parameters.
func TestNULRefusedInEveryTextField(t *testing.T) {
	var svc *runs.Service
	e := platformEnv(t, nil, func(_ *registry.Registry, _ *postgres.Store, s *runs.Service) { svc = s })
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := e.must(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Builders"})["id"].(string)
	agent := e.must(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Ada"})["id"].(string)
	run := e.run(agent, map[string]any{"kind": "direct", "tool_call_budget": 50})
	coll := e.must(201, "POST", "/api/orgs/"+org+"/collections", map[string]any{"name": "tasks", "columns": []any{map[string]any{"name": "title", "type": "text"}}})["id"].(string)
	ids := map[string]string{"/api/orgs/{id}": org, "/api/guilds/{id}": guild, "/api/agents/{id}": agent, "/api/runs/{id}": run, "/api/collections/{id}": coll}
	before := rowCounts(t, e)

	var d map[string]any
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	schemas := d["components"].(map[string]any)["schemas"].(map[string]any)
	param := regexp.MustCompile(`\{[A-Za-z_]+\}`)
	checked := 0
	var paths []string
	for p := range d["paths"].(map[string]any) {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		for method, op := range d["paths"].(map[string]any)[path].(map[string]any) {
			rb, ok := op.(map[string]any)["requestBody"].(map[string]any)
			if !ok {
				continue
			}
			js, ok := rb["content"].(map[string]any)["application/json"].(map[string]any)
			if !ok {
				continue // a file's bytes (an upload, an archive), never text
			}
			schema := js["schema"]
			url := path
			for prefix, id := range ids {
				if strings.HasPrefix(path, prefix) {
					url = strings.Replace(path, "{id}", id, 1)
				}
			}
			url = param.ReplaceAllString(url, "nope-0")
			fields := stringFields(schemas, schema, nil, 0)
			if len(fields) == 0 {
				t.Errorf("%s %s: its request schema names no string, so nothing was checked", method, path)
			}
			for _, f := range fields {
				body, name := f.body(nulValue)
				st, answer, _ := e.rawAnswer(strings.ToUpper(method), url, body)
				checked++
				if st != 422 || !strings.Contains(string(answer), `"code":"EINVALID"`) || !strings.Contains(string(answer), `"field":"field `+name+`"`) {
					t.Errorf("%s %s with a NUL in %s: %d %s; want 422 EINVALID naming the field", strings.ToUpper(method), path, name, st, answer)
				}
			}
		}
	}
	t.Logf("%d fields of %s checked", checked, "openapi.json's request bodies")
	if checked < 40 {
		t.Fatalf("only %d fields checked", checked)
	}

	// A NUL in a key, in a tool's arguments, in a tool's name, in a query parameter.
	for _, c := range []struct{ method, url, body, field string }{
		{"POST", "/api/mcp/connections", `{"server":"cigale","scope":"org","scope_id":"` + org + `","credentials":{"api\u0000key":"k"}}`, `field credentials[\"api\\x00key\"]`},
		{"POST", "/api/runs/" + run + "/calls", `{"name":"say","arguments":{"text":"hi\u0000there"}}`, "field arguments.text"},
		{"POST", "/api/runs/" + run + "/calls", `{"name":"secret_store","arguments":{"name":"API_TOKEN","value":"0123456789\u0000abc"}}`, "field arguments.value"},
		{"POST", "/api/runs/" + run + "/calls", `{"name":"report_issue","arguments":{"title":"t","details":["a","b\u0000"]}}`, "field arguments.details[1]"},
		{"POST", "/api/runs/" + run + "/calls", `{"name":"say\u0000","arguments":{}}`, "field name"},
		{"GET", "/api/runs/" + run + "/calls?after=%00", "", `query parameter \"after\"`},
		{"GET", "/api/mcp/connections?scope=org&scope_id=x%00y", "", `query parameter \"scope_id\"`},
	} {
		st, answer, _ := e.rawAnswer(c.method, c.url, c.body)
		if st != 422 || !strings.Contains(string(answer), `"field":"`+c.field) {
			t.Errorf("%s %s %s: %d %s; want 422 naming %s", c.method, c.url, c.body, st, answer, c.field)
		}
	}
	// The runs' call path refuses it too, whatever front sent it.
	for _, c := range []struct {
		req   runs.CallRequest
		field string
	}{
		{runs.CallRequest{Name: "say", Arguments: json.RawMessage(`{"text":"hi\u0000there"}`)}, "arguments.text"},
		{runs.CallRequest{Name: "say", Arguments: json.RawMessage(`{"list":[1,{"a\u0000":2}]}`)}, `arguments.list[1]["a\x00"]`},
		{runs.CallRequest{Name: "say", Arguments: json.RawMessage(`"\u0000"`)}, "arguments"},
		{runs.CallRequest{Name: "say\x00", Arguments: json.RawMessage(`{}`)}, "name"},
	} {
		_, err := svc.Call(context.Background(), run, c.req)
		var de *orchestrator.Error
		if !errors.As(err, &de) || de.Code != orchestrator.EINVALID || de.Fields["field"] != c.field {
			t.Errorf("Call(%s, %s) = %v; want EINVALID naming %s", c.req.Name, c.req.Arguments, err, c.field)
		}
	}
	if after := rowCounts(t, e); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("rows changed:\nbefore %v\nafter  %v", before, after)
	}
}

// bodyField is one string of a request schema: where it is, as a JSON path and as keys to build.
type bodyField struct {
	steps []string // object keys, "[]" for an array item, "{}" for a free-form map's key
}

// body builds a JSON body with v at the field, and the field's JSON path as the server names it.
func (f bodyField) body(v string) (string, string) {
	var build func(i int) any
	build = func(i int) any {
		if i == len(f.steps) {
			return v
		}
		switch f.steps[i] {
		case "[]":
			return []any{build(i + 1)}
		case "{}":
			return map[string]any{"k": build(i + 1)}
		}
		return map[string]any{f.steps[i]: build(i + 1)}
	}
	b, _ := json.Marshal(build(0))
	var name strings.Builder
	for _, s := range f.steps {
		switch s {
		case "[]":
			name.WriteString("[0]")
		case "{}":
			if name.Len() > 0 {
				name.WriteString(".")
			}
			name.WriteString("k")
		default:
			if name.Len() > 0 {
				name.WriteString(".")
			}
			name.WriteString(s)
		}
	}
	return string(b), name.String()
}

// stringFields lists every string a schema holds, following $ref, allOf/anyOf/oneOf, object
// properties, free-form maps and array items.
func stringFields(schemas map[string]any, s any, at []string, depth int) []bodyField {
	m, ok := s.(map[string]any)
	if !ok || depth > 8 {
		return nil
	}
	if ref, ok := m["$ref"].(string); ok {
		return stringFields(schemas, schemas[strings.TrimPrefix(ref, "#/components/schemas/")], at, depth+1)
	}
	var out []bodyField
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := m[k].([]any); ok {
			for _, sub := range list {
				out = append(out, stringFields(schemas, sub, at, depth+1)...)
			}
		}
	}
	types := fmt.Sprint(m["type"])
	if strings.Contains(types, "string") && len(at) > 0 {
		out = append(out, bodyField{steps: append([]string(nil), at...)})
	}
	if props, ok := m["properties"].(map[string]any); ok {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, stringFields(schemas, props[k], append(at, k), depth+1)...)
		}
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		out = append(out, stringFields(schemas, ap, append(at, "{}"), depth+1)...)
	}
	if items, ok := m["items"]; ok {
		out = append(out, stringFields(schemas, items, append(at, "[]"), depth+1)...)
	}
	return dedupe(out)
}

func dedupe(in []bodyField) []bodyField {
	seen := map[string]bool{}
	var out []bodyField
	for _, f := range in {
		k := strings.Join(f.steps, "/")
		if !seen[k] {
			seen[k] = true
			out = append(out, f)
		}
	}
	return out
}

// rowCounts counts the rows of every table of the database.
func rowCounts(t *testing.T, e *env) map[string]int {
	t.Helper()
	ctx := context.Background()
	rows, err := e.pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	out := map[string]int{}
	for _, tb := range tables {
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM "`+tb+`"`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tb] = n
	}
	return out
}
