package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ArgsError lists every problem found in a call's arguments, each as "argument <path>: <what is wrong>".
type ArgsError struct{ Problems []string }

// Error joins the problems into one message the model can act on.
func (e *ArgsError) Error() string {
	return "invalid arguments: " + strings.Join(e.Problems, "; ")
}

// ValidateArgs checks args against schema (JSON Schema draft 2020-12 unless the schema names
// another draft) and returns an *ArgsError listing every problem. A schema that does not compile is
// a plain error; one that leaves out its top-level "type" (some MCP servers do) is read as it is.
// Empty args are taken as {}. Compiled schemas are cached by their text.
func ValidateArgs(schema json.RawMessage, args json.RawMessage) error {
	sch, err := cachedCompile(schema)
	if err != nil {
		return err
	}
	if len(trimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return validate(sch, args)
}

const schemaCacheMax = 1024

var schemaCache struct {
	sync.Mutex
	m map[string]*jsonschema.Schema
}

func cachedCompile(schema json.RawMessage) (*jsonschema.Schema, error) {
	key := string(schema)
	schemaCache.Lock()
	sch, ok := schemaCache.m[key]
	schemaCache.Unlock()
	if ok {
		return sch, nil
	}
	sch, err := compileSchema(schema, false)
	if err != nil {
		return nil, err
	}
	schemaCache.Lock()
	if schemaCache.m == nil || len(schemaCache.m) >= schemaCacheMax {
		schemaCache.m = map[string]*jsonschema.Schema{}
	}
	schemaCache.m[key] = sch
	schemaCache.Unlock()
	return sch, nil
}

// compile checks that schema is a JSON Schema for an object and compiles it. A native tool's schema
// must say "type": "object"; a remote one (ValidateArgs) may leave the type out.
func compile(schema json.RawMessage) (*jsonschema.Schema, error) { return compileSchema(schema, true) }

func compileSchema(schema json.RawMessage, strict bool) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema must be a JSON object with \"type\": \"object\", got %s", jsonKind(doc))
	}
	if t, present := obj["type"]; (strict || present) && t != "object" {
		return nil, errors.New(`schema must declare "type": "object" at its top level`)
	}
	sch, err := compileDoc(doc)
	if _, named := obj["$schema"]; err != nil && named {
		// A meta-schema this validator does not know (and will not fetch): read the schema as
		// draft 2020-12 instead, which is what the model sees anyway.
		delete(obj, "$schema")
		if s2, err2 := compileDoc(obj); err2 == nil {
			return s2, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("schema is not a valid JSON Schema: %w", err)
	}
	return sch, nil
}

func compileDoc(doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	const loc = "tool-schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// noLoader refuses every external reference: a tool schema must be self-contained, and compiling
// one never touches the network or the file system.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %s: a tool schema must be self-contained (use $defs)", url)
}

var printer = message.NewPrinter(language.English)

func validate(sch *jsonschema.Schema, args json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &ArgsError{Problems: []string{fmt.Sprintf("arguments: not valid JSON (%v); send one JSON object", err)}}
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ArgsError{Problems: []string{"arguments: " + err.Error()}}
	}
	var leaves []leaf
	collect(ve, &leaves)
	var probs []string
	for _, l := range leaves {
		probs = append(probs, problem(inst, l.loc, l.what))
	}
	if len(probs) == 0 {
		probs = []string{"arguments: " + ve.Error()}
	}
	sort.Strings(probs)
	return &ArgsError{Problems: dedupe(probs)}
}

// leaf is one problem at an instance location.
type leaf struct {
	loc  []string
	what string
	typ  *kind.Type // set for type mismatches, so anyOf can merge them
}

