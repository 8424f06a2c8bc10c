package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaTools are native tools whose schemas use what the provider formats must carry through:
// enums, nested objects, arrays of objects, arrays of arrays, bounds, defaults, $defs and a
// property-less schema.
func schemaTools() []registry.Tool {
	ok := func(context.Context, *registry.Call) (string, error) { return "ok", nil }
	return []registry.Tool{
		{Name: "notes_find", Family: orchestrator.FamilyNotes, Handler: ok,
			Description: "Find notes by words, tags and date range; answers at most `limit` notes, newest first.",
			Schema: json.RawMessage(`{"type":"object","properties":{
				"query":{"type":"string","minLength":1,"description":"words to look for"},
				"tags":{"type":"array","items":{"type":"string","enum":["todo","idea","bug"]},"uniqueItems":true},
				"range":{"type":"object","properties":{"from":{"type":"string","format":"date"},"to":{"type":"string","format":"date"}},"required":["from"]},
				"sort":{"type":"string","enum":["newest","oldest","relevance"],"default":"newest"},
				"limit":{"type":"integer","minimum":1,"maximum":100}},
				"required":["query"],"additionalProperties":false}`)},
		{Name: "event_plan", Family: orchestrator.FamilyNotes, Handler: ok,
			Description: "Plan an event: attendees (each with a role), a venue and an agenda of timed items — «résumé» included.",
			Schema: json.RawMessage(`{"type":"object","$defs":{"person":{"type":"object","properties":{"email":{"type":"string"},"role":{"type":"string","enum":["host","speaker","guest"]}},"required":["email","role"]}},
				"properties":{
				"title":{"type":"string","maxLength":200},
				"attendees":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/person"}},
				"venue":{"type":"object","properties":{"name":{"type":"string"},"address":{"type":"object","properties":{"city":{"type":"string"},"country":{"type":"string","pattern":"^[A-Z]{2}$"}},"required":["city"]},"capacity":{"type":["integer","null"]}}},
				"agenda":{"type":"array","items":{"type":"object","properties":{"at":{"type":"string"},"minutes":{"type":"number","exclusiveMinimum":0},"topic":{"type":"string"}},"required":["at","topic"]}}},
				"required":["title","attendees"]}`)},
		{Name: "grid_write", Family: orchestrator.FamilyNotes, Handler: ok,
			Description: "Write a grid of cells: rows of values, each a string, number, boolean or null.",
			Schema: json.RawMessage(`{"type":"object","properties":{
				"rows":{"type":"array","items":{"type":"array","items":{"type":["string","number","boolean","null"]}}},
				"mode":{"oneOf":[{"const":"replace"},{"const":"append"}]},
				"header":{"type":"boolean","default":false}},
				"required":["rows"]}`)},
		{Name: "notes_count", Family: orchestrator.FamilyNotes, Handler: ok, Description: "Count notes.", Schema: json.RawMessage(`{"type":"object"}`)},
	}
}

// providerSchema compiles one vendored provider schema from testdata/provider-schemas.
func providerSchema(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join("testdata", "provider-schemas", file)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if c, _ := doc.(map[string]any)["$comment"].(string); c == "" {
		t.Fatalf("%s has no $comment naming its source", path)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(file, doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sch, err := c.Compile(file)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sch
}

// instance re-reads v as the validator reads JSON (numbers as json.Number), a deep copy.
func instance(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openAIName is the rule FunctionObject.name's description states ("a-z, A-Z, 0-9, or contain
// underscores and dashes, with a maximum length of 64"), which the published schema leaves to prose.
var openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// providerFormat is one format of GET /api/runs/{id}/tools and the vendored schema of its elements.
type providerFormat struct {
	format, file string
	name         func(tool map[string]any) any // the tool's name
	params       func(tool map[string]any) any // the tool's input schema
	nameRule     *regexp.Regexp                // a rule on the name beyond the schema's, or nil
}

var providerFormats = []providerFormat{
	{format: "openai", file: "openai-chat-tool.json", nameRule: openAIName,
		name:   func(t map[string]any) any { f, _ := t["function"].(map[string]any); return f["name"] },
		params: func(t map[string]any) any { f, _ := t["function"].(map[string]any); return f["parameters"] }},
	{format: "openai_responses", file: "openai-responses-tool.json", nameRule: openAIName,
		name:   func(t map[string]any) any { return t["name"] },
		params: func(t map[string]any) any { return t["parameters"] }},
	{format: "anthropic", file: "anthropic-tool.json",
		name:   func(t map[string]any) any { return t["name"] },
		params: func(t map[string]any) any { return t["input_schema"] }},
}

// TestRunToolFormatsMatchProviderSchemas: every element of each provider format's answer is valid
// against the JSON Schema that API publishes for one tool of its request body (vendored under
// testdata/provider-schemas, sources in each file's $comment), its input schema is the offered one
// unchanged and itself a valid JSON Schema, and an answer broken on purpose is rejected by the same
// check.
func TestRunToolFormatsMatchProviderSchemas(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, nil, envOptions{tools: schemaTools()})
	run := e.must(201, "POST", "/api/agents/"+e.agent(nil)+"/runs", map[string]any{"kind": "direct"})
	id, names, offer := run["id"].(string), offered(run), run["offered_tools"].([]any)
	for _, tool := range schemaTools() {
		if !slices.Contains(names, tool.Name) {
			t.Fatalf("the run does not offer %s: %v", tool.Name, names)
		}
	}
	answers := map[string][]any{}
	for _, pf := range providerFormats {
		sch := providerSchema(t, pf.file)
		tools := e.must(200, "GET", "/api/runs/"+id+"/tools?format="+pf.format, nil)["tools"].([]any)
		if len(tools) != len(names) {
			t.Fatalf("%s: %d tools, the run offers %d", pf.format, len(tools), len(names))
		}
		answers[pf.format] = tools
		for i, tool := range tools {
			m := tool.(map[string]any)
			name, _ := pf.name(m).(string)
			if name != names[i] {
				t.Errorf("%s: tool %d is named %v, the offer's is %s", pf.format, i, pf.name(m), names[i])
			}
			if want := offer[i].(map[string]any)["input_schema"]; want != nil && !reflect.DeepEqual(pf.params(m), want) {
				t.Errorf("%s: tool %s's input schema %v is not the offered %v", pf.format, name, pf.params(m), want)
			}
			if err := sch.Validate(instance(t, tool)); err != nil {
				t.Errorf("%s: tool %s is not valid against %s:\n%v", pf.format, name, pf.file, err)
			}
			if pf.nameRule != nil && !pf.nameRule.MatchString(name) {
				t.Errorf("%s: tool name %q breaks %s", pf.format, name, pf.nameRule)
			}
			c := jsonschema.NewCompiler() // checks the input schema against the 2020-12 meta-schema
			if err := c.AddResource("params.json", instance(t, pf.params(m))); err != nil {
				t.Errorf("%s: tool %s: input schema: %v", pf.format, name, err)
			} else if _, err := c.Compile("params.json"); err != nil {
				t.Errorf("%s: tool %s: input schema is not a valid JSON Schema: %v", pf.format, name, err)
			}
		}
		t.Logf("%s: %d tools valid against %s", pf.format, len(tools), pf.file)
	}

	// The same check rejects an answer broken on purpose, with the validator's message.
	for _, c := range []struct {
		format, what string
		breakIt      func(tool map[string]any)
	}{
		{"openai", "no function name", func(t map[string]any) { delete(t["function"].(map[string]any), "name") }},
		{"openai", "type is not function", func(t map[string]any) { t["type"] = "tool" }},
		{"openai", "no function object", func(t map[string]any) { delete(t, "function") }},
		{"openai", "name is a number", func(t map[string]any) { t["function"].(map[string]any)["name"] = 7 }},
		{"openai", "parameters is an array", func(t map[string]any) { t["function"].(map[string]any)["parameters"] = []any{} }},
		{"openai_responses", "no name", func(t map[string]any) { delete(t, "name") }},
		{"openai_responses", "type is custom", func(t map[string]any) { t["type"] = "custom" }},
		{"openai_responses", "no strict", func(t map[string]any) { delete(t, "strict") }},
		{"openai_responses", "strict is a string", func(t map[string]any) { t["strict"] = "false" }},
		{"openai_responses", "parameters is a string", func(t map[string]any) { t["parameters"] = "{}" }},
		{"anthropic", "no name", func(t map[string]any) { delete(t, "name") }},
		{"anthropic", "type is function", func(t map[string]any) { t["type"] = "function" }},
		{"anthropic", "no input_schema", func(t map[string]any) { delete(t, "input_schema") }},
		{"anthropic", "input_schema type is array", func(t map[string]any) { t["input_schema"].(map[string]any)["type"] = "array" }},
		{"anthropic", "name has a space", func(t map[string]any) { t["name"] = "notes find" }},
		{"anthropic", "OpenAI's parameters key", func(t map[string]any) { t["parameters"] = t["input_schema"] }},
	} {
		var pf providerFormat
		for _, f := range providerFormats {
			if f.format == c.format {
				pf = f
			}
		}
		sch := providerSchema(t, pf.file)
		tool := instance(t, answers[c.format][0]).(map[string]any)
		c.breakIt(tool)
		err := sch.Validate(tool)
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s, %s: the check passed a broken tool (error %v): %v", c.format, c.what, err, tool)
			continue
		}
		t.Logf("%s, %s: rejected: %v", c.format, c.what, ve)
	}
}
