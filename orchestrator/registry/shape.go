package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// OmitLine is the line ShapeSchema adds to an optional string's description.
const OmitLine = "Omit when unused."

// saysOmit matches descriptions that already tell the model it may leave the key out.
var saysOmit = regexp.MustCompile(`(?i)\bomit|\bleave (it |this |the key |this key |the field )?(out|unset)\b`)

// ShapeSchema returns the schema as offered to the model (spec, first paragraph). Pure; the input is
// not modified, and shaping a shaped schema changes nothing. Keys keep their order.
//
//   - format is stripped wherever the model may leave the value out: under an optional property (its
//     whole subtree, nested objects and array items included), and under a nullable schema
//     ("type": [..., "null"], an anyOf/oneOf branch that is null, "nullable": true, or an enum with
//     null), even when that property is required. A required, non-nullable chain keeps its formats.
//   - "additionalProperties": false is dropped at every level.
//   - An optional property that is a string (also through a type array with null, anyOf/oneOf
//     branches, a string enum or const, or a local $ref) gets OmitLine appended to its description, unless
//     the description already says to omit or leave out the key.
//   - $defs and definitions are shaped too. A definition is treated as optional (format stripped)
//     only when every $ref to it sits in such an optional or nullable place; an unreferenced one
//     keeps its formats.
//
// Only schema positions are walked, so a property named "format" or "properties" is a property,
// never a keyword.
func ShapeSchema(schema json.RawMessage) (json.RawMessage, error) {
	out, _, err := shape(schema)
	return out, err
}

// shape is ShapeSchema, also returning how many schema nodes it visited (tests check it stays linear).
func shape(schema json.RawMessage) (json.RawMessage, int, error) {
	doc, err := decodeOrdered(schema)
	if err != nil {
		return nil, 0, fmt.Errorf("shape schema: not valid JSON: %w", err)
	}
	root, ok := doc.(*object)
	if !ok {
		return nil, 0, fmt.Errorf("shape schema: a tool schema must be a JSON object, got %s", jsonKind(plain(doc)))
	}
	sh := &shaper{root: root, seen: map[string]bool{}, keep: map[string]bool{}, str: map[*object]int8{}, defs: map[string]any{}}
	defs := sh.listDefs()
	for _, d := range defs {
		sh.defs[d.ref] = d.schema
	}
	// Find which definitions are referenced at all, and which from a place that keeps formats. A
	// definition is walked again only when its state changes (seen, then kept), at most twice.
	sh.walk(root, false, false, 0)
	for len(sh.queue) > 0 {
		ref := sh.queue[0]
		sh.queue = sh.queue[1:]
		sh.walk(sh.defs[ref], !sh.keep[ref], false, 0)
	}
	sh.walk(root, false, true, 0)
	for _, d := range defs {
		sh.walk(d.schema, sh.seen[d.ref] && !sh.keep[d.ref], true, 0)
	}
	var buf bytes.Buffer
	if err := encodeOrdered(&buf, root); err != nil {
		return nil, 0, fmt.Errorf("shape schema: %w", err)
	}
	return buf.Bytes(), sh.visits, nil
}

type def struct {
	ref    string // "#/$defs/name"
	schema any
}

type shaper struct {
	root   *object
	seen   map[string]bool  // local refs met while walking
	keep   map[string]bool  // local refs met in a place that keeps formats
	str    map[*object]int8 // isString memo: 1 in progress, 2 string, 3 not
	defs   map[string]any   // root definitions by local ref
	queue  []string         // definitions whose seen/keep state changed, to walk (again)
	visits int              // schema nodes visited by walk and isString
}