// collect flattens a validation error tree into one leaf per problem.
func collect(e *jsonschema.ValidationError, out *[]leaf) {
	loc := e.InstanceLocation
	at := func(what string) { *out = append(*out, leaf{loc: loc, what: what}) }
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			collect(c, out)
		}
		if len(e.Causes) == 0 {
			at(k.LocalizedString(printer))
		}
	case *kind.AnyOf, *kind.OneOf:
		if o, ok := k.(*kind.OneOf); ok && len(o.Subschemas) > 1 {
			at("matches more than one of the allowed forms; make it match exactly one")
			return
		}
		*out = append(*out, noneMatched(loc, e.Causes)...)
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, leaf{loc: appendLoc(loc, m), what: "required but missing"})
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, leaf{loc: appendLoc(loc, p), what: "not an argument this tool takes; remove it"})
		}
	case *kind.Type:
		*out = append(*out, leaf{loc: loc, what: fmt.Sprintf("got %s, want %s", k.Got, strings.Join(k.Want, " or ")), typ: k})
	case *kind.FalseSchema:
		at("not allowed here; remove it")
	case *kind.Minimum:
		at(fmt.Sprintf("must be at least %s, got %s", k.Want.RatString(), k.Got.RatString()))
	case *kind.Maximum:
		at(fmt.Sprintf("must be at most %s, got %s", k.Want.RatString(), k.Got.RatString()))
	case *kind.ExclusiveMinimum:
		at(fmt.Sprintf("must be more than %s, got %s", k.Want.RatString(), k.Got.RatString()))
	case *kind.ExclusiveMaximum:
		at(fmt.Sprintf("must be less than %s, got %s", k.Want.RatString(), k.Got.RatString()))
	case *kind.MinLength:
		at(fmt.Sprintf("must be at least %d characters, got %d", k.Want, k.Got))
	case *kind.MaxLength:
		at(fmt.Sprintf("must be at most %d characters, got %d", k.Want, k.Got))
	case *kind.MinItems:
		at(fmt.Sprintf("must have at least %d items, got %d", k.Want, k.Got))
	case *kind.MaxItems:
		at(fmt.Sprintf("must have at most %d items, got %d", k.Want, k.Got))
	case *kind.MinProperties:
		at(fmt.Sprintf("must have at least %d keys, got %d", k.Want, k.Got))
	case *kind.MaxProperties:
		at(fmt.Sprintf("must have at most %d keys, got %d", k.Want, k.Got))
	default:
		at(e.ErrorKind.LocalizedString(printer))
	}
}

// noneMatched explains a value that fits no branch of an anyOf/oneOf. When every branch failed on
// the value's type, the wanted types merge into one problem. Branches that failed on the type are
// otherwise left out: when one branch took the value's type, its own problems are the answer; when
// several did, each one's problems are listed as alternatives.
func noneMatched(loc []string, causes []*jsonschema.ValidationError) []leaf {
	var want []string
	var got string
	var branches [][]leaf
	for _, c := range causes {
		var ls []leaf
		collect(c, &ls)
		if len(ls) == 1 && ls[0].typ != nil && len(ls[0].loc) == len(loc) {
			got = ls[0].typ.Got
			want = append(want, ls[0].typ.Want...)
			continue
		}
		branches = append(branches, ls)
	}
	switch len(branches) {
	case 0:
		sort.Strings(want)
		return []leaf{{loc: loc, what: fmt.Sprintf("got %s, want %s", got, joinOr(dedupe(want)))}}
	case 1:
		return branches[0]
	}
	var alts []string
	for _, ls := range branches {
		var parts []string
		for _, l := range ls {
			if rel := l.loc[min(len(loc), len(l.loc)):]; len(rel) > 0 {
				parts = append(parts, strings.Join(rel, ".")+": "+l.what)
			} else {
				parts = append(parts, l.what)
			}
		}
		sort.Strings(parts)
		alts = append(alts, strings.Join(parts, ", "))
	}
	sort.Strings(alts)
	return []leaf{{loc: loc, what: "matches none of the allowed forms (" + strings.Join(dedupe(alts), "; or ") + ")"}}
}

func joinOr(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func appendLoc(loc []string, k string) []string {
	return append(append([]string(nil), loc...), k)
}

// problem renders one problem at an instance location: "argument where.tags[0]: <what>".
func problem(inst any, loc []string, what string) string {
	if len(loc) == 0 {
		return "arguments: " + what
	}
	return "argument " + formatPath(inst, loc) + ": " + what
}

// formatPath renders loc as dotted keys and [i] indexes, following inst to tell arrays from objects.
func formatPath(inst any, loc []string) string {
	var b strings.Builder
	cur := inst
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			if m, ok := v.(map[string]any); ok {
				cur = m[tok]
			} else {
				cur = nil
			}
		}
	}
	return b.String()
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return "a number"
	}
}

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }
