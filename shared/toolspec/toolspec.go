// Package toolspec defines each sandbox tool once for both halves (DESIGN.md): its name, the
// description the model reads, its limits, its argument struct and the JSON Schema derived from it.
package toolspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Tool is one sandbox tool's contract.
type Tool struct {
	Name        string
	Description string // what the model reads about the tool
	Args        any    // the argument struct's zero value: the helper decodes the call's args into its type
	Props       []Prop // what the schema says of each argument, one per field of Args, in field order
}

// Prop is what an argument's schema adds to what its struct field gives: the JSON type comes from
// the field's Go type, and the argument is required unless the field's json tag says omitempty.
type Prop struct {
	Name      string   // the json name of the field
	Doc       string   // the property's description
	MinLength int      // the string's minLength, when above 0
	Enum      []string // the string's allowed values, when set
	Range     *Range   // the integer's bounds, when set
}

// Range bounds an integer argument.
type Range struct {
	Min int // the minimum
	Max int // the maximum, when above 0; 0 leaves the argument unbounded above
}

// Names lists the names of tools, in order.
func Names(tools []Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

// Lookup returns the tool named name in tools.
func Lookup(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Field is one argument as the argument struct declares it.
type Field struct {
	Name     string // the json name
	Type     string // the JSON Schema type: string, integer or boolean
	Required bool   // the json tag lacks omitempty
}

// Fields returns the arguments Args declares, in field order.
func (t Tool) Fields() ([]Field, error) {
	st := reflect.TypeOf(t.Args)
	if st == nil || st.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s: Args is %v, not a struct", t.Name, st)
	}
	var fields []Field
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("%s: field %s has no json name", t.Name, f.Name)
		}
		typ, err := jsonType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: argument %s: %w", t.Name, name, err)
		}
		fields = append(fields, Field{Name: name, Type: typ, Required: !hasOption(opts, "omitempty")})
	}
	return fields, nil
}

// Schema returns the tool's JSON Schema: an object of exactly the fields of Args (required unless
// tagged omitempty), each with its Prop, and no other properties. It fails when a field and the
// Props do not pair up one to one, in order, or a Prop's keyword does not fit the field's type.
func (t Tool) Schema() (json.RawMessage, error) {
	fields, err := t.Fields()
	if err != nil {
		return nil, err
	}
	if len(fields) != len(t.Props) {
		return nil, fmt.Errorf("%s: %d arguments in %T but %d props", t.Name, len(fields), t.Args, len(t.Props))
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i, f := range fields {
		p := t.Props[i]
		if p.Name != f.Name {
			return nil, fmt.Errorf("%s: argument %d is %s in %T but %s in the props", t.Name, i+1, f.Name, t.Args, p.Name)
		}
		if err := p.check(f); err != nil {
			return nil, fmt.Errorf("%s: argument %s: %w", t.Name, f.Name, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, f.Name)
		b.WriteString(`:{"type":`)
		writeString(&b, f.Type)
		if len(p.Enum) > 0 {
			b.WriteString(`,"enum":[`)
			for j, v := range p.Enum {
				if j > 0 {
					b.WriteByte(',')
				}
				writeString(&b, v)
			}
			b.WriteByte(']')
		}
		if p.MinLength > 0 {
			fmt.Fprintf(&b, `,"minLength":%d`, p.MinLength)
		}
		if p.Range != nil {
			fmt.Fprintf(&b, `,"minimum":%d`, p.Range.Min)
			if p.Range.Max > 0 {
				fmt.Fprintf(&b, `,"maximum":%d`, p.Range.Max)
			}
		}
		b.WriteString(`,"description":`)
		writeString(&b, p.Doc)
		b.WriteByte('}')
		if f.Required {
			required = append(required, f.Name)
		}
	}
	b.WriteByte('}')
	if len(required) > 0 {
		b.WriteString(`,"required":[`)
		for i, name := range required {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(&b, name)
		}
		b.WriteByte(']')
	}
	b.WriteString(`,"additionalProperties":false}`)
	return b.Bytes(), nil
}

// check reports a keyword that does not fit the field's type, and a missing description.
func (p Prop) check(f Field) error {
	switch {
	case p.Doc == "":
		return fmt.Errorf("no description")
	case (p.MinLength > 0 || len(p.Enum) > 0) && f.Type != "string":
		return fmt.Errorf("minLength or enum on a %s", f.Type)
	case p.Range != nil && f.Type != "integer":
		return fmt.Errorf("a range on a %s", f.Type)
	case p.Range != nil && p.Range.Max > 0 && p.Range.Max < p.Range.Min:
		return fmt.Errorf("range %d to %d is empty", p.Range.Min, p.Range.Max)
	}
	return nil
}

// jsonType is the JSON Schema type of a field of Go type t (pointers mark arguments whose absence
// the helper tells apart from their zero value).
func jsonType(t reflect.Type) (string, error) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string", nil
	case reflect.Int, reflect.Int64:
		return "integer", nil
	case reflect.Bool:
		return "boolean", nil
	}
	return "", fmt.Errorf("Go type %s has no JSON Schema type here", t)
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// writeString writes s as a JSON string, without HTML escaping (the model reads it as written).
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}