// listDefs lists the root's definitions.
func (sh *shaper) listDefs() []def {
	var out []def
	for _, kw := range []string{"$defs", "definitions"} {
		m, ok := sh.root.vals[kw].(*object)
		if !ok {
			continue
		}
		for _, name := range m.keys {
			out = append(out, def{ref: "#/" + kw + "/" + escapePointer(name), schema: m.vals[name]})
		}
	}
	return out
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// keywords whose value is one subschema in the same optional/nullable context as its parent.
var sameContext = []string{"not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "items"}

// keywords whose value is an array of subschemas in the parent's context.
var arrayContext = []string{"anyOf", "oneOf", "allOf", "prefixItems", "items"}

// walk visits the schema node n. strip says the node sits where the model may leave it out;
// mutate false only records $refs (the first passes), true shapes.
func (sh *shaper) walk(n any, strip, mutate bool, depth int) {
	o, ok := n.(*object)
	if !ok || depth > maxDepth {
		return
	}
	sh.visits++
	strip = strip || isNullable(o)
	if mutate {
		if _, isStr := o.vals["format"].(string); isStr && strip {
			o.del("format")
		}
		if b, isBool := o.vals["additionalProperties"].(bool); isBool && !b {
			o.del("additionalProperties")
		}
	}
	if ref, isStr := o.vals["$ref"].(string); isStr {
		if _, isDef := sh.defs[ref]; isDef && (!sh.seen[ref] || !strip && !sh.keep[ref]) {
			sh.seen[ref] = true
			sh.keep[ref] = sh.keep[ref] || !strip
			sh.queue = append(sh.queue, ref)
		}
	}
	if props, isObj := o.vals["properties"].(*object); isObj {
		req := requiredSet(o)
		for _, name := range props.keys {
			opt := !req[name]
			child := props.vals[name]
			if mutate && opt {
				sh.addOmitLine(child)
			}
			sh.walk(child, strip || opt, mutate, depth+1)
		}
	}
	if pp, isObj := o.vals["patternProperties"].(*object); isObj {
		for _, k := range pp.keys {
			sh.walk(pp.vals[k], true, mutate, depth+1)
		}
	}
	if ap, isObj := o.vals["additionalProperties"].(*object); isObj {
		sh.walk(ap, true, mutate, depth+1)
	}
	if ds, isObj := o.vals["dependentSchemas"].(*object); isObj {
		for _, k := range ds.keys {
			sh.walk(ds.vals[k], strip, mutate, depth+1)
		}
	}
	for _, kw := range sameContext {
		if sub, isObj := o.vals[kw].(*object); isObj {
			sh.walk(sub, strip, mutate, depth+1)
		}
	}
	for _, kw := range arrayContext {
		if arr, isArr := o.vals[kw].([]any); isArr {
			for _, sub := range arr {
				sh.walk(sub, strip, mutate, depth+1)
			}
		}
	}
	if o != sh.root {
		// Definitions nested below the root are rare; shape them without knowing their context.
		for _, kw := range []string{"$defs", "definitions"} {
			if m, isObj := o.vals[kw].(*object); isObj {
				for _, k := range m.keys {
					sh.walk(m.vals[k], false, mutate, depth+1)
				}
			}
		}
	}
}

// addOmitLine appends OmitLine to an optional string property's description.
func (sh *shaper) addOmitLine(n any) {
	o, ok := n.(*object)
	if !ok || !sh.isString(o, 0) {
		return
	}
	switch d := o.vals["description"].(type) {
	case nil:
		if _, present := o.vals["description"]; !present {
			o.set("description", OmitLine)
		}
	case string:
		switch {
		case saysOmit.MatchString(d):
		case strings.TrimSpace(d) == "":
			o.set("description", OmitLine)
		default:
			o.set("description", strings.TrimRight(d, " \t\n")+"\n"+OmitLine)
		}
	}
}

// isString reports whether a schema accepts strings and nothing but strings (and null). Results are
// memoized per node, and a $ref cycle counts as not a string, so hostile schemas stay linear.
func (sh *shaper) isString(o *object, depth int) bool {
	switch sh.str[o] {
	case 1, 3:
		return false
	case 2:
		return true
	}
	if depth > maxDepth {
		return false
	}
	sh.visits++
	sh.str[o] = 1
	ok := sh.stringNode(o, depth)
	sh.str[o] = 3
	if ok {
		sh.str[o] = 2
	}
	return ok
}

func (sh *shaper) stringNode(o *object, depth int) bool {
	switch t := o.vals["type"].(type) {
	case string:
		return t == "string"
	case []any:
		str := false
		for _, e := range t {
			switch e {
			case "string":
				str = true
			case "null":
			default:
				return false
			}
		}
		return str
	}
	if c, ok := o.vals["const"]; ok {
		_, str := c.(string)
		return str
	}
	if enum, ok := o.vals["enum"].([]any); ok && len(enum) > 0 {
		str := false
		for _, e := range enum {
			switch e.(type) {
			case string:
				str = true
			case nil:
			default:
				return false
			}
		}
		return str
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		branches, ok := o.vals[kw].([]any)
		if !ok || len(branches) == 0 {
			continue
		}
		str := false
		for _, b := range branches {
			bo, ok := b.(*object)
			switch {
			case !ok:
				return false
			case isNull(bo):
			case sh.isString(bo, depth+1):
				str = true
			default:
				return false
			}
		}
		return str
	}
	if ref, ok := o.vals["$ref"].(string); ok {
		if target, ok := sh.resolve(ref); ok {
			return sh.isString(target, depth+1)
		}
	}
	return false
}

// resolve finds a local "#/$defs/x" or "#/definitions/x" target.
func (sh *shaper) resolve(ref string) (*object, bool) {
	o, ok := sh.defs[ref].(*object)
	return o, ok
}

// isNullable reports whether a schema admits null beside something else, in any of the usual spellings.
func isNullable(o *object) bool {
	if b, _ := o.vals["nullable"].(bool); b {
		return true
	}
	if t, ok := o.vals["type"].([]any); ok {
		for _, e := range t {
			if e == "null" {
				return true
			}
		}
	}
	if enum, ok := o.vals["enum"].([]any); ok {
		for _, e := range enum {
			if e == nil {
				return true
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if branches, ok := o.vals[kw].([]any); ok {
			for _, b := range branches {
				if bo, ok := b.(*object); ok && isNull(bo) {
					return true
				}
			}
		}
	}
	return false
}

// isNull reports whether a schema is the null branch of a union.
func isNull(o *object) bool {
	if t, ok := o.vals["type"].(string); ok && t == "null" {
		return true
	}
	if c, ok := o.vals["const"]; ok && c == nil {
		return true
	}
	if enum, ok := o.vals["enum"].([]any); ok && len(enum) == 1 && enum[0] == nil {
		return true
	}
	return false
}

// requiredSet returns the names listed in a schema's required array.
func requiredSet(o *object) map[string]bool {
	req := map[string]bool{}
	if arr, ok := o.vals["required"].([]any); ok {
		for _, e := range arr {
			if s, ok := e.(string); ok {
				req[s] = true
			}
		}
	}
	return req
}

// plain converts an ordered value back for jsonKind.
func plain(v any) any {
	if _, ok := v.(*object); ok {
		return map[string]any{}
	}
	return v
}
