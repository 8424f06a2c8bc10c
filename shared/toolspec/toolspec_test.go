package toolspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// schemaDoc is the part of a tool's JSON Schema the helpers' structs must agree with.
type schemaDoc struct {
	Type       string `json:"type"`
	Properties map[string]struct {
		Type      string   `json:"type"`
		Enum      []string `json:"enum"`
		MinLength *int     `json:"minLength"`
		Minimum   *int     `json:"minimum"`
		Maximum   *int     `json:"maximum"`
	} `json:"properties"`
	Required             []string `json:"required"`
	AdditionalProperties *bool    `json:"additionalProperties"`
}

func all() []Tool { return append(slices.Clone(Code), Browser...) }

func parse(t *testing.T, tool Tool) schemaDoc {
	t.Helper()
	raw, err := tool.Schema()
	if err != nil {
		t.Fatalf("%s: %v", tool.Name, err)
	}
	var doc schemaDoc
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: schema is not JSON: %v\n%s", tool.Name, err, raw)
	}
	return doc
}

// TestNames pins the two tables to the spec's tools, in its order.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		tools []Tool
		want  string
	}{
		{Code, "shell shell_status file_read file_edit file_write code_search code_match code_map code_find code_outline code_callers"},
		{Browser, "browser_navigate browser_snapshot browser_click browser_type browser_fill browser_scroll browser_screenshot browser_eval"},
	} {
		if got := strings.Join(Names(tc.tools), " "); got != tc.want {
			t.Errorf("names %q, want %q", got, tc.want)
		}
	}
	if _, ok := Lookup(Code, "file_read"); !ok {
		t.Error("Lookup(file_read) found nothing")
	}
	if _, ok := Lookup(Code, "browser_eval"); ok {
		t.Error("Lookup found a browser tool among the code tools")
	}
}

// TestSchemaMatchesStruct checks every schema against its argument struct, both ways: the same
// properties, JSON types and required keys, and no others.
func TestSchemaMatchesStruct(t *testing.T) {
	for _, tool := range all() {
		t.Run(tool.Name, func(t *testing.T) {
			doc := parse(t, tool)
			if doc.Type != "object" || doc.AdditionalProperties == nil || *doc.AdditionalProperties {
				t.Fatalf("schema must be a closed object: type %q, additionalProperties %v", doc.Type, doc.AdditionalProperties)
			}
			st := reflect.TypeOf(tool.Args)
			var fields, required []string
			for i := 0; i < st.NumField(); i++ {
				f := st.Field(i)
				name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				fields = append(fields, name)
				p, ok := doc.Properties[name]
				if !ok {
					t.Errorf("field %s (%s) is not in the schema", f.Name, name)
					continue
				}
				if want := goJSONType(f.Type); p.Type != want {
					t.Errorf("%s: schema type %q, struct type %s (%s)", name, p.Type, f.Type, want)
				}
				if !strings.Contains(opts, "omitempty") {
					required = append(required, name)
				}
			}
			for name := range doc.Properties {
				if !slices.Contains(fields, name) {
					t.Errorf("schema property %s is not a field of %T", name, tool.Args)
				}
			}
			if !slices.Equal(doc.Required, required) {
				t.Errorf("schema requires %v, struct requires %v", doc.Required, required)
			}
		})
	}
}

func goJSONType(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int:
		return "integer"
	case reflect.Bool:
		return "boolean"
	}
	return t.String()
}

// TestSchemaDecodesIntoStruct: arguments the schema allows decode into the struct, each
// argument of another JSON type and each argument the schema lacks is refused.
func TestSchemaDecodesIntoStruct(t *testing.T) {
	sample := map[string]string{"string": `"x"`, "integer": `1`, "boolean": `true`}
	wrong := map[string]string{"string": `1`, "integer": `"1"`, "boolean": `"true"`}
	for _, tool := range all() {
		t.Run(tool.Name, func(t *testing.T) {
			doc := parse(t, tool)
			decode := func(args string) error {
				v := reflect.New(reflect.TypeOf(tool.Args)).Interface()
				dec := json.NewDecoder(strings.NewReader(args))
				dec.DisallowUnknownFields()
				return dec.Decode(v)
			}
			var every []string
			for name, p := range doc.Properties {
				every = append(every, strconv.Quote(name)+":"+sample[p.Type])
				if err := decode(`{` + strconv.Quote(name) + `:` + wrong[p.Type] + `}`); err == nil {
					t.Errorf("%s: a value that is not %s decoded", name, p.Type)
				}
			}
			sort.Strings(every)
			if err := decode("{" + strings.Join(every, ",") + "}"); err != nil {
				t.Errorf("every argument the schema allows: %v", err)
			}
			if err := decode(`{"not_an_argument":1}`); err == nil {
				t.Error("an argument the schema lacks decoded")
			}
		})
	}
}

// TestBounds pins every enum and numeric bound of the schemas to the limits, both ways: each one
// listed here is in its schema, and each one in a schema is listed here.
func TestBounds(t *testing.T) {
	type bound struct {
		tool, prop string
		min, max   int // max 0: none
		def        int // the default the description names, 0: none named
	}
	bounds := []bound{
		{"shell", "timeout_seconds", 1, ShellMaxTimeout, ShellDefaultTimeout},
		{"file_read", "offset", 1, 0, 1},
		{"file_read", "limit", 1, FileReadMaxLimit, FileReadDefaultLimit},
		{"code_search", "context", 0, CodeSearchMaxContext, 0},
		{"code_search", "limit", 1, CodeSearchMaxLimit, 0},
		{"code_match", "limit", 1, CodeMatchMaxLimit, CodeMatchDefaultLimit},
		{"code_find", "limit", 1, CodeFindMaxLimit, CodeFindDefaultLimit},
		{"code_callers", "depth", 1, CodeCallersMaxDepth, CodeCallersDefaultDepth},
	}
	enums := map[string][]string{
		"code_search.mode":         {"files", "content", "symbols"},
		"code_callers.direction":   {"in", "out"},
		"browser_scroll.direction": {"up", "down", "left", "right"},
	}
	seen := map[string]bool{}
	for _, b := range bounds {
		seen[b.tool+"."+b.prop] = true
	}
	atMost := regexp.MustCompile(`at most (\d+)`)
	span := regexp.MustCompile(`\((\d+) to (\d+)`)
	def := regexp.MustCompile(`default (\d+)`)
	for _, tool := range all() {
		doc := parse(t, tool)
		for name, p := range doc.Properties {
			key := tool.Name + "." + name
			if p.Minimum != nil || p.Maximum != nil {
				if !seen[key] {
					t.Errorf("%s has bounds the limits do not list", key)
				}
			}
			if want, ok := enums[key]; !slices.Equal(p.Enum, want) {
				t.Errorf("%s: enum %v, want %v (listed: %v)", key, p.Enum, want, ok)
			}
		}
		for _, pr := range tool.Props {
			key := tool.Name + "." + pr.Name
			for _, b := range bounds {
				if b.tool+"."+b.prop != key {
					continue
				}
				p := doc.Properties[pr.Name]
				if p.Minimum == nil || *p.Minimum != b.min {
					t.Errorf("%s: minimum %v, want %d", key, p.Minimum, b.min)
				}
				if b.max == 0 && p.Maximum != nil || b.max > 0 && (p.Maximum == nil || *p.Maximum != b.max) {
					t.Errorf("%s: maximum %v, want %d", key, p.Maximum, b.max)
				}
				// The description the model reads states the same numbers.
				if m := atMost.FindStringSubmatch(pr.Doc); m != nil && m[1] != strconv.Itoa(b.max) {
					t.Errorf("%s: description says at most %s, the bound is %d", key, m[1], b.max)
				}
				if m := span.FindStringSubmatch(pr.Doc); m != nil && (m[1] != strconv.Itoa(b.min) || m[2] != strconv.Itoa(b.max)) {
					t.Errorf("%s: description says %s to %s, the bounds are %d to %d", key, m[1], m[2], b.min, b.max)
				}
				m := def.FindStringSubmatch(pr.Doc)
				if b.def > 0 && (m == nil || m[1] != strconv.Itoa(b.def)) || b.def == 0 && m != nil {
					t.Errorf("%s: description names default %v, the default is %d", key, m, b.def)
				}
			}
		}
	}
	for key := range enums {
		name, prop, _ := strings.Cut(key, ".")
		tool, ok := Lookup(all(), name)
		if !ok || !slices.ContainsFunc(tool.Props, func(p Prop) bool { return p.Name == prop }) {
			t.Errorf("enum %s names no argument", key)
		}
	}
}

// TestSchemaRefusesMismatch: a table whose props and struct disagree gives no schema.
func TestSchemaRefusesMismatch(t *testing.T) {
	type two struct {
		A string `json:"a"`
		B *int   `json:"b,omitempty"`
	}
	a := Prop{Name: "a", Doc: "A."}
	b := Prop{Name: "b", Doc: "B.", Range: &Range{Min: 1, Max: 3}}
	for _, tc := range []struct {
		name string
		tool Tool
		want string
	}{
		{"ok", Tool{Name: "t", Args: two{}, Props: []Prop{a, b}}, ""},
		{"missing prop", Tool{Name: "t", Args: two{}, Props: []Prop{a}}, "2 arguments"},
		{"extra prop", Tool{Name: "t", Args: two{}, Props: []Prop{a, b, {Name: "c", Doc: "C."}}}, "3 props"},
		{"order", Tool{Name: "t", Args: two{}, Props: []Prop{b, a}}, "argument 1 is a"},
		{"range on a string", Tool{Name: "t", Args: two{}, Props: []Prop{{Name: "a", Doc: "A.", Range: &Range{Min: 1}}, b}}, "a range on a string"},
		{"enum on an integer", Tool{Name: "t", Args: two{}, Props: []Prop{a, {Name: "b", Doc: "B.", Enum: []string{"x"}}}}, "enum on a integer"},
		{"empty range", Tool{Name: "t", Args: two{}, Props: []Prop{a, {Name: "b", Doc: "B.", Range: &Range{Min: 4, Max: 3}}}}, "is empty"},
		{"no description", Tool{Name: "t", Args: two{}, Props: []Prop{{Name: "a"}, b}}, "no description"},
		{"not a struct", Tool{Name: "t", Args: 3}, "not a struct"},
		{"unsupported type", Tool{Name: "t", Args: struct {
			F float64 `json:"f"`
		}{}, Props: []Prop{{Name: "f", Doc: "F."}}}, "no JSON Schema type"},
		{"no json name", Tool{Name: "t", Args: struct{ F string }{}, Props: []Prop{{Name: "F", Doc: "F."}}}, "no json name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := tc.tool.Schema()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want == "" && string(raw) != `{"type":"object","properties":{"a":{"type":"string","description":"A."},"b":{"type":"integer","minimum":1,"maximum":3,"description":"B."}},"required":["a"],"additionalProperties":false}`:
				t.Fatalf("schema %s", raw)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestSchemaText pins the encoding: descriptions as written (no HTML escaping), an object without
// arguments, and no required list when nothing is required.
func TestSchemaText(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{"browser_snapshot", `{"type":"object","properties":{},"additionalProperties":false}`},
		{"code_map", `{"type":"object","properties":{"repo":{"type":"string","description":"Repository folder name under /home/agent/repos (default: the one holding the working directory, else the only one)."}},"additionalProperties":false}`},
		{"browser_click", `{"type":"object","properties":{"locator":{"type":"string","minLength":1,"description":"An element from the latest browser_snapshot: its ref (e12) or role and name (button \"Save\")."}},"required":["locator"],"additionalProperties":false}`},
	} {
		tool, _ := Lookup(all(), tc.tool)
		raw, err := tool.Schema()
		if err != nil || string(raw) != tc.want {
			t.Errorf("%s: %s %v\nwant %s", tc.tool, raw, err, tc.want)
		}
	}
}

// TestDescriptionsStateLimits: what a tool's description says of its limits is what they are.
func TestDescriptionsStateLimits(t *testing.T) {
	for _, tc := range []struct{ tool, says string }{
		{"shell_status", fmt.Sprintf("the last %d lines of its log", ShellStatusLines)},
		{"file_read", fmt.Sprintf("Lines longer than %d characters are clipped", FileReadMaxLineChars)},
		{"code_search", fmt.Sprintf("matching paths with counts, at most %d)", CodeSearchFilesCap)},
		{"code_search", fmt.Sprintf("context 0 to %d lines, at most %d lines, %d matches per file", CodeSearchMaxContext, CodeSearchContentLineCap, CodeSearchPerFileCap)},
		{"browser_navigate", fmt.Sprintf("Each browser call has a %d-second timeout", int(BrowserCallTimeout.Seconds()))},
	} {
		tool, ok := Lookup(all(), tc.tool)
		if !ok || !strings.Contains(tool.Description, tc.says) {
			t.Errorf("%s: the description does not say %q", tc.tool, tc.says)
		}
	}
}
